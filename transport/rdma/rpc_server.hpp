// vnfs RPC-over-RDMA v1: the responder side — accepts connections, rebuilds calls from
// their chunks, and places replies in the requester's Write list and Reply chunk.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/rdma/credits.hpp"
#include "transport/rdma/fabric.hpp"

namespace vnfs::transport::rdma {

/// Why a connection was refused or closed by a limit (rpc_server_options::on_limit).
enum class rpc_server_limit {
  max_connections,  ///< refused at once: max_connections were open
  idle_timeout,     ///< nothing arrived or left for idle_timeout, and no call was executing
  credits,          ///< more calls outstanding than the largest grant, or than receives posted
  inline_size,      ///< a message larger than inline_size (the receive size we announced)
  bad_message,      ///< a message too short for an RPC-over-RDMA header's xid
};

struct rpc_server_options {
  /// Our receive size, announced in RFC 8797 private data; also our largest inline send
  /// (bounded by what each client announces, 1 KiB for clients that say nothing). A
  /// multiple of 1 KiB in 1 KiB .. 256 KiB (what private data can say); a larger message
  /// closes its connection.
  std::uint32_t inline_size = rpc::rdma::preferred_inline_size;
  /// Receives posted per connection: the largest grant, 1..1024. Memory per connection for
  /// receives is max_credits * inline_size.
  std::uint32_t max_credits = 32;
  /// Receive buffers the server affords over all connections ("average" in Figure 11 is
  /// this divided by the connection count).
  std::uint32_t total_credits = 1024;
  /// Connections open at once; one more is closed as soon as it is accepted. 0: no limit.
  std::uint32_t max_connections = 256;
  /// A connection on which no message arrives, no message leaves and no RDMA transfer
  /// completes for this long, while none of its calls is executing (handed to the call
  /// handler and not yet answered), is closed. Checked every quarter of it (at most every
  /// second), so it closes within 1.25 times this. 0: never.
  std::chrono::milliseconds idle_timeout{0};
  /// Told (on the io thread) of every connection refused or closed by a limit, with its
  /// peer (endpoint::peer()).
  std::function<void(const std::string& peer, rpc_server_limit why)> on_limit;
  /// Largest call rebuilt from Read chunks; larger ones get ERR_CHUNK.
  std::size_t max_call_size = (8u << 20) + 64 * 1024;
  /// Bytes a connection may be pulling by RDMA Read at once; further pulls wait.
  std::size_t max_pull_in_flight = 32u << 20;
  /// Figure 11 of papers/004 when empty. Called on the io thread.
  std::shared_ptr<credit_grant_policy> grant_policy;
};

struct rpc_server_stats {
  std::uint64_t connections = 0;         // accepted so far
  std::uint64_t calls = 0;               // dispatched
  std::uint64_t read_chunk_calls = 0;    // RDMA_MSG calls with Read chunks (WRITE payload)
  std::uint64_t nomsg_calls = 0;         // long calls: RDMA_NOMSG with a position-zero Read chunk
  std::uint64_t inline_replies = 0, reply_chunk_replies = 0, write_list_replies = 0;
  std::uint64_t write_chunks_used = 0;   // Write chunks that received a payload (of any length)
  std::uint64_t bytes_rdma_written = 0;  // into clients' Write and Reply chunks
  std::uint64_t bytes_rdma_read = 0;     // from clients' Read chunks
  std::uint64_t err_vers_sent = 0, err_chunk_sent = 0;
  std::uint64_t refused_connections = 0;  // closed at once: max_connections were open
  std::uint64_t credit_violations = 0;   // connections closed for exceeding the grant
  std::uint64_t oversized_messages = 0;  // connections closed for a message above inline_size
  std::uint64_t idle_closed = 0;         // connections closed by idle_timeout
  std::uint64_t bad_messages = 0;        // connections closed for undecodable messages
  std::uint32_t last_grant = 0;
};

/// Serves RPC over RDMA on one listener.
///
/// - Every message the server sends carries a grant: the grant policy's figure, bounded by
///   max_credits and by the receives posted for that connection (posted first, so the
///   bound holds when the client uses it). A client with more calls outstanding than the
///   largest grant it was ever given on its connection is disconnected (its RNR-free
///   analogue of overrunning receives); so is one whose message cannot be decoded at all.
/// - A call of another version gets RDMA_ERROR ERR_VERS (1..1); a bad chunk list, a Read
///   chunk the client refuses to let us read, or a reply that does not fit the client's
///   chunks gets ERR_CHUNK. Other connections are never affected.
/// - Only the server initiates RDMA and it never registers its own memory for clients.
/// - Limits (rpc_server_options): max_connections, idle_timeout, max_credits and
///   inline_size; each connection refused or closed by one is counted in the stats and told
///   to on_limit.
///
/// Threading: listener and connections run on the fabric's io_context, which must be run
/// by ONE thread. The call handler runs there and must not block for long: it may answer
/// at once, through the responder on that thread, or pass the record to workers, which
/// answer through the responder from any thread. A reply's RDMA Writes and its message go
/// from the thread that answers where the provider completes them there (cma: writes under
/// the client's grant, sends with nothing queued ahead), with no hand-off to the io thread.
class rpc_server {
 public:
  class responder {
   public:
    virtual ~responder() = default;
    /// Sends `msg` (an RPC reply, no record mark) as the reply; `keepalive` owns memory
    /// msg references until it has been sent or RDMA-Written. Call once.
    virtual void reply(xdr::encoder msg, std::shared_ptr<const void> keepalive) = 0;
    /// The call was not an RPC call: close this connection (as TCP servers do).
    virtual void drop() = 0;
  };
  using call_handler = std::function<void(std::vector<std::byte> record, std::shared_ptr<responder> r)>;

  /// Listens at once (throws std::system_error; std::invalid_argument for an inline_size that
  /// private data cannot announce or max_credits out of range); serves when the io_context runs.
  rpc_server(fabric& f, const std::string& host, std::uint16_t port, rpc_server_options opts, call_handler on_call);
  ~rpc_server();  // stop()
  rpc_server(const rpc_server&) = delete;
  rpc_server& operator=(const rpc_server&) = delete;

  std::uint16_t port() const;
  std::string address() const;
  /// Stops accepting and closes every connection. Idempotent; any thread.
  void stop();
  std::size_t connection_count() const;
  rpc_server_stats stats() const;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace vnfs::transport::rdma
