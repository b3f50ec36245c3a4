// vnfs client, nfs backend: one call of a session and its encoding — what submit() hands
// the engine, the RPC message it becomes (one per transmission), and the read plan sent
// with it. The seam where a COMPOUND's operations become bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

#include "client/nfs/reply_decoder.hpp"
#include "transport/registered_region.hpp"
#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/auth.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::detail {

/// One COMPOUND from submission to completion.
struct session_call {
  std::vector<nfs4::nfs_argop4> ops;  // ops[0] is SEQUENCE when `sequenced`
  compound_done done;
  std::vector<std::span<std::byte>> read_targets;  // see session_engine::submit
  /// Where this transmission's READ payloads may be placed (null without read targets): a
  /// new plan for each xid (encode_call()), which the channel holds weakly, so a reply to an
  /// xid given up on finds no plan to place into.
  std::shared_ptr<const read_plan> reads;
  /// The decoder of this transmission's reply when there are read targets: made from `reads`
  /// each time the call goes to the channel, which holds it weakly as the reply's guide.
  std::shared_ptr<reply_decoder> decoder;
  std::vector<std::shared_ptr<transport::registered_region>> registered;  // regions the payloads lie in
  bool cachethis = false;  // ask the server to cache the reply (calls that must not run twice)
  bool sequenced = true;
  /// ops[1..riders] are the engine's set-up riders (RECLAIM_COMPLETE of a new client ID;
  /// PUTROOTFH and GETATTR of the lease time), put there by the engine before the caller's
  /// operations; their results are taken out before `done` sees the reply.
  std::uint32_t riders = 0;
  /// A probe of the server's real operation limit (operation_limit.cpp): SEQUENCE and
  /// PUTROOTFHs, whose refusal is the answer.
  bool length_probe = false;
  std::chrono::milliseconds grace_wait{0};            // the last back-off after NFS4ERR_GRACE or DELAY (none yet: 0)
  std::chrono::steady_clock::time_point grace_since{};  // the first NFS4ERR_GRACE or DELAY
  /// Transmissions of this call on the current session (handed to the channel); a call
  /// sent again on a new session starts from 0. More than 0: it may have run.
  std::uint32_t sent = 0;
  /// When it was first handed to a connection (on any session); unset before.
  std::chrono::steady_clock::time_point first_sent{};
  std::uint32_t slot = 0;
  std::uint32_t xid = 0;
  std::shared_ptr<xdr::encoder> request;  // RPC call; references WRITE data (zero-copy)
};

/// The AUTH_SYS credential every call of a session carries.
rpc::opaque_auth authsys_credential(std::uint32_t uid, std::uint32_t gid, const std::vector<std::uint32_t>& gids);

/// Encodes `c` for a transmission as `xid`: the RPC call header with `cred`, the COMPOUND
/// header (minor version 1, or 2 when an operation needs NFSv4.2), c.ops, into a new
/// c.request (the channel may still hold the previous one); and the read plan of c.read_targets.
void encode_call(session_call& c, std::uint32_t xid, const rpc::opaque_auth& cred);

/// The read plan of a COMPOUND whose ops[0] is (or will be) SEQUENCE.
read_plan plan_reads(const std::vector<nfs4::nfs_argop4>& ops, std::vector<std::span<std::byte>> targets);

/// Whether running the operation twice has the effect of running it once.
bool repeatable(const nfs4::nfs_argop4& op);

/// Whether running the COMPOUND (ops[0] SEQUENCE) twice has the effect of running it once.
bool idempotent(const std::vector<nfs4::nfs_argop4>& ops);

/// The txnid of the transaction that the COMPOUND (ops[0] SEQUENCE) ends, when ops[1] is
/// VNFS_TXN with TXN_ONE_COMPOUND or TXN_COMMIT (docs/transactions.md): running such a
/// COMPOUND again would run its operations again as a new transaction. Otherwise none.
std::optional<std::uint64_t> ended_transaction(const std::vector<nfs4::nfs_argop4>& ops);

/// What TXN_STATUS's TXN_UNKNOWN means for a transaction whose ending COMPOUND was first
/// sent `since_sent` ago: it never committed (errc::transaction_aborted) while that is less
/// than nfs4::txn_outcome_kept_seconds, for a server keeps every outcome that long;
/// later, a forgotten commit is possible (errc::outcome_unknown).
std::error_code unknown_outcome(std::chrono::steady_clock::duration since_sent);

/// Bytes of WRITE payload in `ops`.
std::size_t write_payload_bytes(const std::vector<nfs4::nfs_argop4>& ops);

}  // namespace vnfs::detail
