// vnfs NFSv4 layer: operations on attributes and permissions — ACCESS, GETATTR, SETATTR,
// VERIFY, NVERIFY (RFC 8881 §18.1, §18.7, §18.30, §18.31, §18.15).
#pragma once

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

struct ACCESS4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_ACCESS;
  std::uint32_t access{};  // ACCESS4_* bits
  VNFS_XDR_FIELDS(access)
  bool operator==(const ACCESS4args&) const = default;
};
struct ACCESS4resok {
  std::uint32_t supported{};
  std::uint32_t access{};
  VNFS_XDR_FIELDS(supported, access)
  bool operator==(const ACCESS4resok&) const = default;
};
struct ACCESS4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_ACCESS;
  nfsstat4 status{};
  ACCESS4resok resok4;
  bool operator==(const ACCESS4res&) const = default;
};

struct GETATTR4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_GETATTR;
  bitmap4 attr_request;
  VNFS_XDR_FIELDS(attr_request)
  bool operator==(const GETATTR4args&) const = default;
};
struct GETATTR4resok {
  fattr4 obj_attributes;
  VNFS_XDR_FIELDS(obj_attributes)
  bool operator==(const GETATTR4resok&) const = default;
};
struct GETATTR4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_GETATTR;
  nfsstat4 status{};
  GETATTR4resok resok4;
  bool operator==(const GETATTR4res&) const = default;
};

struct SETATTR4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SETATTR;
  stateid4 stateid;
  fattr4 obj_attributes;
  VNFS_XDR_FIELDS(stateid, obj_attributes)
  bool operator==(const SETATTR4args&) const = default;
};
/// Not a union: attrsset travels whatever the status.
struct SETATTR4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SETATTR;
  nfsstat4 status{};
  bitmap4 attrsset;
  VNFS_XDR_FIELDS(status, attrsset)
  bool operator==(const SETATTR4res&) const = default;
};

struct VERIFY4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_VERIFY;
  fattr4 obj_attributes;
  VNFS_XDR_FIELDS(obj_attributes)
  bool operator==(const VERIFY4args&) const = default;
};
struct VERIFY4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_VERIFY;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const VERIFY4res&) const = default;
};

struct NVERIFY4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_NVERIFY;
  fattr4 obj_attributes;
  VNFS_XDR_FIELDS(obj_attributes)
  bool operator==(const NVERIFY4args&) const = default;
};
struct NVERIFY4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_NVERIFY;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const NVERIFY4res&) const = default;
};

}  // namespace vnfs::nfs4
