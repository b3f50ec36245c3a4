// vnfs NFSv4 layer: protocol constants of RFC 8881 and RFC 7862 — program numbers, sizes,
// operation numbers, bit flags and attribute numbers — with the RFC names.
#pragma once

#include <cstdint>

namespace vnfs::nfs4 {

// ONC RPC program (RFC 8881 §16.1).
inline constexpr std::uint32_t NFS4_PROGRAM = 100003;
inline constexpr std::uint32_t NFS_V4 = 4;
inline constexpr std::uint32_t NFSPROC4_NULL = 0;
inline constexpr std::uint32_t NFSPROC4_COMPOUND = 1;

// Sizes.
inline constexpr std::uint32_t NFS4_FHSIZE = 128;
inline constexpr std::uint32_t NFS4_VERIFIER_SIZE = 8;
inline constexpr std::uint32_t NFS4_OTHER_SIZE = 12;
inline constexpr std::uint32_t NFS4_OPAQUE_LIMIT = 1024;
inline constexpr std::uint32_t NFS4_SESSIONID_SIZE = 16;
inline constexpr std::uint64_t NFS4_INT64_MAX = 0x7fffffffffffffffULL;
inline constexpr std::uint64_t NFS4_UINT64_MAX = 0xffffffffffffffffULL;
inline constexpr std::uint32_t NFS4_INT32_MAX = 0x7fffffff;
inline constexpr std::uint32_t NFS4_UINT32_MAX = 0xffffffff;
inline constexpr std::uint64_t NFS4_MAXFILELEN = 0xffffffffffffffffULL;
inline constexpr std::uint64_t NFS4_MAXFILEOFF = 0xfffffffffffffffeULL;

// RPC security flavors used inside NFSv4 bodies (RFC 5531, RFC 2203).
inline constexpr std::uint32_t AUTH_NONE = 0;
inline constexpr std::uint32_t AUTH_SYS = 1;
inline constexpr std::uint32_t RPCSEC_GSS = 6;

/// Operation numbers: all of RFC 8881 (3..58) and RFC 7862 (59..71).
enum class nfs_opnum4 : std::uint32_t {
  OP_ACCESS = 3,
  OP_CLOSE = 4,
  OP_COMMIT = 5,
  OP_CREATE = 6,
  OP_DELEGPURGE = 7,
  OP_DELEGRETURN = 8,
  OP_GETATTR = 9,
  OP_GETFH = 10,
  OP_LINK = 11,
  OP_LOCK = 12,
  OP_LOCKT = 13,
  OP_LOCKU = 14,
  OP_LOOKUP = 15,
  OP_LOOKUPP = 16,
  OP_NVERIFY = 17,
  OP_OPEN = 18,
  OP_OPENATTR = 19,
  OP_OPEN_CONFIRM = 20,
  OP_OPEN_DOWNGRADE = 21,
  OP_PUTFH = 22,
  OP_PUTPUBFH = 23,
  OP_PUTROOTFH = 24,
  OP_READ = 25,
  OP_READDIR = 26,
  OP_READLINK = 27,
  OP_REMOVE = 28,
  OP_RENAME = 29,
  OP_RENEW = 30,
  OP_RESTOREFH = 31,
  OP_SAVEFH = 32,
  OP_SECINFO = 33,
  OP_SETATTR = 34,
  OP_SETCLIENTID = 35,
  OP_SETCLIENTID_CONFIRM = 36,
  OP_VERIFY = 37,
  OP_WRITE = 38,
  OP_RELEASE_LOCKOWNER = 39,
  OP_BACKCHANNEL_CTL = 40,
  OP_BIND_CONN_TO_SESSION = 41,
  OP_EXCHANGE_ID = 42,
  OP_CREATE_SESSION = 43,
  OP_DESTROY_SESSION = 44,
  OP_FREE_STATEID = 45,
  OP_GET_DIR_DELEGATION = 46,
  OP_GETDEVICEINFO = 47,
  OP_GETDEVICELIST = 48,
  OP_LAYOUTCOMMIT = 49,
  OP_LAYOUTGET = 50,
  OP_LAYOUTRETURN = 51,
  OP_SECINFO_NO_NAME = 52,
  OP_SEQUENCE = 53,
  OP_SET_SSV = 54,
  OP_TEST_STATEID = 55,
  OP_WANT_DELEGATION = 56,
  OP_DESTROY_CLIENTID = 57,
  OP_RECLAIM_COMPLETE = 58,
  OP_ALLOCATE = 59,
  OP_COPY = 60,
  OP_COPY_NOTIFY = 61,
  OP_DEALLOCATE = 62,
  OP_IO_ADVISE = 63,
  OP_LAYOUTERROR = 64,
  OP_LAYOUTSTATS = 65,
  OP_OFFLOAD_CANCEL = 66,
  OP_OFFLOAD_STATUS = 67,
  OP_READ_PLUS = 68,
  OP_SEEK = 69,
  OP_WRITE_SAME = 70,
  OP_CLONE = 71,
  OP_ILLEGAL = 10044,
  /// vnfs extension (docs/transactions.md): transactional execution of the COMPOUND. Far
  /// from the RFCs' ranges, so a server that does not know it answers NFS4ERR_OP_ILLEGAL.
  OP_VNFS_TXN = 0x766E0001,
};

/// True for the operation numbers the RFCs define (OP_ACCESS..OP_CLONE and OP_ILLEGAL).
constexpr bool is_defined_opnum(std::uint32_t n) noexcept {
  return (n >= 3 && n <= 71) || n == 10044;
}

/// The RFC name of an operation without its "OP_" prefix ("READ"), or "UNKNOWN".
const char* op_name(nfs_opnum4 op) noexcept;

// ACCESS4args::access / ACCESS4resok bits.
inline constexpr std::uint32_t ACCESS4_READ = 0x00000001;
inline constexpr std::uint32_t ACCESS4_LOOKUP = 0x00000002;
inline constexpr std::uint32_t ACCESS4_MODIFY = 0x00000004;
inline constexpr std::uint32_t ACCESS4_EXTEND = 0x00000008;
inline constexpr std::uint32_t ACCESS4_DELETE = 0x00000010;
inline constexpr std::uint32_t ACCESS4_EXECUTE = 0x00000020;

// OPEN4args::share_access / share_deny.
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_READ = 0x00000001;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WRITE = 0x00000002;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_BOTH = 0x00000003;
inline constexpr std::uint32_t OPEN4_SHARE_DENY_NONE = 0x00000000;
inline constexpr std::uint32_t OPEN4_SHARE_DENY_READ = 0x00000001;
inline constexpr std::uint32_t OPEN4_SHARE_DENY_WRITE = 0x00000002;
inline constexpr std::uint32_t OPEN4_SHARE_DENY_BOTH = 0x00000003;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_DELEG_MASK = 0xFF00;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE = 0x0000;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_READ_DELEG = 0x0100;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG = 0x0200;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_ANY_DELEG = 0x0300;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_NO_DELEG = 0x0400;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_CANCEL = 0x0500;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL = 0x10000;
inline constexpr std::uint32_t OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED = 0x20000;

// OPEN4resok::rflags.
inline constexpr std::uint32_t OPEN4_RESULT_CONFIRM = 0x00000002;
inline constexpr std::uint32_t OPEN4_RESULT_LOCKTYPE_POSIX = 0x00000004;
inline constexpr std::uint32_t OPEN4_RESULT_PRESERVE_UNLINKED = 0x00000008;
inline constexpr std::uint32_t OPEN4_RESULT_MAY_NOTIFY_LOCK = 0x00000020;

// EXCHANGE_ID flags.
inline constexpr std::uint32_t EXCHGID4_FLAG_SUPP_MOVED_REFER = 0x00000001;
inline constexpr std::uint32_t EXCHGID4_FLAG_SUPP_MOVED_MIGR = 0x00000002;
inline constexpr std::uint32_t EXCHGID4_FLAG_SUPP_FENCE_OPS = 0x00000004;
inline constexpr std::uint32_t EXCHGID4_FLAG_BIND_PRINC_STATEID = 0x00000100;
inline constexpr std::uint32_t EXCHGID4_FLAG_USE_NON_PNFS = 0x00010000;
inline constexpr std::uint32_t EXCHGID4_FLAG_USE_PNFS_MDS = 0x00020000;
inline constexpr std::uint32_t EXCHGID4_FLAG_USE_PNFS_DS = 0x00040000;
inline constexpr std::uint32_t EXCHGID4_FLAG_MASK_PNFS = 0x00070000;
inline constexpr std::uint32_t EXCHGID4_FLAG_UPD_CONFIRMED_REC_A = 0x40000000;
inline constexpr std::uint32_t EXCHGID4_FLAG_CONFIRMED_R = 0x80000000;

// CREATE_SESSION flags.
inline constexpr std::uint32_t CREATE_SESSION4_FLAG_PERSIST = 0x00000001;
inline constexpr std::uint32_t CREATE_SESSION4_FLAG_CONN_BACK_CHAN = 0x00000002;
inline constexpr std::uint32_t CREATE_SESSION4_FLAG_CONN_RDMA = 0x00000004;

// SEQUENCE4resok::sr_status_flags.
inline constexpr std::uint32_t SEQ4_STATUS_CB_PATH_DOWN = 0x00000001;
inline constexpr std::uint32_t SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING = 0x00000002;
inline constexpr std::uint32_t SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED = 0x00000004;
inline constexpr std::uint32_t SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED = 0x00000008;
inline constexpr std::uint32_t SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED = 0x00000010;
inline constexpr std::uint32_t SEQ4_STATUS_ADMIN_STATE_REVOKED = 0x00000020;
inline constexpr std::uint32_t SEQ4_STATUS_RECALLABLE_STATE_REVOKED = 0x00000040;
inline constexpr std::uint32_t SEQ4_STATUS_LEASE_MOVED = 0x00000080;
inline constexpr std::uint32_t SEQ4_STATUS_RESTART_RECLAIM_NEEDED = 0x00000100;
inline constexpr std::uint32_t SEQ4_STATUS_CB_PATH_DOWN_SESSION = 0x00000200;
inline constexpr std::uint32_t SEQ4_STATUS_BACKCHANNEL_FAULT = 0x00000400;
inline constexpr std::uint32_t SEQ4_STATUS_DEVID_CHANGED = 0x00000800;
inline constexpr std::uint32_t SEQ4_STATUS_DEVID_DELETED = 0x00001000;

// fattr4_mode bits.
inline constexpr std::uint32_t MODE4_SUID = 0x800;
inline constexpr std::uint32_t MODE4_SGID = 0x400;
inline constexpr std::uint32_t MODE4_SVTX = 0x200;
inline constexpr std::uint32_t MODE4_RUSR = 0x100;
inline constexpr std::uint32_t MODE4_WUSR = 0x080;
inline constexpr std::uint32_t MODE4_XUSR = 0x040;
inline constexpr std::uint32_t MODE4_RGRP = 0x020;
inline constexpr std::uint32_t MODE4_WGRP = 0x010;
inline constexpr std::uint32_t MODE4_XGRP = 0x008;
inline constexpr std::uint32_t MODE4_ROTH = 0x004;
inline constexpr std::uint32_t MODE4_WOTH = 0x002;
inline constexpr std::uint32_t MODE4_XOTH = 0x001;

// fattr4_fh_expire_type values.
inline constexpr std::uint32_t FH4_PERSISTENT = 0x00000000;
inline constexpr std::uint32_t FH4_NOEXPIRE_WITH_OPEN = 0x00000001;
inline constexpr std::uint32_t FH4_VOLATILE_ANY = 0x00000002;
inline constexpr std::uint32_t FH4_VOL_MIGRATION = 0x00000004;
inline constexpr std::uint32_t FH4_VOL_RENAME = 0x00000008;

// fattr4_aclsupport bits, ACE types, flags and masks.
inline constexpr std::uint32_t ACL4_SUPPORT_ALLOW_ACL = 0x00000001;
inline constexpr std::uint32_t ACL4_SUPPORT_DENY_ACL = 0x00000002;
inline constexpr std::uint32_t ACL4_SUPPORT_AUDIT_ACL = 0x00000004;
inline constexpr std::uint32_t ACL4_SUPPORT_ALARM_ACL = 0x00000008;
inline constexpr std::uint32_t ACE4_ACCESS_ALLOWED_ACE_TYPE = 0x00000000;
inline constexpr std::uint32_t ACE4_ACCESS_DENIED_ACE_TYPE = 0x00000001;
inline constexpr std::uint32_t ACE4_SYSTEM_AUDIT_ACE_TYPE = 0x00000002;
inline constexpr std::uint32_t ACE4_SYSTEM_ALARM_ACE_TYPE = 0x00000003;
inline constexpr std::uint32_t ACE4_FILE_INHERIT_ACE = 0x00000001;
inline constexpr std::uint32_t ACE4_DIRECTORY_INHERIT_ACE = 0x00000002;
inline constexpr std::uint32_t ACE4_NO_PROPAGATE_INHERIT_ACE = 0x00000004;
inline constexpr std::uint32_t ACE4_INHERIT_ONLY_ACE = 0x00000008;
inline constexpr std::uint32_t ACE4_SUCCESSFUL_ACCESS_ACE_FLAG = 0x00000010;
inline constexpr std::uint32_t ACE4_FAILED_ACCESS_ACE_FLAG = 0x00000020;
inline constexpr std::uint32_t ACE4_IDENTIFIER_GROUP = 0x00000040;
inline constexpr std::uint32_t ACE4_INHERITED_ACE = 0x00000080;
inline constexpr std::uint32_t ACE4_READ_DATA = 0x00000001;
inline constexpr std::uint32_t ACE4_LIST_DIRECTORY = 0x00000001;
inline constexpr std::uint32_t ACE4_WRITE_DATA = 0x00000002;
inline constexpr std::uint32_t ACE4_ADD_FILE = 0x00000002;
inline constexpr std::uint32_t ACE4_APPEND_DATA = 0x00000004;
inline constexpr std::uint32_t ACE4_ADD_SUBDIRECTORY = 0x00000004;
inline constexpr std::uint32_t ACE4_READ_NAMED_ATTRS = 0x00000008;
inline constexpr std::uint32_t ACE4_WRITE_NAMED_ATTRS = 0x00000010;
inline constexpr std::uint32_t ACE4_EXECUTE = 0x00000020;
inline constexpr std::uint32_t ACE4_DELETE_CHILD = 0x00000040;
inline constexpr std::uint32_t ACE4_READ_ATTRIBUTES = 0x00000080;
inline constexpr std::uint32_t ACE4_WRITE_ATTRIBUTES = 0x00000100;
inline constexpr std::uint32_t ACE4_WRITE_RETENTION = 0x00000200;
inline constexpr std::uint32_t ACE4_WRITE_RETENTION_HOLD = 0x00000400;
inline constexpr std::uint32_t ACE4_DELETE = 0x00010000;
inline constexpr std::uint32_t ACE4_READ_ACL = 0x00020000;
inline constexpr std::uint32_t ACE4_WRITE_ACL = 0x00040000;
inline constexpr std::uint32_t ACE4_WRITE_OWNER = 0x00080000;
inline constexpr std::uint32_t ACE4_SYNCHRONIZE = 0x00100000;
inline constexpr std::uint32_t ACE4_GENERIC_READ = 0x00120081;
inline constexpr std::uint32_t ACE4_GENERIC_WRITE = 0x00160106;
inline constexpr std::uint32_t ACE4_GENERIC_EXECUTE = 0x001200A0;
inline constexpr std::uint32_t ACL4_AUTO_INHERIT = 0x00000001;
inline constexpr std::uint32_t ACL4_PROTECTED = 0x00000002;
inline constexpr std::uint32_t ACL4_DEFAULTED = 0x00000004;

// Attribute numbers (RFC 8881 §5.8, RFC 7862 §12.2).
inline constexpr std::uint32_t FATTR4_SUPPORTED_ATTRS = 0;
inline constexpr std::uint32_t FATTR4_TYPE = 1;
inline constexpr std::uint32_t FATTR4_FH_EXPIRE_TYPE = 2;
inline constexpr std::uint32_t FATTR4_CHANGE = 3;
inline constexpr std::uint32_t FATTR4_SIZE = 4;
inline constexpr std::uint32_t FATTR4_LINK_SUPPORT = 5;
inline constexpr std::uint32_t FATTR4_SYMLINK_SUPPORT = 6;
inline constexpr std::uint32_t FATTR4_NAMED_ATTR = 7;
inline constexpr std::uint32_t FATTR4_FSID = 8;
inline constexpr std::uint32_t FATTR4_UNIQUE_HANDLES = 9;
inline constexpr std::uint32_t FATTR4_LEASE_TIME = 10;
inline constexpr std::uint32_t FATTR4_RDATTR_ERROR = 11;
inline constexpr std::uint32_t FATTR4_ACL = 12;
inline constexpr std::uint32_t FATTR4_ACLSUPPORT = 13;
inline constexpr std::uint32_t FATTR4_ARCHIVE = 14;
inline constexpr std::uint32_t FATTR4_CANSETTIME = 15;
inline constexpr std::uint32_t FATTR4_CASE_INSENSITIVE = 16;
inline constexpr std::uint32_t FATTR4_CASE_PRESERVING = 17;
inline constexpr std::uint32_t FATTR4_CHOWN_RESTRICTED = 18;
inline constexpr std::uint32_t FATTR4_FILEHANDLE = 19;
inline constexpr std::uint32_t FATTR4_FILEID = 20;
inline constexpr std::uint32_t FATTR4_FILES_AVAIL = 21;
inline constexpr std::uint32_t FATTR4_FILES_FREE = 22;
inline constexpr std::uint32_t FATTR4_FILES_TOTAL = 23;
inline constexpr std::uint32_t FATTR4_FS_LOCATIONS = 24;
inline constexpr std::uint32_t FATTR4_HIDDEN = 25;
inline constexpr std::uint32_t FATTR4_HOMOGENEOUS = 26;
inline constexpr std::uint32_t FATTR4_MAXFILESIZE = 27;
inline constexpr std::uint32_t FATTR4_MAXLINK = 28;
inline constexpr std::uint32_t FATTR4_MAXNAME = 29;
inline constexpr std::uint32_t FATTR4_MAXREAD = 30;
inline constexpr std::uint32_t FATTR4_MAXWRITE = 31;
inline constexpr std::uint32_t FATTR4_MIMETYPE = 32;
inline constexpr std::uint32_t FATTR4_MODE = 33;
inline constexpr std::uint32_t FATTR4_NO_TRUNC = 34;
inline constexpr std::uint32_t FATTR4_NUMLINKS = 35;
inline constexpr std::uint32_t FATTR4_OWNER = 36;
inline constexpr std::uint32_t FATTR4_OWNER_GROUP = 37;
inline constexpr std::uint32_t FATTR4_QUOTA_AVAIL_HARD = 38;
inline constexpr std::uint32_t FATTR4_QUOTA_AVAIL_SOFT = 39;
inline constexpr std::uint32_t FATTR4_QUOTA_USED = 40;
inline constexpr std::uint32_t FATTR4_RAWDEV = 41;
inline constexpr std::uint32_t FATTR4_SPACE_AVAIL = 42;
inline constexpr std::uint32_t FATTR4_SPACE_FREE = 43;
inline constexpr std::uint32_t FATTR4_SPACE_TOTAL = 44;
inline constexpr std::uint32_t FATTR4_SPACE_USED = 45;
inline constexpr std::uint32_t FATTR4_SYSTEM = 46;
inline constexpr std::uint32_t FATTR4_TIME_ACCESS = 47;
inline constexpr std::uint32_t FATTR4_TIME_ACCESS_SET = 48;
inline constexpr std::uint32_t FATTR4_TIME_BACKUP = 49;
inline constexpr std::uint32_t FATTR4_TIME_CREATE = 50;
inline constexpr std::uint32_t FATTR4_TIME_DELTA = 51;
inline constexpr std::uint32_t FATTR4_TIME_METADATA = 52;
inline constexpr std::uint32_t FATTR4_TIME_MODIFY = 53;
inline constexpr std::uint32_t FATTR4_TIME_MODIFY_SET = 54;
inline constexpr std::uint32_t FATTR4_MOUNTED_ON_FILEID = 55;
inline constexpr std::uint32_t FATTR4_DIR_NOTIF_DELAY = 56;
inline constexpr std::uint32_t FATTR4_DIRENT_NOTIF_DELAY = 57;
inline constexpr std::uint32_t FATTR4_DACL = 58;
inline constexpr std::uint32_t FATTR4_SACL = 59;
inline constexpr std::uint32_t FATTR4_CHANGE_POLICY = 60;
inline constexpr std::uint32_t FATTR4_FS_STATUS = 61;
inline constexpr std::uint32_t FATTR4_FS_LAYOUT_TYPES = 62;
inline constexpr std::uint32_t FATTR4_LAYOUT_HINT = 63;
inline constexpr std::uint32_t FATTR4_LAYOUT_TYPES = 64;
inline constexpr std::uint32_t FATTR4_LAYOUT_BLKSIZE = 65;
inline constexpr std::uint32_t FATTR4_LAYOUT_ALIGNMENT = 66;
inline constexpr std::uint32_t FATTR4_FS_LOCATIONS_INFO = 67;
inline constexpr std::uint32_t FATTR4_MDSTHRESHOLD = 68;
inline constexpr std::uint32_t FATTR4_RETENTION_GET = 69;
inline constexpr std::uint32_t FATTR4_RETENTION_SET = 70;
inline constexpr std::uint32_t FATTR4_RETENTEVT_GET = 71;
inline constexpr std::uint32_t FATTR4_RETENTEVT_SET = 72;
inline constexpr std::uint32_t FATTR4_RETENTION_HOLD = 73;
inline constexpr std::uint32_t FATTR4_MODE_SET_MASKED = 74;
inline constexpr std::uint32_t FATTR4_SUPPATTR_EXCLCREAT = 75;
inline constexpr std::uint32_t FATTR4_FS_CHARSET_CAP = 76;
inline constexpr std::uint32_t FATTR4_CLONE_BLKSIZE = 77;
inline constexpr std::uint32_t FATTR4_SPACE_FREED = 78;
inline constexpr std::uint32_t FATTR4_CHANGE_ATTR_TYPE = 79;
inline constexpr std::uint32_t FATTR4_SEC_LABEL = 80;

}  // namespace vnfs::nfs4
