#include "server/fs/attributes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fs/detail.hpp"

namespace vnfs::server::fs {
namespace {

timestamp ts(const struct statx_timestamp& t) noexcept { return {t.tv_sec, t.tv_nsec}; }

struct timespec to_timespec(const time_update& u) noexcept {
  struct timespec t {};
  switch (u.what) {
    case time_update::how::keep: t.tv_nsec = UTIME_OMIT; break;
    case time_update::how::now: t.tv_nsec = UTIME_NOW; break;
    case time_update::how::set:
      t.tv_sec = static_cast<time_t>(u.time.sec);
      t.tv_nsec = static_cast<long>(u.time.nsec);
      break;
  }
  return t;
}

}  // namespace

attributes stat(const object& obj, std::error_code& ec) {
  struct statx st {};
  if (int e = detail::statx_fd(obj.fd(), STATX_BASIC_STATS | STATX_BTIME, st)) {
    ec = sys_error(e);
    return {};
  }
  ec.clear();
  return attributes_of(st);
}

attributes attributes_of(const struct statx& st) noexcept {
  attributes a;
  a.type = file_type_of(st.stx_mode);
  a.mode = st.stx_mode & 07777;
  a.nlink = st.stx_nlink;
  a.uid = st.stx_uid;
  a.gid = st.stx_gid;
  a.size = st.stx_size;
  a.blocks = st.stx_blocks;
  a.atime = ts(st.stx_atime);
  a.mtime = ts(st.stx_mtime);
  a.ctime = ts(st.stx_ctime);
  a.has_btime = (st.stx_mask & STATX_BTIME) != 0;
  if (a.has_btime) a.btime = ts(st.stx_btime);
  a.ino = st.stx_ino;
  a.dev_major = st.stx_dev_major;
  a.dev_minor = st.stx_dev_minor;
  a.rdev_major = st.stx_rdev_major;
  a.rdev_minor = st.stx_rdev_minor;
  a.change = static_cast<std::uint64_t>(st.stx_ctime.tv_sec) * 1'000'000'000u + st.stx_ctime.tv_nsec;
  return a;
}

void setattr(const object& obj, const setattr_args& args, std::error_code& ec) {
  detail::drop_create_verifier(obj);
  const detail::proc_path p(obj.fd());

  if (args.uid || args.gid) {
    const uid_t uid = args.uid ? static_cast<uid_t>(*args.uid) : static_cast<uid_t>(-1);
    const gid_t gid = args.gid ? static_cast<gid_t>(*args.gid) : static_cast<gid_t>(-1);
    if (::fchownat(obj.fd(), "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
      ec = last_error();
      return;
    }
  }
  if (args.mode) {
    if (obj.type() == file_type::symlink) {
      ec = sys_error(EOPNOTSUPP);
      return;
    }
    // chmod through the magic link reaches exactly this inode (not a symlink: checked).
    if (::chmod(p.c_str(), static_cast<mode_t>(*args.mode & 07777)) != 0) {
      ec = last_error();
      return;
    }
  }
  if (args.size) {
    if (auto e = detail::require_regular(obj)) {
      ec = e;
      return;
    }
    // Path-based truncate checks write access under the current identity, as an open would.
    if (::truncate(p.c_str(), static_cast<off_t>(*args.size)) != 0) {
      ec = last_error();
      return;
    }
  }
  if (args.atime.what != time_update::how::keep || args.mtime.what != time_update::how::keep) {
    const struct timespec times[2] = {to_timespec(args.atime), to_timespec(args.mtime)};
    if (::utimensat(obj.fd(), "", times, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
      ec = last_error();
      return;
    }
  }
  ec.clear();
}

}  // namespace vnfs::server::fs
