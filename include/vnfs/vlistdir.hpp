// vnfs public API: vlistdir — list many directories at once, with attributes, optionally
// recursively (breadth-first), delivering entries to a callback (papers/000 §3).
#pragma once

#include <cstddef>
#include <string>

#include "vnfs/file_stat.hpp"
#include "vnfs/vattrs.hpp"

namespace vnfs {

/// Called once per entry ("." and ".." are not entries). `dir` is the directory's path
/// relative to the client's root; `depth` is 0 for the directories the caller named.
/// Calls come one at a time (never concurrently), on a client thread (also for the
/// synchronous form, whose caller waits meanwhile); the callback must not block on the
/// client. Entries of one directory come in the server's order; with recursion, a level is
/// listed after the one above it.
using vlistdir_callback = void (*)(const std::string& dir, const dir_entry& entry, std::size_t depth, void* user);

struct vlistdir_options {
  /// Attributes wanted with each entry (attr bits; type is always included).
  unsigned mask = attr::stat;
  /// Also list every subdirectory found, level by level (symlinks are not followed).
  bool recursive = false;
  vlistdir_callback callback = nullptr;
  void* user = nullptr;
};

}  // namespace vnfs
