#include "server/fs/detail.hpp"

#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

namespace vnfs::server::fs::detail {

int statx_fd(int fd, unsigned mask, struct statx& st) noexcept {
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, mask, &st) != 0)
    return errno;
  return 0;
}

inode_id inode_of(const struct ::stat& st) noexcept {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

inode_id inode_of(const struct statx& st) noexcept {
  return {static_cast<std::uint64_t>(makedev(st.stx_dev_major, st.stx_dev_minor)), st.stx_ino};
}

std::error_code require_regular(const object& obj) noexcept {
  switch (obj.type()) {
    case file_type::regular: return {};
    case file_type::directory: return sys_error(EISDIR);
    case file_type::symlink: return sys_error(ELOOP);
    default: return errc::wrong_type;
  }
}

int open_data(const object& obj, int flags, std::error_code& ec) noexcept {
  if (auto e = require_regular(obj)) {
    ec = e;
    return -1;
  }
  // O_NOFOLLOW cannot be used here (it would refuse the magic link itself), but the magic
  // link resolves to the very inode of the O_PATH descriptor, whose type (a regular file,
  // checked above) was read from that inode when the object was made and cannot change:
  // no symlink and no device is involved. O_NONBLOCK guards against blocking should that
  // ever not hold.
  int fd = ::open(proc_path(obj.fd()).c_str(), flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    ec = last_error();
    return -1;
  }
  ec.clear();
  return fd;
}

void drop_create_verifier(const object& obj, int open_fd) noexcept {
  if (obj.type() != file_type::regular || obj.no_create_verifier()) return;
  ssize_t got;
  if (open_fd >= 0) {
    got = ::fgetxattr(open_fd, createverf_xattr, nullptr, 0);
    if (got >= 0 && ::fremovexattr(open_fd, createverf_xattr) == 0) obj.note_no_create_verifier();
  } else {
    proc_path p(obj.fd());
    got = ::getxattr(p.c_str(), createverf_xattr, nullptr, 0);
    if (got >= 0 && ::removexattr(p.c_str(), createverf_xattr) == 0) obj.note_no_create_verifier();
  }
  if (got < 0 && errno == ENODATA) obj.note_no_create_verifier();
}

}  // namespace vnfs::server::fs::detail
