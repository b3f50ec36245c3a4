// vnfs test support: a minimal synchronous RPC client channel over TCP, for tests that speak
// RPC records by hand (exact bytes, malformed input, several fragments, raw retransmissions).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "vnfs/rpc/auth.hpp"
#include "vnfs/rpc/message.hpp"
#include "vnfs/rpc/record_marking.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::test {

/// One blocking TCP connection speaking RPC records. Not thread-safe: one caller at a time.
/// Every failure is an exception: std::system_error for socket errors, EOF
/// (errc::connection_reset) and receive timeouts (errc::timed_out), so a test can never hang.
class blocking_channel {
 public:
  static constexpr std::chrono::milliseconds default_timeout{30000};
  static constexpr std::size_t default_max_record = std::size_t{64} << 20;

  /// Connects to host:port (a name or a numeric address, IPv4 or IPv6).
  static blocking_channel connect(const std::string& host, std::uint16_t port,
                                  std::chrono::milliseconds receive_timeout = default_timeout);

  blocking_channel(blocking_channel&& o) noexcept;
  blocking_channel& operator=(blocking_channel&& o) noexcept;
  ~blocking_channel();

  /// Sends msg as one record by a gather write (no flattening). With max_fragment below the
  /// message size the record is split into several fragments (tests of reassembly).
  void send_record(const xdr::encoder& msg, std::size_t max_fragment = rpc::max_fragment_length);
  void send_record(std::span<const std::byte> msg, std::size_t max_fragment = rpc::max_fragment_length);
  /// Writes bytes as they are, with no record mark (hostile-input tests).
  void send_raw(std::span<const std::byte> bytes);

  /// Receives one whole record (all its fragments).
  std::vector<std::byte> receive_record();

  void set_receive_timeout(std::chrono::milliseconds t);
  /// Records larger than this make receive_record throw std::length_error.
  void set_max_record(std::size_t n) { max_record_ = n; }
  /// Half-closes the sending side (the peer sees EOF).
  void shutdown_send();
  void close();
  bool is_open() const { return fd_ >= 0; }
  int native_handle() const { return fd_; }

  /// A fresh transaction id (starts at a random value, then increments).
  std::uint32_t next_xid() { return xid_++; }

 private:
  explicit blocking_channel(int fd);
  void write_all(std::span<const std::span<const std::byte>> buffers);
  void read_exact(std::byte* p, std::size_t n);

  int fd_ = -1;
  std::size_t max_record_ = default_max_record;
  std::uint32_t xid_ = 0;
};

/// Encodes one RPC call (header, then `args`), sends it, waits for the reply and returns the
/// bytes after the reply header (the procedure's results). Throws rpc::reply_error when the
/// reply is not MSG_ACCEPTED/SUCCESS, std::runtime_error when its xid does not match, and
/// xdr::decode_error when it is malformed. The header's xid is used as given.
std::vector<std::byte> rpc_call(blocking_channel& ch, const rpc::call_header& header,
                                const std::function<void(xdr::encoder&)>& args);

/// The same with a fresh xid from the channel.
std::vector<std::byte> rpc_call(blocking_channel& ch, std::uint32_t prog, std::uint32_t vers, std::uint32_t proc,
                                const std::function<void(xdr::encoder&)>& args,
                                const rpc::opaque_auth& cred = {}, const rpc::opaque_auth& verf = {});

}  // namespace vnfs::test
