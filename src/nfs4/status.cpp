// nfsstat4 names, descriptions and the "nfs4" error category.
#include "vnfs/nfs4/status.hpp"

#include <cerrno>

namespace vnfs::nfs4 {
namespace {

struct status_info {
  const char* name;
  const char* description;
};

status_info info(nfsstat4 s) noexcept {
  using enum nfsstat4;
  switch (s) {
    case NFS4_OK: return {"NFS4_OK", "success"};
    case NFS4ERR_PERM: return {"NFS4ERR_PERM", "caller is not privileged"};
    case NFS4ERR_NOENT: return {"NFS4ERR_NOENT", "no such file or directory"};
    case NFS4ERR_IO: return {"NFS4ERR_IO", "hard I/O error"};
    case NFS4ERR_NXIO: return {"NFS4ERR_NXIO", "no such device or address"};
    case NFS4ERR_ACCESS: return {"NFS4ERR_ACCESS", "access denied"};
    case NFS4ERR_EXIST: return {"NFS4ERR_EXIST", "file already exists"};
    case NFS4ERR_XDEV: return {"NFS4ERR_XDEV", "cross-file-system operation"};
    case NFS4ERR_NOTDIR: return {"NFS4ERR_NOTDIR", "not a directory"};
    case NFS4ERR_ISDIR: return {"NFS4ERR_ISDIR", "is a directory"};
    case NFS4ERR_INVAL: return {"NFS4ERR_INVAL", "invalid argument"};
    case NFS4ERR_FBIG: return {"NFS4ERR_FBIG", "file too large"};
    case NFS4ERR_NOSPC: return {"NFS4ERR_NOSPC", "no space left on device"};
    case NFS4ERR_ROFS: return {"NFS4ERR_ROFS", "read-only file system"};
    case NFS4ERR_MLINK: return {"NFS4ERR_MLINK", "too many hard links"};
    case NFS4ERR_NAMETOOLONG: return {"NFS4ERR_NAMETOOLONG", "name too long"};
    case NFS4ERR_NOTEMPTY: return {"NFS4ERR_NOTEMPTY", "directory not empty"};
    case NFS4ERR_DQUOT: return {"NFS4ERR_DQUOT", "quota exceeded"};
    case NFS4ERR_STALE: return {"NFS4ERR_STALE", "stale filehandle"};
    case NFS4ERR_BADHANDLE: return {"NFS4ERR_BADHANDLE", "malformed filehandle"};
    case NFS4ERR_BAD_COOKIE: return {"NFS4ERR_BAD_COOKIE", "stale READDIR cookie"};
    case NFS4ERR_NOTSUPP: return {"NFS4ERR_NOTSUPP", "operation not supported"};
    case NFS4ERR_TOOSMALL: return {"NFS4ERR_TOOSMALL", "reply buffer too small"};
    case NFS4ERR_SERVERFAULT: return {"NFS4ERR_SERVERFAULT", "server fault"};
    case NFS4ERR_BADTYPE: return {"NFS4ERR_BADTYPE", "object type not supported"};
    case NFS4ERR_DELAY: return {"NFS4ERR_DELAY", "server busy, retry later"};
    case NFS4ERR_SAME: return {"NFS4ERR_SAME", "attributes are the same"};
    case NFS4ERR_DENIED: return {"NFS4ERR_DENIED", "lock unavailable"};
    case NFS4ERR_EXPIRED: return {"NFS4ERR_EXPIRED", "lease expired"};
    case NFS4ERR_LOCKED: return {"NFS4ERR_LOCKED", "I/O conflicts with a lock"};
    case NFS4ERR_GRACE: return {"NFS4ERR_GRACE", "server in grace period"};
    case NFS4ERR_FHEXPIRED: return {"NFS4ERR_FHEXPIRED", "volatile filehandle expired"};
    case NFS4ERR_SHARE_DENIED: return {"NFS4ERR_SHARE_DENIED", "share reservation denied"};
    case NFS4ERR_WRONGSEC: return {"NFS4ERR_WRONGSEC", "wrong security flavor"};
    case NFS4ERR_CLID_INUSE: return {"NFS4ERR_CLID_INUSE", "client ID in use"};
    case NFS4ERR_RESOURCE: return {"NFS4ERR_RESOURCE", "resource exhaustion"};
    case NFS4ERR_MOVED: return {"NFS4ERR_MOVED", "file system moved"};
    case NFS4ERR_NOFILEHANDLE: return {"NFS4ERR_NOFILEHANDLE", "no current filehandle"};
    case NFS4ERR_MINOR_VERS_MISMATCH:
      return {"NFS4ERR_MINOR_VERS_MISMATCH", "minor version not supported"};
    case NFS4ERR_STALE_CLIENTID: return {"NFS4ERR_STALE_CLIENTID", "stale client ID"};
    case NFS4ERR_STALE_STATEID: return {"NFS4ERR_STALE_STATEID", "stale stateid"};
    case NFS4ERR_OLD_STATEID: return {"NFS4ERR_OLD_STATEID", "outdated stateid"};
    case NFS4ERR_BAD_STATEID: return {"NFS4ERR_BAD_STATEID", "invalid stateid"};
    case NFS4ERR_BAD_SEQID: return {"NFS4ERR_BAD_SEQID", "sequence ID out of order"};
    case NFS4ERR_NOT_SAME: return {"NFS4ERR_NOT_SAME", "attributes are not the same"};
    case NFS4ERR_LOCK_RANGE: return {"NFS4ERR_LOCK_RANGE", "overlapping lock range"};
    case NFS4ERR_SYMLINK: return {"NFS4ERR_SYMLINK", "is a symbolic link"};
    case NFS4ERR_RESTOREFH: return {"NFS4ERR_RESTOREFH", "no saved filehandle"};
    case NFS4ERR_LEASE_MOVED: return {"NFS4ERR_LEASE_MOVED", "lease moved"};
    case NFS4ERR_ATTRNOTSUPP: return {"NFS4ERR_ATTRNOTSUPP", "attribute not supported"};
    case NFS4ERR_NO_GRACE: return {"NFS4ERR_NO_GRACE", "reclaim outside grace period"};
    case NFS4ERR_RECLAIM_BAD: return {"NFS4ERR_RECLAIM_BAD", "reclaim rejected"};
    case NFS4ERR_RECLAIM_CONFLICT: return {"NFS4ERR_RECLAIM_CONFLICT", "conflict on reclaim"};
    case NFS4ERR_BADXDR: return {"NFS4ERR_BADXDR", "XDR decoding failed"};
    case NFS4ERR_LOCKS_HELD: return {"NFS4ERR_LOCKS_HELD", "locks still held"};
    case NFS4ERR_OPENMODE: return {"NFS4ERR_OPENMODE", "open mode forbids the operation"};
    case NFS4ERR_BADOWNER: return {"NFS4ERR_BADOWNER", "owner cannot be mapped"};
    case NFS4ERR_BADCHAR: return {"NFS4ERR_BADCHAR", "character not supported"};
    case NFS4ERR_BADNAME: return {"NFS4ERR_BADNAME", "name not supported"};
    case NFS4ERR_BAD_RANGE: return {"NFS4ERR_BAD_RANGE", "lock range not supported"};
    case NFS4ERR_LOCK_NOTSUPP: return {"NFS4ERR_LOCK_NOTSUPP", "atomic lock change not supported"};
    case NFS4ERR_OP_ILLEGAL: return {"NFS4ERR_OP_ILLEGAL", "illegal operation"};
    case NFS4ERR_DEADLOCK: return {"NFS4ERR_DEADLOCK", "lock deadlock"};
    case NFS4ERR_FILE_OPEN: return {"NFS4ERR_FILE_OPEN", "file is open"};
    case NFS4ERR_ADMIN_REVOKED: return {"NFS4ERR_ADMIN_REVOKED", "state revoked by administrator"};
    case NFS4ERR_CB_PATH_DOWN: return {"NFS4ERR_CB_PATH_DOWN", "callback path down"};
    case NFS4ERR_BADIOMODE: return {"NFS4ERR_BADIOMODE", "bad layout I/O mode"};
    case NFS4ERR_BADLAYOUT: return {"NFS4ERR_BADLAYOUT", "bad layout"};
    case NFS4ERR_BAD_SESSION_DIGEST:
      return {"NFS4ERR_BAD_SESSION_DIGEST", "bad session digest"};
    case NFS4ERR_BADSESSION: return {"NFS4ERR_BADSESSION", "unknown session"};
    case NFS4ERR_BADSLOT: return {"NFS4ERR_BADSLOT", "bad slot ID"};
    case NFS4ERR_COMPLETE_ALREADY: return {"NFS4ERR_COMPLETE_ALREADY", "reclaim already complete"};
    case NFS4ERR_CONN_NOT_BOUND_TO_SESSION:
      return {"NFS4ERR_CONN_NOT_BOUND_TO_SESSION", "connection not bound to session"};
    case NFS4ERR_DELEG_ALREADY_WANTED:
      return {"NFS4ERR_DELEG_ALREADY_WANTED", "delegation already wanted"};
    case NFS4ERR_BACK_CHAN_BUSY: return {"NFS4ERR_BACK_CHAN_BUSY", "backchannel requests outstanding"};
    case NFS4ERR_LAYOUTTRYLATER: return {"NFS4ERR_LAYOUTTRYLATER", "layout unavailable, retry later"};
    case NFS4ERR_LAYOUTUNAVAILABLE: return {"NFS4ERR_LAYOUTUNAVAILABLE", "layout unavailable"};
    case NFS4ERR_NOMATCHING_LAYOUT: return {"NFS4ERR_NOMATCHING_LAYOUT", "no matching layout"};
    case NFS4ERR_RECALLCONFLICT: return {"NFS4ERR_RECALLCONFLICT", "conflict with recall"};
    case NFS4ERR_UNKNOWN_LAYOUTTYPE:
      return {"NFS4ERR_UNKNOWN_LAYOUTTYPE", "layout type not supported"};
    case NFS4ERR_SEQ_MISORDERED: return {"NFS4ERR_SEQ_MISORDERED", "slot sequence ID misordered"};
    case NFS4ERR_SEQUENCE_POS: return {"NFS4ERR_SEQUENCE_POS", "SEQUENCE is not the first operation"};
    case NFS4ERR_REQ_TOO_BIG: return {"NFS4ERR_REQ_TOO_BIG", "request too big"};
    case NFS4ERR_REP_TOO_BIG: return {"NFS4ERR_REP_TOO_BIG", "reply too big"};
    case NFS4ERR_REP_TOO_BIG_TO_CACHE:
      return {"NFS4ERR_REP_TOO_BIG_TO_CACHE", "reply too big to cache"};
    case NFS4ERR_RETRY_UNCACHED_REP:
      return {"NFS4ERR_RETRY_UNCACHED_REP", "retry of an uncached reply"};
    case NFS4ERR_UNSAFE_COMPOUND: return {"NFS4ERR_UNSAFE_COMPOUND", "unsafe compound"};
    case NFS4ERR_TOO_MANY_OPS: return {"NFS4ERR_TOO_MANY_OPS", "too many operations"};
    case NFS4ERR_OP_NOT_IN_SESSION:
      return {"NFS4ERR_OP_NOT_IN_SESSION", "operation needs a SEQUENCE"};
    case NFS4ERR_HASH_ALG_UNSUPP: return {"NFS4ERR_HASH_ALG_UNSUPP", "hash algorithm not supported"};
    case NFS4ERR_CLIENTID_BUSY: return {"NFS4ERR_CLIENTID_BUSY", "client ID has state"};
    case NFS4ERR_PNFS_IO_HOLE: return {"NFS4ERR_PNFS_IO_HOLE", "I/O to a sparse hole"};
    case NFS4ERR_SEQ_FALSE_RETRY: return {"NFS4ERR_SEQ_FALSE_RETRY", "retry differs from original"};
    case NFS4ERR_BAD_HIGH_SLOT: return {"NFS4ERR_BAD_HIGH_SLOT", "bad highest slot ID"};
    case NFS4ERR_DEADSESSION: return {"NFS4ERR_DEADSESSION", "session is dead"};
    case NFS4ERR_ENCR_ALG_UNSUPP:
      return {"NFS4ERR_ENCR_ALG_UNSUPP", "encryption algorithm not supported"};
    case NFS4ERR_PNFS_NO_LAYOUT: return {"NFS4ERR_PNFS_NO_LAYOUT", "I/O without a layout"};
    case NFS4ERR_NOT_ONLY_OP: return {"NFS4ERR_NOT_ONLY_OP", "operation must be alone"};
    case NFS4ERR_WRONG_CRED: return {"NFS4ERR_WRONG_CRED", "wrong credential"};
    case NFS4ERR_WRONG_TYPE: return {"NFS4ERR_WRONG_TYPE", "operation on wrong object type"};
    case NFS4ERR_DIRDELEG_UNAVAIL:
      return {"NFS4ERR_DIRDELEG_UNAVAIL", "directory delegation unavailable"};
    case NFS4ERR_REJECT_DELEG: return {"NFS4ERR_REJECT_DELEG", "delegation rejected"};
    case NFS4ERR_RETURNCONFLICT: return {"NFS4ERR_RETURNCONFLICT", "layout return conflict"};
    case NFS4ERR_DELEG_REVOKED: return {"NFS4ERR_DELEG_REVOKED", "delegation revoked"};
    case NFS4ERR_PARTNER_NOTSUPP: return {"NFS4ERR_PARTNER_NOTSUPP", "server-to-server not supported"};
    case NFS4ERR_PARTNER_NO_AUTH:
      return {"NFS4ERR_PARTNER_NO_AUTH", "server-to-server not authorized"};
    case NFS4ERR_UNION_NOTSUPP: return {"NFS4ERR_UNION_NOTSUPP", "union arm not supported"};
    case NFS4ERR_OFFLOAD_DENIED: return {"NFS4ERR_OFFLOAD_DENIED", "copy offload denied"};
    case NFS4ERR_WRONG_LFS: return {"NFS4ERR_WRONG_LFS", "label format not supported"};
    case NFS4ERR_BADLABEL: return {"NFS4ERR_BADLABEL", "incorrect security label"};
    case NFS4ERR_OFFLOAD_NO_REQS:
      return {"NFS4ERR_OFFLOAD_NO_REQS", "copy requirements cannot be met"};
  }
  return {nullptr, nullptr};
}

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "nfs4"; }

  std::string message(int v) const override {
    status_info i = info(static_cast<nfsstat4>(v));
    if (i.name == nullptr) return "unknown NFSv4 status " + std::to_string(v);
    return std::string(i.name) + ": " + i.description;
  }

  // Lets callers compare against portable conditions: ec == std::errc::no_such_file_or_directory.
  std::error_condition default_error_condition(int v) const noexcept override {
    using enum nfsstat4;
    switch (static_cast<nfsstat4>(v)) {
      case NFS4ERR_PERM: return std::errc::operation_not_permitted;
      case NFS4ERR_NOENT: return std::errc::no_such_file_or_directory;
      case NFS4ERR_IO: return std::errc::io_error;
      case NFS4ERR_NXIO: return std::errc::no_such_device_or_address;
      case NFS4ERR_ACCESS: return std::errc::permission_denied;
      case NFS4ERR_EXIST: return std::errc::file_exists;
      case NFS4ERR_XDEV: return std::errc::cross_device_link;
      case NFS4ERR_NOTDIR: return std::errc::not_a_directory;
      case NFS4ERR_ISDIR: return std::errc::is_a_directory;
      case NFS4ERR_INVAL: return std::errc::invalid_argument;
      case NFS4ERR_FBIG: return std::errc::file_too_large;
      case NFS4ERR_NOSPC: return std::errc::no_space_on_device;
      case NFS4ERR_ROFS: return std::errc::read_only_file_system;
      case NFS4ERR_MLINK: return std::errc::too_many_links;
      case NFS4ERR_NAMETOOLONG: return std::errc::filename_too_long;
      case NFS4ERR_NOTEMPTY: return std::errc::directory_not_empty;
      case NFS4ERR_DQUOT: return {EDQUOT, std::generic_category()};
      case NFS4ERR_STALE: return {ESTALE, std::generic_category()};
      case NFS4ERR_NOTSUPP: return std::errc::not_supported;
      case NFS4ERR_DELAY: return std::errc::resource_unavailable_try_again;
      case NFS4ERR_DENIED: return std::errc::resource_unavailable_try_again;
      case NFS4ERR_DEADLOCK: return std::errc::resource_deadlock_would_occur;
      case NFS4ERR_SYMLINK: return std::errc::too_many_symbolic_link_levels;
      case NFS4ERR_SHARE_DENIED: return std::errc::permission_denied;
      default: return {v, *this};
    }
  }
};

}  // namespace

const char* status_name(nfsstat4 s) noexcept { return info(s).name; }

const std::error_category& nfs4_category() noexcept {
  static const category c;
  return c;
}

}  // namespace vnfs::nfs4
