// vnfsd transactions: the durable log of how transactions ended (single-COMPOUND ones and
// those spanning COMPOUNDs), which TXN_STATUS answers from (docs/transactions.md, "Outcome log").
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <mutex>
#include <string>
#include <system_error>
#include <unordered_map>
#include <deque>
#include <vector>

#include "server/fs/unique_fd.hpp"
#include "vnfs/nfs4/txn_ops.hpp"

namespace vnfs::server::txn {

/// A file `outcomes` in the state directory: fixed 16-byte entries
///   u64 txnid, u32 (minute << 8 | outcome), u32 check (FNV-1a of the 12 bytes before it),
/// with outcome a txn_outcome4 (committed or aborted) and minute when it was recorded
/// (minutes since 2020-01-01 UTC; 0 in logs of before), each on stable storage (fdatasync)
/// before record() returns. A torn last entry (a crash during an append) fails its check
/// and is ignored. It keeps the last `keep` outcomes, and besides those every outcome
/// younger than nfs4::txn_outcome_kept_seconds (plus a minute): opening it rewrites it
/// (atomically, by rename) when it holds more than twice what it keeps.
class outcome_log {
 public:
  static constexpr std::size_t default_keep = 65536;
  using wall_clock = std::chrono::system_clock;

  /// Reads the log of the state directory `state_fd` (creating it if absent). Throws
  /// std::system_error if it cannot be read or created. `keep` and `now` (the clock) are
  /// for tests.
  explicit outcome_log(int state_fd, std::size_t keep = default_keep,
                       std::function<wall_clock::time_point()> now = wall_clock::now);

  /// Records that `txnid` ended with `o` (committed or aborted). `durable`: on stable
  /// storage before it returns. Group commit: the entries that callers append while one
  /// fdatasync runs share the next one, so concurrent callers wait for at most two syncs
  /// and each sync covers every entry written before it started. Not `durable`: kept in
  /// memory only, for a transaction that changed nothing (committed and aborted leave the
  /// same export): find() answers it until the process ends, TXN_UNKNOWN after a restart.
  std::error_code record(std::uint64_t txnid, nfs4::txn_outcome4 o, bool durable = true);
  /// record() in steps, for a caller that syncs the log together with another file:
  /// write_entry() appends the entry (not durable, not answered by find()); once the
  /// caller has fsynced fd(), remember_durable() makes find() answer it.
  std::error_code write_entry(std::uint64_t txnid, nfs4::txn_outcome4 o);
  int fd() const noexcept { return fd_.get(); }
  void remember_durable(std::uint64_t txnid, nfs4::txn_outcome4 o);
  /// The recorded outcome, or TXN_UNKNOWN.
  nfs4::txn_outcome4 find(std::uint64_t txnid) const;
  /// fdatasyncs of the log so far (tests: group commit).
  std::uint64_t syncs() const;

 private:
  /// Minutes since 2020-01-01 UTC, now.
  std::uint32_t minute() const;
  /// Adds or replaces `txnid`'s outcome, recorded at `minute`; forgets the oldest outcomes
  /// past `keep_` that are older than txn_outcome_kept_seconds.
  void remember(std::uint64_t txnid, nfs4::txn_outcome4 o, std::uint32_t minute);
  /// Waits until entry number `mine` (counted from 1 since opening) is on stable storage,
  /// syncing the log itself when no other caller is; the error of the sync that covered it.
  std::error_code wait_durable(std::unique_lock<std::mutex>& g, std::uint64_t mine);

  mutable std::mutex mu_;
  std::condition_variable synced_cv_;
  fs::unique_fd fd_;
  const std::size_t keep_;
  const std::function<wall_clock::time_point()> now_;
  struct kept {
    nfs4::txn_outcome4 outcome;
    std::uint32_t minute;
  };
  std::unordered_map<std::uint64_t, kept> by_id_;
  std::deque<std::uint64_t> order_;  ///< oldest first
  std::uint64_t entries_in_file_ = 0;
  // Group commit (mu_): entries written since opening, the last one a sync that started
  // covers, the last one a successful sync covered; whether a sync runs; the entry ranges
  // (first, last] of failed syncs, whose callers get the error.
  std::uint64_t written_ = 0, attempted_ = 0, synced_ = 0, syncs_ = 0;
  bool syncing_ = false;
  struct failed_sync {
    std::uint64_t after, last;
    std::error_code ec;
  };
  std::vector<failed_sync> failed_;
};

}  // namespace vnfs::server::txn
