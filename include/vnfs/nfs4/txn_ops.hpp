// vnfs NFSv4 layer: the vnfs transaction extension, operation VNFS_TXN (docs/transactions.md).
// Not an RFC operation: its opnum (OP_VNFS_TXN) lies far outside RFC 8881's and RFC 7862's
// ranges, so a server without the extension answers NFS4ERR_OP_ILLEGAL and stops the
// COMPOUND at it.
#pragma once

#include <cstdint>

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

/// VNFS_TXN4args::action.
enum class txn_action4 : std::uint32_t {
  /// Run the rest of this COMPOUND as one transaction: committed if every operation after
  /// VNFS_TXN succeeds, rolled back otherwise. Only right after SEQUENCE.
  TXN_ONE_COMPOUND = 1,
};

struct VNFS_TXN4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_VNFS_TXN;
  std::uint32_t action = static_cast<std::uint32_t>(txn_action4::TXN_ONE_COMPOUND);
  /// Chosen by the client, unique among its transactions (names it in the server's journal).
  std::uint64_t txnid{};
  std::uint32_t flags{};  ///< none defined: must be 0
  VNFS_XDR_FIELDS(action, txnid, flags)
  bool operator==(const VNFS_TXN4args&) const = default;
};

/// NFS4_OK: the transaction began. A server that could not commit what ran after it
/// rewrites this status afterwards (the COMPOUND's status then says the same); see
/// docs/transactions.md.
struct VNFS_TXN4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_VNFS_TXN;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const VNFS_TXN4res&) const = default;
};

}  // namespace vnfs::nfs4
