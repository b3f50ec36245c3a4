// vnfsd: file attributes between the export file system and NFSv4 (fattr4), shared by
// GETATTR, SETATTR, VERIFY, NVERIFY, READDIR, CREATE and OPEN.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/compound_context.hpp"
#include "server/fs/attributes.hpp"
#include "server/fs/object.hpp"
#include "vnfs/nfs4/attributes.hpp"
#include "vnfs/nfs4/types.hpp"

namespace vnfs::server {

/// The attributes vnfsd returns (its supported_attrs): the mandatory ones and the
/// recommended ones a POSIX file system backs. ACLs, quotas, named attributes, pNFS and
/// the write-only time_*_set / mode_set_masked are not among the readable ones, but
/// time_access_set and time_modify_set are settable and so listed (RFC 8881 §5.6).
const nfs4::bitmap4& supported_attributes() noexcept;

/// What SETATTR and createattrs may set: mode, owner, owner_group, size, time_access_set,
/// time_modify_set.
const nfs4::bitmap4& settable_attributes() noexcept;

/// The attributes OPEN EXCLUSIVE4_1 accepts in cva_attrs (suppattr_exclcreat): mode,
/// owner, owner_group, size.
const nfs4::bitmap4& exclusive_create_attributes() noexcept;

/// Whether attribute n may be written but never read (time_access_set, time_modify_set,
/// mode_set_masked): requesting one in GETATTR, READDIR or VERIFY is NFS4ERR_INVAL.
bool is_write_only_attribute(unsigned n) noexcept;

/// Builds the values of the attributes of `obj` that are both `requested` and supported,
/// from its stat `st` and the server's state (lease time, export statistics, the session's
/// negotiated sizes for maxread/maxwrite). rdattr_error, if requested, is NFS4_OK.
/// Returns the first error met while gathering values that need more than `st` (the
/// filehandle, the export's statfs): then `out` is unusable.
nfs4::nfsstat4 fs_attribute_values(compound_context& ctx, const fs::object& obj,
                                   const fs::attributes& st, const nfs4::bitmap4& requested,
                                   nfs4::attributes& out);

/// fs_attribute_values() encoded as a fattr4 whose attrmask has exactly the returned bits
/// (RFC 8881 §5: unsupported requested attributes are simply omitted). `status` is set to
/// NFS4_OK or to the error; on error the fattr4 is empty.
nfs4::fattr4 encode_fs_attributes(compound_context& ctx, const fs::object& obj,
                                  const fs::attributes& st, const nfs4::bitmap4& requested,
                                  nfs4::nfsstat4& status);

/// stat() of `obj` then encode_fs_attributes().
nfs4::fattr4 get_fs_attributes(compound_context& ctx, const fs::object& obj,
                               const nfs4::bitmap4& requested, nfs4::nfsstat4& status);

/// Decodes the settable attributes of `in` (SETATTR, CREATE createattrs, OPEN createattrs)
/// into `out`, and sets in `attrsset` the bits of the attributes decoded. Errors, as RFC
/// 8881 §18.30.3 / §15.1.15 give them:
///   NFS4ERR_ATTRNOTSUPP  an attribute vnfsd does not support;
///   NFS4ERR_INVAL        a supported but read-only attribute, a mode with bits outside
///                        07777, a time with nseconds >= 10^9;
///   NFS4ERR_BADXDR       attr_vals malformed (truncated, trailing bytes);
///   NFS4ERR_BADOWNER     an owner/owner_group that is neither a number nor a local
///                        user/group name (getpwnam/getgrnam).
nfs4::nfsstat4 to_setattr_args(const nfs4::fattr4& in, fs::setattr_args& out,
                               nfs4::bitmap4& attrsset);

/// Owner strings: vnfsd sends numeric ids ("1000"), as NFS-Ganesha with
/// Only_Numeric_Owners, and accepts numbers or local names. False if `s` is neither.
bool parse_owner(std::string_view s, std::uint32_t& uid);
bool parse_owner_group(std::string_view s, std::uint32_t& gid);

/// Applies `args` to `obj` (fs::setattr) and maps the error for SETATTR-like operations:
/// a size change on a directory is NFS4ERR_ISDIR, on another non-regular object
/// NFS4ERR_INVAL (RFC 8881 §18.30.4). NFS4_OK when `args` changes nothing.
nfs4::nfsstat4 apply_setattr(const fs::object& obj, const fs::setattr_args& args);

/// change_info4 helper: the change attribute of directory `dir`, or 0 if it cannot be read.
std::uint64_t change_of(const fs::object& dir);

}  // namespace vnfs::server
