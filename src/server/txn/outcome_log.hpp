// vnfsd transactions: the durable log of how transactions ended (single-COMPOUND ones and
// those spanning COMPOUNDs), which TXN_STATUS answers from (docs/transactions.md, "Outcome log").
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <system_error>
#include <unordered_map>
#include <deque>

#include "server/fs/unique_fd.hpp"
#include "vnfs/nfs4/txn_ops.hpp"

namespace vnfs::server::txn {

/// A file `outcomes` in the state directory: fixed 16-byte entries
///   u64 txnid, u32 outcome (txn_outcome4: committed or aborted), u32 check (FNV-1a of the 12 bytes before it),
/// each on stable storage (fdatasync) before record() returns. A torn last entry (a crash
/// during an append) fails its check and is ignored. It keeps the last `keep` outcomes:
/// opening it rewrites it (atomically, by rename) when it holds more than twice that.
class outcome_log {
 public:
  static constexpr std::size_t keep = 65536;

  /// Reads the log of the state directory `state_fd` (creating it if absent). Throws
  /// std::system_error if it cannot be read or created.
  explicit outcome_log(int state_fd);

  /// Durably records that `txnid` ended with `o` (committed or aborted).
  std::error_code record(std::uint64_t txnid, nfs4::txn_outcome4 o);
  /// The recorded outcome, or TXN_UNKNOWN.
  nfs4::txn_outcome4 find(std::uint64_t txnid) const;

 private:
  void remember(std::uint64_t txnid, nfs4::txn_outcome4 o);

  mutable std::mutex mu_;
  fs::unique_fd fd_;
  std::unordered_map<std::uint64_t, nfs4::txn_outcome4> by_id_;
  std::deque<std::uint64_t> order_;  ///< oldest first, at most `keep`
  std::uint64_t entries_in_file_ = 0;
};

}  // namespace vnfs::server::txn
