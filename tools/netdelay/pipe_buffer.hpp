// vnfs-netdelay: a FIFO of bytes held in kernel pipes, filled from and drained to sockets
// with splice(2), so the bytes never pass through user space.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <deque>
#include <vector>

namespace vnfs::netdelay {

/// An ordered byte queue made of pipes: bytes are spliced from a socket into the last
/// pipe and out of the first one into another socket. A pipe has a limited number of
/// slots (one per page or fragment received, so small messages fill it long before its
/// byte capacity), so when the last pipe is full a new one is appended; emptied pipes are
/// kept for reuse or closed.
///
/// Bounds: at most `max_bytes` held (fill() takes no more once reached) and at most
/// max_bytes / pipe_size + 2 pipes. Not thread-safe. File descriptors given to fill()
/// and drain() must be non-blocking.
class pipe_buffer {
 public:
  /// Outcome of one fill().
  enum class fill_result {
    data,        // bytes were added (count in the out parameter)
    eof,         // the socket has reached the end of its stream
    would_block, // nothing to read right now
    full,        // the buffer is at its bounds; drain first
    error,       // errno says why (from splice, or from pipe creation when none exists)
  };

  pipe_buffer(std::size_t pipe_size, std::size_t max_bytes);
  ~pipe_buffer();
  pipe_buffer(const pipe_buffer&) = delete;
  pipe_buffer& operator=(const pipe_buffer&) = delete;

  /// Splices what `fd` has (up to the room left) into the buffer; `added` gets the count.
  fill_result fill(int fd, std::size_t& added);

  /// Splices up to `n` bytes from the front of the buffer into `fd`. Returns the count
  /// moved (it may be less than n, which stops at the end of the first pipe), or -1 with
  /// errno (EAGAIN: `fd` cannot take more now). n must not exceed size().
  ssize_t drain(int fd, std::size_t n);

  /// Bytes held.
  std::size_t size() const noexcept { return total_; }

 private:
  struct pipe {
    int read_fd = -1;
    int write_fd = -1;
    std::size_t bytes = 0;  // held in this pipe
  };

  /// Appends an empty pipe (a spare or a new one); false with errno if none can be made.
  bool add_pipe();
  void retire_front();

  std::size_t pipe_size_;
  std::size_t max_bytes_;
  std::size_t max_pipes_;
  std::deque<pipe> pipes_;    // in order; fill() writes to back(), drain() reads front()
  std::vector<pipe> spare_;   // empty pipes kept for reuse
  std::size_t total_ = 0;
};

}  // namespace vnfs::netdelay
