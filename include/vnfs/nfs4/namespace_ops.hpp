// vnfs NFSv4 layer: operations on the name space — LOOKUP, LOOKUPP, CREATE, LINK, REMOVE,
// RENAME, READDIR, READLINK, SECINFO, SECINFO_NO_NAME (RFC 8881 §18).
#pragma once

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

struct LOOKUP4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOOKUP;
  component4 objname;
  VNFS_XDR_FIELDS(objname)
  bool operator==(const LOOKUP4args&) const = default;
};
struct LOOKUP4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOOKUP;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const LOOKUP4res&) const = default;
};

struct LOOKUPP4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOOKUPP;
  VNFS_XDR_FIELDS()
  bool operator==(const LOOKUPP4args&) const = default;
};
struct LOOKUPP4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LOOKUPP;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const LOOKUPP4res&) const = default;
};

/// union createtype4 switch (nfs_ftype4 type) { NF4LNK: linkdata; NF4BLK, NF4CHR: devdata;
/// others: void }. Any type decodes (the server answers NFS4ERR_BADTYPE, not BADXDR).
struct createtype4 {
  nfs_ftype4 type{nfs_ftype4::NF4DIR};
  linktext4 linkdata;
  specdata4 devdata;
  bool operator==(const createtype4&) const = default;
};

struct CREATE4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_CREATE;
  createtype4 objtype;
  component4 objname;
  fattr4 createattrs;
  VNFS_XDR_FIELDS(objtype, objname, createattrs)
  bool operator==(const CREATE4args&) const = default;
};
struct CREATE4resok {
  change_info4 cinfo;
  bitmap4 attrset;
  VNFS_XDR_FIELDS(cinfo, attrset)
  bool operator==(const CREATE4resok&) const = default;
};
struct CREATE4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_CREATE;
  nfsstat4 status{};
  CREATE4resok resok4;
  bool operator==(const CREATE4res&) const = default;
};

struct LINK4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LINK;
  component4 newname;
  VNFS_XDR_FIELDS(newname)
  bool operator==(const LINK4args&) const = default;
};
struct LINK4resok {
  change_info4 cinfo;
  VNFS_XDR_FIELDS(cinfo)
  bool operator==(const LINK4resok&) const = default;
};
struct LINK4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_LINK;
  nfsstat4 status{};
  LINK4resok resok4;
  bool operator==(const LINK4res&) const = default;
};

struct REMOVE4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_REMOVE;
  component4 target;
  VNFS_XDR_FIELDS(target)
  bool operator==(const REMOVE4args&) const = default;
};
struct REMOVE4resok {
  change_info4 cinfo;
  VNFS_XDR_FIELDS(cinfo)
  bool operator==(const REMOVE4resok&) const = default;
};
struct REMOVE4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_REMOVE;
  nfsstat4 status{};
  REMOVE4resok resok4;
  bool operator==(const REMOVE4res&) const = default;
};

struct RENAME4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_RENAME;
  component4 oldname;
  component4 newname;
  VNFS_XDR_FIELDS(oldname, newname)
  bool operator==(const RENAME4args&) const = default;
};
struct RENAME4resok {
  change_info4 source_cinfo;
  change_info4 target_cinfo;
  VNFS_XDR_FIELDS(source_cinfo, target_cinfo)
  bool operator==(const RENAME4resok&) const = default;
};
struct RENAME4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_RENAME;
  nfsstat4 status{};
  RENAME4resok resok4;
  bool operator==(const RENAME4res&) const = default;
};

struct READDIR4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_READDIR;
  nfs_cookie4 cookie{};
  verifier4 cookieverf{};
  count4 dircount{};
  count4 maxcount{};
  bitmap4 attr_request;
  VNFS_XDR_FIELDS(cookie, cookieverf, dircount, maxcount, attr_request)
  bool operator==(const READDIR4args&) const = default;
};
/// One directory entry; on the wire the RFC's `entry4 *nextentry` chain links them.
struct entry4 {
  nfs_cookie4 cookie{};
  component4 name;
  fattr4 attrs;
  VNFS_XDR_FIELDS(cookie, name, attrs)
  bool operator==(const entry4&) const = default;
};
/// Bytes entry e occupies in a READDIR reply, its list link included (RFC 8881 §18.23.3
/// counts the whole reply against maxcount).
std::size_t xdr_size(const entry4& e) noexcept;

/// struct dirlist4 { entry4 *entries; bool eof; } with the linked list as a vector.
struct dirlist4 {
  std::vector<entry4> entries;
  bool eof{};
  bool operator==(const dirlist4&) const = default;
};
struct READDIR4resok {
  verifier4 cookieverf{};
  dirlist4 reply;
  VNFS_XDR_FIELDS(cookieverf, reply)
  bool operator==(const READDIR4resok&) const = default;
};
struct READDIR4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_READDIR;
  nfsstat4 status{};
  READDIR4resok resok4;
  bool operator==(const READDIR4res&) const = default;
};

struct READLINK4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_READLINK;
  VNFS_XDR_FIELDS()
  bool operator==(const READLINK4args&) const = default;
};
struct READLINK4resok {
  linktext4 link;
  VNFS_XDR_FIELDS(link)
  bool operator==(const READLINK4resok&) const = default;
};
struct READLINK4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_READLINK;
  nfsstat4 status{};
  READLINK4resok resok4;
  bool operator==(const READLINK4res&) const = default;
};

struct SECINFO4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SECINFO;
  component4 name;
  VNFS_XDR_FIELDS(name)
  bool operator==(const SECINFO4args&) const = default;
};
struct rpcsec_gss_info {
  sec_oid4 oid;
  qop4 qop{};
  rpc_gss_svc_t service{rpc_gss_svc_t::RPC_GSS_SVC_NONE};
  VNFS_XDR_FIELDS(oid, qop, service)
  bool operator==(const rpcsec_gss_info&) const = default;
};
/// union secinfo4 switch (uint32_t flavor) { case RPCSEC_GSS: flavor_info; default: void; }
struct secinfo4 {
  std::uint32_t flavor{};
  rpcsec_gss_info flavor_info;
  bool operator==(const secinfo4&) const = default;
};
using SECINFO4resok = std::vector<secinfo4>;
struct SECINFO4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SECINFO;
  nfsstat4 status{};
  SECINFO4resok resok4;
  bool operator==(const SECINFO4res&) const = default;
};

enum class secinfo_style4 : std::uint32_t {
  SECINFO_STYLE4_CURRENT_FH = 0,
  SECINFO_STYLE4_PARENT = 1,
};
/// The RFC's `typedef secinfo_style4 SECINFO_NO_NAME4args`, as a struct to carry its opnum.
struct SECINFO_NO_NAME4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SECINFO_NO_NAME;
  secinfo_style4 style{};
  VNFS_XDR_FIELDS(style)
  bool operator==(const SECINFO_NO_NAME4args&) const = default;
};
/// The RFC's `typedef SECINFO4res SECINFO_NO_NAME4res`.
struct SECINFO_NO_NAME4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SECINFO_NO_NAME;
  nfsstat4 status{};
  SECINFO4resok resok4;
  bool operator==(const SECINFO_NO_NAME4res&) const = default;
};

}  // namespace vnfs::nfs4

VNFS_NFS4_CODEC(createtype4);
VNFS_NFS4_CODEC(dirlist4);
VNFS_NFS4_CODEC(secinfo4);
