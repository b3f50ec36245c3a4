// vnfs adapters: a vnfs call's result as a C library call would have returned it, for the
// adapters that answer POSIX calls on mapped paths (adapters/bdb's and adapters/tpie's stat,
// mkdir, remove ...).
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <system_error>

#include "vnfs/file_stat.hpp"

namespace vnfs::adapters {

/// The file-type bits of st_mode for `t` (0 for an unknown type).
inline mode_t type_bits(file_type t) {
  switch (t) {
    case file_type::regular: return S_IFREG;
    case file_type::directory: return S_IFDIR;
    case file_type::symlink: return S_IFLNK;
    case file_type::block: return S_IFBLK;
    case file_type::character: return S_IFCHR;
    case file_type::fifo: return S_IFIFO;
    case file_type::socket: return S_IFSOCK;
    case file_type::unknown: break;
  }
  return 0;
}

/// Fills `sb` from `st`. st_dev is derived from `url`, so that files of one mapping share a
/// device number and (st_dev, st_ino) identifies a file as it does locally.
inline void to_posix_stat(const file_stat& st, const std::string& url, struct stat* sb) {
  std::memset(sb, 0, sizeof *sb);
  sb->st_dev = static_cast<dev_t>(std::hash<std::string>{}(url) & 0xffffffffu);
  sb->st_ino = static_cast<ino_t>(st.fileid);
  sb->st_mode = type_bits(st.type) | st.mode;
  sb->st_nlink = st.nlink;
  sb->st_uid = st.uid;
  sb->st_gid = st.gid;
  sb->st_size = static_cast<off_t>(st.size);
  sb->st_blksize = 4096;
  sb->st_blocks = static_cast<blkcnt_t>((st.space_used + 511) / 512);
  sb->st_atim = st.atime;
  sb->st_mtim = st.mtime;
  sb->st_ctim = st.ctime;
}

/// The errno for the error of a vnfs call: its POSIX meaning where it has one (NFS4ERR_NOENT
/// is ENOENT ...), EIO for the connection's own failures and for everything else.
inline int to_errno(const std::error_code& ec) {
  std::error_condition c = ec.default_error_condition();
  if (c.category() == std::generic_category() && c.value() != 0) {
    switch (c.value()) {
      case ECONNREFUSED: case ECONNRESET: case ECONNABORTED: case ETIMEDOUT: case EHOSTUNREACH:
      case ENETUNREACH: case EPIPE: case ENOTCONN: case EPROTO:
        return EIO;
      default:
        return c.value();
    }
  }
  return EIO;
}

}  // namespace vnfs::adapters
