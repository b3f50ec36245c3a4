// vnfs archive adapter: extracting an archive into a tree on a vnfs client.
//
// The archive (any format and filter libarchive reads, detected) is read in chunks of
// `read_block` bytes; its entries are gathered into batches of at most `batch_bytes` of
// data and `batch_items` entries, and each batch is applied with vmkdir (parents before
// children), vwrite (create, truncate and write in one go), vsymlink and vhardlink, in this
// order. vsetattrs (mode, access and modification times) runs last, once every batch is in:
// files and symlinks, then directories deepest first, so that no write disturbs them.
// Until then directories are owner-writable and files owner-writable.
//
// Existing directories are merged into; existing files are overwritten; existing symlinks
// and hard-link names are replaced. Parents missing from the archive are created
// (ensure_directory, mode 0755). Names are taken relative to `dest`: a leading "/" or "./"
// is dropped, the entry "." itself is skipped, a name with a ".." component is refused.
// Owners (numeric uid and gid) are restored only when `restore_owner` is set, by a
// vsetattrs pass of their own before the modes (a change of owner clears set-user-ID bits).
//
// A damaged archive stops the extraction with archive_error, after every entry read
// completely before the damage has been written and given its attributes; the entry being
// read when the damage showed is not left behind partially written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "vnfs/archive/archive_stats.hpp"
#include "vnfs/client.hpp"

namespace vnfs::archive {

struct extract_options {
  std::size_t read_block = std::size_t(4) << 20;
  std::uint64_t batch_bytes = std::uint64_t(64) << 20;
  std::size_t batch_items = 4096;
  /// Also set each entry's uid and gid (as GNU tar does for root).
  bool restore_owner = false;
  progress_fn progress;
};

/// Extracts the archive read from the file descriptor `fd` (left open) into the directory
/// `dest` of `c`, creating it (and its parents) if missing. Throws archive_error.
archive_stats extract_archive(client& c, const std::string& dest, int fd, const extract_options& options = {});

}  // namespace vnfs::archive
