// vnfs RDMA transport: one reliable connection — two-sided messages and one-sided RDMA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "transport/rdma/memory.hpp"
#include "vnfs/rpc/rdma_header.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::transport::rdma {

using xdr::bytes_view;

/// Sizes fixed when an endpoint is created (both sides choose their own).
struct endpoint_options {
  std::size_t recv_size = 4096;   ///< bytes of each receive buffer: the largest message accepted
  std::uint32_t max_recv = 128;   ///< receives that may be posted at once (memory: max_recv * recv_size)
  std::vector<std::byte> private_data;  ///< sent to the peer while connecting (RFC 8797)
};

/// A connected, reliable, ordered endpoint (a verbs RC queue pair, or its cma equivalent).
///
/// Threading: the methods are thread-safe. Receive and close handlers run on the executor
/// of the io_context the fabric was made with, and so does an operation's completion,
/// except when the provider finished the operation at once in the calling thread (cma: a
/// message sent with nothing queued before it, a transfer under a grant): then the
/// completion runs there, before the call returns, so a caller must not hold a lock its
/// completion takes. A completion may be empty. An endpoint is owned by shared_ptr;
/// pending operations keep it alive.
///
/// Messages behave as with verbs: each message the peer sends consumes ONE receive posted
/// here, so the upper layer bounds what the peer sends — with credits. A message larger
/// than recv_size is fatal to the connection (errc::message_size). One that arrives when no
/// receive is posted (RNR) is fatal with cma (errc::no_buffer_space); verbs retries it in
/// hardware until a receive is posted (rnr_retry 7).
///
/// One-sided operations name the peer's memory by an rpc::rdma::segment. The peer
/// validates every access against its registration table (handle, bounds, access rights),
/// or has pre-authorized it (grant()): a refused access completes with
/// errc::permission_denied. With cma the connection stays
/// usable; with verbs the RC queue pair enters the error state and the connection closes
/// (hardware semantics). A memory_registration's handle is meaningful only to the fabric
/// that made it.
class endpoint : public std::enable_shared_from_this<endpoint> {
 public:
  /// One posted receive was consumed by `message` (valid during the call only).
  using recv_handler = std::function<void(std::span<const std::byte> message)>;
  /// Called once when the connection ends: empty code after close(), otherwise why.
  using close_handler = std::function<void(std::error_code)>;
  using completion = std::function<void(std::error_code)>;

  virtual ~endpoint() = default;

  /// Installs the handlers and starts receiving. Call once, before anything else; receives
  /// may be posted before start() (they are kept).
  virtual void start(recv_handler on_recv, close_handler on_close) = 0;

  /// Posts `n` more receive buffers; returns how many could be posted without exceeding
  /// max_recv.
  virtual std::uint32_t post_recv(std::uint32_t n = 1) = 0;
  /// Receives posted and not yet consumed.
  virtual std::uint32_t posted_receives() const = 0;

  /// Sends the concatenation of `gather` as one message. The bytes must stay valid until
  /// `done` runs. Errors: errc::message_size above the peer's receive size (as the peer
  /// announced it through the provider), connection errors.
  virtual void post_send(std::vector<bytes_view> gather, completion done) = 0;
  /// RDMA Write of the concatenation of `local` into the peer's `remote` segment (total
  /// size at most remote.length). `local` must stay valid until `done`.
  virtual void rdma_write(rpc::rdma::segment remote, std::vector<bytes_view> local, completion done) = 0;
  /// RDMA Read of the peer's `remote` segment into `local` (local.size() == remote.length).
  virtual void rdma_read(rpc::rdma::segment remote, std::span<std::byte> local, completion done) = 0;

  /// Pre-authorizes the peer's one-sided accesses to `r` (a registration of this endpoint's
  /// fabric; others are ignored), with the rights it was registered with: a provider whose
  /// owner checks each access with a message (cma) tells the peer once, ahead of the next
  /// message sent here, and the peer then checks its accesses to `r` itself, with no
  /// message. Deregistering `r` withdraws it: the peer learns it before any message sent
  /// here after the deregistration, and with cma the deregistration returns only once the
  /// peer acknowledged it (cma_fabric.hpp). No-op where the hardware checks accesses (verbs).
  virtual void grant(const memory_registration& r) { (void)r; }

  /// The private data the peer sent while connecting (empty if none).
  virtual std::span<const std::byte> peer_private_data() const = 0;
  /// The largest message the peer accepts (its receive size).
  virtual std::size_t peer_recv_size() const = 0;
  /// Closes the connection; pending operations complete with errc::operation_canceled or a
  /// connection error. Idempotent. With cma, a message still queued when close() returns is
  /// not sent (it completes cancelled): its bytes may go then.
  virtual void close() = 0;
  virtual bool is_open() const = 0;
  /// For logs: the peer's address (cma: its pid).
  virtual std::string peer() const = 0;
};

}  // namespace vnfs::transport::rdma
