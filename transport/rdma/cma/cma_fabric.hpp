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
//   with no message. Deregistration sends a revoke, which the peer processes before any
//   message the owner sends after it; until then the peer could still use the grant. So the
//   owner may deregister a granted registration only when the peer has no business with it
//   any more, as RPC-over-RDMA guarantees (a registration stays until the replies to the
//   calls that used it arrived, and a responder accesses a call's chunks before replying).
//   Handles the peer holds no grant for still go through the owner's check.
// - The transfer targets the owner's pid as the kernel reported it for the socket
//   (SO_PEERCRED), never a pid the peer claims.
// - What this cannot give: process_vm_* needs ptrace rights over the peer (same uid, or
//   CAP_SYS_PTRACE; subject to Yama's ptrace_scope where enabled). A peer that HAS those
//   rights can bypass the protocol and read or write anything in the other process — the
//   check protects a correct peer from stale or forged handles (bugs, confused deputies,
//   hostile bytes relayed from elsewhere), not from a hostile process of the same user.
//   Also, deregistering memory while a peer's granted access is being performed races as
//   it does with verbs: the application must not deregister memory that is in use by an
//   outstanding RPC (the RPC layer keeps registrations until the reply arrives).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "transport/rdma/fabric.hpp"

namespace vnfs::transport::rdma::cma {

/// The abstract socket name (without the leading NUL) that HOST:PORT maps to.
std::string socket_name(const std::string& host, std::uint16_t port);

std::unique_ptr<fabric> make_fabric(boost::asio::io_context& io);

}  // namespace vnfs::transport::rdma::cma
