#include "pipe_buffer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace vnfs::netdelay {

namespace {
// Empty pipes kept for reuse by one buffer.
constexpr std::size_t max_spare = 2;

void close_pipe(int read_fd, int write_fd) noexcept {
  ::close(read_fd);
  ::close(write_fd);
}

/// Whether `fd` has something to report now: data, end of stream or an error.
bool readable_now(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) != 0;
}
}  // namespace

pipe_buffer::pipe_buffer(std::size_t pipe_size, std::size_t max_bytes)
    : pipe_size_(pipe_size), max_bytes_(max_bytes), max_pipes_(max_bytes / std::max<std::size_t>(pipe_size, 1) + 2) {}

pipe_buffer::~pipe_buffer() {
  for (auto& p : pipes_) close_pipe(p.read_fd, p.write_fd);
  for (auto& p : spare_) close_pipe(p.read_fd, p.write_fd);
}

bool pipe_buffer::add_pipe() {
  if (!spare_.empty()) {
    pipes_.push_back(spare_.back());
    spare_.pop_back();
    return true;
  }
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  // A larger pipe means fewer splices per byte; the kernel may refuse (per-user limits),
  // and the default size still works.
  ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(pipe_size_));
  pipes_.push_back(pipe{fds[0], fds[1], 0});
  return true;
}

void pipe_buffer::retire_front() {
  pipe p = pipes_.front();
  pipes_.pop_front();
  if (spare_.size() < max_spare)
    spare_.push_back(p);
  else
    close_pipe(p.read_fd, p.write_fd);
}

pipe_buffer::fill_result pipe_buffer::fill(int fd, std::size_t& added) {
  added = 0;
  if (total_ >= max_bytes_) return fill_result::full;
  if (pipes_.empty() && !add_pipe()) return fill_result::error;
  // Two attempts: into the last pipe, and if that one turns out full, into a fresh one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    pipe& p = pipes_.back();
    ssize_t n = ::splice(fd, nullptr, p.write_fd, nullptr, std::min(pipe_size_, max_bytes_ - total_),
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      p.bytes += static_cast<std::size_t>(n);
      total_ += static_cast<std::size_t>(n);
      added = static_cast<std::size_t>(n);
      return fill_result::data;
    }
    if (n == 0) return fill_result::eof;
    if (errno != EAGAIN) return fill_result::error;
    // EAGAIN means the socket has nothing, or the pipe has no free slot. An empty pipe
    // always has room; otherwise ask the socket.
    if (p.bytes == 0 || !readable_now(fd)) return fill_result::would_block;
    if (pipes_.size() >= max_pipes_) return fill_result::full;
    if (!add_pipe()) return fill_result::full;  // out of descriptors: wait for drains
  }
  return fill_result::would_block;
}

ssize_t pipe_buffer::drain(int fd, std::size_t n) {
  // Pipes left empty by earlier drains stay at the front only while they are the last.
  while (!pipes_.empty() && pipes_.front().bytes == 0 && pipes_.size() > 1) retire_front();
  if (pipes_.empty() || n == 0) return 0;
  pipe& p = pipes_.front();
  ssize_t m = ::splice(p.read_fd, nullptr, fd, nullptr, std::min(n, p.bytes), SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (m > 0) {
    p.bytes -= static_cast<std::size_t>(m);
    total_ -= static_cast<std::size_t>(m);
    if (p.bytes == 0 && pipes_.size() > 1) retire_front();
  }
  return m;
}

}  // namespace vnfs::netdelay
