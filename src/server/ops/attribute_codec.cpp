#include "server/ops/attribute_codec.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <string>
#include <vector>

#include "server/fs/error.hpp"
#include "server/ops/status_mapping.hpp"
#include "vnfs/xdr/error.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;
namespace n4 = nfs4;

namespace {

constexpr std::uint32_t no_session_io_size = 1u << 20;

n4::bitmap4 make_supported() {
  return n4::bitmap4::of({
      n4::FATTR4_SUPPORTED_ATTRS, n4::FATTR4_TYPE, n4::FATTR4_FH_EXPIRE_TYPE,
      n4::FATTR4_CHANGE, n4::FATTR4_SIZE, n4::FATTR4_LINK_SUPPORT, n4::FATTR4_SYMLINK_SUPPORT,
      n4::FATTR4_NAMED_ATTR, n4::FATTR4_FSID, n4::FATTR4_UNIQUE_HANDLES, n4::FATTR4_LEASE_TIME,
      n4::FATTR4_RDATTR_ERROR, n4::FATTR4_ACLSUPPORT, n4::FATTR4_CANSETTIME,
      n4::FATTR4_CASE_INSENSITIVE, n4::FATTR4_CASE_PRESERVING, n4::FATTR4_CHOWN_RESTRICTED,
      n4::FATTR4_FILEHANDLE, n4::FATTR4_FILEID, n4::FATTR4_FILES_AVAIL, n4::FATTR4_FILES_FREE,
      n4::FATTR4_FILES_TOTAL, n4::FATTR4_HOMOGENEOUS, n4::FATTR4_MAXFILESIZE,
      n4::FATTR4_MAXLINK, n4::FATTR4_MAXNAME, n4::FATTR4_MAXREAD, n4::FATTR4_MAXWRITE,
      n4::FATTR4_MODE, n4::FATTR4_NO_TRUNC, n4::FATTR4_NUMLINKS, n4::FATTR4_OWNER,
      n4::FATTR4_OWNER_GROUP, n4::FATTR4_RAWDEV, n4::FATTR4_SPACE_AVAIL, n4::FATTR4_SPACE_FREE,
      n4::FATTR4_SPACE_TOTAL, n4::FATTR4_SPACE_USED, n4::FATTR4_TIME_ACCESS,
      n4::FATTR4_TIME_ACCESS_SET, n4::FATTR4_TIME_CREATE, n4::FATTR4_TIME_DELTA,
      n4::FATTR4_TIME_METADATA, n4::FATTR4_TIME_MODIFY, n4::FATTR4_TIME_MODIFY_SET,
      n4::FATTR4_MOUNTED_ON_FILEID, n4::FATTR4_SUPPATTR_EXCLCREAT,
  });
}

n4::nfstime4 to_nfstime(const fs::timestamp& t) { return {t.sec, t.nsec}; }

/// maxread/maxwrite: what one READ/WRITE can move within the session's negotiated sizes,
/// leaving 1 KiB for the RPC and COMPOUND headers around the data, in whole 4 KiB pages.
std::uint64_t io_size(std::uint32_t negotiated) {
  constexpr std::uint32_t header_room = 1024, page = 4096;
  if (negotiated < header_room + page) return 512;
  return (negotiated - header_room) & ~(page - 1);
}

bool parse_number(std::string_view s, std::uint32_t& out) {
  if (s.empty() || s.size() > 10) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > 0xffffffffULL) return false;
  out = static_cast<std::uint32_t>(v);
  return true;
}

nfsstat4 to_time_update(const n4::settime4& t, fs::time_update& out) {
  if (t.set_it == n4::time_how4::SET_TO_SERVER_TIME4) {
    out = fs::time_update::now();
    return nfsstat4::NFS4_OK;
  }
  if (t.set_it != n4::time_how4::SET_TO_CLIENT_TIME4 || t.time.nseconds >= 1000000000u)
    return nfsstat4::NFS4ERR_INVAL;
  out = fs::time_update::at({t.time.seconds, t.time.nseconds});
  return nfsstat4::NFS4_OK;
}

}  // namespace

const n4::bitmap4& supported_attributes() noexcept {
  static const n4::bitmap4 m = make_supported();
  return m;
}

const n4::bitmap4& settable_attributes() noexcept {
  static const n4::bitmap4 m =
      n4::bitmap4::of({n4::FATTR4_SIZE, n4::FATTR4_MODE, n4::FATTR4_OWNER,
                       n4::FATTR4_OWNER_GROUP, n4::FATTR4_TIME_ACCESS_SET,
                       n4::FATTR4_TIME_MODIFY_SET});
  return m;
}

const n4::bitmap4& exclusive_create_attributes() noexcept {
  static const n4::bitmap4 m = n4::bitmap4::of(
      {n4::FATTR4_SIZE, n4::FATTR4_MODE, n4::FATTR4_OWNER, n4::FATTR4_OWNER_GROUP});
  return m;
}

bool is_write_only_attribute(unsigned n) noexcept {
  return n == n4::FATTR4_TIME_ACCESS_SET || n == n4::FATTR4_TIME_MODIFY_SET ||
         n == n4::FATTR4_MODE_SET_MASKED;
}

nfsstat4 fs_attribute_values(compound_context& ctx, const fs::object& obj,
                             const fs::attributes& st, const n4::bitmap4& requested,
                             n4::attributes& a) {
  a = {};
  const n4::bitmap4 want = requested & supported_attributes();
  auto has = [&](unsigned n) { return want.test(n); };

  std::optional<fs::fs_stats> sfs;
  auto statfs = [&](nfsstat4& status) -> const fs::fs_stats* {
    if (!sfs) {
      std::error_code ec;
      fs::fs_stats s = ctx.server.exp.statfs(ec);
      if (ec) {
        status = to_nfsstat(ec);
        return nullptr;
      }
      sfs = s;
    }
    return &*sfs;
  };

  if (has(n4::FATTR4_SUPPORTED_ATTRS)) a.supported_attrs = supported_attributes();
  if (has(n4::FATTR4_TYPE)) a.type = static_cast<n4::nfs_ftype4>(st.type);
  if (has(n4::FATTR4_FH_EXPIRE_TYPE)) a.fh_expire_type = n4::FH4_PERSISTENT;
  if (has(n4::FATTR4_CHANGE)) a.change = st.change;
  if (has(n4::FATTR4_SIZE)) a.size = st.size;
  if (has(n4::FATTR4_LINK_SUPPORT)) a.link_support = true;
  if (has(n4::FATTR4_SYMLINK_SUPPORT)) a.symlink_support = true;
  if (has(n4::FATTR4_NAMED_ATTR)) a.named_attr = false;
  if (has(n4::FATTR4_FSID)) a.fsid = n4::fsid4{st.dev_major, st.dev_minor};
  if (has(n4::FATTR4_UNIQUE_HANDLES)) a.unique_handles = true;
  if (has(n4::FATTR4_LEASE_TIME))
    a.lease_time = static_cast<n4::nfs_lease4>(ctx.server.options.lease.count());
  if (has(n4::FATTR4_RDATTR_ERROR)) a.rdattr_error = nfsstat4::NFS4_OK;
  if (has(n4::FATTR4_ACLSUPPORT)) a.aclsupport = 0;
  if (has(n4::FATTR4_CANSETTIME)) a.cansettime = true;
  if (has(n4::FATTR4_CASE_INSENSITIVE)) a.case_insensitive = false;
  if (has(n4::FATTR4_CASE_PRESERVING)) a.case_preserving = true;
  if (has(n4::FATTR4_CHOWN_RESTRICTED)) a.chown_restricted = true;
  if (has(n4::FATTR4_FILEHANDLE)) {
    std::error_code ec;
    std::vector<std::byte> fh = ctx.server.exp.fh_of(obj, ec);
    if (ec) return to_nfsstat(ec);
    a.filehandle = std::move(fh);
  }
  if (has(n4::FATTR4_FILEID)) a.fileid = st.ino;
  if (has(n4::FATTR4_FILES_AVAIL) || has(n4::FATTR4_FILES_FREE) ||
      has(n4::FATTR4_FILES_TOTAL) || has(n4::FATTR4_MAXNAME) || has(n4::FATTR4_SPACE_AVAIL) ||
      has(n4::FATTR4_SPACE_FREE) || has(n4::FATTR4_SPACE_TOTAL)) {
    nfsstat4 status = nfsstat4::NFS4_OK;
    const fs::fs_stats* s = statfs(status);
    if (!s) return status;
    if (has(n4::FATTR4_FILES_AVAIL)) a.files_avail = s->files_avail;
    if (has(n4::FATTR4_FILES_FREE)) a.files_free = s->files_free;
    if (has(n4::FATTR4_FILES_TOTAL)) a.files_total = s->files_total;
    if (has(n4::FATTR4_MAXNAME)) a.maxname = s->name_max ? s->name_max : 255;
    if (has(n4::FATTR4_SPACE_AVAIL)) a.space_avail = s->bytes_avail;
    if (has(n4::FATTR4_SPACE_FREE)) a.space_free = s->bytes_free;
    if (has(n4::FATTR4_SPACE_TOTAL)) a.space_total = s->bytes_total;
  }
  if (has(n4::FATTR4_HOMOGENEOUS)) a.homogeneous = true;
  if (has(n4::FATTR4_MAXFILESIZE)) a.maxfilesize = ctx.server.exp.max_file_size();
  if (has(n4::FATTR4_MAXLINK)) {
    // fpathconf works on O_PATH descriptors (it only needs fstatfs).
    long v = ::fpathconf(obj.fd(), _PC_LINK_MAX);
    a.maxlink = v > 0 && v <= 0xffffffffL ? static_cast<std::uint32_t>(v) : 65000u;
  }
  if (has(n4::FATTR4_MAXREAD) || has(n4::FATTR4_MAXWRITE)) {
    std::uint64_t rd = no_session_io_size, wr = no_session_io_size;
    if (ctx.sess) {
      rd = io_size(ctx.sess->fore.ca_maxresponsesize);
      wr = io_size(ctx.sess->fore.ca_maxrequestsize);
    }
    if (has(n4::FATTR4_MAXREAD)) a.maxread = rd;
    if (has(n4::FATTR4_MAXWRITE)) a.maxwrite = wr;
  }
  if (has(n4::FATTR4_MODE)) a.mode = st.mode & 07777;
  if (has(n4::FATTR4_NO_TRUNC)) a.no_trunc = true;
  if (has(n4::FATTR4_NUMLINKS)) a.numlinks = st.nlink;
  if (has(n4::FATTR4_OWNER)) a.owner = std::to_string(st.uid);
  if (has(n4::FATTR4_OWNER_GROUP)) a.owner_group = std::to_string(st.gid);
  if (has(n4::FATTR4_RAWDEV)) a.rawdev = n4::specdata4{st.rdev_major, st.rdev_minor};
  if (has(n4::FATTR4_SPACE_USED)) a.space_used = st.blocks * 512;
  if (has(n4::FATTR4_TIME_ACCESS)) a.time_access = to_nfstime(st.atime);
  if (has(n4::FATTR4_TIME_CREATE) && st.has_btime) a.time_create = to_nfstime(st.btime);
  if (has(n4::FATTR4_TIME_DELTA)) a.time_delta = n4::nfstime4{0, 1};
  if (has(n4::FATTR4_TIME_METADATA)) a.time_metadata = to_nfstime(st.ctime);
  if (has(n4::FATTR4_TIME_MODIFY)) a.time_modify = to_nfstime(st.mtime);
  if (has(n4::FATTR4_MOUNTED_ON_FILEID)) a.mounted_on_fileid = st.ino;
  if (has(n4::FATTR4_SUPPATTR_EXCLCREAT)) a.suppattr_exclcreat = exclusive_create_attributes();
  return nfsstat4::NFS4_OK;
}

n4::fattr4 encode_fs_attributes(compound_context& ctx, const fs::object& obj,
                                const fs::attributes& st, const n4::bitmap4& requested,
                                nfsstat4& status) {
  n4::attributes a;
  status = fs_attribute_values(ctx, obj, st, requested, a);
  if (status != nfsstat4::NFS4_OK) return {};
  return n4::encode_attributes(a, requested);
}

n4::fattr4 get_fs_attributes(compound_context& ctx, const fs::object& obj,
                             const n4::bitmap4& requested, nfsstat4& status) {
  std::error_code ec;
  fs::attributes st = fs::stat(obj, ec);
  if (ec) {
    status = to_nfsstat(ec);
    return {};
  }
  return encode_fs_attributes(ctx, obj, st, requested, status);
}

bool parse_owner(std::string_view s, std::uint32_t& uid) {
  if (parse_number(s, uid)) return true;
  if (s.empty() || s.find('\0') != std::string_view::npos) return false;
  std::string name(s);
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* res = nullptr;
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &res) != 0 || !res) return false;
  uid = res->pw_uid;
  return true;
}

bool parse_owner_group(std::string_view s, std::uint32_t& gid) {
  if (parse_number(s, gid)) return true;
  if (s.empty() || s.find('\0') != std::string_view::npos) return false;
  std::string name(s);
  std::vector<char> buf(16384);
  group gr{};
  group* res = nullptr;
  if (::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &res) != 0 || !res) return false;
  gid = res->gr_gid;
  return true;
}

nfsstat4 to_setattr_args(const n4::fattr4& in, fs::setattr_args& out, n4::bitmap4& attrsset) {
  out = {};
  attrsset = {};
  const std::vector<unsigned> bits = in.attrmask.bits();
  for (unsigned n : bits)
    if (!supported_attributes().test(n)) return nfsstat4::NFS4ERR_ATTRNOTSUPP;
  for (unsigned n : bits)
    if (!settable_attributes().test(n)) return nfsstat4::NFS4ERR_INVAL;

  n4::attributes a;
  try {
    a = n4::decode_attributes(in);
  } catch (const xdr::decode_error&) {
    return nfsstat4::NFS4ERR_BADXDR;
  }

  if (a.mode) {
    if (*a.mode & ~07777u) return nfsstat4::NFS4ERR_INVAL;
    out.mode = *a.mode;
  }
  if (a.owner) {
    std::uint32_t uid = 0;
    if (!parse_owner(*a.owner, uid)) return nfsstat4::NFS4ERR_BADOWNER;
    out.uid = uid;
  }
  if (a.owner_group) {
    std::uint32_t gid = 0;
    if (!parse_owner_group(*a.owner_group, gid)) return nfsstat4::NFS4ERR_BADOWNER;
    out.gid = gid;
  }
  if (a.size) out.size = *a.size;
  if (a.time_access_set) {
    if (nfsstat4 s = to_time_update(*a.time_access_set, out.atime); s != nfsstat4::NFS4_OK)
      return s;
  }
  if (a.time_modify_set) {
    if (nfsstat4 s = to_time_update(*a.time_modify_set, out.mtime); s != nfsstat4::NFS4_OK)
      return s;
  }
  for (unsigned n : bits) attrsset.set(n);
  return nfsstat4::NFS4_OK;
}

nfsstat4 apply_setattr(const fs::object& obj, const fs::setattr_args& in) {
  // A symlink's mode means nothing (the kernel cannot even change it): SETATTR of mode on
  // a symlink succeeds and changes nothing, as on the Linux server. Owner, group and times
  // of the link itself are set as on any object.
  fs::setattr_args args = in;
  if (obj.type() == fs::file_type::symlink) args.mode.reset();
  if (!args.mode && !args.uid && !args.gid && !args.size &&
      args.atime.what == fs::time_update::how::keep &&
      args.mtime.what == fs::time_update::how::keep)
    return nfsstat4::NFS4_OK;
  if (args.size) {
    if (obj.type() == fs::file_type::directory) return nfsstat4::NFS4ERR_ISDIR;
    if (obj.type() != fs::file_type::regular) return nfsstat4::NFS4ERR_INVAL;
  }
  std::error_code ec;
  fs::setattr(obj, args, ec);
  if (ec == fs::errc::wrong_type) return nfsstat4::NFS4ERR_INVAL;
  return to_nfsstat(ec);
}

std::uint64_t change_of(const fs::object& dir) {
  std::error_code ec;
  fs::attributes st = fs::stat(dir, ec);
  return ec ? 0 : st.change;
}

}  // namespace vnfs::server
