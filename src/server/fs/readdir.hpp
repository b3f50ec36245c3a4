// vnfsd export file system: reading directories with resumable cookies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "server/fs/error.hpp"
#include "server/fs/object.hpp"

namespace vnfs::server::fs {

struct dir_entry {
  std::string name;
  /// Resumes the listing just after this entry: the file system's own d_off (getdents64),
  /// stable across calls and processes as long as the directory exists.
  std::uint64_t cookie = 0;
  std::uint64_t ino = 0;
  file_type type = file_type::regular;  ///< from d_type, or from the object when opened
  bool type_known = false;              ///< false if the file system reported DT_UNKNOWN
  /// With readdir_options::open_objects: the entry as an object (as lookup() would return
  /// it), or empty with open_error set (e.g. ENOENT: removed since it was listed).
  object obj;
  std::error_code open_error;
};

struct readdir_options {
  std::size_t max_entries = 1024;  ///< at least 1
  bool open_objects = false;       ///< also lookup() each entry (for attributes, handles)
};

struct readdir_result {
  std::vector<dir_entry> entries;
  bool eof = false;  ///< no entries follow the last one returned
};

/// Lists `dir` from `cookie` (0: the beginning; otherwise an entry's cookie from an
/// earlier call), at most max_entries entries, "." and ".." left out. Needs read access to
/// the directory (kernel check under the current identity).
///
/// Cookies are d_off values: opaque 63-bit positions (ext4: name hashes). A cookie the
/// file system rejects (negative as int64, or refused by lseek) is errc::bad_cookie; on
/// hash-ordered directories any value is a valid position, so a stale cookie cannot always
/// be detected: the listing then resumes at that hash position. NFSv4 reserves cookies 1
/// and 2; the file systems vnfsd serves (ext4, xfs, btrfs, tmpfs) give those only to
/// "." and "..", which are never returned.
readdir_result readdir(const object& dir, std::uint64_t cookie, const readdir_options& opts,
                       std::error_code& ec);

}  // namespace vnfs::server::fs
