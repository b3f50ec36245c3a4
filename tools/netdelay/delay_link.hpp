// vnfs-netdelay: one direction of a proxied TCP connection, delayed by a fixed time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "pipe_buffer.hpp"
#include "wake_lateness.hpp"

namespace vnfs::netdelay {

/// Limits of one delay_link.
struct link_limits {
  /// Capacity asked for each pipe that holds bytes in flight (F_SETPIPE_SZ; the kernel
  /// may give less, at most /proc/sys/fs/pipe-max-size for unprivileged processes).
  std::size_t pipe_size = 1024 * 1024;
  /// Upper bound of the bytes held waiting for their release time; the link stops reading
  /// while it is reached. It bounds memory per direction; at bandwidth B and delay D it
  /// must exceed B × D for the delay not to throttle.
  std::size_t max_queued = 64 * 1024 * 1024;
};

/// Moves the bytes that arrive on `from` to `to`, each chunk D after it was received, in
/// order, with no other throttling. "D after" holds on average: timers are set early by
/// the recent mean lateness of the host's timer wake-ups (wake_lateness), so a single
/// release may come up to that much (at most 200 us) early or late. Bytes never enter user space: they are spliced from
/// the socket into a FIFO of kernel pipes (pipe_buffer) and, when due, from there into
/// the other socket, so the proxy costs no copies at high bandwidth.
///
/// The end of the stream is delayed like data: D after `from` reports EOF (and once every
/// byte before it is written), `to` is shut down for sending, so a half-close crosses the
/// proxy; the other direction is not affected.
///
/// Failure — a read error other than EOF, a write error, no pipe to be had — is reported
/// once through `on_failure`; the owner then closes the connection. `on_done` is called
/// once after the half-close has been forwarded. Neither is called after close().
///
/// Not thread-safe: all calls and handlers run on the executor of the sockets, which must
/// be single-threaded (or a strand). The link shares ownership of both sockets, so they
/// outlive its pending operations; the owner closes them to cancel those. The sockets are
/// switched to non-blocking mode.
class delay_link : public std::enable_shared_from_this<delay_link> {
 public:
  using clock = std::chrono::steady_clock;
  using socket_ptr = std::shared_ptr<boost::asio::ip::tcp::socket>;

  /// `lateness` (shared by the links of one event loop, and outliving them) sets timers
  /// early by the host's usual wake-up lateness; see wake_lateness.
  delay_link(socket_ptr from, socket_ptr to, clock::duration delay, link_limits limits,
             std::shared_ptr<wake_lateness> lateness, std::function<void()> on_done,
             std::function<void()> on_failure);

  /// Starts reading. Call once.
  void start();

  /// Stops calling back and drops the callbacks (which may own the owner); pending
  /// operations end with operation_aborted once the owner closes the sockets.
  void close() noexcept;

  /// Bytes written to `to` so far.
  std::uint64_t bytes_forwarded() const noexcept { return forwarded_; }

 private:
  /// Bytes received together, released together.
  struct segment {
    std::size_t size;
    clock::time_point due;
  };

  void read_more();
  void on_readable();
  void write_more();
  void on_writable();
  void forward_eof();
  void wait_until(clock::time_point due);
  void fail();

  socket_ptr from_;
  socket_ptr to_;
  clock::duration delay_;
  link_limits limits_;
  std::shared_ptr<wake_lateness> lateness_;
  std::function<void()> on_done_, on_failure_;
  boost::asio::steady_timer timer_;

  pipe_buffer pipes_;
  std::deque<segment> segments_;  // in pipes_, in order; the front one may be partly written
  bool read_waiting_ = false;     // an async_wait for readability is pending
  bool read_paused_ = false;      // pipes_ is full: reading resumes after a drain
  bool write_waiting_ = false;    // a wait for writability or for a due time is pending
  bool eof_ = false;              // `from` reported EOF
  clock::time_point eof_due_{};
  bool finished_ = false;         // done, failed or closed: no more callbacks
  std::uint64_t forwarded_ = 0;
};

}  // namespace vnfs::netdelay
