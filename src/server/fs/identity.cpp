#include "server/fs/identity.hpp"

#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace vnfs::server::fs {
namespace {

// setfsuid/setfsgid report the previous value, never an error; an invalid id (-1) changes
// nothing, which makes them queries.
uid_t current_fsuid() noexcept { return static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))); }
gid_t current_fsgid() noexcept { return static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))); }

// Raw system call: changes the calling thread's credentials only.
int thread_setgroups(std::size_t n, const gid_t* list) noexcept {
  return static_cast<int>(::syscall(SYS_setgroups, n, list));
}

}  // namespace

scoped_identity::scoped_identity(uid_t uid, gid_t gid, std::span<const gid_t> groups)
    : prev_uid_(current_fsuid()), prev_gid_(current_fsgid()) {
  int n = ::getgroups(0, nullptr);
  if (n < 0) throw std::system_error(errno, std::system_category(), "scoped_identity: getgroups");
  prev_groups_.resize(static_cast<std::size_t>(n));
  if (n > 0 && ::getgroups(n, prev_groups_.data()) < 0)
    throw std::system_error(errno, std::system_category(), "scoped_identity: getgroups");

  // Only what differs is changed: a thread that already acts as the caller (the common case
  // of one user's requests) makes no credential change, which the kernel makes expensive.
  groups_changed_ = !std::equal(groups.begin(), groups.end(), prev_groups_.begin(), prev_groups_.end());
  if (groups_changed_ && thread_setgroups(groups.size(), groups.data()) != 0)
    throw std::system_error(errno, std::system_category(), "scoped_identity: setgroups");
  gid_changed_ = gid != prev_gid_;
  uid_changed_ = uid != prev_uid_;
  if (gid_changed_) ::setfsgid(gid);
  if (uid_changed_) ::setfsuid(uid);
  if ((uid_changed_ && current_fsuid() != uid) || (gid_changed_ && current_fsgid() != gid)) {
    restore();
    throw std::system_error(EPERM, std::system_category(), "scoped_identity: setfsuid/setfsgid");
  }
}

void scoped_identity::restore() noexcept {
  if (uid_changed_) ::setfsuid(prev_uid_);
  if (gid_changed_) ::setfsgid(prev_gid_);
  if (groups_changed_) thread_setgroups(prev_groups_.size(), prev_groups_.data());
}

scoped_identity::~scoped_identity() { restore(); }

scoped_fs_root::scoped_fs_root() noexcept : prev_uid_(current_fsuid()) {
  if (prev_uid_ != 0) ::setfsuid(0);
}

scoped_fs_root::~scoped_fs_root() {
  if (prev_uid_ != 0) ::setfsuid(prev_uid_);
}

}  // namespace vnfs::server::fs
