// vnfsd export file system: validation of client-supplied name components.
#pragma once

#include <string_view>
#include <system_error>

#include "server/fs/error.hpp"

namespace vnfs::server::fs {

/// Every name this layer accepts is a single path component. Returns
///   errc::empty_name  for ""                                    (NFS4ERR_INVAL),
///   errc::bad_name    for ".", "..", or any '/' or NUL byte     (NFS4ERR_BADNAME),
///   no error          otherwise (length limits are left to the kernel: ENAMETOOLONG).
/// Names are bytes; no UTF-8 check is made here.
inline std::error_code check_name(std::string_view name) noexcept {
  if (name.empty()) return errc::empty_name;
  if (name == "." || name == "..") return errc::bad_name;
  if (name.find('/') != std::string_view::npos) return errc::bad_name;
  if (name.find('\0') != std::string_view::npos) return errc::bad_name;
  return {};
}

}  // namespace vnfs::server::fs
