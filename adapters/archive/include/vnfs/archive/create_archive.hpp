// vnfs archive adapter: writing an archive of a tree on a vnfs client.
//
// The tree is walked with one recursive vlistdir (attributes included); symlink targets
// come from vreadlink and file data from vread, in batches of at most `batch_bytes` and
// `batch_items` files (a larger file takes several batches), so memory stays bounded.
// A file with several names (nlink > 1, one fileid) is stored once, its other names as
// hard-link entries. Owners are stored numerically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "vnfs/archive/archive_stats.hpp"
#include "vnfs/client.hpp"

namespace vnfs::archive {

struct create_options {
  /// A libarchive format name: "pax" (POSIX pax: every entry with its times to the
  /// nanosecond), "paxr" (restricted pax, bsdtar's default: pax headers only where ustar
  /// cannot say it), "gnutar", "ustar", "cpio", "zip", ...
  std::string format = "pax";
  /// A libarchive filter name: "none", "gzip", "xz", "zstd", "bzip2", ...
  std::string filter = "none";
  std::uint64_t batch_bytes = std::uint64_t(64) << 20;
  std::size_t batch_items = 4096;
  progress_fn progress;
};

/// Archives everything under the directory `root` of `c` (not `root` itself: entry names
/// are relative to it, "a", "a/b.txt") into the file descriptor `fd`, which stays open.
/// Entries come depth-first, each directory before what is in it, sorted by name.
/// Special files are skipped (counted in `skipped`). Throws archive_error.
archive_stats create_archive(client& c, const std::string& root, int fd, const create_options& options = {});

}  // namespace vnfs::archive
