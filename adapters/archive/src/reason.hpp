// vnfs archive adapter: the text of an error code in messages (internal).
#pragma once

#include <string>
#include <system_error>

#include "vnfs/error.hpp"

namespace vnfs::archive::detail {

/// strerror's text when the error has a POSIX equivalent (NFS4ERR_NOENT reads "No such file
/// or directory"), else the category's own message.
inline std::string reason(std::error_code ec) {
  std::error_condition c = ec.default_error_condition();
  if (c.category() == std::generic_category()) return std::generic_category().message(c.value());
  return ec.message();
}

}  // namespace vnfs::archive::detail
