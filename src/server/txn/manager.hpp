// vnfsd transactions: what one server instance shares between its transactions — the
// state directory, the isolation lock, recovery at start-up, limits and the crash-injection
// point for tests (docs/transactions.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>

#include "server/fs/export_root.hpp"
#include "server/txn/outcome_log.hpp"
#include "vnfs/nfs4/types.hpp"

namespace vnfs::server::txn {

class transaction;

/// The state directory's name in the export root. Clients cannot see or reach it: LOOKUP,
/// READDIR, OPEN, CREATE, REMOVE, RENAME and LINK treat the name as absent or refuse it.
inline constexpr std::string_view state_dir_name = ".vnfsd-txn";

struct limits {
  std::uint64_t max_backup_bytes = std::uint64_t(1) << 30;  ///< bytes of range backups per transaction
  /// Test-only: the process exits (_exit(86), as abruptly as SIGKILL) at the Nth crash point
  /// of its life; 0 never. Crash points: after a journal's first record, after each further
  /// record, after each operation of a transaction, after the commit record, and between the
  /// steps of removing a finished transaction's files.
  unsigned crash_at = 0;
  /// Journal records per transaction (about two per object it changes): the change that
  /// would pass it fails with ENOSPC.
  std::uint64_t max_records = std::uint64_t(1) << 20;
  /// How long a multi-COMPOUND transaction may stay open from its TXN_BEGIN: older ones are
  /// rolled back.
  std::chrono::seconds max_age{120};
};

class manager {
 public:
  /// Rolls back (or finishes, if committed) every transaction a crash left in the state
  /// directory before returning, whether or not `enabled` (new transactions allowed): the server serves only afterwards. Throws
  /// std::system_error if that fails (the server must not start on a half-changed export).
  manager(const fs::export_root& exp, bool enabled, limits lim);
  ~manager();

  bool enabled() const noexcept { return enabled_; }
  const limits& lim() const noexcept { return lim_; }
  const fs::export_root& exp() const noexcept { return exp_; }

  // ---- Isolation: one lock over the export. A transaction holds it exclusively from its
  // begin to its end (a multi-COMPOUND one across its COMPOUNDs), every other COMPOUND
  // holds it shared while it runs. Transactions are therefore serialized, cannot deadlock
  // (one lock, taken once), and no COMPOUND runs while one is open, so none can observe
  // uncommitted state. Waiting is bounded: for a COMPOUND that holds the lock (it runs to
  // its end), never for an open multi-COMPOUND transaction, which can last until max_age:
  // those calls answer NFS4ERR_DELAY instead, so the worker threads stay free for the
  // COMPOUNDs that join it. Writers are preferred (a waiting transaction holds back new
  // shared holders).

  /// A plain COMPOUND: NFS4_OK with the lock held shared (release with leave_shared()), or
  /// NFS4ERR_DELAY while a multi-COMPOUND transaction is open.
  nfs4::nfsstat4 enter_shared();
  void leave_shared();

  /// A single-COMPOUND transaction: begins it with the lock held exclusively; the caller
  /// ends it with end_single(). NFS4ERR_DELAY while a multi-COMPOUND transaction is open;
  /// another error if the journal could not be made (nothing ran).
  nfs4::nfsstat4 begin_single(std::uint64_t clientid, std::uint64_t client_txnid, std::unique_ptr<transaction>& out);
  /// Commits (`ok`) or rolls back the transaction of begin_single() and releases the lock.
  /// Returns NFS4_OK, or why the commit failed (then everything was rolled back).
  nfs4::nfsstat4 end_single(std::unique_ptr<transaction> t, bool ok);

  // ---- Multi-COMPOUND transactions (TXN_BEGIN .. TXN_COMMIT / TXN_ABORT). At most one is
  // open (it holds the lock exclusively). Only one COMPOUND runs in it at a time.

  /// TXN_BEGIN: opens transaction `client_txnid` for `clientid` and returns it for this
  /// COMPOUND to run in; release it with leave_open(). NFS4ERR_DELAY while another is open.
  nfs4::nfsstat4 begin_open(std::uint64_t clientid, std::uint64_t client_txnid, transaction*& out);
  /// TXN_JOIN / TXN_COMMIT / TXN_ABORT: the open transaction `client_txnid` of `clientid`
  /// for this COMPOUND; waits while another COMPOUND runs in it. NFS4ERR_EXPIRED if it is
  /// not open (it ended, was rolled back, or never began: TXN_STATUS tells).
  nfs4::nfsstat4 join_open(std::uint64_t clientid, std::uint64_t client_txnid, transaction*& out);
  /// After a COMPOUND ran in the open transaction: `end` keep (stay open), commit or abort
  /// (roll back). Returns NFS4_OK, or why the commit failed (then it was rolled back). The
  /// outcome is in the outcome log when a commit or abort returns.
  enum class ending { keep, commit, abort };
  nfs4::nfsstat4 leave_open(ending end);
  /// TXN_STATUS.
  nfs4::txn_outcome4 outcome_of(std::uint64_t client_txnid);

  /// A client record went (lease expiry, or a new instance of the client): its open
  /// transaction is rolled back at the next reap() or lock request. Never blocks for long.
  void client_gone(std::uint64_t clientid);
  /// Rolls back an open transaction that is idle and past max_age or whose client is gone.
  /// Called periodically (vnfsd's reaper, on a worker thread) and by every lock request.
  void reap();

  /// Whether `name` in `dir` is the state directory (hidden from clients).
  bool hidden(const fs::object& dir, std::string_view name) const noexcept;

  /// The state directory, created on the first transaction (and fsynced into the root).
  int state_fd(std::error_code& ec);

  /// Counts a crash point; exits the process at limits::crash_at.
  void crash_point();

 private:
  void recover();
  std::unique_ptr<transaction> begin(std::uint64_t clientid, std::uint64_t client_txnid, std::error_code& ec);
  outcome_log* outcomes(std::error_code& ec);
  /// Takes the export lock exclusively (mu_ held), unless a multi-COMPOUND transaction is
  /// open or opens meanwhile (NFS4ERR_DELAY).
  nfs4::nfsstat4 acquire_exclusive(std::unique_lock<std::mutex>& g);
  /// Records the outcome of the open transaction and closes it (releasing the lock). mu_ held.
  void close_open(std::unique_lock<std::mutex>& g, bool committed);
  /// reap() with mu_ held.
  void reap_locked(std::unique_lock<std::mutex>& g);

  const fs::export_root& exp_;
  const bool enabled_;
  const limits lim_;

  // The export lock and the open transaction (guarded by mu_).
  std::mutex mu_;
  std::condition_variable cv_;
  unsigned shared_ = 0;
  bool exclusive_ = false;
  unsigned exclusive_waiting_ = 0;
  struct open_txn {
    std::unique_ptr<transaction> t;
    std::uint64_t clientid = 0, txnid = 0;
    std::chrono::steady_clock::time_point deadline;
    bool busy = false;        ///< a COMPOUND runs in it
    bool client_gone = false;
  };
  std::unique_ptr<open_txn> open_;

  std::mutex state_mu_;
  fs::unique_fd state_;
  std::unique_ptr<outcome_log> outcomes_;
  std::atomic<std::uint64_t> next_id_;
  std::atomic<unsigned> crash_count_{0};
};

}  // namespace vnfs::server::txn
