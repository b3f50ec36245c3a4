// vnfsd: open and byte-range lock state — stateids, share reservations, POSIX lock ranges
// (RFC 8881 §8.2, §9).
#pragma once

#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <vector>

#include "server/fs/object.hpp"
#include "server/fs/unique_fd.hpp"
#include "vnfs/nfs4/state_ops.hpp"
#include "vnfs/nfs4/types.hpp"

namespace vnfs::server {

/// Identifies a file independently of the handle or descriptor used to reach it.
struct file_key {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  friend auto operator<=>(const file_key&, const file_key&) = default;
};

/// A descriptor opened for data I/O by OPEN and shared by the READs/WRITEs of that open
/// stateid; kept alive by whoever holds the shared_ptr, so CLOSE racing with a READ on
/// another worker never closes a descriptor still in use.
using data_fd = std::shared_ptr<const fs::unique_fd>;

/// The open and lock state of one server instance. Thread-safe (one mutex).
///
/// Stateids. `other` is 12 bytes: a 4-byte instance tag (random, never 0 or ~0, drawn at
/// construction: stateids of an earlier vnfsd instance are recognised as stale) followed by
/// a 64-bit id, unique within the instance, big-endian. `seqid` starts at 1 and is
/// incremented by every change of the state (OPEN upgrade, OPEN_DOWNGRADE, LOCK, LOCKU);
/// a request carrying seqid 0 means "the current seqid" (§8.2.2).
///
/// Validation of a stateid (check()) in this order: other instance → NFS4ERR_STALE_STATEID;
/// unknown id or another client's → NFS4ERR_BAD_STATEID; seqid newer than current →
/// NFS4ERR_BAD_STATEID; older → NFS4ERR_OLD_STATEID. Special stateids are the caller's
/// business (they never reach the table as open/lock state).
///
/// Open state exists per (client, open-owner, file); lock state per (client, lock-owner,
/// file), attached to the open state through which it was created. Share reservations
/// (access/deny) conflict only between different open-owners. Byte-range locks are POSIX
/// ranges; they conflict between different lock-owners when they overlap and one is a write
/// lock. Locks are advisory: READ/WRITE are not checked against them (RFC 8881 §9.1 lets a
/// server choose; mandatory locking is not implemented).
class open_state_table {
 public:
  /// A new table with a random instance tag.
  open_state_table();
  /// A table with a fixed instance tag (tests): tag must not be 0 or 0xffffffff.
  explicit open_state_table(std::uint32_t instance_tag);

  open_state_table(const open_state_table&) = delete;
  open_state_table& operator=(const open_state_table&) = delete;

  std::uint32_t instance_tag() const noexcept { return tag_; }

  /// The key of the file `obj` is: its inode numbers if it knows them, else fstat.
  static file_key key_of(const fs::object& obj, std::error_code& ec);

  // ---- opens -------------------------------------------------------------------------

  struct open_request {
    nfs4::clientid4 client = 0;
    std::vector<std::byte> owner;  ///< the open-owner's opaque owner
    file_key file;
    std::uint32_t access = 0;  ///< OPEN4_SHARE_ACCESS_READ/WRITE bits (WANT bits removed)
    std::uint32_t deny = 0;    ///< OPEN4_SHARE_DENY_* bits
    /// Descriptors the handler opened for this request (O_RDONLY / O_WRONLY / O_RDWR):
    /// they become the state's read/write descriptors where it has none yet.
    data_fd read_fd;
    data_fd write_fd;
    /// The file's filehandle and object: kept while the file has open state, so that the
    /// handle still reaches the file after it was removed or renamed over (held_object()).
    std::vector<std::byte> fh;
    std::shared_ptr<const fs::object> object;
  };

  /// The object of a file that has open or lock state, by the filehandle OPEN returned for
  /// it; null if none. A file removed (or replaced by RENAME) while open can no longer be
  /// opened by handle, yet its open stateids stay valid (POSIX unlink-on-open semantics):
  /// PUTFH falls back on this.
  std::shared_ptr<const fs::object> held_object(const std::vector<std::byte>& fh) const;

  /// Creates the open state, or upgrades the owner's existing one for the file (access and
  /// deny become the unions; seqid + 1). NFS4ERR_SHARE_DENIED if another open-owner's open
  /// of the file denies what is asked, or has access that the new deny bits deny.
  nfs4::nfsstat4 open(const open_request& req, nfs4::stateid4& out);

  /// Whether another open-owner's open would conflict with `access`/`deny` on `file`
  /// (NFS4ERR_SHARE_DENIED); lets OPEN answer before creating or truncating anything.
  nfs4::nfsstat4 check_share(nfs4::clientid4 client, const std::vector<std::byte>& owner,
                             const file_key& file, std::uint32_t access,
                             std::uint32_t deny) const;

  /// OPEN_DOWNGRADE: the new access/deny must be subsets of the current ones
  /// (NFS4ERR_INVAL otherwise); descriptors no longer covered are dropped. seqid + 1.
  nfs4::nfsstat4 downgrade(nfs4::clientid4 client, const file_key& file,
                           const nfs4::stateid4& sid, std::uint32_t access, std::uint32_t deny,
                           nfs4::stateid4& out);

  /// CLOSE: NFS4ERR_LOCKS_HELD while a lock stateid of this open holds ranges; otherwise
  /// the open state and its (empty) lock states are freed.
  nfs4::nfsstat4 close(nfs4::clientid4 client, const file_key& file, const nfs4::stateid4& sid);

  // ---- data I/O ----------------------------------------------------------------------

  struct io_grant {
    data_fd fd;  ///< null: the handler does the I/O without a cached descriptor
  };

  /// Validates a non-special stateid (open or lock stateid) for READ (`write` false) or
  /// WRITE on `file`. BAD_STATEID if it is for another file; NFS4ERR_OPENMODE for a write
  /// through an open without write access. A read through a write-only open is allowed
  /// (RFC 8881 §18.22.4: the server may allow it) but gets no descriptor: the handler reads
  /// with a fresh open, checked by the kernel.
  nfs4::nfsstat4 check_io(nfs4::clientid4 client, const file_key& file,
                          const nfs4::stateid4& sid, bool write, io_grant& out) const;

  /// I/O with the anonymous stateid must respect share reservations (RFC 8881 §9.7):
  /// NFS4ERR_LOCKED if some open of `file` denies the access.
  nfs4::nfsstat4 check_anonymous_io(const file_key& file, bool write) const;

  // ---- byte-range locks --------------------------------------------------------------

  struct lock_request {
    nfs4::clientid4 client = 0;
    file_key file;
    nfs4::nfs_lock_type4 type = nfs4::nfs_lock_type4::READ_LT;
    nfs4::offset4 offset = 0;
    nfs4::length4 length = 0;
    /// new_lock_owner: the open stateid and the lock-owner; else the lock stateid.
    bool new_lock_owner = false;
    nfs4::stateid4 open_stateid;
    std::vector<std::byte> lock_owner;
    nfs4::stateid4 lock_stateid;
  };

  /// LOCK. NFS4ERR_INVAL for length 0 or a range past 2^64; NFS4ERR_DENIED with `denied`
  /// filled for a conflicting lock of another lock-owner; else the range is locked (merging
  /// with, or replacing the type of, the owner's own ranges), seqid + 1 (a new lock stateid
  /// starts at seqid 1).
  nfs4::nfsstat4 lock(const lock_request& req, nfs4::stateid4& out, nfs4::LOCK4denied& denied);

  /// LOCKT: NFS4ERR_DENIED with `denied` if a lock of another lock-owner than
  /// (client, owner) conflicts.
  nfs4::nfsstat4 test_lock(nfs4::clientid4 client, const std::vector<std::byte>& owner,
                           const file_key& file, nfs4::nfs_lock_type4 type,
                           nfs4::offset4 offset, nfs4::length4 length,
                           nfs4::LOCK4denied& denied) const;

  /// LOCKU: unlocks the range (splitting ranges that extend beyond it), seqid + 1.
  nfs4::nfsstat4 unlock(nfs4::clientid4 client, const file_key& file, const nfs4::stateid4& sid,
                        nfs4::offset4 offset, nfs4::length4 length, nfs4::stateid4& out);

  // ---- stateid management ------------------------------------------------------------

  /// TEST_STATEID for one stateid: NFS4_OK or the error of validation (special stateids:
  /// NFS4ERR_BAD_STATEID).
  nfs4::nfsstat4 test(nfs4::clientid4 client, const nfs4::stateid4& sid) const;

  /// FREE_STATEID: frees a lock stateid without locks; NFS4ERR_LOCKS_HELD for a lock
  /// stateid with locks and for an open stateid (the open is a lock, §18.38.3).
  nfs4::nfsstat4 free(nfs4::clientid4 client, const nfs4::stateid4& sid);

  /// Drops every open and lock of the client (lease expiry, DESTROY_CLIENTID).
  void release_client(nfs4::clientid4 client);

  /// Counts, for tests and statistics.
  std::size_t open_count() const;
  std::size_t lock_state_count() const;

 private:
  struct range {
    std::uint64_t start = 0;
    std::uint64_t end = 0;  ///< exclusive; UINT64_MAX: to the end of the file
    bool write = false;
  };
  struct open_state {
    nfs4::clientid4 client = 0;
    std::vector<std::byte> owner;
    file_key file;
    std::uint32_t seqid = 1;
    std::uint32_t access = 0;
    std::uint32_t deny = 0;
    data_fd read_fd, write_fd;
    std::set<std::uint64_t> locks;  ///< ids of lock states created through this open
  };
  struct lock_state {
    nfs4::clientid4 client = 0;
    std::vector<std::byte> owner;
    file_key file;
    std::uint32_t seqid = 1;
    std::uint64_t open_id = 0;
    std::vector<range> ranges;  ///< sorted by start, non-overlapping
  };
  struct file_state {
    std::set<std::uint64_t> opens;
    std::set<std::uint64_t> locks;
    std::vector<std::byte> fh;  ///< empty: not known
    std::shared_ptr<const fs::object> object;
  };
  enum class kind { none, open, lock };

  nfs4::stateid4 make_stateid(std::uint64_t id, std::uint32_t seqid) const;
  /// Validates `sid` against the tables; on success `id` and `k` name the state.
  nfs4::nfsstat4 find_locked(nfs4::clientid4 client, const nfs4::stateid4& sid,
                             std::uint64_t& id, kind& k) const;
  /// find_locked() for an open stateid of `file`: NFS4ERR_BAD_STATEID for a lock stateid or
  /// another file's; on success `id` names the open state.
  nfs4::nfsstat4 find_open_locked(nfs4::clientid4 client, const file_key& file,
                                  const nfs4::stateid4& sid, std::uint64_t& id) const;
  const lock_state* conflict_locked(nfs4::clientid4 client, const std::vector<std::byte>& owner,
                                    const file_key& file, const range& r,
                                    range& with) const;
  /// Erases the file's entry once it has neither opens nor locks.
  void drop_file_if_unused_locked(std::map<file_key, file_state>::iterator f);
  void erase_lock_locked(std::uint64_t id);
  void erase_open_locked(std::uint64_t id);

  const std::uint32_t tag_;
  mutable std::mutex mu_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, open_state> opens_;
  std::map<std::uint64_t, lock_state> locks_;
  std::map<file_key, file_state> files_;
  std::map<std::vector<std::byte>, file_key> by_fh_;
};

}  // namespace vnfs::server
