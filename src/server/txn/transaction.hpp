// vnfsd transactions: one running transaction — what a handler calls before it changes the
// export, and commit or rollback at the end (docs/transactions.md).
//
// Each protect_* call makes the change it announces undoable: it appends the record (and
// any backup) to the journal on stable storage before returning. An error means nothing
// was protected; the handler then fails without changing anything, and the transaction
// rolls back.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "server/fs/object.hpp"
#include "server/txn/journal.hpp"

namespace vnfs::server::txn {

class manager;

class transaction {
 public:
  /// Made by manager::begin(); `owner` is its age stamp in the lock table, `prefix` names
  /// its files in the state directory.
  transaction(manager& m, std::uint64_t owner, std::string prefix, journal_writer j, fs::unique_fd data);
  /// Rolls back if neither commit() nor rollback() ran (an exception left the COMPOUND).
  ~transaction();
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;

  /// Before bytes [offset, offset + length) of regular file `file` change or vanish
  /// (WRITE, COPY's destination, SETATTR or OPEN truncating: offset = new size, length to
  /// the end). Saves its attributes (first time only) and the part of the range that lies
  /// within its size at the first change. ENOSPC past the backup limit (server_options::txn_max_backup_bytes).
  std::error_code protect_data(const fs::object& file, std::uint64_t offset, std::uint64_t length);
  /// Before attributes of `obj` change (SETATTR without size): saves them, first time only.
  std::error_code protect_attrs(const fs::object& obj);
  /// Before `name` may be created in `dir` (CREATE, OPEN with create, LINK). Saves the
  /// directory's attributes; records the name as created only if it does not exist yet.
  std::error_code protect_create(const fs::object& dir, std::string_view name);
  /// Before `name` is removed from `dir` (REMOVE, or the target a RENAME replaces). Saves the
  /// directory's attributes and the object: a non-directory is hard-linked into the state
  /// directory, an (empty) directory has its attributes recorded. No record if `name` does
  /// not exist (the change fails by itself).
  std::error_code protect_remove(const fs::object& dir, std::string_view name);
  /// Before from_dir/from_name is renamed to to_dir/to_name: protects a replaced target
  /// (protect_remove), both directories' attributes, and records the rename.
  std::error_code protect_rename(const fs::object& from_dir, std::string_view from_name,
                                 const fs::object& to_dir, std::string_view to_name);

  /// After a rollback, `release` runs (once): it undoes state the transaction made outside
  /// the export, e.g. the open state of an OPEN inside it.
  void on_rollback(std::function<void()> release) { releases_.push_back(std::move(release)); }

  /// Its lock owner (age stamp) in manager::locks().
  std::uint64_t lock_owner() const noexcept { return owner_; }

  /// Records in the journal so far (a COMPOUND that changed something added some).
  std::size_t records() const noexcept { return records_.size(); }

  /// A crash-injection point after an operation (manager::crash_point).
  void after_operation();

  /// Makes every change durable and then the commit record; removes the backups. An error
  /// means the commit record was not written: the caller rolls back.
  std::error_code commit();
  /// Undoes everything in reverse order and removes the journal. Fail-stop: if an undo
  /// step fails, the process exits so that recovery retries with the journal at start-up.
  void rollback();

 private:
  std::error_code append(const record& r);
  /// Filehandle and first-seen attributes of `obj`; records rec_attrs the first time.
  std::error_code remember(const fs::object& obj, std::vector<std::byte>& fh, saved_attrs* first = nullptr);

  manager& m_;
  std::uint64_t owner_;
  std::string prefix_;
  journal_writer journal_;
  fs::unique_fd data_;          ///< range backups, appended at 4 KiB-aligned offsets
  std::uint64_t data_size_ = 0;
  std::uint64_t backup_bytes_ = 0;
  unsigned graves_ = 0;
  std::vector<record> records_;  ///< what the journal holds, for rollback
  /// Objects whose attributes are saved: (device, inode) → index of their rec_attrs.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::size_t> saved_;
  std::vector<std::function<void()>> releases_;  ///< on_rollback()
  bool done_ = false;
};

}  // namespace vnfs::server::txn
