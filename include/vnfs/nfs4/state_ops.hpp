// vnfs NFSv4 layer: operations on open, lock and delegation state — OPEN, OPEN_DOWNGRADE,
// CLOSE, LOCK, LOCKT, LOCKU, DELEGRETURN, FREE_STATEID, TEST_STATEID (RFC 8881 §18).
#pragma once

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

enum class createmode4 : std::uint32_t {
  UNCHECKED4 = 0,
  GUARDED4 = 1,
  EXCLUSIVE4 = 2,  // deprecated in NFSv4.1
  EXCLUSIVE4_1 = 3,
};
enum class opentype4 : std::uint32_t { OPEN4_NOCREATE = 0, OPEN4_CREATE = 1 };
enum class limit_by4 : std::uint32_t { NFS_LIMIT_SIZE = 1, NFS_LIMIT_BLOCKS = 2 };
enum class open_delegation_type4 : std::uint32_t {
  OPEN_DELEGATE_NONE = 0,
  OPEN_DELEGATE_READ = 1,
  OPEN_DELEGATE_WRITE = 2,
  OPEN_DELEGATE_NONE_EXT = 3,
};
enum class open_claim_type4 : std::uint32_t {
  CLAIM_NULL = 0,
  CLAIM_PREVIOUS = 1,
  CLAIM_DELEGATE_CUR = 2,
  CLAIM_DELEGATE_PREV = 3,
  CLAIM_FH = 4,
  CLAIM_DELEG_CUR_FH = 5,
  CLAIM_DELEG_PREV_FH = 6,
};
enum class why_no_delegation4 : std::uint32_t {
  WND4_NOT_WANTED = 0,
  WND4_CONTENTION = 1,
  WND4_RESOURCE = 2,
  WND4_NOT_SUPP_FTYPE = 3,
  WND4_WRITE_DELEG_NOT_SUPP_FTYPE = 4,
  WND4_NOT_SUPP_UPGRADE = 5,
  WND4_NOT_SUPP_DOWNGRADE = 6,
  WND4_CANCELLED = 7,
  WND4_IS_DIR = 8,
};

struct creatverfattr {
  verifier4 cva_verf{};
  fattr4 cva_attrs;
  VNFS_XDR_FIELDS(cva_verf, cva_attrs)
  bool operator==(const creatverfattr&) const = default;
};

/// union createhow4 switch (createmode4 mode) { UNCHECKED4, GUARDED4: createattrs;
/// EXCLUSIVE4: createverf; EXCLUSIVE4_1: ch_createboth; } — other modes are malformed.
struct createhow4 {
  createmode4 mode{};
  fattr4 createattrs;
  verifier4 createverf{};
  creatverfattr ch_createboth;
  bool operator==(const createhow4&) const = default;
};

/// union openflag4 switch (opentype4 opentype) { OPEN4_CREATE: how; default: void; }
struct openflag4 {
  opentype4 opentype{};
  createhow4 how;
  bool operator==(const openflag4&) const = default;
};

struct open_claim_delegate_cur4 {
  stateid4 delegate_stateid;
  component4 file;
  VNFS_XDR_FIELDS(delegate_stateid, file)
  bool operator==(const open_claim_delegate_cur4&) const = default;
};

/// union open_claim4 switch (open_claim_type4 claim) { CLAIM_NULL: file; CLAIM_PREVIOUS:
/// delegate_type; CLAIM_DELEGATE_CUR: delegate_cur_info; CLAIM_DELEGATE_PREV:
/// file_delegate_prev; CLAIM_FH, CLAIM_DELEG_PREV_FH: void; CLAIM_DELEG_CUR_FH:
/// oc_delegate_stateid; } — other claims are malformed.
struct open_claim4 {
  open_claim_type4 claim{};
  component4 file;
  open_delegation_type4 delegate_type{};
  open_claim_delegate_cur4 delegate_cur_info;
  component4 file_delegate_prev;
  stateid4 oc_delegate_stateid;
  bool operator==(const open_claim4&) const = default;
};

struct OPEN4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_OPEN;
  seqid4 seqid{};
  std::uint32_t share_access{};  // OPEN4_SHARE_ACCESS_* (and WANT_* bits)
  std::uint32_t share_deny{};    // OPEN4_SHARE_DENY_*
  open_owner4 owner;
  openflag4 openhow;
  open_claim4 claim;
  VNFS_XDR_FIELDS(seqid, share_access, share_deny, owner, openhow, claim)
  bool operator==(const OPEN4args&) const = default;
};

struct nfs_modified_limit4 {
  std::uint32_t num_blocks{};
  std::uint32_t bytes_per_block{};
  VNFS_XDR_FIELDS(num_blocks, bytes_per_block)
  bool operator==(const nfs_modified_limit4&) const = default;
};

/// union nfs_space_limit4 switch (limit_by4 limitby) { NFS_LIMIT_SIZE: filesize;
/// NFS_LIMIT_BLOCKS: mod_blocks; } — other values are malformed.
struct nfs_space_limit4 {
  limit_by4 limitby{limit_by4::NFS_LIMIT_SIZE};
  std::uint64_t filesize{};
  nfs_modified_limit4 mod_blocks;
  bool operator==(const nfs_space_limit4&) const = default;
};

struct open_read_delegation4 {
  stateid4 stateid;
  bool recall{};
  nfsace4 permissions;
  VNFS_XDR_FIELDS(stateid, recall, permissions)
  bool operator==(const open_read_delegation4&) const = default;
};

struct open_write_delegation4 {
  stateid4 stateid;
  bool recall{};
  nfs_space_limit4 space_limit;
  nfsace4 permissions;
  VNFS_XDR_FIELDS(stateid, recall, space_limit, permissions)
  bool operator==(const open_write_delegation4&) const = default;
};

/// union open_none_delegation4 switch (why_no_delegation4 ond_why) { WND4_CONTENTION:
/// ond_server_will_push_deleg; WND4_RESOURCE: ond_server_will_signal_avail; default: void; }
struct open_none_delegation4 {
  why_no_delegation4 ond_why{};
  bool ond_server_will_push_deleg{};
  bool ond_server_will_signal_avail{};
  bool operator==(const open_none_delegation4&) const = default;
};

/// union open_delegation4 switch (open_delegation_type4 delegation_type) { NONE: void;
/// READ: read; WRITE: write; NONE_EXT: od_whynone; } — other types are malformed.
struct open_delegation4 {
  open_delegation_type4 delegation_type{};
  open_read_delegation4 read;
  open_write_delegation4 write;
  open_none_delegation4 od_whynone;
  bool operator==(const open_delegation4&) const = default;
};

struct OPEN4resok {
  stateid4 stateid;
  change_info4 cinfo;
  std::uint32_t rflags{};  // OPEN4_RESULT_*
  bitmap4 attrset;
  open_delegation4 delegation;
  VNFS_XDR_FIELDS(stateid, cinfo, rflags, attrset, delegation)
  bool operator==(const OPEN4resok&) const = default;
};
struct OPEN4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_OPEN;
  nfsstat4 status{};
  OPEN4resok resok4;
  bool operator==(const OPEN4res&) const = default;
};

struct OPEN_DOWNGRADE4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_OPEN_DOWNGRADE;
  stateid4 open_stateid;
  seqid4 seqid{};
  std::uint32_t share_access{};
  std::uint32_t share_deny{};
  VNFS_XDR_FIELDS(open_stateid, seqid, share_access, share_deny)
  bool operator==(const OPEN_DOWNGRADE4args&) const = default;
};
struct OPEN_DOWNGRADE4resok {
  stateid4 open_stateid;
  VNFS_XDR_FIELDS(open_stateid)
  bool operator==(const OPEN_DOWNGRADE4resok&) const = default;
};
struct OPEN_DOWNGRADE4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_OPEN_DOWNGRADE;
  nfsstat4 status{};
  OPEN_DOWNGRADE4resok resok4;
  bool operator==(const OPEN_DOWNGRADE4res&) const = default;
};

struct CLOSE4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_CLOSE;
  seqid4 seqid{};
  stateid4 open_stateid;
  VNFS_XDR_FIELDS(seqid, open_stateid)
  bool operator==(const CLOSE4args&) const = default;
};
/// union CLOSE4res switch (nfsstat4 status) { case NFS4_OK: stateid4 open_stateid; }
struct CLOSE4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_CLOSE;
  nfsstat4 status{};
  stateid4 open_stateid;
  bool operator==(const CLOSE4res&) const = default;
};

struct open_to_lock_owner4 {
  seqid4 open_seqid{};
  stateid4 open_stateid;
  seqid4 lock_seqid{};
  lock_owner4 lock_owner;
  VNFS_XDR_FIELDS(open_seqid, open_stateid, lock_seqid, lock_owner)
  bool operator==(const open_to_lock_owner4&) const = default;
};
struct exist_lock_owner4 {
  stateid4 lock_stateid;
  seqid4 lock_seqid{};
  VNFS_XDR_FIELDS(lock_stateid, lock_seqid)
  bool operator==(const exist_lock_owner4&) const = default;
};
/// union locker4 switch (bool new_lock_owner) { TRUE: open_owner; FALSE: lock_owner; }
struct locker4 {
  bool new_lock_owner{};
  open_to_lock_owner4 open_owner;
  exist_lock_owner4 lock_owner;
  bool operator==(const locker4&) const = default;
};

struct LOCK4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOCK;
  nfs_lock_type4 locktype{nfs_lock_type4::READ_LT};
  bool reclaim{};
  offset4 offset{};
  length4 length{};
  locker4 locker;
  VNFS_XDR_FIELDS(locktype, reclaim, offset, length, locker)
  bool operator==(const LOCK4args&) const = default;
};
struct LOCK4denied {
  offset4 offset{};
  length4 length{};
  nfs_lock_type4 locktype{nfs_lock_type4::READ_LT};
  lock_owner4 owner;
  VNFS_XDR_FIELDS(offset, length, locktype, owner)
  bool operator==(const LOCK4denied&) const = default;
};
struct LOCK4resok {
  stateid4 lock_stateid;
  VNFS_XDR_FIELDS(lock_stateid)
  bool operator==(const LOCK4resok&) const = default;
};
/// union LOCK4res switch (nfsstat4 status) { NFS4_OK: resok4; NFS4ERR_DENIED: denied; }
struct LOCK4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOCK;
  nfsstat4 status{};
  LOCK4resok resok4;
  LOCK4denied denied;
  bool operator==(const LOCK4res&) const = default;
};

struct LOCKT4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOCKT;
  nfs_lock_type4 locktype{nfs_lock_type4::READ_LT};
  offset4 offset{};
  length4 length{};
  lock_owner4 owner;
  VNFS_XDR_FIELDS(locktype, offset, length, owner)
  bool operator==(const LOCKT4args&) const = default;
};
/// union LOCKT4res switch (nfsstat4 status) { NFS4ERR_DENIED: denied; default: void; }
struct LOCKT4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOCKT;
  nfsstat4 status{};
  LOCK4denied denied;
  bool operator==(const LOCKT4res&) const = default;
};

struct LOCKU4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOCKU;
  nfs_lock_type4 locktype{nfs_lock_type4::READ_LT};
  seqid4 seqid{};
  stateid4 lock_stateid;
  offset4 offset{};
  length4 length{};
  VNFS_XDR_FIELDS(locktype, seqid, lock_stateid, offset, length)
  bool operator==(const LOCKU4args&) const = default;
};
/// union LOCKU4res switch (nfsstat4 status) { case NFS4_OK: stateid4 lock_stateid; }
struct LOCKU4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOCKU;
  nfsstat4 status{};
  stateid4 lock_stateid;
  bool operator==(const LOCKU4res&) const = default;
};

struct DELEGRETURN4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_DELEGRETURN;
  stateid4 deleg_stateid;
  VNFS_XDR_FIELDS(deleg_stateid)
  bool operator==(const DELEGRETURN4args&) const = default;
};
struct DELEGRETURN4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_DELEGRETURN;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const DELEGRETURN4res&) const = default;
};

struct FREE_STATEID4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_FREE_STATEID;
  stateid4 fsa_stateid;
  VNFS_XDR_FIELDS(fsa_stateid)
  bool operator==(const FREE_STATEID4args&) const = default;
};
/// RFC field fsr_status, named status as in every result.
struct FREE_STATEID4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_FREE_STATEID;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const FREE_STATEID4res&) const = default;
};

struct TEST_STATEID4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_TEST_STATEID;
  std::vector<stateid4> ts_stateids;
  VNFS_XDR_FIELDS(ts_stateids)
  bool operator==(const TEST_STATEID4args&) const = default;
};
struct TEST_STATEID4resok {
  std::vector<nfsstat4> tsr_status_codes;
  VNFS_XDR_FIELDS(tsr_status_codes)
  bool operator==(const TEST_STATEID4resok&) const = default;
};
/// RFC fields tsr_status / tsr_resok4, named status / resok4 as in every result.
struct TEST_STATEID4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_TEST_STATEID;
  nfsstat4 status{};
  TEST_STATEID4resok resok4;
  bool operator==(const TEST_STATEID4res&) const = default;
};

}  // namespace vnfs::nfs4

VNFS_NFS4_CODEC(createhow4);
VNFS_NFS4_CODEC(openflag4);
VNFS_NFS4_CODEC(open_claim4);
VNFS_NFS4_CODEC(nfs_space_limit4);
VNFS_NFS4_CODEC(open_none_delegation4);
VNFS_NFS4_CODEC(open_delegation4);
VNFS_NFS4_CODEC(CLOSE4res);
VNFS_NFS4_CODEC(locker4);
VNFS_NFS4_CODEC(LOCK4res);
VNFS_NFS4_CODEC(LOCKT4res);
VNFS_NFS4_CODEC(LOCKU4res);
