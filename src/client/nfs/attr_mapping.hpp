// vnfs client, nfs backend: between the SDK's attributes (file_stat, attr:: masks) and
// NFSv4 fattr4. Owners travel as numeric strings ("1000"), as vnfsd and Ganesha (with
// numeric ids) exchange them; a name that is not numeric reads as 65534 (nobody).
#pragma once

#include "vnfs/file_stat.hpp"
#include "vnfs/nfs4/types.hpp"
#include "vnfs/vattrs.hpp"

namespace vnfs::detail {

/// The fattr4 attributes that carry the attr:: bits of `mask` (type always included).
nfs4::bitmap4 attr_request(unsigned mask);
/// Everything stat(2) reports.
inline nfs4::bitmap4 stat_request() { return attr_request(attr::stat); }
/// The attributes in `f` decoded into a file_stat (absent ones left zero).
file_stat to_stat(const nfs4::fattr4& f);
/// The settable attributes `mask` names, with the values in `v`, for SETATTR (times are set
/// to the client's values, SET_TO_CLIENT_TIME4).
nfs4::fattr4 settable_attrs(unsigned mask, const file_stat& v);

}  // namespace vnfs::detail
