// vnfs client, nfs backend: the transport seam of session_engine — how RPC calls reach the
// server and replies come back: TCP with record marking, or RPC-over-RDMA.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "vnfs/xdr/encoder.hpp"

namespace vnfs::detail {

/// Where a reply's READ payload went: {end of the prefix in `record`, payload length}.
using direct_info = std::optional<std::pair<std::size_t, std::uint32_t>>;

/// What a channel tells its engine. All run on the engine's I/O thread.
struct channel_events {
  /// A reply. With `direct`, the payload of the READ that ends the COMPOUND is in the
  /// call's read target and `record` holds the reply without it, then its XDR padding.
  std::function<void(std::uint32_t xid, std::vector<std::byte> record, direct_info direct)> on_reply;
  /// A call the transport refused (RPC-over-RDMA's RDMA_ERROR): it gets no reply.
  std::function<void(std::uint32_t xid, std::error_code)> on_call_failed;
  /// The connection broke: once per successful connect(), never after close().
  std::function<void(std::error_code)> on_lost;
  /// The direct-read target of an outstanding call, empty if it has none (TCP looks it up
  /// when the reply arrives).
  std::function<std::span<std::byte>(std::uint32_t xid)> read_target;
};

/// The engine's wire counters, updated by the channel.
struct wire_counters {
  std::atomic<std::uint64_t>& sent;
  std::atomic<std::uint64_t>& received;
  std::atomic<std::uint64_t>& direct;  // READ payload placed straight into the target
};

/// One connection at a time to one server. Every method runs on the engine's I/O thread.
class rpc_channel {
 public:
  virtual ~rpc_channel() = default;
  /// (Re)connects; `done` runs once on the I/O thread. Replaces a lost connection.
  virtual void connect(std::function<void(std::error_code)> done) = 0;
  /// Sends an RPC call (no record mark) on the current connection. The channel holds
  /// `call` until sent (TCP) or answered (RDMA); the memory it references must live as
  /// long. `read_target`: where the payload of the READ ending the COMPOUND may be placed
  /// directly (empty: nowhere). `max_reply` bounds the reply's size.
  virtual void send(std::uint32_t xid, std::shared_ptr<const xdr::encoder> call, std::span<std::byte> read_target,
                    std::size_t max_reply) = 0;
  /// Drops the connection without on_lost. Idempotent.
  virtual void close() = 0;
};

std::shared_ptr<rpc_channel> make_tcp_channel(boost::asio::io_context& io, std::string host, std::uint16_t port,
                                              channel_events events, wire_counters counters);

/// RPC-over-RDMA v1 over the fabric `provider` ("cma", "verbs"). Throws std::system_error
/// when the provider cannot be used here.
std::shared_ptr<rpc_channel> make_rdma_channel(boost::asio::io_context& io, const std::string& provider,
                                               std::string host, std::uint16_t port, channel_events events,
                                               wire_counters counters);

}  // namespace vnfs::detail
