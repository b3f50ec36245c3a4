// vnfsd transactions: the journal files of the state directory, made once and used by one
// transaction after another (docs/transactions.md, "The journal"), so that a transaction
// neither creates nor removes a file, nor syncs the directory for it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "server/fs/unique_fd.hpp"

namespace vnfs::server::txn {

/// A slot serves one transaction at a time: two journal files `sN.j0` and `sN.j1`, used in
/// turn, and a data file `sN.data` (range backups). A transaction writes its journal into
/// the file that does not hold the latest journal written in the slot, so that file's
/// transaction — ended, since the slot serves one at a time — stays whole on disk while the
/// new one is written over the older one. Recovery can therefore tell, in each slot, the
/// transaction that may be unfinished (the higher generation of the two; the other ended
/// before it began) even after a crash in the middle of a write.
struct journal_slot {
  unsigned index = 0;
  fs::unique_fd journal[2];
  fs::unique_fd data;
  int latest = -1;  ///< which journal holds the latest journal written here (-1: neither)
  /// Per journal file: the outcome log entry (its number) of the transaction the file holds,
  /// which must be on stable storage before the file is written again (0: none to wait for).
  std::uint64_t outcome_entry[2] = {0, 0};
  /// The journal file the next transaction writes.
  int next() const noexcept { return latest == 0 ? 1 : 0; }
};

class journal_pool {
 public:
  /// Slots made before one is used twice: a transaction writes over the journal of the
  /// transaction two before it in its slot, and the outcome of that one must be durable
  /// first, so one sync of the outcome log serves 2 x min_slots transactions in a row.
  static constexpr unsigned min_slots = 8;

  /// The names of a slot's files, and the slot a name belongs to: (index, 0 or 1 for a
  /// journal, 2 for the data file), or nothing for any other name.
  static std::string file_name(unsigned index, int which);
  static std::optional<std::pair<unsigned, int>> parse(std::string_view name);

  /// A slot found in the state directory at start-up (recovery finished its transactions).
  void adopt(std::unique_ptr<journal_slot> s);
  /// A free slot, the one free longest; a new one (its files made durable in the state
  /// directory `state_fd`) while there are fewer than min_slots or none is free.
  journal_slot* acquire(int state_fd, std::error_code& ec);
  /// The slot's transaction ended.
  void release(journal_slot* s);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<journal_slot>> slots_;
  std::deque<journal_slot*> free_;
  unsigned next_index_ = 0;
};

}  // namespace vnfs::server::txn
