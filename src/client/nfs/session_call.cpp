#include "client/nfs/session_call.hpp"

#include <algorithm>

#include "client/result_size.hpp"
#include "vnfs/error.hpp"
#include "vnfs/nfs4/txn_ops.hpp"
#include "vnfs/rpc/message.hpp"

namespace vnfs::detail {

rpc::opaque_auth authsys_credential(std::uint32_t uid, std::uint32_t gid, const std::vector<std::uint32_t>& gids) {
  rpc::authsys_parms p;
  p.machinename = "vnfs";
  p.uid = uid;
  p.gid = gid;
  p.gids = gids;
  return rpc::make_authsys(p);
}

void encode_call(session_call& c, std::uint32_t xid, const rpc::opaque_auth& cred) {
  c.xid = xid;
  c.request = std::make_shared<xdr::encoder>();  // a new one: the channel may still hold the old
  xdr::encoder& e = *c.request;
  rpc::call_header h{c.xid, nfs4::NFS4_PROGRAM, nfs4::NFS_V4, nfs4::NFSPROC4_COMPOUND, cred, {}};
  rpc::encode_call(e, h);
  // Minor version 1, or 2 for a COMPOUND that needs an NFSv4.2 operation (COPY).
  const bool v42 = std::any_of(c.ops.begin(), c.ops.end(),
                               [](const nfs4::nfs_argop4& op) { return std::holds_alternative<nfs4::COPY4args>(op); });
  xdr::encode(e, nfs4::compound_header{"", v42 ? 2u : 1u, static_cast<std::uint32_t>(c.ops.size())});
  for (const auto& op : c.ops) nfs4::encode_argop(e, op);
  c.reads = c.read_targets.empty() ? nullptr : std::make_shared<const read_plan>(plan_reads(c.ops, c.read_targets));
}

read_plan plan_reads(const std::vector<nfs4::nfs_argop4>& ops, std::vector<std::span<std::byte>> targets) {
  read_plan p;
  p.targets = std::move(targets);
  // xid, reply header with an empty verifier (20), COMPOUND status, empty tag, count (12),
  // SEQUENCE4resok (44).
  std::size_t at = 4 + 20 + 12 + 44;
  for (std::size_t i = 1; i < ops.size(); ++i) {
    at += least_ok_result_size(nfs4::opnum_of(ops[i]));
    if (std::holds_alternative<nfs4::READ4args>(ops[i])) p.earliest.push_back(at);
  }
  return p;
}

bool repeatable(const nfs4::nfs_argop4& op) {
  return std::holds_alternative<nfs4::PUTFH4args>(op) || std::holds_alternative<nfs4::PUTROOTFH4args>(op) ||
         std::holds_alternative<nfs4::LOOKUP4args>(op) || std::holds_alternative<nfs4::GETFH4args>(op) ||
         std::holds_alternative<nfs4::GETATTR4args>(op) || std::holds_alternative<nfs4::READ4args>(op) ||
         std::holds_alternative<nfs4::READLINK4args>(op) || std::holds_alternative<nfs4::READDIR4args>(op) ||
         std::holds_alternative<nfs4::SAVEFH4args>(op) || std::holds_alternative<nfs4::RESTOREFH4args>(op);
}

// Only the replies of the others need the server's reply cache: a READ of 1 MiB does not fit
// in it (the server answers NFS4ERR_REP_TOO_BIG_TO_CACHE when asked to cache it).
bool idempotent(const std::vector<nfs4::nfs_argop4>& ops) {
  return ops.empty() || std::all_of(ops.begin() + 1, ops.end(), repeatable);
}

std::optional<std::uint64_t> ended_transaction(const std::vector<nfs4::nfs_argop4>& ops) {
  const auto* t = ops.size() > 1 ? std::get_if<nfs4::VNFS_TXN4args>(&ops[1]) : nullptr;
  if (t == nullptr) return std::nullopt;
  using nfs4::txn_action4;
  const auto action = static_cast<txn_action4>(t->action);
  if (action != txn_action4::TXN_ONE_COMPOUND && action != txn_action4::TXN_COMMIT) return std::nullopt;
  return t->txnid;
}

std::error_code unknown_outcome(std::chrono::steady_clock::duration since_sent) {
  return make_error_code(since_sent < std::chrono::seconds(nfs4::txn_outcome_kept_seconds) ? errc::transaction_aborted
                                                                                          : errc::outcome_unknown);
}

std::size_t write_payload_bytes(const std::vector<nfs4::nfs_argop4>& ops) {
  std::size_t payload = 0;
  for (const auto& op : ops)
    if (auto* w = std::get_if<nfs4::WRITE4args>(&op)) payload += w->data.size();
  return payload;
}

}  // namespace vnfs::detail
