// vnfsd transactions: one running transaction — what a handler calls before it changes the
// export, and commit or rollback at the end (docs/transactions.md).
//
// Each protect_* call makes the change it announces undoable: when it returns, the record
// (and any backup) that undoes the change is on stable storage. An error means nothing
// was protected; the handler then fails without changing anything, and the transaction
// rolls back.
//
// Planning (txn/planner.hpp): before a COMPOUND's operations run, the planner calls
// protect_* for the changes it predicts while the transaction is `planning`; then their
// records and backups are made durable together by one barrier (end_plan). When the
// operation runs, its protect_* finds its planned record and takes it over: no second
// record, no second sync.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "server/fs/object.hpp"
#include "server/txn/byte_ranges.hpp"
#include "server/txn/journal.hpp"
#include "server/txn/journal_pool.hpp"
#include "server/txn/outcome_log.hpp"

namespace vnfs::server::txn {

class manager;

class transaction {
 public:
  /// Made by manager::begin(); `owner` is its id in the lock table, `slot` holds its
  /// journal and data file until it ends, `gen` is its generation (unique, growing; it also
  /// names its graves), `first` its first journal record: the client ID that began it and
  /// the txnid that TXN_STATUS asks for.
  /// `place`: room in the outcome log for how it ends, held as long as the transaction.
  transaction(manager& m, std::uint64_t owner, journal_slot* slot, std::uint64_t gen, const rec_begin& first,
              outcome_log::place place);
  /// Rolls back if neither commit() nor rollback() ran (an exception left the COMPOUND).
  ~transaction();
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;

  /// Before bytes [offset, offset + length) of regular file `file` change or vanish
  /// (WRITE, COPY's destination, SETATTR or OPEN truncating: offset = new size, length to
  /// the end). Saves its attributes (first time only) and the part of the range that lies
  /// within its size at the first change and that no earlier record of this transaction
  /// saved already (e.g. a WRITE after a truncation: nothing). Nothing for a file this
  /// transaction created.
  /// ENOSPC past the backup limit (server_options::txn_max_backup_bytes).
  std::error_code protect_data(const fs::object& file, std::uint64_t offset, std::uint64_t length);
  /// Before attributes of `obj` change (SETATTR without size): saves them, first time only.
  std::error_code protect_attrs(const fs::object& obj);
  /// Before `name` may be created in `dir` (CREATE, OPEN with create). Saves the
  /// directory's attributes; records the name as created only if it does not exist yet.
  /// Nothing in a directory this transaction created (its removal removes everything in
  /// it). If the operation then succeeds, the object it made counts as created by this
  /// transaction (after_operation).
  std::error_code protect_create(const fs::object& dir, std::string_view name);
  /// protect_create of a name the caller has just found free in `dir` (the planner).
  std::error_code protect_create_free(const fs::object& dir, std::string_view name);
  /// As protect_create, for LINK (a new name of an existing object).
  std::error_code protect_link(const fs::object& dir, std::string_view name);
  /// Before `name` is removed from `dir` (REMOVE, or the target a RENAME replaces). Saves the
  /// directory's attributes and the object: a non-directory is hard-linked into the state
  /// directory, an (empty) directory has its attributes recorded. No record if `name` does
  /// not exist (the change fails by itself), or if this transaction created the directory
  /// or the object.
  std::error_code protect_remove(const fs::object& dir, std::string_view name);
  /// Before from_dir/from_name is renamed to to_dir/to_name: protects a replaced target
  /// (protect_remove), both directories' attributes, and records the rename.
  std::error_code protect_rename(const fs::object& from_dir, std::string_view from_name,
                                 const fs::object& to_dir, std::string_view to_name);

  /// Planning a COMPOUND (txn/planner.hpp): protect_* calls between begin_plan() and
  /// end_plan() write their records and backups without syncing and remember them for the
  /// operation that makes the change; end_plan() makes them durable (one barrier). Planned
  /// records whose operation never runs undo nothing (every undo step tolerates a change
  /// that did not happen). Planned records are kept for this COMPOUND only.
  void begin_plan() { planning_ = true; }
  std::error_code end_plan();
  /// Whether this transaction created `obj` (by an OPEN or CREATE that succeeded in it).
  bool made_here(const fs::object& obj) const;

  /// After a rollback, `release` runs (once; the latest first): it undoes state the
  /// transaction made outside the export, e.g. the open state of an OPEN or the lock state
  /// of a LOCK inside it.
  void on_rollback(std::function<void()> release) { releases_.push_back(std::move(release)); }

  /// The client's name of it (VNFS_TXN's txnid), and the client ID that began it.
  std::uint64_t client_txnid() const noexcept { return client_txnid_; }
  std::uint64_t clientid() const noexcept { return clientid_; }

  /// Its lock owner in manager::locks().
  std::uint64_t lock_owner() const noexcept { return owner_; }

  /// How many records the operations that ran so far needed (a COMPOUND that changed
  /// something added some; planned records count once their operation runs).
  std::size_t changes() const noexcept { return changes_; }
  /// Whether an operation of it changed anything in the export (its outcome is then
  /// recorded durably; else committing and rolling back leave the same export).
  bool changed_anything() const noexcept { return changes_ > 0 || !changed_.empty(); }

  /// After an operation of the transaction ran: `current` is the current object if it
  /// succeeded (null if it failed). Notes the object a protected create made. A
  /// crash-injection point.
  void after_operation(const fs::object* current);
  /// The COMPOUND ended: planned records and found objects not taken over are forgotten.
  void end_compound() {
    planned_.clear();
    found_.clear();
  }

  /// While planning: `obj` is what `name` in `dir` finds. The operation that looks the name
  /// up when it runs (OPEN) takes it with take_found() instead of looking again: in this
  /// COMPOUND the name keeps finding `obj`, as the transaction holds the directory's lock
  /// and the planner stops before an operation whose name an earlier one changes.
  void note_found(const fs::object& dir, std::string_view name, const fs::object& obj);
  /// What note_found() kept for `name` in `dir` (empty if nothing), handed over once.
  fs::object take_found(const fs::object& dir, std::string_view name);

  // ---- Redo for file data (docs/transactions.md, "Redo for file data"). The planner hands
  // a file to redo when the transaction is a single COMPOUND that it planned whole and no
  // operation of the COMPOUND reads the file, removes, renames or lists anything. The file's
  // truncations and writes are then deferred: nothing changes in the export before the
  // commit record, which follows them in the journal; commit() applies them in place after
  // it. They need no backup and no barrier. Whatever their size: before its reply, redo
  // writes a byte twice (journal, file) and flushes it once, where undo writes and flushes
  // the old byte and the new one (docs/transactions.md has the measurements).

  /// Set by manager::begin_single(): the transaction is this one COMPOUND.
  void set_single_compound() noexcept { single_ = true; }
  bool single_compound() const noexcept { return single_; }
  /// While planning: the truncations and writes of `file` (a regular file this transaction
  /// did not create, its lock held exclusively) are deferred to the commit.
  std::error_code use_redo(const fs::object& file);
  /// Whether `file`'s truncations and writes are deferred.
  bool redo_for(const fs::object& file) const;
  /// Defers an OPEN's truncation of `file` (redo_for) to size 0.
  void defer_truncate(const fs::object& file);
  /// Defers a WRITE of `data` at `offset` of `file` (redo_for), to be applied through `fd`
  /// (the open state's, writable; null: the file is opened here). `data` must stay valid until
  /// commit() returns (the COMPOUND's arguments do). ENOSPC unless the file system has free
  /// space for twice the bytes deferred so far (the journal holds them, then the file), and
  /// past the backup limit, which counts deferred bytes as backups; EFBIG if the write would
  /// end past fs::export_root::max_file_size().
  std::error_code defer_write(const fs::object& file, std::shared_ptr<const fs::unique_fd> fd, std::uint64_t offset,
                              std::span<const std::byte> data);
  /// After a commit() that applied deferred changes: they are in the page cache, not yet
  /// durable in place, and the journal replays them after a crash until its checkpoint.
  /// Until then the transaction keeps its slot and the caller keeps its locks; then, after a
  /// syncfs of the export that began after commit() returned: write_checkpoint(), an fsync
  /// of journal_fd(), end_checkpoint().
  bool awaiting_checkpoint() const noexcept { return awaiting_checkpoint_; }
  /// Then: the files (device, inode) whose changes await the checkpoint. Until it, nobody may
  /// change them (a replay would write over the change); reading them is safe.
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& redo_files() const noexcept { return redo_keys_; }
  /// Writes the checkpoint record (not yet durable). Fail-stop on error.
  void write_checkpoint();
  int journal_fd() const noexcept { return journal_.fd(); }
  /// The checkpoint record is durable: the transaction ends (its slot is free).
  void end_checkpoint();

  /// Makes every change durable (fsync of each object changed) and then the commit record
  /// (the commit point); records the outcome in the outcome log without waiting for its
  /// sync (the commit record keeps it meanwhile: journal_slot); removes the graves and frees
  /// the slot. Fail-stop if the outcome cannot be written once the commit record is durable:
  /// the process exits and recovery records it from the journal. An error means the commit
  /// record was not written: the caller rolls back.
  /// With deferred changes, the commit record follows them in the journal, they are applied
  /// after it, and the transaction awaits its checkpoint (awaiting_checkpoint()).
  std::error_code commit();
  /// Undoes everything in reverse order, makes that durable (syncfs) and then an end record,
  /// records the outcome (aborted, unless `record_outcome` is false), removes the graves and
  /// frees the slot. Fail-stop: if an undo step or the end record fails, the process exits
  /// so that recovery retries with the journal at start-up.
  void rollback(bool record_outcome = true);

 private:
  using obj_key = std::pair<std::uint64_t, std::uint64_t>;  // device, inode
  std::error_code append(const record& r);
  /// Makes every record appended so far durable, after the backups they name: fdatasync
  /// of the data file, then the journal's write and its sync beside the state directory's
  /// (if graves were made). Before the first write over the journal file, the outcome of
  /// the transaction it holds is made durable. A crash-injection point after it.
  std::error_code barrier();
  /// Copies bytes [from, from + len) of `src` into the staged backups, to go to the data
  /// file at `at` (at or past the staged end; the gap is zeros).
  std::error_code stage(int src, std::uint64_t from, std::uint64_t len, std::uint64_t at);
  /// Writes the staged backups to the data file (unsynced) and empties the stage.
  std::error_code write_staged();
  /// protect_*'s end: a barrier, unless planning.
  std::error_code done_protecting() { return planning_ ? std::error_code{} : barrier(); }
  /// Filehandle of `obj` (key `k`); records its attributes the first time (rec_attrs),
  /// unless this transaction created it; `first` receives them, and `first_is_now` whether
  /// they were read just now (this call recorded them).
  std::error_code remember(const fs::object& obj, const obj_key& k, std::vector<std::byte>& fh,
                           saved_attrs* first = nullptr, bool* first_is_now = nullptr);
  /// Notes that an operation changes `obj` (commit fsyncs it). Not while planning.
  std::error_code note_changed(const fs::object& obj, const obj_key& k);
  /// An operation's protect_* with claim key `ck`: true if planned (taken over, counted
  /// as a change). While planning: true if already planned (nothing to do twice).
  bool claim(const std::string& ck);
  /// While planning: the records appended from `first` on belong to claim key `ck`.
  void plan(const std::string& ck, std::size_t first);
  void count(std::size_t record_index);
  /// protect_create (`makes_object`) and protect_link; `free`: the name is known to be free.
  std::error_code protect_name(const fs::object& dir, std::string_view name, bool makes_object, bool free);
  /// Makes every object in changed_ durable (commit): fsyncs them, or, from
  /// 16 of them on (syncfs_from_objects), one syncfs of the export's file system (the state
  /// directory's: lookups do not cross mount points, so every object is on it).
  std::error_code sync_changed();
  /// The end of commit() and rollback(): the slot's journal file holds this transaction now
  /// (if it was written) with outcome log entry `entry`; removes the graves, frees the slot.
  void end(std::uint64_t entry);
  std::string grave_name(unsigned k) const;
  /// Appends the deferred changes to the journal (before the commit record).
  void journal_redo();
  /// Applies the deferred changes in place (after the commit record). Fail-stop on error:
  /// recovery replays them from the journal.
  void apply_redo();

  outcome_log::place place_;  // first: let go of last
  manager& m_;
  std::uint64_t owner_;
  journal_slot* slot_;
  const int which_;             ///< the slot's journal file this transaction writes
  const std::uint64_t gen_;
  std::uint64_t client_txnid_;
  std::uint64_t clientid_;
  journal_writer journal_;
  int data_;                    ///< the slot's data file: range backups at 4 KiB-aligned offsets
  std::uint64_t data_size_ = 0;
  std::uint64_t backup_bytes_ = 0;
  unsigned graves_ = 0;
  bool data_unsynced_ = false;   ///< backups written since the last barrier
  /// Small range backups waiting in memory for one write at the next barrier (or when
  /// 1 MiB is staged), to go to the data file from offset staged_at_ (see protect_data).
  std::vector<std::byte> staged_;
  std::uint64_t staged_at_ = 0;
  bool names_unsynced_ = false;  ///< graves made since the last barrier
  std::vector<record> records_;  ///< what the journal holds, for rollback
  std::size_t durable_records_ = 0;  ///< how many of records_ are on stable storage
  std::vector<bool> counted_;    ///< per record: counted in changes_
  std::size_t changes_ = 0;
  /// Objects whose attributes are saved: key → index of their rec_attrs.
  std::map<obj_key, std::size_t> saved_;
  /// Per regular file: the bytes whose first content an undo record restores (a range
  /// backup, or a truncation's, which also covers everything past its new size).
  std::map<obj_key, byte_ranges> saved_bytes_;
  std::set<obj_key> created_;                            ///< made by this transaction
  std::map<obj_key, std::vector<std::byte>> changed_;    ///< fsynced at commit (by filehandle)
  bool planning_ = false;
  std::map<std::string, std::size_t> planned_;  ///< claim key → its first record (npos: none)
  std::map<std::pair<obj_key, std::string>, fs::object> found_;  ///< note_found(), this COMPOUND
  bool creating_ = false;  ///< the running operation's protect_create found the name free
  std::vector<std::function<void()>> releases_;  ///< on_rollback()
  bool done_ = false;
  bool single_ = false;  ///< set_single_compound()
  /// Files whose changes are deferred (use_redo), and the changes in order.
  struct redo_file {
    fs::object obj;
    std::vector<std::byte> fh;
    std::shared_ptr<const fs::unique_fd> fd;  ///< writable: its first deferred write's
    bool truncation = false;     ///< an OPEN's truncation not yet taken by a write from 0
    /// The step that cuts the file where the bytes written from 0 since its truncation end
    /// (index in redo_steps_), while the next write may continue them; and where they end.
    std::optional<std::size_t> cutting;
    std::uint64_t cut_at = 0;
  };
  std::map<obj_key, redo_file> redo_;
  struct redo_step {
    obj_key file;
    std::uint64_t offset = 0;          ///< where `data` goes; or, for a truncation, the size
    std::span<const std::byte> data;   ///< the WRITE's bytes (in the COMPOUND's arguments)
    bool cut = false;                  ///< then cut the file where `data` ends
    bool truncation = false;           ///< set the size to `offset` (no data)
  };
  std::vector<redo_step> redo_steps_;
  std::uint64_t deferred_bytes_ = 0;  ///< of all redo steps
  std::uint64_t space_budget_ = 0;    ///< deferred_bytes_ may grow to this without a new fstatvfs
  std::vector<obj_key> redo_keys_;    ///< redo_files()
  bool awaiting_checkpoint_ = false;
  std::uint64_t outcome_entry_ = 0;  ///< commit()'s outcome log entry, for end() after the checkpoint
};

}  // namespace vnfs::server::txn
