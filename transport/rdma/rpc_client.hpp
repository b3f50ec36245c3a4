// vnfs RPC-over-RDMA v1: the requester side of one connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "transport/rdma/credits.hpp"
#include "transport/rdma/fabric.hpp"

namespace vnfs::transport::rdma {

struct rpc_client_options {
  /// Our inline threshold for both directions: the receive size we post and announce in
  /// RFC 8797 private data, and the most we send inline (also bounded by the peer's).
  std::uint32_t inline_size = rpc::rdma::preferred_inline_size;
  /// Receives posted, so calls we may ever have outstanding, whatever the grant.
  std::uint32_t max_credits = 64;
  /// Referenced payloads (WRITE data) at least this long go by Read chunk when the call
  /// does not fit inline.
  std::size_t ddp_threshold = 1024;
  /// Send no private data (tests: a peer that "says nothing").
  bool send_private_data = true;
  /// Figure 10 of papers/004 when empty.
  std::shared_ptr<credit_request_policy> request_policy;
};

/// One call to send. The RPC message has no record mark.
struct rpc_call {
  std::uint32_t xid = 0;
  /// Kept until the reply; may reference payload memory (WRITE data) that must stay valid.
  std::shared_ptr<const xdr::encoder> message;
  /// Where the reply's DDP-eligible payloads (READ data) are to be RDMA-Written, in their
  /// order in the reply: one Write chunk each (non-empty spans, at most
  /// rpc::rdma::max_list_entries, else the call fails with errc::invalid_argument; RFC 8166: the
  /// responder fills the chunks in order, one payload each; payloads beyond the last chunk
  /// stay in the reply).
  std::vector<std::span<std::byte>> read_targets;
  /// Upper bound of the reply's size, each payload that goes to a read target counted at
  /// its target's size. When what may remain of the reply besides those (max_reply less the
  /// targets' sizes) is above the inline threshold, a Reply chunk of that size is offered.
  std::size_t max_reply = 0;
  /// Registrations of this fabric that the caller keeps across calls (memory registered
  /// once). Memory the call exposes — read_target, WRITE payloads by Read chunk, the pieces
  /// of a position-zero chunk — that lies inside one of them granting the access the peer
  /// needs is exposed through it; anything else is registered for this call alone. The
  /// call holds them until it completes, so none is deregistered while the peer may use it.
  std::vector<std::shared_ptr<const memory_registration>> registered;
};

struct rpc_result {
  /// The RPC reply message: the reduced reply (RFC 8166), where each payload placed in a
  /// Write chunk is cut out, with its XDR padding, right after its length field.
  std::vector<std::byte> record;
  /// Per read_target (empty when none was offered): the bytes the responder RDMA-Wrote
  /// there. 0 for a chunk left unused (its payload, if any, is then in `record`: e.g. a
  /// reply replayed from a cache) or filled with an empty payload.
  std::vector<std::uint32_t> written;
  /// Sum of `written`.
  std::uint64_t direct() const {
    std::uint64_t n = 0;
    for (auto w : written) n += w;
    return n;
  }
};

struct rpc_client_stats {
  std::uint64_t calls = 0;
  std::uint64_t bytes_sent = 0;      // messages, headers included
  std::uint64_t bytes_received = 0;  // messages, headers included
  std::uint64_t bytes_placed = 0;    // written by the responder into read targets and reply chunks
  std::uint64_t bytes_offered = 0;   // exposed through Read chunks for the responder to pull
  std::uint64_t per_call_registrations = 0;  // fabric registrations made for one call (released with it)
  std::uint64_t registered_segments = 0;     // segments exposed through rpc_call::registered instead
  std::uint64_t inline_calls = 0, read_chunk_calls = 0, nomsg_calls = 0;
  std::uint64_t write_list_replies = 0, reply_chunk_replies = 0;
  std::uint64_t write_chunks_offered = 0;  // Write chunks in the calls' Write lists
  std::uint64_t write_chunks_filled = 0;   // of those, chunks the responder wrote bytes into
  std::uint32_t max_outstanding = 0;  // the most calls ever outstanding at once
};

/// Sends RPC calls over one RPC-over-RDMA v1 connection and matches replies by xid.
///
/// - Chunks as the Linux client chooses them: inline when the call fits; else the WRITE
///   payloads as Read chunks at their XDR positions; if it still does not fit, the whole
///   call as a position-zero Read chunk with RDMA_NOMSG. Each READ target becomes a Write
///   chunk; a reply whose rest may be above the inline threshold gets a Reply chunk. A
///   reply may leave Write chunks unused (its payloads then inline), and must not claim
///   more bytes in a chunk than the target holds, or more chunks than offered. The client never
///   initiates RDMA. The memory it exposes goes through the caller's registrations
///   (rpc_call::registered) where they cover it, each pre-authorized for the peer
///   (endpoint::grant) at its first use on the connection, so that the responder's
///   accesses to it need no message on cma; the rest is registered for the call and
///   deregistered when the call completes.
/// - Credits: starts at 1; never more calls outstanding than the last grant (0 counts as
///   1); calls beyond it wait in order. Each call carries the request policy's figure.
/// - RDMA_ERROR for a call completes it with errc::protocol_not_supported (ERR_VERS) or
///   errc::bad_message (ERR_CHUNK). A reply that cannot be parsed or matched to its chunks
///   closes the connection: every call outstanding fails with errc::connection_aborted.
///
/// Threading: everything (calls, handlers) runs on the fabric's io_context thread.
class rpc_client : public std::enable_shared_from_this<rpc_client> {
 public:
  using reply_handler = std::function<void(std::error_code, rpc_result)>;
  using connect_handler = std::function<void(std::error_code, std::shared_ptr<rpc_client>)>;
  using lost_handler = std::function<void(std::error_code)>;

  /// Connects; `on_lost` runs once if the connection ends other than by close(), after
  /// the outstanding calls failed.
  static void connect(fabric& f, const std::string& host, std::uint16_t port, rpc_client_options opts,
                      lost_handler on_lost, connect_handler done);

  /// Sends the call when credits allow; `done` runs exactly once.
  void call(rpc_call c, reply_handler done);
  /// Ends the connection; outstanding and waiting calls fail with errc::operation_canceled.
  void close();
  bool is_open() const;

  std::uint32_t granted() const { return granted_; }
  std::uint32_t outstanding() const { return static_cast<std::uint32_t>(outstanding_.size()); }
  std::size_t waiting() const { return waiting_.size(); }
  std::uint32_t inline_send() const { return inline_send_; }
  std::uint32_t inline_recv() const { return opts_.inline_size; }
  rpc_client_stats stats() const { return stats_; }

  struct passkey {};
  rpc_client(passkey, fabric& f, std::shared_ptr<endpoint> ep, rpc_client_options opts, lost_handler on_lost);

 private:
  struct pending {
    rpc_call call;
    reply_handler done;
    std::vector<std::unique_ptr<memory_registration>> regs;  // released when the call completes
    std::vector<std::byte> reply_buffer;                     // Reply chunk target
    std::vector<std::byte> flat_call;                        // a long call of many pieces, flattened
    std::vector<std::byte> header;                           // the transport header sent
  };

  void pump();
  void send_one(std::unique_ptr<pending> p);
  /// The segment naming [data, data + size) with `access` for the peer: from a registration
  /// `c` carries when one covers it, else from one made now and appended to `made`.
  rpc::rdma::segment expose(const rpc_call& c, std::byte* data, std::size_t size, remote_access access,
                            std::vector<std::unique_ptr<memory_registration>>& made);
  void on_message(std::span<const std::byte> m);
  /// The outstanding call with this xid, or outstanding_.end().
  std::vector<std::unique_ptr<pending>>::iterator find_outstanding(std::uint32_t xid);
  void complete(std::uint32_t xid, std::error_code ec, rpc_result r);
  void fail_all(std::error_code ec);
  void lost(std::error_code ec);

  fabric& fabric_;
  std::shared_ptr<endpoint> ep_;
  rpc_client_options opts_;
  lost_handler on_lost_;
  std::uint32_t inline_send_ = rpc::rdma::default_inline_size;
  std::uint32_t granted_ = 1;  // before the first reply
  std::deque<std::unique_ptr<pending>> waiting_;
  std::vector<std::unique_ptr<pending>> outstanding_;  // sent, in order (at most max_credits)
  bool closed_ = false;
  rpc_client_stats stats_;
};

}  // namespace vnfs::transport::rdma
