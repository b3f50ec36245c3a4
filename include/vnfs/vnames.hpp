// vnfs public API: the items of the vectorized namespace calls — vopen, vmkdir, vsymlink,
// vhardlink, vrename (vremove and vreadlink take plain paths).
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <string>

#include "vnfs/file.hpp"

namespace vnfs {

/// vopen: open(2) flags and creation mode per file; `result` is the open file.
struct vopen_item {
  std::string path;
  int flags = O_RDONLY;
  std::uint32_t mode = 0644;
  file result;
};

/// vmkdir: a directory to create and its permission bits.
struct vmkdir_item {
  std::string path;
  std::uint32_t mode = 0755;
};

/// vsymlink: a symlink at `path` whose contents are `target`. vhardlink: a new name `path`
/// for the existing object `target`.
struct vlink {
  std::string target;
  std::string path;
};

/// vrename: `from` becomes `to` (replacing a compatible `to`, as rename(2)).
struct vrename_item {
  std::string from;
  std::string to;
};

}  // namespace vnfs
