// vnfsd transactions: what one server instance shares between its transactions — the
// state directory, the isolation lock, recovery at start-up, limits and the crash-injection
// point for tests (docs/transactions.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <system_error>

#include "server/fs/export_root.hpp"

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

  /// Isolation: a transaction holds the lock exclusively from its begin to its end, every
  /// other COMPOUND holds it shared while it runs. Transactions are therefore serialized,
  /// cannot deadlock (one lock, taken once), and no COMPOUND runs while one is open, so none
  /// can observe uncommitted state.
  std::unique_lock<std::shared_mutex> lock_exclusive() { return std::unique_lock(lock_); }
  std::shared_lock<std::shared_mutex> lock_shared() { return std::shared_lock(lock_); }

  /// Begins a transaction: the journal with its first record is on stable storage when this
  /// returns. The caller holds lock_exclusive().
  std::unique_ptr<transaction> begin(std::uint64_t clientid, std::uint64_t client_txnid,
                                     std::error_code& ec);

  /// Whether `name` in `dir` is the state directory (hidden from clients).
  bool hidden(const fs::object& dir, std::string_view name) const noexcept;

  /// The state directory, created on the first transaction (and fsynced into the root).
  int state_fd(std::error_code& ec);

  /// Counts a crash point; exits the process at limits::crash_at.
  void crash_point();

 private:
  void recover();

  const fs::export_root& exp_;
  const bool enabled_;
  const limits lim_;
  std::shared_mutex lock_;
  std::mutex state_mu_;
  fs::unique_fd state_;
  std::atomic<std::uint64_t> next_id_;
  std::atomic<unsigned> crash_count_{0};
};

}  // namespace vnfs::server::txn
