// vnfsd export file system: attributes of objects (stat, setattr).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <system_error>

#include <sys/stat.h>

#include "server/fs/error.hpp"
#include "server/fs/object.hpp"

namespace vnfs::server::fs {

/// What statx reports, plus `change`.
///
/// `change` (NFS change attribute) is ctime in nanoseconds since the epoch
/// (sec * 10^9 + nsec). The kernel updates ctime on every data or metadata modification,
/// and since Linux 6.13 ext4/xfs/btrfs/tmpfs use multigrain timestamps: once ctime has been
/// observed (by this stat), the next change gets a fine-grained, strictly later ctime. So
/// the value changes on every modification that follows a stat and grows monotonically
/// while the clock does. (On older kernels two modifications within one timer tick can
/// share a value.)
struct attributes {
  file_type type = file_type::regular;
  std::uint32_t mode = 0;  ///< permission bits only (07777)
  std::uint32_t nlink = 0;
  std::uint32_t uid = 0, gid = 0;
  std::uint64_t size = 0;
  std::uint64_t blocks = 0;  ///< allocated 512-byte blocks (space used = blocks * 512)
  timestamp atime, mtime, ctime;
  timestamp btime;  ///< creation time, valid only if has_btime
  bool has_btime = false;
  std::uint64_t ino = 0;
  std::uint32_t dev_major = 0, dev_minor = 0;    ///< device holding the object
  std::uint32_t rdev_major = 0, rdev_minor = 0;  ///< for block/character devices
  std::uint64_t change = 0;
};

attributes stat(const object& obj, std::error_code& ec);
/// The attributes in a statx result of STATX_BASIC_STATS | STATX_BTIME.
attributes attributes_of(const struct statx& st) noexcept;

/// How setattr treats a timestamp.
struct time_update {
  enum class how { keep, now, set } what = how::keep;
  timestamp time{};  ///< when what == set
  static time_update now() { return {how::now, {}}; }
  static time_update at(timestamp t) { return {how::set, t}; }
};

struct setattr_args {
  // Every member has an initializer so that designated initializers may name any subset.
  std::optional<std::uint32_t> mode{};  ///< permission bits (07777)
  std::optional<std::uint32_t> uid{};
  std::optional<std::uint32_t> gid{};
  std::optional<std::uint64_t> size{};  ///< regular files only (EISDIR / errc::wrong_type)
  time_update atime{}, mtime{};
};

/// Applies the requested changes in the order owner, mode, size, times (so a requested
/// mtime is not overwritten by the truncation, and a requested mode survives the chown's
/// clearing of set-id bits). Not atomic: on failure, earlier steps stay applied. Mode
/// changes on symlinks are refused (EOPNOTSUPP). Permission checks are the kernel's under
/// the current identity (truncation needs write access; set times need ownership).
/// Any setattr on a regular file first drops its exclusive-create verifier (see create()).
void setattr(const object& obj, const setattr_args& args, std::error_code& ec);

}  // namespace vnfs::server::fs
