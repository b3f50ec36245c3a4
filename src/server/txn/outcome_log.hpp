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
#include <utility>
#include <deque>
#include <vector>

#include "server/fs/unique_fd.hpp"
#include "vnfs/nfs4/txn_ops.hpp"

namespace vnfs::server::txn {

/// A file `outcomes` in the state directory: fixed 16-byte entries
///   u64 txnid, u32 (minute << 8 | outcome), u32 check (FNV-1a of the 12 bytes before it),
/// with outcome a txn_outcome4 (committed or aborted) and minute when it was recorded
/// (minutes since 2020-01-01 UTC; 0 in logs of before), each on stable storage (fdatasync)
/// before record() returns (or before make_durable() returns, for record_unsynced()). A torn last entry (a crash during an append) fails its check
/// and is ignored. It keeps the last `keep` outcomes, and besides those every outcome
/// younger than nfs4::txn_outcome_kept_seconds (plus a minute): opening it rewrites it
/// (atomically, by rename) when it holds more than twice what it keeps, or a torn tail;
/// where the disk has no room for the new file, it cuts the torn tail off and leaves the
/// rest as it is.
///
/// Room. An outcome that cannot be written stops vnfsd (fail-stop, transaction.cpp), and a
/// full disk must not do that: the log keeps file space allocated ahead of its entries
/// (fallocate, FALLOC_FL_KEEP_SIZE, `room_chunk` entries at a time), and each transaction
/// holds a `place` in that space from its begin to its end. A begin that finds no place,
/// and no space on the disk to make more, is refused (ENOSPC) before anything runs. On a
/// file system without fallocate, places are always given, as before.
class outcome_log {
 public:
  static constexpr std::size_t default_keep = 65536;
  /// Entries allocated ahead at a time (64 KiB); more is asked for when less than half of
  /// one chunk is free.
  static constexpr std::uint64_t room_chunk = 4096;
  using wall_clock = std::chrono::system_clock;

  /// Room for one entry in the log, held from a transaction's begin until it is destroyed
  /// (after its outcome is recorded). Empty when none could be had.
  class place {
   public:
    place() = default;
    place(place&& o) noexcept : log_(std::exchange(o.log_, nullptr)) {}
    place& operator=(place&& o) noexcept {
      if (this != &o) {
        release();
        log_ = std::exchange(o.log_, nullptr);
      }
      return *this;
    }
    ~place() { release(); }
    explicit operator bool() const noexcept { return log_ != nullptr; }

   private:
    friend class outcome_log;
    explicit place(outcome_log* log) : log_(log) {}
    void release() noexcept;
    outcome_log* log_ = nullptr;
  };
  /// A place for one more entry, allocating more room if little is left; empty if the log
  /// has none to give and the file system no space to make it.
  place take_place();

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
  /// Appends the entry without waiting for stable storage, and find() answers it at once:
  /// for a transaction whose journal keeps its outcome durably (its commit or end record)
  /// until the caller has called make_durable() with the number returned (in `number`), so
  /// that a crash meanwhile loses nothing: recovery records it again from the journal.
  std::error_code record_unsynced(std::uint64_t txnid, nfs4::txn_outcome4 o, std::uint64_t& number);
  /// Returns once every entry up to number `number` (counted from 1 since opening; 0: none)
  /// is on stable storage, syncing the log if no sync that covers it has run (group commit,
  /// as record()).
  std::error_code make_durable(std::uint64_t number);
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
  /// Writes the kept entries to a new file and puts it in the log's place (by rename).
  /// False, the log as it was, if the new file could not be written (a full disk).
  bool rewrite(int state_fd);
  /// Allocates `room_chunk` more entries past room_ (mu_ held); on a file system without
  /// fallocate, unbounded_ from then on.
  void grow_room();

  std::uint64_t room_ = 0;      ///< (mu_) entries the file's allocated space holds
  std::uint64_t promised_ = 0;  ///< (mu_) places held by transactions not yet destroyed
  bool unbounded_ = false;      ///< (mu_) no fallocate here: places are not counted
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
