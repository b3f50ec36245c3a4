// vnfsd transactions: what one server instance shares between its transactions — the
// state directory, the lock table, recovery at start-up, limits and the crash-injection
// point for tests (docs/transactions.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <mutex>
#include <span>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "server/fs/export_root.hpp"
#include "server/txn/journal_pool.hpp"
#include "server/txn/lock_table.hpp"
#include "server/txn/outcome_log.hpp"
#include "server/txn/sync_pool.hpp"
#include "vnfs/nfs4/types.hpp"

namespace vnfs::server::txn {

class transaction;

/// The state directory's name in the export root. Clients cannot see or reach it: LOOKUP,
/// READDIR, OPEN, CREATE, REMOVE, RENAME and LINK treat the name as absent or refuse it.
inline constexpr std::string_view state_dir_name = ".vnfsd-txn";

struct limits {
  /// Bytes of range backups and of deferred writes (redo) per transaction.
  std::uint64_t max_backup_bytes = std::uint64_t(1) << 30;
  /// Test-only: the process exits (_exit(86), as abruptly as SIGKILL) at the Nth crash point
  /// of its life; 0 never. Crash points: after each barrier (records made durable: a
  /// COMPOUND's planned records, or one operation's), after each backup (range copy or
  /// grave, before its barrier), after each operation of a transaction, during commit
  /// (after the changed objects are fsynced, after the commit record, after each deferred
  /// change applied), in a checkpoint (after its syncfs, after its records), and between
  /// the steps of removing a finished transaction's files.
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

  // ---- Isolation: per-object locks (lock_table.hpp). A transaction locks each object an
  // operation of it touches before the operation runs and holds the locks to its end; a
  // plain COMPOUND pins them for one operation at a time (or runs unchecked while no
  // transaction exists). Conflicts between transactions go by age: wait-die, and an older
  // one wounds (rolls back) a younger idle holder.

  lock_table& locks() noexcept { return locks_; }
  /// Takes the locks one operation of transaction `t` needs (waiting, or rolling back
  /// younger idle holders, as lock_table says). NFS4ERR_DEADLOCK: `t` must die (an older
  /// transaction holds one of them); the caller rolls it back.
  nfs4::nfsstat4 lock(transaction& t, std::span<const lock_request> reqs);

  /// A single-COMPOUND transaction: begins it (enrolled in the lock table); the caller ends
  /// it with end_single(). It keeps the age of an earlier run of the same txnid that died
  /// (see kept ages below). An error if the journal could not be made (nothing ran).
  nfs4::nfsstat4 begin_single(std::uint64_t clientid, std::uint64_t client_txnid, std::unique_ptr<transaction>& out);
  /// Commits (`ok`) or rolls back the transaction of begin_single() and releases its locks
  /// (one that awaits its checkpoint goes to the checkpointer, which releases them).
  /// Returns NFS4_OK, or why the commit failed (then everything was rolled back). One that
  /// `died` (wait-die) leaves no outcome but its age: it is answered as one that did not
  /// begin, and the client sends it again with the same txnid.
  nfs4::nfsstat4 end_single(std::unique_ptr<transaction> t, bool ok, bool died = false);

  // ---- Multi-COMPOUND transactions (TXN_BEGIN .. TXN_COMMIT / TXN_ABORT), any number open
  // at once, named by the client's txnid. Only one COMPOUND runs in each at a time.

  /// TXN_BEGIN: opens transaction `client_txnid` for `clientid` and returns it for this
  /// COMPOUND to run in; release it with leave_open(). With `retries` (TXN_RETRY), it keeps
  /// the age of that transaction if it died or was wounded. NFS4ERR_INVAL if that txnid is
  /// open or has an outcome (it ended).
  nfs4::nfsstat4 begin_open(std::uint64_t clientid, std::uint64_t client_txnid, std::optional<std::uint64_t> retries,
                            transaction*& out);
  /// TXN_JOIN / TXN_COMMIT / TXN_ABORT: the open transaction `client_txnid` of `clientid`
  /// for this COMPOUND; waits while another COMPOUND runs in it. NFS4ERR_EXPIRED if it is
  /// not open (it ended, was rolled back, or never began: TXN_STATUS tells).
  nfs4::nfsstat4 join_open(std::uint64_t clientid, std::uint64_t client_txnid, transaction*& out);
  /// After a COMPOUND ran in open transaction `client_txnid`: `end` keep (stay open), commit,
  /// abort (roll back) or die (roll back, and keep its age for a retry). Returns NFS4_OK, or
  /// why the commit failed (then it was rolled back). The outcome is in the outcome log when
  /// a commit, abort or die returns.
  enum class ending { keep, commit, abort, die };
  nfs4::nfsstat4 leave_open(std::uint64_t client_txnid, ending end);
  /// TXN_STATUS: TXN_OPEN while the transaction is open or (single-COMPOUND) running, else
  /// what the outcome log says.
  nfs4::txn_outcome4 outcome_of(std::uint64_t client_txnid);

  /// A client record went (lease expiry, or a new instance of the client): its open
  /// transactions are rolled back at the next reap() or begin. Never blocks for long.
  void client_gone(std::uint64_t clientid);
  /// Rolls back the open transactions that are idle and past max_age or whose client is
  /// gone. Called periodically (vnfsd's reaper, on a worker thread) and by every begin.
  void reap();

  /// Whether `name` in `dir` is the state directory (hidden from clients).
  bool hidden(const fs::object& dir, std::string_view name) const noexcept;

  /// The state directory, created on the first transaction (and fsynced into the root).
  int state_fd(std::error_code& ec);

  /// The outcome log (opened on first use, in the state directory).
  outcome_log* outcomes(std::error_code& ec);

  /// Runs fsyncs side by side (a commit's objects; a barrier's journal and directory). Its
  /// threads start on first use: a server without transactions has none.
  sync_pool& syncer();
  /// Whether syncer() was used (its threads run).
  bool syncer_started() const noexcept { return syncs_started_.load(); }

  /// Committed transactions whose deferred changes (redo) are applied but not yet durable in
  /// place: a background thread (started on first use) makes them durable with one syncfs
  /// for all that wait, then their checkpoint records, one fsync each side by side; then
  /// releases their locks. The destructor finishes those that wait.
  void checkpoint_later(std::unique_ptr<transaction> t);

  /// A transaction's journal slot is free again.
  void release(journal_slot* s) { slots_.release(s); }

  /// Counts a crash point; exits the process at limits::crash_at.
  void crash_point();

  // ---- Kept ages. A transaction that dies or is wounded leaves its age (the steady
  // clock's nanoseconds when it, or the first transaction whose work it runs again, began)
  // under its txnid; the transaction that runs it again (TXN_BEGIN with TXN_RETRY naming
  // it, or a single-COMPOUND one sent again with the same txnid) by the same client ID
  // takes it, so that it becomes the oldest in the end and no transaction starves. An age
  // is kept for at most limits::max_age from that first begin (a retry after that starts
  // anew) and for at most max_kept_ages transactions (the oldest go first).
  static constexpr std::size_t max_kept_ages = 4096;

 private:
  void recover();
  /// The checkpointer's thread: checkpoints what waits, until stop_checkpoints_ and none waits.
  void run_checkpoints();
  std::unique_ptr<transaction> begin(std::uint64_t clientid, std::uint64_t client_txnid, std::uint64_t age,
                                     std::error_code& ec);
  /// The age of a transaction of `clientid` that runs again the work of `txnid` if that
  /// one's age is kept (taken: it is kept no longer), else the age of one that begins now.
  /// mu_ held.
  std::uint64_t take_age(std::uint64_t clientid, std::optional<std::uint64_t> txnid);
  /// Keeps the age of transaction `t` (rolled back by a conflict) under its txnid. mu_ held.
  void keep_age(const transaction& t);
  struct open_txn {
    std::unique_ptr<transaction> t;
    std::uint64_t clientid = 0;
    std::chrono::steady_clock::time_point deadline;
    bool busy = false;        ///< a COMPOUND runs in it (or it is being rolled back)
    bool client_gone = false;
  };
  using open_map = std::map<std::uint64_t, std::unique_ptr<open_txn>>;  // by client txnid
  /// Rolls back the idle open transaction `it` (mu_ held, released meanwhile), records the
  /// outcome and closes it.
  void roll_back_idle(std::unique_lock<std::mutex>& g, open_map::iterator it);
  /// Closes open transaction `txnid` (its commit or rollback recorded the outcome) and
  /// releases its locks. mu_ held.
  void close_open(std::uint64_t txnid);
  /// reap() with mu_ held.
  void reap_locked(std::unique_lock<std::mutex>& g);
  /// Rolls back the open transaction whose lock owner is `owner` if it is idle.
  void wound(std::uint64_t owner);

  const fs::export_root& exp_;
  const bool enabled_;
  const limits lim_;

  lock_table locks_;
  // The open multi-COMPOUND transactions (guarded by mu_).
  std::mutex mu_;
  std::condition_variable cv_;
  open_map open_;
  std::multiset<std::uint64_t> running_single_;  ///< client txnids of running single-COMPOUND ones
  struct kept_age {
    std::uint64_t clientid = 0, age = 0;
  };
  std::map<std::uint64_t, kept_age> kept_ages_;  ///< by client txnid

  std::mutex state_mu_;
  fs::unique_fd state_;
  std::unique_ptr<outcome_log> outcomes_;
  std::atomic<std::uint64_t> next_id_;
  std::atomic<unsigned> crash_count_{0};
  journal_pool slots_;
  std::once_flag syncs_once_;
  std::unique_ptr<sync_pool> syncs_;
  std::atomic<bool> syncs_started_{false};

  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  std::vector<std::unique_ptr<transaction>> to_checkpoint_;  ///< guarded by checkpoint_mu_
  bool stop_checkpoints_ = false;                            ///< guarded by checkpoint_mu_
  std::thread checkpointer_;                                 ///< started by checkpoint_later()
};

}  // namespace vnfs::server::txn
