// COMPOUND: operation names, per-op dispatch of the argop/resop codecs.
#include "vnfs/nfs4/compound.hpp"

namespace vnfs::nfs4 {

const char* op_name(nfs_opnum4 op) noexcept {
  switch (op) {
#define VNFS_NFS4_NAME(N) \
  case nfs_opnum4::OP_##N: return #N;
    VNFS_NFS4_NAME(ACCESS) VNFS_NFS4_NAME(CLOSE) VNFS_NFS4_NAME(COMMIT) VNFS_NFS4_NAME(CREATE)
    VNFS_NFS4_NAME(DELEGPURGE) VNFS_NFS4_NAME(DELEGRETURN) VNFS_NFS4_NAME(GETATTR)
    VNFS_NFS4_NAME(GETFH) VNFS_NFS4_NAME(LINK) VNFS_NFS4_NAME(LOCK) VNFS_NFS4_NAME(LOCKT)
    VNFS_NFS4_NAME(LOCKU) VNFS_NFS4_NAME(LOOKUP) VNFS_NFS4_NAME(LOOKUPP) VNFS_NFS4_NAME(NVERIFY)
    VNFS_NFS4_NAME(OPEN) VNFS_NFS4_NAME(OPENATTR) VNFS_NFS4_NAME(OPEN_CONFIRM)
    VNFS_NFS4_NAME(OPEN_DOWNGRADE) VNFS_NFS4_NAME(PUTFH) VNFS_NFS4_NAME(PUTPUBFH)
    VNFS_NFS4_NAME(PUTROOTFH) VNFS_NFS4_NAME(READ) VNFS_NFS4_NAME(READDIR)
    VNFS_NFS4_NAME(READLINK) VNFS_NFS4_NAME(REMOVE) VNFS_NFS4_NAME(RENAME) VNFS_NFS4_NAME(RENEW)
    VNFS_NFS4_NAME(RESTOREFH) VNFS_NFS4_NAME(SAVEFH) VNFS_NFS4_NAME(SECINFO)
    VNFS_NFS4_NAME(SETATTR) VNFS_NFS4_NAME(SETCLIENTID) VNFS_NFS4_NAME(SETCLIENTID_CONFIRM)
    VNFS_NFS4_NAME(VERIFY) VNFS_NFS4_NAME(WRITE) VNFS_NFS4_NAME(RELEASE_LOCKOWNER)
    VNFS_NFS4_NAME(BACKCHANNEL_CTL) VNFS_NFS4_NAME(BIND_CONN_TO_SESSION)
    VNFS_NFS4_NAME(EXCHANGE_ID) VNFS_NFS4_NAME(CREATE_SESSION) VNFS_NFS4_NAME(DESTROY_SESSION)
    VNFS_NFS4_NAME(FREE_STATEID) VNFS_NFS4_NAME(GET_DIR_DELEGATION)
    VNFS_NFS4_NAME(GETDEVICEINFO) VNFS_NFS4_NAME(GETDEVICELIST) VNFS_NFS4_NAME(LAYOUTCOMMIT)
    VNFS_NFS4_NAME(LAYOUTGET) VNFS_NFS4_NAME(LAYOUTRETURN) VNFS_NFS4_NAME(SECINFO_NO_NAME)
    VNFS_NFS4_NAME(SEQUENCE) VNFS_NFS4_NAME(SET_SSV) VNFS_NFS4_NAME(TEST_STATEID)
    VNFS_NFS4_NAME(WANT_DELEGATION) VNFS_NFS4_NAME(DESTROY_CLIENTID)
    VNFS_NFS4_NAME(RECLAIM_COMPLETE) VNFS_NFS4_NAME(ALLOCATE) VNFS_NFS4_NAME(COPY)
    VNFS_NFS4_NAME(COPY_NOTIFY) VNFS_NFS4_NAME(DEALLOCATE) VNFS_NFS4_NAME(IO_ADVISE)
    VNFS_NFS4_NAME(LAYOUTERROR) VNFS_NFS4_NAME(LAYOUTSTATS) VNFS_NFS4_NAME(OFFLOAD_CANCEL)
    VNFS_NFS4_NAME(OFFLOAD_STATUS) VNFS_NFS4_NAME(READ_PLUS) VNFS_NFS4_NAME(SEEK)
    VNFS_NFS4_NAME(WRITE_SAME) VNFS_NFS4_NAME(CLONE) VNFS_NFS4_NAME(ILLEGAL) VNFS_NFS4_NAME(VNFS_TXN)
#undef VNFS_NFS4_NAME
  }
  return "UNKNOWN";
}

nfs_opnum4 opnum_of(const nfs_argop4& op) noexcept {
  return std::visit(
      [](const auto& a) -> nfs_opnum4 {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, unsupported_op4>) return a.opnum;
        else if constexpr (std::is_same_v<T, illegal_op4>) return nfs_opnum4::OP_ILLEGAL;
        else return T::opnum;
      },
      op);
}

nfs_opnum4 opnum_of(const nfs_resop4& res) noexcept {
  return std::visit(
      [](const auto& r) -> nfs_opnum4 {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, status_only_res4>) return r.opnum;
        else return T::opnum;
      },
      res);
}

nfsstat4 status_of(const nfs_resop4& res) noexcept {
  return std::visit([](const auto& r) { return r.status; }, res);
}

nfs_resop4 make_result(nfs_opnum4 op, nfsstat4 status) {
  switch (op) {
#define VNFS_NFS4_MAKE_RESULT(N) \
  case nfs_opnum4::OP_##N: {     \
    N##4res r{};                 \
    r.status = status;           \
    return r;                    \
  }
    VNFS_NFS4_SUPPORTED_OPS(VNFS_NFS4_MAKE_RESULT)
#undef VNFS_NFS4_MAKE_RESULT
    default: break;
  }
  auto n = static_cast<std::uint32_t>(op);
  if (!is_defined_opnum(n) || op == nfs_opnum4::OP_ILLEGAL) return ILLEGAL4res{status};
  return status_only_res4{op, status};
}

void encode_argop(xdr::encoder& e, const nfs_argop4& op) {
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, unsupported_op4>) {
          e.put_u32(static_cast<std::uint32_t>(a.opnum));
        } else if constexpr (std::is_same_v<T, illegal_op4>) {
          e.put_u32(a.opnum);
        } else {
          e.put_u32(static_cast<std::uint32_t>(T::opnum));
          xdr::encode(e, a);
        }
      },
      op);
}

nfs_argop4 decode_argop(xdr::decoder& d) {
  std::uint32_t n = d.get_u32();
  switch (static_cast<nfs_opnum4>(n)) {
#define VNFS_NFS4_DECODE_ARGS(N) \
  case nfs_opnum4::OP_##N:       \
    return nfs_argop4(std::in_place_type<N##4args>, xdr::decode<N##4args>(d));
    VNFS_NFS4_SUPPORTED_OPS(VNFS_NFS4_DECODE_ARGS)
#undef VNFS_NFS4_DECODE_ARGS
    default: break;
  }
  if (is_defined_opnum(n) && n != static_cast<std::uint32_t>(nfs_opnum4::OP_ILLEGAL))
    return unsupported_op4{static_cast<nfs_opnum4>(n)};
  return illegal_op4{n};
}

void encode_resop(xdr::encoder& e, const nfs_resop4& res) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, status_only_res4>) {
          e.put_u32(static_cast<std::uint32_t>(r.opnum));
          e.put_u32(static_cast<std::uint32_t>(r.status));
        } else {
          e.put_u32(static_cast<std::uint32_t>(T::opnum));
          xdr::encode(e, r);
        }
      },
      res);
}

nfs_resop4 decode_resop(xdr::decoder& d) {
  std::uint32_t n = d.get_u32();
  switch (static_cast<nfs_opnum4>(n)) {
#define VNFS_NFS4_DECODE_RES(N) \
  case nfs_opnum4::OP_##N:      \
    return nfs_resop4(std::in_place_type<N##4res>, xdr::decode<N##4res>(d));
    VNFS_NFS4_SUPPORTED_OPS(VNFS_NFS4_DECODE_RES)
#undef VNFS_NFS4_DECODE_RES
    case nfs_opnum4::OP_ILLEGAL: return xdr::decode<ILLEGAL4res>(d);
    default: break;
  }
  if (!is_defined_opnum(n)) throw xdr::decode_error("nfs4: result for an unknown operation");
  auto status = static_cast<nfsstat4>(d.get_u32());
  if (status == nfsstat4::NFS4_OK)
    throw xdr::decode_error(std::string("nfs4: cannot decode the OK result of ") +
                            op_name(static_cast<nfs_opnum4>(n)));
  return status_only_res4{static_cast<nfs_opnum4>(n), status};
}

}  // namespace vnfs::nfs4

namespace vnfs::xdr {

using namespace vnfs::nfs4;

void codec<nfs_argop4>::encode(encoder& e, const nfs_argop4& v) { encode_argop(e, v); }
void codec<nfs_argop4>::decode(decoder& d, nfs_argop4& v) { v = decode_argop(d); }
void codec<nfs_resop4>::encode(encoder& e, const nfs_resop4& v) { encode_resop(e, v); }
void codec<nfs_resop4>::decode(decoder& d, nfs_resop4& v) { v = decode_resop(d); }

void codec<COMPOUND4args>::encode(encoder& e, const COMPOUND4args& v) {
  e.put_string(v.tag);
  e.put_u32(v.minorversion);
  e.put_u32(static_cast<std::uint32_t>(v.argarray.size()));
  for (const nfs_argop4& op : v.argarray) encode_argop(e, op);
}
void codec<COMPOUND4args>::decode(decoder& d, COMPOUND4args& v) {
  v.tag = d.get_string();
  v.minorversion = d.get_u32();
  std::uint32_t n = d.get_count();
  v.argarray.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    nfs_argop4& op = v.argarray.emplace_back(decode_argop(d));
    if (std::holds_alternative<unsupported_op4>(op) || std::holds_alternative<illegal_op4>(op))
      return;  // the arguments that follow cannot be located
  }
}

void codec<COMPOUND4res>::encode(encoder& e, const COMPOUND4res& v) {
  xdr::encode(e, compound_res_header{v.status, v.tag, static_cast<std::uint32_t>(v.resarray.size())});
  for (const nfs_resop4& r : v.resarray) encode_resop(e, r);
}
void codec<COMPOUND4res>::decode(decoder& d, COMPOUND4res& v) {
  auto h = xdr::decode<compound_res_header>(d);
  // As get_count(): every result takes at least 4 bytes, so a hostile count allocates nothing.
  if (h.numres > d.remaining() / 4) throw decode_error("xdr: array count exceeds the remaining input");
  v.status = h.status;
  v.tag = std::move(h.tag);
  v.resarray.clear();
  v.resarray.reserve(h.numres);
  for (std::uint32_t i = 0; i < h.numres; ++i) v.resarray.push_back(decode_resop(d));
}

}  // namespace vnfs::xdr
