// vnfs bench support (tests use it too): a scratch directory that cleans up after itself.
#pragma once

#include <filesystem>
#include <string_view>

namespace vnfs::bench {

/// A fresh, private (mode 0700) directory under $TMPDIR (or /tmp), created by mkdtemp and
/// removed with everything in it when the object is destroyed. Removal errors are ignored:
/// a destructor must not throw, and a leftover scratch dir is harmless.
class temp_dir {
 public:
  /// `prefix` becomes the start of the directory's name (e.g. /tmp/vnfs-test-Ab12Cd).
  /// Throws std::system_error if the directory cannot be created.
  explicit temp_dir(std::string_view prefix = "vnfs-test");
  ~temp_dir();

  temp_dir(temp_dir&& other) noexcept;
  temp_dir& operator=(temp_dir&& other) noexcept;
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// Absolute path of the directory; empty after being moved from.
  const std::filesystem::path& path() const noexcept { return path_; }

  /// `path() / relative`, for brevity in tests.
  std::filesystem::path operator/(const std::filesystem::path& relative) const { return path_ / relative; }

 private:
  void remove() noexcept;
  std::filesystem::path path_;
};

}  // namespace vnfs::bench
