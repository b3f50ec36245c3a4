#include "server/fs/detail.hpp"

#include <pthread.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace vnfs::server::fs::detail {

namespace {

std::atomic<int> proc_fd_dir_fd{-1};

/// This process's /proc/self/fd, opened at first use; -1 if it cannot be. Reopening an
/// O_PATH descriptor through it looks up one name, "N", instead of walking the whole of
/// "/proc/self/fd/N" (the symbolic link "self" included): an open and close of a file
/// took 2.5 instead of 3.5 µs on the project's VM. A child made by fork() drops the
/// parent's (whose descriptors it names) and opens its own.
int proc_fd_dir() noexcept {
  const int fd = proc_fd_dir_fd.load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  static const bool forks_handled = [] {
    ::pthread_atfork(nullptr, nullptr, [] {
      const int inherited = proc_fd_dir_fd.exchange(-1);
      if (inherited >= 0) ::close(inherited);
    });
    return true;
  }();
  (void)forks_handled;
  const int made = ::open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (made < 0) return -1;
  int expected = -1;
  if (!proc_fd_dir_fd.compare_exchange_strong(expected, made, std::memory_order_acq_rel)) {
    ::close(made);  // another thread's came first
    return expected;
  }
  return made;
}

}  // namespace

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
  flags |= O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  const int dir = proc_fd_dir();
  int fd;
  if (dir >= 0) {
    std::array<char, 16> name{};
    std::snprintf(name.data(), name.size(), "%d", obj.fd());
    fd = ::openat(dir, name.data(), flags);
  } else {
    fd = ::open(proc_path(obj.fd()).c_str(), flags);
  }
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
