// vnfs TPIE adapter (internal): an open file behind a raw_file_accessor, local or on vnfs.
// The accessor keeps the position and serialises calls; an open_file sees offsets only and
// is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "vnfs/tpie/cache_hint.hpp"

namespace vnfs::tpie::detail {

class open_file {
 public:
  explicit open_file(std::string path) : path_(std::move(path)) {}
  virtual ~open_file() = default;
  open_file(const open_file&) = delete;
  open_file& operator=(const open_file&) = delete;

  /// The path the application opened.
  const std::string& path() const { return path_; }
  virtual bool on_vnfs() const = 0;

  /// Copies up to `size` bytes at `offset` into `dst`; fewer only at the end of the file.
  /// `hint` is the accessor's current cache hint.
  virtual std::size_t read(std::uint64_t offset, std::byte* dst, std::size_t size, cache_hint hint) = 0;
  /// Writes `size` bytes at `offset` (possibly queued: see remote_file).
  virtual void write(std::uint64_t offset, const std::byte* src, std::size_t size) = 0;
  /// The size, counting every write made so far.
  virtual std::uint64_t size() = 0;
  virtual void truncate(std::uint64_t size) = 0;
  /// Throws the first failure of a queued operation that has arrived and not been thrown.
  virtual void check() = 0;
  /// Waits for everything queued, closes, then throws the first failure not yet thrown.
  /// The object is closed afterwards whatever happened.
  virtual void close() = 0;

 private:
  std::string path_;
};

}  // namespace vnfs::tpie::detail
