// vnfs RDMA transport, cma provider: same-host RDMA with real one-sided transfers.
//
// Messages travel over a Unix SOCK_SEQPACKET socket; RDMA Write and RDMA Read are done by
// the initiating process with process_vm_writev / process_vm_readv straight into the
// peer's registered memory (the technique of UCX's cma transport).
//
// Addressing: HOST:PORT names the abstract Unix socket "@vnfs-rdma-cma/HOST:PORT" (Linux
// abstract namespace: no file, gone with the listener, visible to the network namespace).
// HOST is not resolved; it is part of the name, so "127.0.0.1:20049" and "localhost:20049"
// are different listeners.
//
// Security model (honest version):
// - Every one-sided access is checked by the OWNER of the memory before it happens: the
//   initiator sends an access request {handle, address, length, read|write} over the
//   connection; the owner answers from its registration table (handle known and not
//   deregistered, [address, address + length) inside the registration, the access right
//   granted at registration). Only a granted request is performed. Forged, stale (handles
//   are never reused by a fabric), out-of-bounds and wrong-right requests are refused with
//   errc::permission_denied, and the connection stays up.
// - Pre-authorization (endpoint::grant): instead, the owner may send the peer a grant of a
//   whole registration {handle, range, rights} once; the peer's endpoint then checks its
//   accesses under that handle itself (range and rights, the same rules) and performs them
//   with no message. Handles the peer holds no grant for still go through the owner's check.
// - Deregistration is synchronous: the registration leaves the owner's table at once (every
//   later access request under it is refused), then every endpoint that may still access it
//   without asking (it holds a grant, or was answered yes and may not have transferred yet)
//   gets a revoke, and the destructor waits until each has answered with a revoke_ack.
//   The peer performs a transfer after an access request on its endpoint's strand, the
//   strand that also reads the revoke, and a transfer under a grant in whatever thread asks
//   for it, holding the endpoint's grants shared from its check to its end; the strand
//   erases the grant holding them exclusively (a waiting revoke holds back new transfers)
//   before it answers. So when it answers, no transfer under the handle is in progress
//   (an answer it was given arrived before the revoke, so that transfer is done), and
//   every later one is refused. So once the destructor returned, a correct peer reads or
//   writes nothing of the registration's memory. Shutting the connection likewise drops every grant once the transfers under
//   them are done.
//   Bound: a revoke unanswered for fabric_options::revoke_timeout shuts the connection.
//   Shutting sends the peer the end of the connection, and the endpoint then waits, for one
//   more revoke_timeout, for the peer's socket to go: a correct peer closes it on its strand
//   when it reads that end, after which it transfers nothing. Only then (or when that
//   second wait ends too) does the revocation count as done. So deregistration returns
//   within about twice the bound, and the only peer that can still access the memory after
//   it is one that did not run its strand for both bounds, or does not follow the protocol.
// - Deregistration ON a thread running the endpoint's io_context (a registration dropped in
//   a completion handler: the RPC client drops a call's registrations when its reply
//   arrives) cannot wait: the acknowledgement comes through that thread, and with one io
//   thread for both sides of a same-process connection it would never come. There the
//   destructor sends the revoke to the grant holders (bounded as above: an unanswered revoke
//   shuts the connection) and returns without waiting; the peer refuses the handle from its
//   revoke on, which comes before anything the owner sends after the deregistration. Closing
//   the connection instead would end the grants at the very same point of the peer's packet
//   stream (the end comes after the revoke), so it would only cost the connection. This is
//   safe when the peer has no business with the registration any more, as RPC-over-RDMA
//   guarantees for the registrations it drops on the io thread (a registration stays until
//   the replies to the calls that used it arrived, and a responder accesses a call's chunks
//   before replying). Deregistering from a thread that the peer's answer needs in some other
//   way (the peer's io thread, in the same process) also waits only for the bound. When
//   nothing runs the endpoint's io_context any more (stopped), nothing could deliver the
//   answer: the connection is shut down at once, and the deregistration does not wait.
// - Any end of a connection (close(), a protocol error, an unanswered revoke) works as the
//   bound does: the endpoint shuts its sending side and keeps its socket until the peer's is
//   gone (at most revoke_timeout), and revocations waiting on that connection settle then.
// - The transfer targets the owner's pid as the kernel reported it for the socket
//   (SO_PEERCRED), never a pid the peer claims.
// - What this cannot give: process_vm_* needs ptrace rights over the peer (same uid, or
//   CAP_SYS_PTRACE; subject to Yama's ptrace_scope where enabled), and nothing from the
//   owner. A peer that HAS those rights can bypass the protocol and read or write anything
//   in the other process, at any time, acknowledged revoke or not — the checks and the
//   revocation handshake protect memory from a correct peer holding stale or forged handles
//   (bugs, confused deputies, hostile bytes relayed from elsewhere), not from a hostile
//   process of the same user.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/rdma/fabric.hpp"

namespace vnfs::transport::rdma::cma {

/// The abstract socket name (without the leading NUL) that HOST:PORT maps to.
std::string socket_name(const std::string& host, std::uint16_t port);

/// What a cma fabric may be told besides its io_context.
struct fabric_options {
  /// How long a deregistration waits for a peer to answer its revoke before the connection
  /// to that peer is shut, and then for the peer's socket to go (see the security model).
  std::chrono::milliseconds revoke_timeout{5000};
};

std::unique_ptr<fabric> make_fabric(boost::asio::io_context& io, const fabric_options& opts = {});

}  // namespace vnfs::transport::rdma::cma
