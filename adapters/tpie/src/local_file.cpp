#include "local_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "failure.hpp"

namespace vnfs::tpie::detail {

namespace {
std::error_code last_error() { return {errno, std::generic_category()}; }
}  // namespace

std::unique_ptr<local_file> local_file::open(const std::string& path, int flags, bool missing_ok) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (missing_ok && errno == ENOENT) return nullptr;
    throw_io_error(last_error(), "open", path);
  }
  return std::unique_ptr<local_file>(new local_file(path, fd));
}

local_file::~local_file() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t local_file::read(std::uint64_t offset, std::byte* dst, std::size_t size, cache_hint) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd_, dst + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io_error(last_error(), "read", path());
    }
    if (n == 0) break;  // end of file
    done += static_cast<std::size_t>(n);
  }
  return done;
}

void local_file::write(std::uint64_t offset, const std::byte* src, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fd_, src + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io_error(last_error(), "write", path());
    }
    done += static_cast<std::size_t>(n);
  }
}

std::uint64_t local_file::size() {
  struct ::stat st {};
  if (::fstat(fd_, &st) != 0) throw_io_error(last_error(), "size of", path());
  return static_cast<std::uint64_t>(st.st_size);
}

void local_file::truncate(std::uint64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) throw_io_error(last_error(), "truncate", path());
}

void local_file::close() {
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) throw_io_error(last_error(), "close", path());
}

}  // namespace vnfs::tpie::detail
