// The typed attribute view <-> fattr4.
#include "vnfs/nfs4/attributes.hpp"

#include <limits>

namespace vnfs::nfs4 {
namespace {

// The one table of known attributes: calls f(member) for attribute n and returns true, or
// returns false for an attribute this codec does not know. A is attributes or const attributes.
template <class A, class F>
bool with_member(A& a, unsigned n, F&& f) {
  switch (n) {
#define VNFS_ATTR(NUM, member) \
  case NUM: f(a.member); return true;
    VNFS_ATTR(FATTR4_SUPPORTED_ATTRS, supported_attrs)
    VNFS_ATTR(FATTR4_TYPE, type)
    VNFS_ATTR(FATTR4_FH_EXPIRE_TYPE, fh_expire_type)
    VNFS_ATTR(FATTR4_CHANGE, change)
    VNFS_ATTR(FATTR4_SIZE, size)
    VNFS_ATTR(FATTR4_LINK_SUPPORT, link_support)
    VNFS_ATTR(FATTR4_SYMLINK_SUPPORT, symlink_support)
    VNFS_ATTR(FATTR4_NAMED_ATTR, named_attr)
    VNFS_ATTR(FATTR4_FSID, fsid)
    VNFS_ATTR(FATTR4_UNIQUE_HANDLES, unique_handles)
    VNFS_ATTR(FATTR4_LEASE_TIME, lease_time)
    VNFS_ATTR(FATTR4_RDATTR_ERROR, rdattr_error)
    VNFS_ATTR(FATTR4_ACL, acl)
    VNFS_ATTR(FATTR4_ACLSUPPORT, aclsupport)
    VNFS_ATTR(FATTR4_ARCHIVE, archive)
    VNFS_ATTR(FATTR4_CANSETTIME, cansettime)
    VNFS_ATTR(FATTR4_CASE_INSENSITIVE, case_insensitive)
    VNFS_ATTR(FATTR4_CASE_PRESERVING, case_preserving)
    VNFS_ATTR(FATTR4_CHOWN_RESTRICTED, chown_restricted)
    VNFS_ATTR(FATTR4_FILEHANDLE, filehandle)
    VNFS_ATTR(FATTR4_FILEID, fileid)
    VNFS_ATTR(FATTR4_FILES_AVAIL, files_avail)
    VNFS_ATTR(FATTR4_FILES_FREE, files_free)
    VNFS_ATTR(FATTR4_FILES_TOTAL, files_total)
    VNFS_ATTR(FATTR4_HIDDEN, hidden)
    VNFS_ATTR(FATTR4_HOMOGENEOUS, homogeneous)
    VNFS_ATTR(FATTR4_MAXFILESIZE, maxfilesize)
    VNFS_ATTR(FATTR4_MAXLINK, maxlink)
    VNFS_ATTR(FATTR4_MAXNAME, maxname)
    VNFS_ATTR(FATTR4_MAXREAD, maxread)
    VNFS_ATTR(FATTR4_MAXWRITE, maxwrite)
    VNFS_ATTR(FATTR4_MIMETYPE, mimetype)
    VNFS_ATTR(FATTR4_MODE, mode)
    VNFS_ATTR(FATTR4_NO_TRUNC, no_trunc)
    VNFS_ATTR(FATTR4_NUMLINKS, numlinks)
    VNFS_ATTR(FATTR4_OWNER, owner)
    VNFS_ATTR(FATTR4_OWNER_GROUP, owner_group)
    VNFS_ATTR(FATTR4_QUOTA_AVAIL_HARD, quota_avail_hard)
    VNFS_ATTR(FATTR4_QUOTA_AVAIL_SOFT, quota_avail_soft)
    VNFS_ATTR(FATTR4_QUOTA_USED, quota_used)
    VNFS_ATTR(FATTR4_RAWDEV, rawdev)
    VNFS_ATTR(FATTR4_SPACE_AVAIL, space_avail)
    VNFS_ATTR(FATTR4_SPACE_FREE, space_free)
    VNFS_ATTR(FATTR4_SPACE_TOTAL, space_total)
    VNFS_ATTR(FATTR4_SPACE_USED, space_used)
    VNFS_ATTR(FATTR4_SYSTEM, system)
    VNFS_ATTR(FATTR4_TIME_ACCESS, time_access)
    VNFS_ATTR(FATTR4_TIME_ACCESS_SET, time_access_set)
    VNFS_ATTR(FATTR4_TIME_BACKUP, time_backup)
    VNFS_ATTR(FATTR4_TIME_CREATE, time_create)
    VNFS_ATTR(FATTR4_TIME_DELTA, time_delta)
    VNFS_ATTR(FATTR4_TIME_METADATA, time_metadata)
    VNFS_ATTR(FATTR4_TIME_MODIFY, time_modify)
    VNFS_ATTR(FATTR4_TIME_MODIFY_SET, time_modify_set)
    VNFS_ATTR(FATTR4_MOUNTED_ON_FILEID, mounted_on_fileid)
    VNFS_ATTR(FATTR4_DACL, dacl)
    VNFS_ATTR(FATTR4_SACL, sacl)
    VNFS_ATTR(FATTR4_FS_LAYOUT_TYPES, fs_layout_types)
    VNFS_ATTR(FATTR4_LAYOUT_BLKSIZE, layout_blksize)
    VNFS_ATTR(FATTR4_LAYOUT_ALIGNMENT, layout_alignment)
    VNFS_ATTR(FATTR4_MODE_SET_MASKED, mode_set_masked)
    VNFS_ATTR(FATTR4_SUPPATTR_EXCLCREAT, suppattr_exclcreat)
    VNFS_ATTR(FATTR4_FS_CHARSET_CAP, fs_charset_cap)
    VNFS_ATTR(FATTR4_CLONE_BLKSIZE, clone_blksize)
    VNFS_ATTR(FATTR4_SPACE_FREED, space_freed)
    VNFS_ATTR(FATTR4_CHANGE_ATTR_TYPE, change_attr_type)
#undef VNFS_ATTR
    default: return false;
  }
}

constexpr unsigned max_known_attribute = FATTR4_CHANGE_ATTR_TYPE;

template <class T>
void decode_value(xdr::decoder& d, T& v) {
  xdr::decode(d, v);
}
// nfs_fh4 is bounded by NFS4_FHSIZE.
void decode_value(xdr::decoder& d, nfs_fh4& v) { detail::get_bounded(d, v, NFS4_FHSIZE); }

}  // namespace

bool is_known_attribute(unsigned n) noexcept {
  attributes a;
  return with_member(a, n, [](auto&) {});
}

const bitmap4& known_attributes() noexcept {
  static const bitmap4 known = [] {
    bitmap4 m;
    for (unsigned n = 0; n <= max_known_attribute; ++n)
      if (is_known_attribute(n)) m.set(n);
    return m;
  }();
  return known;
}

fattr4 encode_attributes(const attributes& a, const bitmap4& requested) {
  fattr4 out;
  xdr::encoder e;
  unsigned limit = std::min<std::size_t>(requested.words.size() * 32, max_known_attribute + 1);
  for (unsigned n = 0; n < limit; ++n) {
    if (!requested.test(n)) continue;
    with_member(a, n, [&](const auto& opt) {
      if (!opt) return;
      xdr::encode(e, *opt);
      out.attrmask.set(n);
    });
  }
  out.attr_vals = e.flatten();
  return out;
}

fattr4 encode_attributes(const attributes& a) { return encode_attributes(a, known_attributes()); }

bitmap4 present_attributes(const attributes& a) {
  bitmap4 m;
  for (unsigned n = 0; n <= max_known_attribute; ++n)
    with_member(a, n, [&](const auto& opt) {
      if (opt) m.set(n);
    });
  return m;
}

attributes decode_attributes(const fattr4& f) {
  attributes a;
  xdr::decoder d(f.attr_vals);
  for (unsigned n : f.attrmask.bits()) {
    bool known = with_member(a, n, [&](auto& opt) { decode_value(d, opt.emplace()); });
    if (!known)
      throw xdr::decode_error("nfs4: attribute " + std::to_string(n) + " cannot be decoded");
  }
  if (d.remaining() != 0) throw xdr::decode_error("nfs4: trailing bytes after attributes");
  return a;
}

}  // namespace vnfs::nfs4
