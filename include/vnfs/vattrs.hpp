// vnfs public API: one item of vgetattrs / vsetattrs (papers/000 §3: several attributes of
// many objects at once, one SETATTR for all of an object's changes).
#pragma once

#include <cstdint>

#include "vnfs/file_stat.hpp"
#include "vnfs/vfile.hpp"

namespace vnfs {

/// Attribute bits (bitwise or) of a vattr's mask.
namespace attr {
inline constexpr unsigned type = 1u << 0;
inline constexpr unsigned mode = 1u << 1;
inline constexpr unsigned nlink = 1u << 2;
inline constexpr unsigned uid = 1u << 3;
inline constexpr unsigned gid = 1u << 4;
inline constexpr unsigned size = 1u << 5;
inline constexpr unsigned space_used = 1u << 6;
inline constexpr unsigned fileid = 1u << 7;
inline constexpr unsigned change = 1u << 8;
inline constexpr unsigned atime = 1u << 9;
inline constexpr unsigned mtime = 1u << 10;
inline constexpr unsigned ctime = 1u << 11;
inline constexpr unsigned handle = 1u << 12;  ///< vgetattrs only: the object's file_handle
/// What stat(2) reports.
inline constexpr unsigned stat = type | mode | nlink | uid | gid | size | space_used | fileid | change | atime | mtime | ctime;
/// What vsetattrs can set.
inline constexpr unsigned settable = mode | uid | gid | size | atime | mtime;
}  // namespace attr

/// vgetattrs: `mask` says which fields of `stat` (and `handle`) to fill; fields outside it
/// are left as they were. vsetattrs: sets the fields of `stat` that `mask` names (only
/// attr::settable bits; others are refused with errc::bad_argument), all in one SETATTR.
/// Neither follows a final symlink unless `follow` is set (the scalar calls never do): then
/// the links of the items named by path are resolved first, two round trips per level of
/// links for the whole vector; a relative target is taken from the link's directory, and an
/// absolute one, or one leaving the client's root, fails the call at that item with EINVAL
/// (ELOOP beyond 40 links), with nothing run.
struct vattr {
  vfile file;
  unsigned mask = attr::stat;
  file_stat stat;
  file_handle handle;
  bool follow = false;

  vattr() = default;
  vattr(vnfs::vfile f, unsigned m = attr::stat) : file(std::move(f)), mask(m) {}
};

}  // namespace vnfs
