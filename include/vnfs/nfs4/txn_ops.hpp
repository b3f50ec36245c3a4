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
  /// Open a transaction named `txnid` that later COMPOUNDs join; the rest of this COMPOUND
  /// runs in it. It stays open after the COMPOUND unless an operation failed (then it is
  /// rolled back whole). Only right after SEQUENCE.
  TXN_BEGIN = 2,
  /// The rest of this COMPOUND runs in the open transaction `txnid`; a failing operation
  /// rolls the whole transaction back. Only right after SEQUENCE.
  TXN_JOIN = 3,
  /// As TXN_JOIN, then commits the transaction after the COMPOUND's last operation.
  TXN_COMMIT = 4,
  /// Rolls the open transaction `txnid` back. Only as the last operation, right after SEQUENCE.
  TXN_ABORT = 5,
  /// Answers the outcome of transaction `txnid` (VNFS_TXN4res::outcome). Only as the last
  /// operation, right after SEQUENCE; it takes no part in any transaction.
  TXN_STATUS = 6,
};

/// VNFS_TXN4res::outcome: what TXN_STATUS found; TXN_NONE for every other action.
enum class txn_outcome4 : std::uint32_t {
  TXN_NONE = 0,
  TXN_OPEN = 1,       ///< open: neither committed nor rolled back yet
  TXN_COMMITTED = 2,
  TXN_ABORTED = 3,    ///< rolled back (an operation failed, abort, expiry, or a crash)
  TXN_UNKNOWN = 4,    ///< not in the server's outcome log (never begun, or forgotten)
};

/// How long a server keeps a transaction's outcome at least, counted from its end: a
/// TXN_STATUS asked within this time of sending the COMPOUND that would end it answers
/// TXN_COMMITTED for every transaction that committed, so TXN_UNKNOWN then means it never
/// did. Asked later, TXN_UNKNOWN may be a forgotten commit (docs/transactions.md).
inline constexpr std::uint32_t txn_outcome_kept_seconds = 600;

/// VNFS_TXN4args::flags: with TXN_BEGIN only, the new transaction runs again the work of
/// transaction `retries` (of the same client ID), which the server rolled back to resolve a
/// conflict; it keeps that one's age (its priority in wait-die). Other bits: none defined.
inline constexpr std::uint32_t TXN_RETRY = 0x1;

/// On the wire: action, txnid, flags, and `retries` only if flags has TXN_RETRY (an XDR
/// union switched on flags; docs/transactions.md).
struct VNFS_TXN4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_VNFS_TXN;
  std::uint32_t action = static_cast<std::uint32_t>(txn_action4::TXN_ONE_COMPOUND);
  /// Chosen by the client, unique among its transactions (names it in the server's journal).
  std::uint64_t txnid{};
  std::uint32_t flags{};    ///< 0 or TXN_RETRY
  std::uint64_t retries{};  ///< with TXN_RETRY: the txnid of the transaction this one runs again
  bool operator==(const VNFS_TXN4args&) const = default;
};

/// NFS4_OK: the transaction began (or was joined). A server that could not commit what ran
/// after it rewrites this status afterwards (the COMPOUND's status then says the same); see
/// docs/transactions.md. Fixed size: `outcome` is present whatever the status.
struct VNFS_TXN4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_VNFS_TXN;
  nfsstat4 status{};
  std::uint32_t outcome{};  ///< txn_outcome4
  VNFS_XDR_FIELDS(status, outcome)
  bool operator==(const VNFS_TXN4res&) const = default;
};

}  // namespace vnfs::nfs4

VNFS_NFS4_CODEC(VNFS_TXN4args);
