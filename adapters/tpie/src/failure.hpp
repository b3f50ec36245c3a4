// vnfs TPIE adapter (internal): building the exceptions of errors.hpp.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>

#include "vnfs/tpie/errors.hpp"

namespace vnfs::tpie::detail {

/// Whether `ec` means the file system or the export is full.
inline bool is_out_of_space(std::error_code ec) {
  return ec == std::errc::no_space_on_device || ec == std::error_condition(EDQUOT, std::generic_category());
}

/// Throws out_of_space_error or io_error: "vnfs::tpie: WHAT PATH: MESSAGE".
[[noreturn]] inline void throw_io_error(std::error_code ec, const std::string& what, const std::string& path) {
  std::string msg = "vnfs::tpie: " + what + " " + path + ": " + ec.message();
  if (is_out_of_space(ec)) throw out_of_space_error(msg, ec, path);
  throw io_error(msg, ec, path);
}

}  // namespace vnfs::tpie::detail
