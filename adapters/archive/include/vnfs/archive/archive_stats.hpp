// vnfs archive adapter: what an archive or extraction did, and the progress callback.
#pragma once

#include <cstdint>
#include <functional>

namespace vnfs::archive {

/// Entries written to, or extracted from, an archive.
struct archive_stats {
  std::uint64_t directories = 0;
  std::uint64_t files = 0;      ///< regular files with their data
  std::uint64_t symlinks = 0;
  std::uint64_t hardlinks = 0;  ///< hard-link entries (further names of a file)
  std::uint64_t skipped = 0;    ///< special files (devices, fifos, sockets) left out
  std::uint64_t bytes = 0;      ///< file data
  std::uint64_t entries() const { return directories + files + symlinks + hardlinks; }
};

/// Called after each batch with the totals so far. Runs on the caller's thread.
using progress_fn = std::function<void(const archive_stats&)>;

}  // namespace vnfs::archive
