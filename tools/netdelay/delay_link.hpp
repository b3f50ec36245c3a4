// vnfs-netdelay: one direction of a proxied TCP connection, delayed by a fixed time.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

namespace vnfs::netdelay {

/// Limits of one delay_link.
struct link_limits {
  /// Size of each read. Large reads keep the per-byte cost low at high bandwidth.
  std::size_t read_size = 256 * 1024;
  /// Reads of fewer bytes are copied into a buffer of their own size, so that many small
  /// messages in flight do not each hold a read_size buffer.
  std::size_t small_read = 16 * 1024;
  /// Upper bound of the bytes held (buffer capacity) waiting for their release time; the
  /// link stops reading while it is reached. It bounds memory per direction; at bandwidth B
  /// and delay D it must exceed B × D for the delay not to throttle.
  std::size_t max_queued = 64 * 1024 * 1024;
};

/// Copies the bytes that arrive on `from` to `to`, each chunk D after it was received,
/// in order, with no other throttling. The end of the stream is delayed like data: D
/// after `from` reports EOF (and once every byte before it has been written), `to` is
/// shut down for sending, so a half-close crosses the proxy. Other directions are not
/// affected by that.
///
/// Failure — a read error other than EOF, or a write error — is reported once through
/// `on_failure`; the owner then closes the connection. `on_done` is called once after a
/// half-close has been forwarded. Neither is called after close().
///
/// Not thread-safe: all calls and handlers run on the executor of the sockets, which must
/// be a single-threaded one (or a strand). The link shares ownership of both sockets, so
/// they outlive its pending operations; the owner closes them to cancel those.
class delay_link : public std::enable_shared_from_this<delay_link> {
 public:
  using clock = std::chrono::steady_clock;

  using socket_ptr = std::shared_ptr<boost::asio::ip::tcp::socket>;

  delay_link(socket_ptr from, socket_ptr to, clock::duration delay,
             link_limits limits, std::function<void()> on_done, std::function<void()> on_failure);

  /// Starts reading. Call once.
  void start();

  /// Stops calling back and drops the callbacks (which may own the owner); pending
  /// operations end with operation_aborted once the owner closes the sockets.
  void close() noexcept;

  /// Bytes written to `to` so far.
  std::uint64_t bytes_forwarded() const noexcept { return forwarded_; }

 private:
  struct chunk {
    std::vector<char> data;  // size() is the payload; capacity() counts against max_queued
    clock::time_point due;
  };

  void read_more();
  void write_more();
  void forward_eof();
  void fail();
  std::vector<char> take_buffer();
  void give_back(std::vector<char>&& buffer);

  socket_ptr from_;
  socket_ptr to_;
  clock::duration delay_;
  link_limits limits_;
  std::function<void()> on_done_, on_failure_;
  boost::asio::steady_timer timer_;

  std::deque<chunk> queue_;           // received, not yet (completely) written, in order
  std::size_t queued_ = 0;            // sum of capacities in queue_ and reading_
  std::vector<char> reading_;         // the buffer of the read in progress
  std::vector<std::vector<char>> spare_;  // a few read_size buffers for reuse
  std::size_t writing_count_ = 0;     // chunks at the front of queue_ being written
  bool reading_active_ = false;
  bool writing_active_ = false;       // a write or a wait for a due time is pending
  bool eof_ = false;                  // `from` reported EOF
  clock::time_point eof_due_{};
  bool finished_ = false;             // done, failed or closed: no more callbacks
  std::uint64_t forwarded_ = 0;
};

}  // namespace vnfs::netdelay
