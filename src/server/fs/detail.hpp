// vnfsd export file system: internals shared by the .cpp files (not part of the API).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <system_error>

#include "server/fs/error.hpp"
#include "server/fs/object.hpp"

namespace vnfs::server::fs::detail {

inline constexpr const char* createverf_xattr = "trusted.vnfs.createverf";

/// "/proc/self/fd/N": a path that reaches exactly the inode of descriptor N (a magic link),
/// for the calls that have no descriptor or AT_EMPTY_PATH form usable with O_PATH.
struct proc_path {
  explicit proc_path(int fd) noexcept { std::snprintf(buf.data(), buf.size(), "/proc/self/fd/%d", fd); }
  const char* c_str() const noexcept { return buf.data(); }
  std::array<char, 32> buf{};
};

/// statx of the object itself (AT_EMPTY_PATH); errno-style result.
int statx_fd(int fd, unsigned mask, struct statx& st) noexcept;

/// The inode numbers of a statx result (STATX_INO), as fstat would give them, or of fstat's.
inode_id inode_of(const struct statx& st) noexcept;
inode_id inode_of(const struct ::stat& st) noexcept;

/// Checks that `obj` may carry data (regular file): EISDIR / ELOOP / errc::wrong_type.
std::error_code require_regular(const object& obj) noexcept;

/// Opens the inode of a regular-file object for I/O with `flags` (O_RDONLY, O_WRONLY, ...;
/// O_CLOEXEC is added). Returns -1 and sets ec on failure.
int open_data(const object& obj, int flags, std::error_code& ec) noexcept;

/// Removes the exclusive-create verifier of a regular file if it has one (cheap check
/// first: reading an absent xattr starts no journal transaction). No system call once the
/// object knows its inode has none (object::no_create_verifier()). `open_fd`, if the
/// caller has one, is `obj` open for reading or writing: the check goes through it, without
/// a path lookup through /proc.
void drop_create_verifier(const object& obj, int open_fd = -1) noexcept;

}  // namespace vnfs::server::fs::detail
