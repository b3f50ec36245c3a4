// vnfs command line: a progress bar for long copies and removals, on stderr, only when
// stderr is a terminal (nothing at all is written otherwise).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace vnfs::cli {

/// One bar for one long operation. It appears once the operation has run for half a
/// second ($VNFS_PROGRESS_DELAY_MS milliseconds if set), is redrawn at most ten times a
/// second and always when the work is complete, and is erased by the destructor (or by
/// erase_active(), before an error message). One bar at a time.
class progress {
 public:
  /// `verb` names the work ("copying", "removing"); totals may grow with expect().
  explicit progress(std::string verb);
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  /// More work is known: `files` objects and `bytes` bytes.
  void expect(std::uint64_t files, std::uint64_t bytes);
  /// Work done since the last call.
  void advance(std::uint64_t files, std::uint64_t bytes);

  /// Erases the bar on screen, if one is shown (it is redrawn on the next advance).
  static void erase_active();

 private:
  void draw();

  std::string verb_;
  bool enabled_ = false;
  bool shown_ = false;
  std::uint64_t files_ = 0, bytes_ = 0, total_files_ = 0, total_bytes_ = 0;
  std::chrono::milliseconds delay_{500};
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace vnfs::cli
