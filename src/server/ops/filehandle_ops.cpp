// vnfsd: PUTFH, PUTROOTFH, PUTPUBFH, GETFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, SECINFO,
// SECINFO_NO_NAME (RFC 8881 §18.19-18.21, §18.8, §18.27, §18.28, §18.13, §18.14, §18.29,
// §18.45).
#include "server/fs/directory.hpp"
#include "server/ops/fh_checks.hpp"
#include "server/ops/handlers.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;
using namespace ops_detail;

namespace {

constexpr nfsstat4 ok = nfsstat4::NFS4_OK;

nfsstat4 put_root(compound_context& ctx) {
  std::error_code ec;
  fs::object root = ctx.server.exp.root().clone(ec);
  if (ec) return to_nfsstat(ec);
  held_fh h;
  if (nfsstat4 s = hold(ctx, std::move(root), h); s != ok) return s;
  ctx.set_current_fh(std::move(h));
  return ok;
}

/// vnfsd accepts AUTH_SYS and AUTH_NONE on every object, AUTH_SYS preferred.
nfs4::SECINFO4resok flavors() {
  nfs4::secinfo4 sys;
  sys.flavor = nfs4::AUTH_SYS;
  nfs4::secinfo4 none;
  none.flavor = nfs4::AUTH_NONE;
  return {sys, none};
}

}  // namespace

nfs4::PUTROOTFH4res handle(compound_context& ctx, const nfs4::PUTROOTFH4args&) {
  return {.status = put_root(ctx)};
}

// vnfsd has no pseudo file system: the public filehandle is the export root (§18.20.3
// leaves it to the server which object that is).
nfs4::PUTPUBFH4res handle(compound_context& ctx, const nfs4::PUTPUBFH4args&) {
  return {.status = put_root(ctx)};
}

nfs4::PUTFH4res handle(compound_context& ctx, const nfs4::PUTFH4args& args) {
  std::error_code ec;
  std::optional<fs::export_root::inode_status> seen;
  fs::object obj = ctx.server.exp.resolve(args.object, ec, seen);
  if (ec) {
    // A file removed or renamed over while open is no longer reachable by handle, but its
    // open state keeps it, and its handle, usable until CLOSE (POSIX unlink-on-open).
    auto kept = ctx.server.opens.held_object(args.object);
    if (!kept) return {.status = to_nfsstat(ec)};
    std::error_code cec;
    obj = kept->clone(cec);
    if (cec) return {.status = to_nfsstat(ec)};
  }
  held_fh h;
  h.fh = args.object;
  h.obj = std::move(obj);
  if (seen) {
    if (seen->ctime_settled) h.ctime = seen->attrs.ctime;
    h.attrs = seen->attrs;
  }
  ctx.set_current_fh(std::move(h));
  return {.status = ok};
}

nfs4::GETFH4res handle(compound_context& ctx, const nfs4::GETFH4args&) {
  nfs4::GETFH4res res;
  if (!ctx.current) {
    res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  res.status = ok;
  res.resok4.object = ctx.current.fh;
  return res;
}

// The saved stateid travels with the saved filehandle (§16.2.3.1.2).
nfs4::SAVEFH4res handle(compound_context& ctx, const nfs4::SAVEFH4args&) {
  if (!ctx.current) return {.status = nfsstat4::NFS4ERR_NOFILEHANDLE};
  held_fh h;
  if (nfsstat4 s = copy_held(ctx.current, h); s != ok) return {.status = s};
  ctx.saved = std::move(h);
  ctx.saved_stateid = ctx.current_stateid;
  ctx.has_saved_stateid = ctx.has_current_stateid;
  return {.status = ok};
}

nfs4::RESTOREFH4res handle(compound_context& ctx, const nfs4::RESTOREFH4args&) {
  if (!ctx.saved) return {.status = nfsstat4::NFS4ERR_RESTOREFH};
  held_fh h;
  if (nfsstat4 s = copy_held(ctx.saved, h); s != ok) return {.status = s};
  ctx.set_current_fh(std::move(h));
  ctx.current_stateid = ctx.saved_stateid;
  ctx.has_current_stateid = ctx.has_saved_stateid;
  return {.status = ok};
}

// Symlinks are never followed: LOOKUP of a symlink's name gives the link itself, and a
// symlink as the current filehandle is NFS4ERR_SYMLINK.
nfs4::LOOKUP4res handle(compound_context& ctx, const nfs4::LOOKUP4args& args) {
  if (nfsstat4 s = require_dir(ctx.current); s != ok) return {.status = s};
  if (nfsstat4 s = check_entry(ctx, ctx.current.obj, args.objname, name_use::find); s != ok)
    return {.status = s};
  std::error_code ec;
  fs::object obj = fs::lookup(ctx.current.obj, args.objname, ec);
  if (ec) return {.status = to_nfsstat(ec)};
  held_fh h;
  if (nfsstat4 s = hold(ctx, std::move(obj), h); s != ok) return {.status = s};
  ctx.set_current_fh(std::move(h));
  return {.status = ok};
}

// At the export root there is no parent to go to: NFS4ERR_NOENT (§18.14.3).
nfs4::LOOKUPP4res handle(compound_context& ctx, const nfs4::LOOKUPP4args&) {
  if (nfsstat4 s = require_dir(ctx.current); s != ok) return {.status = s};
  std::error_code ec;
  fs::object parent = ctx.server.exp.parent(ctx.current.obj, ec);
  if (ec) return {.status = to_nfsstat(ec)};
  held_fh h;
  if (nfsstat4 s = hold(ctx, std::move(parent), h); s != ok) return {.status = s};
  ctx.set_current_fh(std::move(h));
  return {.status = ok};
}

// On success SECINFO consumes the current filehandle (§2.6.3.1.1.8): a following
// operation that needs one gets NFS4ERR_NOFILEHANDLE.
nfs4::SECINFO4res handle(compound_context& ctx, const nfs4::SECINFO4args& args) {
  nfs4::SECINFO4res res;
  res.status = require_dir(ctx.current);
  if (res.status == ok) res.status = check_entry(ctx, ctx.current.obj, args.name, name_use::find);
  if (res.status != ok) return res;
  std::error_code ec;
  fs::object obj = fs::lookup(ctx.current.obj, args.name, ec);
  if (ec) {
    res.status = to_nfsstat(ec);
    return res;
  }
  ctx.set_current_fh(held_fh{});
  res.resok4 = flavors();
  return res;
}

nfs4::SECINFO_NO_NAME4res handle(compound_context& ctx, const nfs4::SECINFO_NO_NAME4args& args) {
  nfs4::SECINFO_NO_NAME4res res;
  switch (args.style) {
    case nfs4::secinfo_style4::SECINFO_STYLE4_CURRENT_FH:
      if (!ctx.current) res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
      break;
    case nfs4::secinfo_style4::SECINFO_STYLE4_PARENT: {
      res.status = require_dir(ctx.current);
      if (res.status != ok) break;
      std::error_code ec;
      fs::object parent = ctx.server.exp.parent(ctx.current.obj, ec);
      if (ec) res.status = to_nfsstat(ec);
      break;
    }
    default:
      res.status = nfsstat4::NFS4ERR_INVAL;
  }
  if (res.status != ok) return res;
  ctx.set_current_fh(held_fh{});
  res.resok4 = flavors();
  return res;
}

}  // namespace vnfs::server
