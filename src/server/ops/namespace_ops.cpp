// vnfsd: CREATE, REMOVE, RENAME, LINK, READLINK, READDIR (RFC 8881 §18.4, §18.25, §18.26,
// §18.9, §18.24, §18.23).
#include <cerrno>

#include "server/fs/directory.hpp"
#include "server/fs/readdir.hpp"
#include "server/ops/attribute_codec.hpp"
#include "server/ops/fh_checks.hpp"
#include "server/ops/handlers.hpp"
#include "server/txn/transaction.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;
using nfs4::nfs_ftype4;
using namespace ops_detail;

namespace {

constexpr nfsstat4 ok = nfsstat4::NFS4_OK;

/// change_info4 of a directory around a modification. Not atomic: the two stats and the
/// change are separate system calls (§3.3.4 lets the server say so).
struct change_tracker {
  const fs::object& dir;
  std::uint64_t before = change_of(dir);
  nfs4::change_info4 done() const { return {false, before, change_of(dir)}; }
};

}  // namespace

// The new object gets the mode of createattrs at creation (no umask); the other attributes
// are then applied, and if that fails the object is removed again so that a failed CREATE
// leaves nothing behind. The current filehandle becomes the new object.
nfs4::CREATE4res handle(compound_context& ctx, const nfs4::CREATE4args& args) {
  nfs4::CREATE4res res;
  auto fail = [&](nfsstat4 s) {
    res.status = s;
    return res;
  };
  if (nfsstat4 s = require_dir(ctx.current); s != ok) return fail(s);
  const nfs_ftype4 type = args.objtype.type;
  switch (type) {
    case nfs_ftype4::NF4DIR:
    case nfs_ftype4::NF4LNK:
    case nfs_ftype4::NF4BLK:
    case nfs_ftype4::NF4CHR:
    case nfs_ftype4::NF4SOCK:
    case nfs_ftype4::NF4FIFO:
      break;
    default:  // NF4REG is OPEN's business; named attributes are not supported
      return fail(nfsstat4::NFS4ERR_BADTYPE);
  }
  if (nfsstat4 s = check_entry(ctx, ctx.current.obj, args.objname, name_use::make); s != ok)
    return fail(s);
  fs::setattr_args sa;
  nfs4::bitmap4 attrset;
  if (nfsstat4 s = to_setattr_args(args.createattrs, sa, attrset); s != ok) return fail(s);
  if (sa.size) return fail(nfsstat4::NFS4ERR_INVAL);  // no size for non-regular objects

  const fs::object& dir = ctx.current.obj;
  std::uint32_t perm = sa.mode.value_or(type == nfs_ftype4::NF4DIR ? 0755u : 0644u);
  sa.mode.reset();
  if (ctx.txn)
    if (std::error_code ec = ctx.txn->protect_create(dir, args.objname)) return fail(to_nfsstat(ec));
  change_tracker cinfo{dir};
  std::error_code ec;
  fs::object obj;
  switch (type) {
    case nfs_ftype4::NF4DIR:
      obj = fs::mkdir(dir, args.objname, perm, ec);
      break;
    case nfs_ftype4::NF4LNK:
      obj = fs::symlink(dir, args.objname, args.objtype.linkdata, ec);
      break;
    default:
      obj = fs::mknod(dir, args.objname, static_cast<fs::file_type>(type), perm,
                      args.objtype.devdata.specdata1, args.objtype.devdata.specdata2, ec);
  }
  if (ec) return fail(to_nfsstat(ec));
  if (type == nfs_ftype4::NF4LNK && attrset.test(nfs4::FATTR4_MODE)) {
    // A symlink's mode is meaningless on Linux (always 0777): not set, not reported.
    attrset.clear(nfs4::FATTR4_MODE);
  }
  if (nfsstat4 s = apply_setattr(obj, sa); s != ok) {
    std::error_code ignored;
    fs::remove(dir, args.objname, ignored);
    return fail(s);
  }
  held_fh h;
  if (nfsstat4 s = hold(ctx, std::move(obj), h); s != ok) return fail(s);
  res.status = ok;
  res.resok4.cinfo = cinfo.done();
  res.resok4.attrset = std::move(attrset);
  ctx.set_current_fh(std::move(h));
  return res;
}

nfs4::REMOVE4res handle(compound_context& ctx, const nfs4::REMOVE4args& args) {
  nfs4::REMOVE4res res;
  res.status = require_dir(ctx.current);
  if (res.status == ok) res.status = check_entry(ctx, ctx.current.obj, args.target, name_use::find);
  if (res.status == ok && ctx.txn)
    res.status = to_nfsstat(ctx.txn->protect_remove(ctx.current.obj, args.target));
  if (res.status != ok) return res;
  change_tracker cinfo{ctx.current.obj};
  std::error_code ec;
  const auto release = ctx.server.exp.before_unlinking(ctx.current.obj, args.target);
  fs::remove(ctx.current.obj, args.target, ec);
  if (!ec) ctx.server.exp.after_unlinking(release);
  res.status = to_nfsstat(ec);
  if (res.status == ok) res.resok4.cinfo = cinfo.done();
  return res;
}

// The saved filehandle is the source directory, the current one the target directory;
// both are objects of the export, so nothing can be renamed into or out of it.
nfs4::RENAME4res handle(compound_context& ctx, const nfs4::RENAME4args& args) {
  nfs4::RENAME4res res;
  res.status = require_dir(ctx.saved);
  if (res.status == ok) res.status = require_dir(ctx.current);
  if (res.status == ok) res.status = check_entry(ctx, ctx.saved.obj, args.oldname, name_use::find);
  if (res.status == ok) res.status = check_entry(ctx, ctx.current.obj, args.newname, name_use::make);
  if (res.status == ok && ctx.txn)
    res.status = to_nfsstat(ctx.txn->protect_rename(ctx.saved.obj, args.oldname, ctx.current.obj, args.newname));
  if (res.status != ok) return res;
  change_tracker src{ctx.saved.obj};
  change_tracker dst{ctx.current.obj};
  std::error_code ec;
  const auto release = ctx.server.exp.before_unlinking(ctx.current.obj, args.newname);  // a replaced target
  fs::rename(ctx.saved.obj, args.oldname, ctx.current.obj, args.newname, ec);
  if (!ec) ctx.server.exp.after_unlinking(release);
  if (ec == std::error_code(ENOTEMPTY, std::system_category()) ||
      ec == std::error_code(EISDIR, std::system_category()) ||
      ec == std::error_code(ENOTDIR, std::system_category())) {
    // §18.26.3: an incompatible or non-empty existing target is NFS4ERR_EXIST. (Both
    // parents are known directories, so ENOTDIR can only come from the target's type.)
    res.status = nfsstat4::NFS4ERR_EXIST;
    return res;
  }
  res.status = to_nfsstat(ec);
  if (res.status != ok) return res;
  res.resok4.source_cinfo = src.done();
  res.resok4.target_cinfo = dst.done();
  return res;
}

// The saved filehandle is the object to link, the current one the directory.
nfs4::LINK4res handle(compound_context& ctx, const nfs4::LINK4args& args) {
  nfs4::LINK4res res;
  if (!ctx.saved) {
    res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  res.status = require_dir(ctx.current);
  if (res.status == ok && ctx.saved.obj.is_directory()) res.status = nfsstat4::NFS4ERR_ISDIR;
  if (res.status == ok) res.status = check_entry(ctx, ctx.current.obj, args.newname, name_use::make);
  if (res.status == ok && ctx.txn)
    res.status = to_nfsstat(ctx.txn->protect_link(ctx.current.obj, args.newname));
  if (res.status != ok) return res;
  change_tracker cinfo{ctx.current.obj};
  std::error_code ec;
  fs::link(ctx.saved.obj, ctx.current.obj, args.newname, ec);
  res.status = to_nfsstat(ec);
  if (res.status == ok) res.resok4.cinfo = cinfo.done();
  return res;
}

// The link text comes back verbatim, wherever it points: the server never follows it.
nfs4::READLINK4res handle(compound_context& ctx, const nfs4::READLINK4args&) {
  nfs4::READLINK4res res;
  if (!ctx.current) {
    res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  if (ctx.current.obj.type() != fs::file_type::symlink) {
    res.status = nfsstat4::NFS4ERR_INVAL;  // §18.24.3
    return res;
  }
  std::error_code ec;
  std::string text = fs::readlink(ctx.current.obj, ec);
  res.status = to_nfsstat(ec);
  if (res.status == ok) res.resok4.link = std::move(text);
  return res;
}

namespace {

/// READDIR cookie verifier of a directory. Cookies are the file system's d_off values,
/// which stay valid for the life of the directory (also across vnfsd restarts), so the
/// verifier only has to tell directories apart: it is derived from the inode and device
/// and never changes (§18.23.3 leaves its construction to the server).
nfs4::verifier4 dir_verifier(const fs::attributes& st) {
  std::uint64_t v = st.ino * 0x9E3779B97F4A7C15ULL;
  v ^= (std::uint64_t{st.dev_major} << 32 | st.dev_minor) + 0x7F4A7C159E3779B9ULL;
  if (v == 0) v = 1;
  nfs4::verifier4 out{};
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<std::size_t>(i)] = std::byte(v & 0xff);
  return out;
}

bool is_gone(const std::error_code& ec) {
  return ec == std::error_code(ENOENT, std::system_category()) ||
         ec == std::error_code(ESTALE, std::system_category());
}

std::size_t padded(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

}  // namespace

// Limits (§18.23.3): maxcount bounds the whole READDIR4resok (verifier, entries with their
// list links, end marker, eof); dircount, when not 0, bounds the cookies and names. At
// least one entry is returned when there is one: if it does not fit in maxcount the
// answer is NFS4ERR_TOOSMALL.
nfs4::READDIR4res handle(compound_context& ctx, const nfs4::READDIR4args& args) {
  nfs4::READDIR4res res;
  auto fail = [&](nfsstat4 s) {
    res.status = s;
    res.resok4 = {};
    return res;
  };
  if (nfsstat4 s = require_dir(ctx.current); s != ok) return fail(s);
  if (args.cookie == 1 || args.cookie == 2) return fail(nfsstat4::NFS4ERR_BAD_COOKIE);
  for (unsigned n : args.attr_request.bits())
    if (is_write_only_attribute(n)) return fail(nfsstat4::NFS4ERR_INVAL);

  const fs::object& dir = ctx.current.obj;
  std::error_code ec;
  const fs::attributes dst = fs::stat(dir, ec);
  if (ec) return fail(to_nfsstat(ec));
  const nfs4::verifier4 verf = dir_verifier(dst);
  if (args.cookie != 0 && args.cookieverf != verf) return fail(nfsstat4::NFS4ERR_NOT_SAME);

  constexpr std::size_t fixed = 8 /* cookieverf */ + 4 /* end of list */ + 4 /* eof */;
  std::size_t maxcount = args.maxcount;
  if (ctx.sess) {
    // Never build more than the session lets the reply carry (RPC and COMPOUND headers
    // and the SEQUENCE result get 1 KiB).
    std::size_t cap = ctx.sess->fore.ca_maxresponsesize;
    cap = cap > 1024 ? cap - 1024 : 0;
    maxcount = std::min(maxcount, cap);
  }
  if (maxcount < fixed) return fail(nfsstat4::NFS4ERR_TOOSMALL);
  const std::size_t budget = maxcount - fixed;
  const std::size_t dir_budget = args.dircount == 0 ? SIZE_MAX : args.dircount;

  const bool want_attrs = !args.attr_request.none();
  const bool want_rdattr_error = args.attr_request.test(nfs4::FATTR4_RDATTR_ERROR);
  nfs4::attributes error_only;

  // vnfsd's own directories in the export root are not listed (hidden_entry).
  std::size_t used = 0, dir_used = 0;
  std::uint64_t cookie = args.cookie;
  bool full = false;
  nfs4::dirlist4& out = res.resok4.reply;
  while (!full) {
    fs::readdir_options opts;
    opts.open_objects = want_attrs;
    opts.max_entries = want_attrs ? 64 : 256;
    fs::readdir_result batch = fs::readdir(dir, cookie, opts, ec);
    if (ec) return fail(to_nfsstat(ec));
    if (batch.entries.empty()) {  // nothing after `cookie`, whatever eof says
      out.eof = true;
      break;
    }
    for (fs::dir_entry& e : batch.entries) {
      if (hidden_entry(ctx, dir, e.name)) {
        cookie = e.cookie;
        continue;
      }
      nfs4::entry4 entry;
      entry.cookie = e.cookie;
      entry.name = std::move(e.name);
      if (want_attrs) {
        nfsstat4 st = ok;
        if (e.open_error) {
          st = to_nfsstat(e.open_error);
          if (is_gone(e.open_error)) {  // removed since it was listed
            cookie = e.cookie;
            continue;
          }
        } else {
          entry.attrs = get_fs_attributes(ctx, e.obj, args.attr_request, st);
        }
        if (st != ok) {
          if (!want_rdattr_error) return fail(st);
          error_only.rdattr_error = st;
          entry.attrs = nfs4::encode_attributes(
              error_only, nfs4::bitmap4::of({nfs4::FATTR4_RDATTR_ERROR}));
        }
      }
      const std::size_t size = nfs4::xdr_size(entry);
      const std::size_t dsize = 8 + 4 + padded(entry.name.size());
      if (used + size > budget || (!out.entries.empty() && dir_used + dsize > dir_budget)) {
        if (out.entries.empty()) return fail(nfsstat4::NFS4ERR_TOOSMALL);
        full = true;
        break;
      }
      used += size;
      dir_used += dsize;
      cookie = entry.cookie;
      out.entries.push_back(std::move(entry));
    }
    if (!full && batch.eof) {
      out.eof = true;
      break;
    }
  }
  res.status = ok;
  res.resok4.cookieverf = verf;
  return res;
}

}  // namespace vnfs::server
