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

#include "client/nfs/reply_decoder.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::detail {

struct registration;

/// What a channel tells its engine. All run on the engine's I/O thread.
struct channel_events {
  /// A reply. `record` is the RPC reply (from the xid on) less the READ payloads placed in
  /// the call's read targets; `decoder` has decoded what the channel needed to place them
  /// and knows which it placed: its finish() decodes the rest, once.
  std::function<void(std::uint32_t xid, std::vector<std::byte> record, reply_decoder decoder)> on_reply;
  /// A call the transport refused (RPC-over-RDMA's RDMA_ERROR): it gets no reply.
  std::function<void(std::uint32_t xid, std::error_code)> on_call_failed;
  /// The connection broke: once per successful connect(), never after close().
  std::function<void(std::error_code)> on_lost;
};

/// The engine's wire counters, updated by the channel.
struct wire_counters {
  std::atomic<std::uint64_t>& sent;
  std::atomic<std::uint64_t>& received;
  std::atomic<std::uint64_t>& direct;  // READ payload placed straight into the target
  std::atomic<std::uint64_t>& copied;  // READ payload the channel copied into a target
};

/// One connection at a time to one server. Every method runs on the engine's I/O thread.
class rpc_channel {
 public:
  virtual ~rpc_channel() = default;
  /// (Re)connects; `done` runs once on the I/O thread. Replaces a lost connection.
  virtual void connect(std::function<void(std::error_code)> done) = 0;
  /// Sends an RPC call (no record mark) on the current connection. The channel holds
  /// `call` until sent (TCP) or answered (RDMA); the memory it references must live as
  /// long. `plan`: where READ payloads may be placed directly (see read_plan; null:
  /// nowhere); the channel may place any of them or none (RDMA: only a COMPOUND's only
  /// READ). The channel keeps `plan` only weakly, to place the reply to `xid`: the caller
  /// owns it, its targets are valid as long as it lives, and the caller drops it when it
  /// gives up on `xid` (a reply that comes later is placed nowhere). `registered`: the
  /// caller's registered regions the call's READ targets and WRITE payloads lie in; a
  /// channel that must register memory with its transport (RDMA) does so once per region
  /// through their attachments, and exposes the payloads through that. The channel keeps
  /// them as long as `call`. `max_reply` bounds the reply's size.
  virtual void send(std::uint32_t xid, std::shared_ptr<const xdr::encoder> call, std::shared_ptr<const read_plan> plan,
                    const std::vector<std::shared_ptr<registration>>& registered, std::size_t max_reply) = 0;
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
