// vnfsd: GETATTR, SETATTR, VERIFY, NVERIFY, ACCESS (RFC 8881 §18.7, §18.30, §18.31,
// §18.15, §18.1).
#include "server/fs/access.hpp"
#include "server/ops/attribute_codec.hpp"
#include "server/ops/fh_checks.hpp"
#include "server/ops/handlers.hpp"
#include "server/txn/transaction.hpp"
#include "vnfs/xdr/error.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;
using namespace ops_detail;

namespace {

constexpr nfsstat4 ok = nfsstat4::NFS4_OK;

bool requests_write_only(const nfs4::bitmap4& m) {
  for (unsigned n : m.bits())
    if (is_write_only_attribute(n)) return true;
  return false;
}

/// VERIFY and NVERIFY: NFS4_OK when the given values equal the object's, NFS4ERR_NOT_SAME
/// when they differ, or the error that prevents the comparison.
nfsstat4 compare_attributes(compound_context& ctx, const nfs4::fattr4& given) {
  if (!ctx.current) return nfsstat4::NFS4ERR_NOFILEHANDLE;
  const std::vector<unsigned> bits = given.attrmask.bits();
  for (unsigned n : bits)
    if (n == nfs4::FATTR4_RDATTR_ERROR || is_write_only_attribute(n))
      return nfsstat4::NFS4ERR_INVAL;  // §18.31.3
  for (unsigned n : bits)
    if (!supported_attributes().test(n)) return nfsstat4::NFS4ERR_ATTRNOTSUPP;

  // Decoding validates the client's bytes (NFS4ERR_BADXDR) and re-encoding normalizes
  // them, so the comparison is on canonical encodings.
  nfs4::fattr4 theirs;
  try {
    theirs = nfs4::encode_attributes(nfs4::decode_attributes(given), given.attrmask);
  } catch (const xdr::decode_error&) {
    return nfsstat4::NFS4ERR_BADXDR;
  }
  nfsstat4 st = ok;
  nfs4::fattr4 ours = get_fs_attributes(ctx, ctx.current.obj, given.attrmask, st);
  if (st != ok) return st;
  // An attribute vnfsd supports but cannot give for this object (time_create without a
  // birth time) cannot be compared.
  if (ours.attrmask.bits() != bits) return nfsstat4::NFS4ERR_ATTRNOTSUPP;
  return ours.attr_vals == theirs.attr_vals ? ok : nfsstat4::NFS4ERR_NOT_SAME;
}

/// The stateid check of a size-changing SETATTR (§18.30.4): a special stateid is checked
/// against share reservations like an anonymous WRITE; any other must be an open or lock
/// stateid of this client for this file, open for writing.
nfsstat4 check_size_stateid(compound_context& ctx, const nfs4::stateid4& given,
                            const fs::object& obj) {
  nfs4::stateid4 sid;
  if (nfsstat4 s = ctx.resolve_stateid(given, sid); s != ok) return s;
  std::error_code ec;
  const file_key key = open_state_table::key_of(obj, ec);
  if (ec) return to_nfsstat(ec);
  if (sid.is_invalid()) return nfsstat4::NFS4ERR_BAD_STATEID;
  if (sid.is_anonymous() || sid.is_bypass())
    return ctx.server.opens.check_anonymous_io(key, /*write=*/true);
  open_state_table::io_grant grant;
  return ctx.server.opens.check_io(ctx.clientid, key, sid, /*write=*/true, grant);
}

}  // namespace

nfs4::GETATTR4res handle(compound_context& ctx, const nfs4::GETATTR4args& args) {
  nfs4::GETATTR4res res;
  if (!ctx.current) {
    res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  if (requests_write_only(args.attr_request)) {
    res.status = nfsstat4::NFS4ERR_INVAL;  // §18.7.3
    return res;
  }
  // What PUTFH read of the inode, if nothing since may have changed it, spares a statx.
  res.resok4.obj_attributes =
      ctx.current.attrs
          ? encode_fs_attributes(ctx, ctx.current.obj, *ctx.current.attrs, args.attr_request, res.status)
          : get_fs_attributes(ctx, ctx.current.obj, args.attr_request, res.status);
  return res;
}

nfs4::SETATTR4res handle(compound_context& ctx, const nfs4::SETATTR4args& args) {
  nfs4::SETATTR4res res;
  if (!ctx.current) {
    res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  fs::setattr_args sa;
  nfs4::bitmap4 set;
  res.status = to_setattr_args(args.obj_attributes, sa, set);
  if (res.status != ok) return res;
  if (sa.size) {
    const fs::object& obj = ctx.current.obj;
    if (obj.is_directory()) {
      res.status = nfsstat4::NFS4ERR_ISDIR;
      return res;
    }
    if (obj.type() != fs::file_type::regular) {
      res.status = nfsstat4::NFS4ERR_INVAL;
      return res;
    }
    res.status = check_size_stateid(ctx, args.stateid, obj);
    if (res.status != ok) return res;
  }
  if (ctx.txn) {
    std::error_code ec = sa.size ? ctx.txn->protect_data(ctx.current.obj, *sa.size, UINT64_MAX)
                                 : ctx.txn->protect_attrs(ctx.current.obj);
    if (ec) {
      res.status = to_nfsstat(ec);
      return res;
    }
  }
  res.status = apply_setattr(ctx.current.obj, sa);
  if (res.status == ok) res.attrsset = std::move(set);
  return res;
}

nfs4::VERIFY4res handle(compound_context& ctx, const nfs4::VERIFY4args& args) {
  nfsstat4 s = compare_attributes(ctx, args.obj_attributes);
  return {.status = s};
}

nfs4::NVERIFY4res handle(compound_context& ctx, const nfs4::NVERIFY4args& args) {
  nfsstat4 s = compare_attributes(ctx, args.obj_attributes);
  if (s == ok) s = nfsstat4::NFS4ERR_SAME;
  else if (s == nfsstat4::NFS4ERR_NOT_SAME) s = ok;
  return {.status = s};
}

// Each ACCESS4 bit maps to the POSIX permission the kernel checks for it. Bits without
// meaning for the object's type (LOOKUP and DELETE on non-directories, EXECUTE on
// directories, §18.1.3) are left out of `supported`.
nfs4::ACCESS4res handle(compound_context& ctx, const nfs4::ACCESS4args& args) {
  nfs4::ACCESS4res res;
  if (!ctx.current) {
    res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  struct mapping {
    std::uint32_t bit;
    unsigned perm;
  };
  static constexpr mapping dir_map[] = {
      {nfs4::ACCESS4_READ, fs::access_read},     {nfs4::ACCESS4_LOOKUP, fs::access_execute},
      {nfs4::ACCESS4_MODIFY, fs::access_write},  {nfs4::ACCESS4_EXTEND, fs::access_write},
      {nfs4::ACCESS4_DELETE, fs::access_write},
  };
  static constexpr mapping file_map[] = {
      {nfs4::ACCESS4_READ, fs::access_read},
      {nfs4::ACCESS4_MODIFY, fs::access_write},
      {nfs4::ACCESS4_EXTEND, fs::access_write},
      {nfs4::ACCESS4_EXECUTE, fs::access_execute},
  };
  const fs::object& obj = ctx.current.obj;
  std::span<const mapping> map = obj.is_directory() ? std::span<const mapping>(dir_map)
                                                    : std::span<const mapping>(file_map);
  unsigned perms = 0;
  std::uint32_t supported = 0;
  for (const mapping& m : map)
    if (args.access & m.bit) {
      supported |= m.bit;
      perms |= m.perm;
    }
  unsigned granted = 0;
  if (perms != 0) {
    std::error_code ec;
    granted = fs::access(obj, perms, ec);
    if (ec) {
      res.status = to_nfsstat(ec);
      return res;
    }
  }
  std::uint32_t access = 0;
  for (const mapping& m : map)
    if ((supported & m.bit) && (granted & m.perm) == m.perm) access |= m.bit;
  res.status = ok;
  res.resok4.supported = supported;
  res.resok4.access = access;
  return res;
}

}  // namespace vnfs::server
