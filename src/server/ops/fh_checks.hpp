// vnfsd: checks shared by the handlers that work on the current / saved filehandle and on
// name components (filehandle, attribute and name-space operations).
#pragma once

#include <climits>
#include <string_view>
#include <system_error>

#include "server/compound_context.hpp"
#include "server/fs/name.hpp"
#include "server/ops/status_mapping.hpp"

namespace vnfs::server::ops_detail {

/// Longest name component vnfsd accepts (NFS4ERR_NAMETOOLONG beyond; its maxname).
inline constexpr std::size_t name_max = NAME_MAX;

/// RFC 8881 §18.13.3 / §15.1.2: a directory is required. NFS4ERR_NOFILEHANDLE without a
/// filehandle, NFS4ERR_SYMLINK for a symbolic link, NFS4ERR_NOTDIR for other objects.
inline nfs4::nfsstat4 require_dir(const held_fh& fh) noexcept {
  if (!fh) return nfs4::nfsstat4::NFS4ERR_NOFILEHANDLE;
  if (fh.obj.type() == fs::file_type::symlink) return nfs4::nfsstat4::NFS4ERR_SYMLINK;
  if (!fh.obj.is_directory()) return nfs4::nfsstat4::NFS4ERR_NOTDIR;
  return nfs4::nfsstat4::NFS4_OK;
}

/// A name component from a client: "" is NFS4ERR_INVAL; ".", "..", '/' or NUL inside is
/// NFS4ERR_BADNAME; more than name_max bytes is NFS4ERR_NAMETOOLONG (RFC 8881 §1.8.4.4).
inline nfs4::nfsstat4 check_component(std::string_view name) noexcept {
  if (std::error_code ec = fs::check_name(name)) return to_nfsstat(ec);
  if (name.size() > name_max) return nfs4::nfsstat4::NFS4ERR_NAMETOOLONG;
  return nfs4::nfsstat4::NFS4_OK;
}

/// What a handler does with a name in a directory, for check_entry().
enum class name_use {
  find,  ///< looks up, removes or renames away an existing entry
  make,  ///< creates an entry of that name (or renames or links onto it)
};

/// Whether `name` in `dir` is one of vnfsd's own directories in the export root, which are
/// not part of the namespace clients see: the stable client records
/// (server_options::recovery_name, when they are kept in the export) and the transaction
/// state (txn::state_dir_name). READDIR skips them too.
inline bool hidden_entry(const compound_context& ctx, const fs::object& dir, std::string_view name) noexcept {
  if (ctx.server.recovery_in_export && name == server_options::recovery_name && ctx.server.exp.is_root(dir))
    return true;
  return ctx.server.txns.hidden(dir, name);
}

/// check_component, and then: a hidden entry (hidden_entry) does not exist for clients. A
/// name that would find it answers NFS4ERR_NOENT; nothing of that name may be made there
/// (NFS4ERR_ACCESS).
inline nfs4::nfsstat4 check_entry(const compound_context& ctx, const fs::object& dir, std::string_view name,
                                  name_use use) noexcept {
  if (nfs4::nfsstat4 s = check_component(name); s != nfs4::nfsstat4::NFS4_OK) return s;
  if (hidden_entry(ctx, dir, name))
    return use == name_use::find ? nfs4::nfsstat4::NFS4ERR_NOENT : nfs4::nfsstat4::NFS4ERR_ACCESS;
  return nfs4::nfsstat4::NFS4_OK;
}

/// Wraps a fresh object of the export with its filehandle.
inline nfs4::nfsstat4 hold(const compound_context& ctx, fs::object obj, held_fh& out) {
  std::error_code ec;
  std::vector<std::byte> fh = ctx.server.exp.fh_of(obj, ec);
  if (ec) return to_nfsstat(ec);
  out.fh = std::move(fh);
  out.obj = std::move(obj);
  return nfs4::nfsstat4::NFS4_OK;
}

/// A copy of a held filehandle (a second descriptor for the same inode).
inline nfs4::nfsstat4 copy_held(const held_fh& in, held_fh& out) {
  std::error_code ec;
  fs::object o = in.obj.clone(ec);
  if (ec) return to_nfsstat(ec);
  out.fh = in.fh;
  out.obj = std::move(o);
  return nfs4::nfsstat4::NFS4_OK;
}

}  // namespace vnfs::server::ops_detail
