// vnfsd transactions: the journal of one transaction, checksummed records in a journal file
// of the state directory that transactions use one after another (docs/transactions.md,
// "The journal").
//
// A transaction writes its journal from the start of the file, over what an earlier
// transaction left there: the header names the transaction's generation (unique, growing),
// and each record carries it too, so a reader takes only the records of the generation the
// header names and stops at the first record of another one (the rest of an earlier
// transaction) or at a torn one. Records are appended to memory and written and made
// durable together by sync() (one write, one fdatasync): a change is made only after a
// sync() that followed the append of the record that undoes it. A crash in the middle of a
// sync leaves a torn last record, which read_journal() drops: the change it would have
// protected was never made.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "vnfs/xdr/codec.hpp"

namespace vnfs::server::txn {

/// Attributes an undo restores (the times as seconds and nanoseconds).
struct saved_attrs {
  std::uint32_t type{};  ///< fs::file_type
  std::uint32_t mode{}, uid{}, gid{};
  std::uint64_t size{};
  std::int64_t atime_sec{}, mtime_sec{};
  std::uint32_t atime_nsec{}, mtime_nsec{};
  VNFS_XDR_FIELDS(type, mode, uid, gid, size, atime_sec, atime_nsec, mtime_sec, mtime_nsec)
};

/// First record: who began the transaction.
struct rec_begin {
  std::uint64_t clientid{}, client_txnid{};
  VNFS_XDR_FIELDS(clientid, client_txnid)
};
/// The object (by filehandle) had these attributes before the transaction changed it.
/// Undo: restores owner, mode, size (regular files) and times.
struct rec_attrs {
  std::vector<std::byte> fh;
  saved_attrs attrs;
  VNFS_XDR_FIELDS(fh, attrs)
};
/// Bytes [offset, offset + length) of the file were copied to the transaction's data file
/// at data_offset. Undo: copies them back.
struct rec_range {
  std::vector<std::byte> fh;
  std::uint64_t offset{}, length{}, data_offset{};
  VNFS_XDR_FIELDS(fh, offset, length, data_offset)
};
/// `name` is about to be created in the directory. Undo: removes it (if it exists).
struct rec_created {
  std::vector<std::byte> dir;
  std::string name;
  VNFS_XDR_FIELDS(dir, name)
};
/// The non-directory `name` is about to be removed from the directory; the state
/// directory holds a hard link to it as `grave`. Undo: links it back (if the name is free).
struct rec_removed {
  std::vector<std::byte> dir;
  std::string name, grave;
  VNFS_XDR_FIELDS(dir, name, grave)
};
/// The empty directory `name` (filehandle `fh`) is about to be removed. Undo: makes it
/// again with `attrs`; the earlier records that name `fh` then apply to the new directory.
struct rec_rmdir {
  std::vector<std::byte> dir;
  std::string name;
  std::vector<std::byte> fh;
  saved_attrs attrs;
  VNFS_XDR_FIELDS(dir, name, fh, attrs)
};
/// from_dir/from_name is about to be renamed to to_dir/to_name (a replaced target has its
/// own rec_removed / rec_rmdir before this). Undo: renames it back if the old name is free.
struct rec_renamed {
  std::vector<std::byte> from_dir;
  std::string from_name;
  std::vector<std::byte> to_dir;
  std::string to_name;
  VNFS_XDR_FIELDS(from_dir, from_name, to_dir, to_name)
};
/// Redo (docs/transactions.md, "Redo for file data"): after the commit point, write `data`
/// at `offset` of the file; with `cut`, then cut the file where `data` ends (an OPEN's
/// truncation followed by this write from offset 0). Written only by a transaction that
/// defers the file's changes to its commit; ignored in a journal without rec_commit.
/// Replay: the same, again (idempotent).
struct rec_redo_write {
  std::vector<std::byte> fh;
  std::uint64_t offset{};
  bool cut{};
  std::vector<std::byte> data;
  VNFS_XDR_FIELDS(fh, offset, cut, data)
};
/// Redo: after the commit point, set the file's size.
struct rec_redo_size {
  std::vector<std::byte> fh;
  std::uint64_t size{};
  VNFS_XDR_FIELDS(fh, size)
};
/// After rec_commit: the redo records were applied and a syncfs that began afterwards
/// returned; recovery replays nothing.
struct rec_checkpoint {
  std::uint32_t reserved{};
  VNFS_XDR_FIELDS(reserved)
};

/// The commit point: every change is on stable storage; nothing is undone any more.
struct rec_commit {
  std::uint32_t reserved{};
  VNFS_XDR_FIELDS(reserved)
};

/// The transaction was rolled back and its rollback is on stable storage: nothing is undone
/// any more. `outcome`: TXN_ABORTED, or TXN_NONE for one whose outcome is not recorded (it
/// died, and its client sends it again; or it changed nothing).
struct rec_end {
  std::uint32_t outcome{};
  VNFS_XDR_FIELDS(outcome)
};

using record = std::variant<rec_begin, rec_attrs, rec_range, rec_created, rec_removed,
                            rec_rmdir, rec_renamed, rec_commit, rec_end, rec_redo_write,
                            rec_redo_size, rec_checkpoint>;

/// The most data one rec_redo_write carries (a longer write takes several).
inline constexpr std::size_t max_redo_data = 256 * 1024;

/// Writes one transaction's records into a journal file, from its start.
class journal_writer {
 public:
  journal_writer() = default;
  /// A new transaction of generation `gen` (greater than that of every transaction the file
  /// held before) in the journal file `fd` (not owned): the header and `first` are appended
  /// in memory. The file is untouched until the first write().
  journal_writer(int fd, std::uint64_t gen, const record& first);
  /// Appends one record in memory (not yet in the file).
  void append(const record& r);
  /// Appends rec_redo_write{fh, offset, cut, data} (data at most max_redo_data), byte for
  /// byte as append() would, without copying `data`: it is written from where it is, and
  /// must stay valid until a write() has made it durable (written_durable(), sync()).
  void append_write(std::span<const std::byte> fh, std::uint64_t offset, bool cut, std::span<const std::byte> data);
  /// Writes what was appended since the last sync and fdatasyncs the file. On an error
  /// nothing appended counts as durable (the next sync writes it again from where the file
  /// ended).
  void sync(std::error_code& ec);
  /// sync() in two steps, for a caller that syncs the file together with others: write()
  /// writes what was appended (not durable yet); after the caller has fsynced fd(),
  /// written_durable() counts it as durable. Until then the next write() writes it again.
  /// Before writing, it allocates file space for what it writes and for an end record after
  /// it (fallocate, FALLOC_FL_KEEP_SIZE): with the disk full it fails (ENOSPC) having written
  /// nothing, and the end record of the rollback that follows has its room.
  void write(std::error_code& ec);
  void written_durable();
  /// Takes back what was appended since the last write made durable (a rollback's records
  /// past its last barrier, a failed commit's redo and commit records: the changes they
  /// would protect never ran), so that the end record goes where they were to go, in the
  /// room write() allocated. Nothing before the first durable write (the header).
  void drop_unwritten();
  int fd() const noexcept { return fd_; }
  /// Whether nothing was written to the file yet (it still holds what it held before).
  bool untouched() const noexcept { return !wrote_; }

 private:
  void append_frame(const record& r);

  int fd_ = -1;
  std::uint64_t gen_ = 0;
  std::uint64_t size_ = 0;           ///< bytes of this transaction in the file
  std::vector<std::byte> pending_;   ///< appended, not yet written (but for the data below)
  /// append_write()'s data, by reference: each goes into the file after the first `at`
  /// bytes of pending_ (and after the data of earlier entries).
  struct by_reference {
    std::size_t at;
    std::span<const std::byte> data;
  };
  std::vector<by_reference> referenced_;
  std::size_t referenced_bytes_ = 0;
  bool wrote_ = false;               ///< write() was called
};

/// What a journal file holds: the generation its header names (0: no valid header, or a
/// journal of the format before generations, which held one transaction per file) and that
/// transaction's complete records, in order, up to the first torn or corrupt one or the
/// first of another generation.
struct journal_contents {
  std::uint64_t gen = 0;
  std::vector<record> records;
  /// Its commit record is there (followed by nothing, or by its checkpoint).
  bool committed() const {
    return !records.empty() && (std::holds_alternative<rec_commit>(records.back()) ||
                                std::holds_alternative<rec_checkpoint>(records.back()));
  }
  bool ended() const { return !records.empty() && std::holds_alternative<rec_end>(records.back()); }
  /// Committed with redo records and no checkpoint: recovery replays them.
  bool pending() const {
    if (records.empty() || !std::holds_alternative<rec_commit>(records.back())) return false;
    return std::any_of(records.begin(), records.end(), [](const record& r) {
      return std::holds_alternative<rec_redo_write>(r) || std::holds_alternative<rec_redo_size>(r);
    });
  }
};

/// Reads the journal file `name` of the directory `dirfd`. ENOENT if there is no such file.
journal_contents read_journal(int dirfd, const std::string& name, std::error_code& ec);

}  // namespace vnfs::server::txn
