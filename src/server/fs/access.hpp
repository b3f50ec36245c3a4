// vnfsd export file system: access checks under the current identity.
#pragma once

#include <cstdint>
#include <system_error>

#include "server/fs/error.hpp"
#include "server/fs/object.hpp"

namespace vnfs::server::fs {

/// Access bits, as R_OK/W_OK/X_OK.
inline constexpr unsigned access_read = 4;
inline constexpr unsigned access_write = 2;
inline constexpr unsigned access_execute = 1;

/// Which of the `requested` bits the calling thread's identity is granted on `obj`:
/// faccessat2(AT_EACCESS | AT_EMPTY_PATH) per bit, so the kernel decides with the fsuid,
/// fsgid and groups set by scoped_identity (and its ACLs, read-only mounts: EROFS is a
/// denial of write). Execute on a directory means search. Errors other than a denial set ec.
unsigned access(const object& obj, unsigned requested, std::error_code& ec);

}  // namespace vnfs::server::fs
