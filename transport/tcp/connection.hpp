// vnfs TCP transport: one RPC-record connection over a connected socket.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "vnfs/rpc/record_marking.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::transport::tcp {

namespace asio = boost::asio;

/// Default bound on an incoming record: a 8 MiB payload plus room for the RPC/NFS headers.
inline constexpr std::size_t default_max_record_size = (8u << 20) + 64 * 1024;

/// Counters since the connection was created. Bytes are wire bytes (record marks included).
struct connection_stats {
  std::uint64_t records_in = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t records_out = 0;
  std::uint64_t bytes_out = 0;
};

/// Exchanges RPC records (RFC 5531 §11 record marking) over a TCP socket.
///
/// Owned by shared_ptr: pending I/O keeps it alive, so it lives until it is closed and its
/// last operation has completed. All socket work runs on the connection's own strand, so
/// an io_context may be run by several threads.
///
/// Handlers run on that strand and must not block long: a server posts slow work elsewhere
/// and answers later through send(), which any thread may call. A reply sent from the
/// record handler itself starts to be written before send() returns.
class connection : public std::enable_shared_from_this<connection> {
 public:
  /// Receives each complete record, in arrival order. If it throws, the connection closes.
  using record_handler = std::function<void(const std::shared_ptr<connection>&, std::vector<std::byte> record)>;
  /// Called once when the connection closes. The code is empty after close(); otherwise it
  /// says why: EOF/read or write errors, errc::message_size for an oversize record,
  /// errc::timed_out when options::idle_timeout ran out.
  using close_handler = std::function<void(const std::shared_ptr<connection>&, std::error_code)>;

  struct options {
    std::size_t max_record_size = default_max_record_size;
    bool no_delay = true;  // RPC is request/response: never wait for Nagle
    /// Limits against a peer that misbehaves (0: no limit).
    /// idle_timeout: the connection closes (errc::timed_out) when this long passes with no
    /// complete record arriving and no reply written, while no request is outstanding. A
    /// record sent half and then stalled (slow-loris), or trickled, cannot keep it open.
    std::chrono::milliseconds idle_timeout{0};
    /// max_in_flight: reading pauses while this many records were delivered and fewer
    /// messages were written back (a server's requests not yet answered), so a peer that
    /// pipelines calls without reading the replies holds a bounded amount of memory. Meant
    /// for request/response use, one message sent per record received.
    std::size_t max_in_flight = 0;
  };

  static std::shared_ptr<connection> create(asio::ip::tcp::socket socket, const options& opts,
                                            record_handler on_record, close_handler on_close = {});
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Starts reading records. Call once, after create().
  void start();

  /// Queues `msg` to be written as ONE record (a single fragment), after every message
  /// queued before it, by gather writes of msg.chain(): referenced payloads are sent from
  /// where they are, and payloads left in a file (xdr::file_range) by sendfile(2) from the
  /// page cache, in order between the bytes around them. A file that ends before its range
  /// does (it shrank after the range was encoded) gives zeros for the missing bytes, so the
  /// record keeps the length its encoding announced; an error reading it closes the
  /// connection. When nothing is being written, a call from outside the strand writes what
  /// the socket takes at once from the calling thread (without waiting), and the strand
  /// writes the rest. `keepalive` is held until the write completes, to keep memory and
  /// descriptors that msg references alive. Thread-safe. Returns false, sending nothing,
  /// once closed. Throws std::length_error for a message with file payloads of more than
  /// rpc::max_fragment_length bytes.
  bool send(xdr::encoder&& msg, std::shared_ptr<const void> keepalive = {});

  /// Closes the socket; queued messages not yet written are discarded. Thread-safe,
  /// idempotent; the close handler runs (on the strand) with an empty error code.
  void close();

  bool is_open() const { return !closed_.load(std::memory_order_acquire); }
  connection_stats stats() const;
  /// The peer, as captured when the connection was created.
  const asio::ip::tcp::endpoint& remote_endpoint() const { return remote_; }

 private:
  struct passkey {};

 public:
  connection(passkey, asio::ip::tcp::socket socket, const options& opts, record_handler on_record,
             close_handler on_close);

 private:
  struct outgoing {
    xdr::encoder msg;
    std::shared_ptr<const void> keepalive;
  };
  /// One stretch of the bytes to write: memory (`data`), a file range (`fd` >= 0, sent by
  /// sendfile), or, with neither, zeros (what a file range cut short still owes).
  struct segment {
    const std::byte* data = nullptr;
    std::size_t size = 0;
    int fd = -1;
    std::uint64_t offset = 0;
  };
  /// How far into a list of segments the writing is.
  struct cursor {
    std::size_t index = 0, offset = 0;
  };

  void read_next();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void write_next();
  void write_more();                              // on the strand: goes on with segments_
  void write_done(const boost::system::error_code& ec);  // on the strand: segments_ all written, or ec
  std::size_t write_now(const outgoing& o);  // under mu_, off the strand: bytes the socket took
  /// Writes `segs` from `at` as far as the socket takes without waiting; returns the bytes
  /// written and advances `at` (to segs.size() when all is written). Sets `ec` on an error.
  std::size_t write_segments(std::vector<segment>& segs, cursor& at, boost::system::error_code& ec);
  void shut(std::error_code why);  // on the strand
  void arm_idle_timer();           // on the strand
  void on_idle_timer();            // on the strand

  asio::ip::tcp::socket socket_;
  asio::strand<asio::any_io_executor> strand_;
  asio::ip::tcp::endpoint remote_;
  rpc::record_assembler assembler_;  // strand only
  std::chrono::milliseconds idle_timeout_;
  std::size_t max_in_flight_;
  asio::steady_timer idle_timer_;                       // strand only
  std::chrono::steady_clock::time_point last_progress_;  // strand only: last record in or reply out
  std::size_t in_flight_ = 0;                           // strand only: records in - messages written
  bool reading_paused_ = false;                         // strand only: held back by max_in_flight
  record_handler on_record_;
  close_handler on_close_;

  std::mutex mu_;                  // guards queue_, writing_ and the closed_ transition
  std::vector<outgoing> queue_;
  bool writing_ = false;           // a write_next chain is active
  std::size_t head_sent_ = 0;      // bytes of queue_.front() that send() wrote itself
  std::atomic<bool> closed_{false};
  bool socket_closed_ = false;     // strand only

  std::vector<outgoing> inflight_;             // strand only: the batch being written
  std::vector<rpc::framed_record> frames_;     // strand only: their record marks
  std::vector<segment> segments_;              // strand only: the batch's bytes
  cursor written_;                             // strand only: how far segments_ went

  std::atomic<std::uint64_t> records_in_{0}, bytes_in_{0}, records_out_{0}, bytes_out_{0};
};

}  // namespace vnfs::transport::tcp
