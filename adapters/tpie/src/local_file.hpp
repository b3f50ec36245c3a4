// vnfs TPIE adapter (internal): a local POSIX file, synchronous (the kernel caches it).
#pragma once

#include <memory>

#include "open_file.hpp"

namespace vnfs::tpie::detail {

class local_file final : public open_file {
 public:
  /// Opens with open(2) `flags` (mode 0666, less the umask). Returns null when the file does
  /// not exist and `missing_ok`; throws io_error otherwise.
  static std::unique_ptr<local_file> open(const std::string& path, int flags, bool missing_ok);
  ~local_file() override;

  bool on_vnfs() const override { return false; }
  std::size_t read(std::uint64_t offset, std::byte* dst, std::size_t size, cache_hint hint) override;
  void write(std::uint64_t offset, const std::byte* src, std::size_t size) override;
  std::uint64_t size() override;
  void truncate(std::uint64_t size) override;
  void check() override {}
  void close() override;

 private:
  local_file(std::string path, int fd) : open_file(std::move(path)), fd_(fd) {}
  int fd_;
};

}  // namespace vnfs::tpie::detail
