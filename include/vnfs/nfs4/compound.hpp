// vnfs NFSv4 layer: COMPOUND (RFC 8881 §16.2) — nfs_argop4 / nfs_resop4 as std::variant,
// whole-COMPOUND codecs for the client, and op-at-a-time decode/encode for the server.
#pragma once

#include <variant>
#include <vector>

#include "vnfs/nfs4/attribute_ops.hpp"
#include "vnfs/nfs4/filehandle_ops.hpp"
#include "vnfs/nfs4/io_ops.hpp"
#include "vnfs/nfs4/namespace_ops.hpp"
#include "vnfs/nfs4/session_ops.hpp"
#include "vnfs/nfs4/state_ops.hpp"
#include "vnfs/nfs4/txn_ops.hpp"
#include "vnfs/nfs4/types.hpp"

/// The operations with dedicated XXX4args / XXX4res types, in opnum order. X(NAME) is called
/// once per operation, e.g. for a dispatcher:
///   #define CASE(N) case nfs_opnum4::OP_##N: return handle(std::get<N##4args>(op));
#define VNFS_NFS4_SUPPORTED_OPS(X)                                                          \
  X(ACCESS) X(CLOSE) X(COMMIT) X(CREATE) X(DELEGRETURN) X(GETATTR) X(GETFH) X(LINK) X(LOCK) \
  X(LOCKT) X(LOCKU) X(LOOKUP) X(LOOKUPP) X(NVERIFY) X(OPEN) X(OPEN_DOWNGRADE) X(PUTFH)      \
  X(PUTPUBFH) X(PUTROOTFH) X(READ) X(READDIR) X(READLINK) X(REMOVE) X(RENAME) X(RESTOREFH)  \
  X(SAVEFH) X(SECINFO) X(SETATTR) X(VERIFY) X(WRITE) X(BIND_CONN_TO_SESSION)                \
  X(EXCHANGE_ID) X(CREATE_SESSION) X(DESTROY_SESSION) X(FREE_STATEID) X(SECINFO_NO_NAME)    \
  X(SEQUENCE) X(TEST_STATEID) X(DESTROY_CLIENTID) X(RECLAIM_COMPLETE) X(COPY) X(VNFS_TXN)

namespace vnfs::nfs4 {

/// An operation the RFCs define but this codec does not decode (NFSv4.0-only, pNFS, ...).
/// Its arguments cannot be skipped, so decoding of the COMPOUND stops after it; a server
/// answers it with NFS4ERR_NOTSUPP. Encoding writes the opnum alone.
struct unsupported_op4 {
  nfs_opnum4 opnum{};
  bool operator==(const unsupported_op4&) const = default;
};

/// An opnum the RFCs do not define, or OP_ILLEGAL itself; the server answers ILLEGAL4res
/// (NFS4ERR_OP_ILLEGAL) and stops. Encoding writes the raw opnum alone.
struct illegal_op4 {
  std::uint32_t opnum{};
  bool operator==(const illegal_op4&) const = default;
};

/// A result without a dedicated type, whose status is not NFS4_OK (the body of such a
/// result is void). Decoded on the client, e.g. from third-party servers.
struct status_only_res4 {
  nfs_opnum4 opnum{};
  nfsstat4 status{nfsstat4::NFS4ERR_NOTSUPP};
  bool operator==(const status_only_res4&) const = default;
};

struct ILLEGAL4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_ILLEGAL;
  nfsstat4 status{nfsstat4::NFS4ERR_OP_ILLEGAL};
  VNFS_XDR_FIELDS(status)
  bool operator==(const ILLEGAL4res&) const = default;
};

#define VNFS_NFS4_ARGS_ALTERNATIVE(N) N##4args,
#define VNFS_NFS4_RES_ALTERNATIVE(N) N##4res,
using nfs_argop4 = std::variant<VNFS_NFS4_SUPPORTED_OPS(VNFS_NFS4_ARGS_ALTERNATIVE)
                                    unsupported_op4,
                                illegal_op4>;
using nfs_resop4 = std::variant<VNFS_NFS4_SUPPORTED_OPS(VNFS_NFS4_RES_ALTERNATIVE)
                                    status_only_res4,
                                ILLEGAL4res>;
#undef VNFS_NFS4_ARGS_ALTERNATIVE
#undef VNFS_NFS4_RES_ALTERNATIVE

/// The operation an argument or result belongs to (OP_ILLEGAL for illegal_op4).
nfs_opnum4 opnum_of(const nfs_argop4& op) noexcept;
nfs_opnum4 opnum_of(const nfs_resop4& res) noexcept;
/// Every result carries a status.
nfsstat4 status_of(const nfs_resop4& res) noexcept;

/// A result of operation op carrying status and default values elsewhere: the dedicated
/// XXX4res for supported operations (so SETATTR4res still carries its attrsset), ILLEGAL4res
/// for OP_ILLEGAL and undefined opnums, status_only_res4 for the other RFC operations.
/// For a server answering an operation that failed before producing a result.
nfs_resop4 make_result(nfs_opnum4 op, nfsstat4 status);

/// Encodes `nfs_opnum4 argop` and the arguments.
void encode_argop(xdr::encoder& e, const nfs_argop4& op);
/// Decodes one operation. Returns unsupported_op4 for an RFC operation without a dedicated
/// type and illegal_op4 for an unknown opnum (or OP_ILLEGAL) without throwing and without
/// consuming anything past the opnum; throws xdr::decode_error on malformed or truncated
/// arguments of a supported operation.
nfs_argop4 decode_argop(xdr::decoder& d);

/// Encodes `nfs_opnum4 resop` and the result.
void encode_resop(xdr::encoder& e, const nfs_resop4& res);
/// Decodes one result: the dedicated type if there is one; status_only_res4 for other RFC
/// operations whose status is not NFS4_OK; ILLEGAL4res for OP_ILLEGAL. Throws
/// xdr::decode_error otherwise (an OK result without a dedicated type cannot be skipped).
nfs_resop4 decode_resop(xdr::decoder& d);

/// The fixed part of COMPOUND4args, for servers that decode and execute op by op:
/// decode the header, then call decode_argop numops times (RFC 8881 §15.2: an op that
/// cannot be decoded fails only when reached, after the ops before it ran).
struct compound_header {
  utf8str_cs tag;
  std::uint32_t minorversion{};
  std::uint32_t numops{};
  VNFS_XDR_FIELDS(tag, minorversion, numops)
  bool operator==(const compound_header&) const = default;
};

/// The fixed part of COMPOUND4res, for clients that decode result by result (a reply decoded
/// as it arrives, READ payloads placed as they come): decode the header, then call
/// decode_resop numres times. `numres` is the count as sent: the caller bounds it.
struct compound_res_header {
  nfsstat4 status{};
  utf8str_cs tag;
  std::uint32_t numres{};
  VNFS_XDR_FIELDS(status, tag, numres)
  bool operator==(const compound_res_header&) const = default;
};

/// Decoding stops after the first unsupported_op4 / illegal_op4, which ends argarray
/// (the rest of the input is left unread).
struct COMPOUND4args {
  utf8str_cs tag;
  std::uint32_t minorversion{1};
  std::vector<nfs_argop4> argarray;
  bool operator==(const COMPOUND4args&) const = default;
};

struct COMPOUND4res {
  nfsstat4 status{};
  utf8str_cs tag;
  std::vector<nfs_resop4> resarray;
  bool operator==(const COMPOUND4res&) const = default;
};

}  // namespace vnfs::nfs4

VNFS_NFS4_CODEC(nfs_argop4);  // encode_argop / decode_argop
VNFS_NFS4_CODEC(nfs_resop4);  // encode_resop / decode_resop
VNFS_NFS4_CODEC(COMPOUND4args);
VNFS_NFS4_CODEC(COMPOUND4res);
