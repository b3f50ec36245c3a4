// vnfs NFSv4 layer: operations on the current and saved filehandles — PUTFH, PUTPUBFH,
// PUTROOTFH, GETFH, SAVEFH, RESTOREFH (RFC 8881 §18.19-18.22, §18.8, §18.27, §18.28).
#pragma once

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

/// object is at most NFS4_FHSIZE bytes.
struct PUTFH4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_PUTFH;
  nfs_fh4 object;
  bool operator==(const PUTFH4args&) const = default;
};
struct PUTFH4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_PUTFH;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const PUTFH4res&) const = default;
};

struct PUTPUBFH4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_PUTPUBFH;
  VNFS_XDR_FIELDS()
  bool operator==(const PUTPUBFH4args&) const = default;
};
struct PUTPUBFH4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_PUTPUBFH;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const PUTPUBFH4res&) const = default;
};

struct PUTROOTFH4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_PUTROOTFH;
  VNFS_XDR_FIELDS()
  bool operator==(const PUTROOTFH4args&) const = default;
};
struct PUTROOTFH4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_PUTROOTFH;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const PUTROOTFH4res&) const = default;
};

struct GETFH4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_GETFH;
  VNFS_XDR_FIELDS()
  bool operator==(const GETFH4args&) const = default;
};
/// object is at most NFS4_FHSIZE bytes.
struct GETFH4resok {
  nfs_fh4 object;
  bool operator==(const GETFH4resok&) const = default;
};
struct GETFH4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_GETFH;
  nfsstat4 status{};
  GETFH4resok resok4;
  bool operator==(const GETFH4res&) const = default;
};

struct SAVEFH4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SAVEFH;
  VNFS_XDR_FIELDS()
  bool operator==(const SAVEFH4args&) const = default;
};
struct SAVEFH4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SAVEFH;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const SAVEFH4res&) const = default;
};

struct RESTOREFH4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_RESTOREFH;
  VNFS_XDR_FIELDS()
  bool operator==(const RESTOREFH4args&) const = default;
};
struct RESTOREFH4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_RESTOREFH;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const RESTOREFH4res&) const = default;
};

}  // namespace vnfs::nfs4

VNFS_NFS4_CODEC(PUTFH4args);
VNFS_NFS4_CODEC(GETFH4resok);
