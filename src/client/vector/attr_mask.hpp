// vnfs client: copying the attributes a mask names (vgetattrs fills only those).
#pragma once

#include "vnfs/file_stat.hpp"
#include "vnfs/vattrs.hpp"

namespace vnfs::detail {

/// Copies the fields of `from` that `mask` (attr:: bits) names into `to`.
inline void copy_masked(const file_stat& from, unsigned mask, file_stat& to) {
  if (mask & attr::type) to.type = from.type;
  if (mask & attr::mode) to.mode = from.mode;
  if (mask & attr::nlink) to.nlink = from.nlink;
  if (mask & attr::uid) to.uid = from.uid;
  if (mask & attr::gid) to.gid = from.gid;
  if (mask & attr::size) to.size = from.size;
  if (mask & attr::space_used) to.space_used = from.space_used;
  if (mask & attr::fileid) to.fileid = from.fileid;
  if (mask & attr::change) to.change = from.change;
  if (mask & attr::atime) to.atime = from.atime;
  if (mask & attr::mtime) to.mtime = from.mtime;
  if (mask & attr::ctime) to.ctime = from.ctime;
}

}  // namespace vnfs::detail
