// vnfs transport: the RPC-client seam (as LevelDB's Env is for its I/O) — how a caller's
// RPC calls reach one server and replies come back, with two implementations: TCP with
// record marking (tcp/tcp_channel.cpp) and RPC-over-RDMA (rdma/rdma_channel.cpp). What the
// channel needs to know of a reply's format to place payloads straight into the caller's
// memory it receives with each call (reply_guide.hpp); the caller's registered memory it
// sees as registered_region.hpp says.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "transport/registered_region.hpp"
#include "transport/reply_guide.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::transport {

/// What a channel tells its caller. All run on the caller's I/O thread.
struct channel_events {
  /// A reply. `record` is the RPC reply (from the xid on) less the payloads placed in the
  /// targets of the guide sent with the call, which has seen the reply as far as placing
  /// them needed and knows which it placed.
  std::function<void(std::uint32_t xid, std::vector<std::byte> record)> on_reply;
  /// A call the transport refused (RPC-over-RDMA's RDMA_ERROR): it gets no reply.
  std::function<void(std::uint32_t xid, std::error_code)> on_call_failed;
  /// The connection broke: once per successful connect(), never after close().
  std::function<void(std::error_code)> on_lost;
};

/// The caller's wire counters, updated by the channel.
struct wire_counters {
  std::atomic<std::uint64_t>& sent;
  std::atomic<std::uint64_t>& received;
  std::atomic<std::uint64_t>& direct;  // payload placed straight into the target
  std::atomic<std::uint64_t>& copied;  // payload the channel copied into a target
};

/// One connection at a time to one server. Every method runs on the caller's I/O thread.
class rpc_channel {
 public:
  virtual ~rpc_channel() = default;
  /// (Re)connects; `done` runs once on the I/O thread. Replaces a lost connection.
  virtual void connect(std::function<void(std::error_code)> done) = 0;
  /// Sends an RPC call (no record mark) on the current connection. The channel holds
  /// `call` until sent (TCP) or answered (RDMA); the memory it references must live as
  /// long. `guide`: what to receive of the reply to `xid` and where its payloads may be
  /// placed directly (null: receive it whole, place nothing); the channel may place any of
  /// them or none (RDMA: those before the first empty target, up to 64), and uses the guide
  /// for one reply. The channel keeps `guide` only weakly: the caller owns it, its targets
  /// are valid as long as it lives, and the caller drops it when it gives up on `xid` (a
  /// reply that comes later is placed nowhere). `registered`: the caller's registered
  /// regions the call's payloads (sent and received) lie in; a channel that must register
  /// memory with its transport (RDMA) does so once per region through their attachments,
  /// and exposes the payloads through that. The channel keeps them as long as `call`.
  /// `max_reply` bounds the reply's size.
  virtual void send(std::uint32_t xid, std::shared_ptr<const xdr::encoder> call, std::shared_ptr<reply_guide> guide,
                    const std::vector<std::shared_ptr<registered_region>>& registered, std::size_t max_reply) = 0;
  /// Drops the connection without on_lost. Idempotent.
  virtual void close() = 0;
};

/// RPC over TCP. A record mark that is not a reply's (shorter than an xid, or a reply longer
/// than 64 MiB) breaks the connection with std::errc::protocol_error.
std::shared_ptr<rpc_channel> make_tcp_channel(boost::asio::io_context& io, std::string host, std::uint16_t port,
                                              channel_events events, wire_counters counters);

/// RPC-over-RDMA v1 over the fabric `provider` ("cma", "verbs"). Throws std::system_error
/// when the provider cannot be used here.
std::shared_ptr<rpc_channel> make_rdma_channel(boost::asio::io_context& io, const std::string& provider,
                                               std::string host, std::uint16_t port, channel_events events,
                                               wire_counters counters);

}  // namespace vnfs::transport
