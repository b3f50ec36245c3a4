// vnfsd: from an RPC call record to its reply — ONC RPC checks, then the COMPOUND loop.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "server/decoded_call.hpp"
#include "server/server_state.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::server {

/// A reply ready to be sent as one RPC record. `msg` may reference memory (READ data) that
/// `keepalive` owns; keep both until the record has been written.
struct rpc_reply {
  xdr::encoder msg;
  std::shared_ptr<const void> keepalive;
};

/// What the transport that carries a reply can send besides memory: `files` when it sends
/// payloads left in a file (xdr::file_range: TCP, by sendfile), `memory` when it needs
/// every byte in memory (RPC-over-RDMA, tests that flatten replies).
enum class reply_payloads { memory, files };

/// Executes RPC calls of program NFS4_PROGRAM version 4 (NULL and COMPOUND).
///
/// - RPC level (RFC 5531): RPC_MISMATCH for rpcvers != 2, PROG_UNAVAIL / PROG_MISMATCH /
///   PROC_UNAVAIL, AUTH_ERROR(AUTH_BADCRED) for flavors other than AUTH_NONE and AUTH_SYS or
///   a malformed AUTH_SYS body, GARBAGE_ARGS for an undecodable COMPOUND header.
/// - COMPOUND (RFC 8881 §15-16): minor versions 1 and 2 (others: NFS4ERR_MINOR_VERS_MISMATCH);
///   SEQUENCE first with slot/sequence-id checks and the reply cache (replays get the cached
///   reply, exactly once); session-less operations only alone (NFS4ERR_NOT_ONLY_OP), all
///   others only after SEQUENCE (NFS4ERR_OP_NOT_IN_SESSION); the session's limits
///   (NFS4ERR_TOO_MANY_OPS, NFS4ERR_REQ_TOO_BIG, NFS4ERR_REP_TOO_BIG(_TO_CACHE));
///   malformed operation arguments → NFS4ERR_BADXDR; unknown opcodes → NFS4ERR_OP_ILLEGAL;
///   undecoded RFC operations → NFS4ERR_NOTSUPP. Operations run in order as the caller's
///   identity and stop at the first failure.
///
/// Thread-safe: calls run concurrently on the worker pool.
class dispatcher {
 public:
  explicit dispatcher(server_state& state) : state_(state) {}

  /// The reply to a call decoded by decode_call() (its record still alive), or nothing when
  /// the record is not a call at all and must be dropped (the connection is then closed by
  /// the caller). With reply_payloads::files, a large READ of a COMPOUND that is not
  /// cached, runs in no transaction and changes no file data after it leaves its payload
  /// in the file (READ4resok::file), and `keepalive` keeps the descriptor open. Its bytes
  /// are those of the file when sent, and its length that of the file at the READ: a file
  /// that shrinks meanwhile (changed by something other than this server's clients) gives
  /// zeros for the bytes cut off (tcp::connection::send). Until the reply is released, the
  /// COMPOUND counts as running for the transactions (no transaction begins, so none
  /// changes what it reads).
  std::optional<rpc_reply> handle(const decoded_call& call, reply_payloads payloads = reply_payloads::memory);
  /// The same for a record not decoded yet.
  std::optional<rpc_reply> handle(std::span<const std::byte> record) { return handle(decode_call(record)); }

 private:
  server_state& state_;
};

}  // namespace vnfs::server
