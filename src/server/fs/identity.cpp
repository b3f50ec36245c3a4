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
uid_t query_fsuid() noexcept { return static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))); }
gid_t query_fsgid() noexcept { return static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))); }

// Raw system call: changes the calling thread's credentials only.
int thread_setgroups(std::size_t n, const gid_t* list) noexcept {
  return static_cast<int>(::syscall(SYS_setgroups, n, list));
}

/// The calling thread's file-system identity as the kernel has it, read from the kernel
/// once per thread and then kept up to date by the classes of this file, which are the only
/// code of the server that changes it. A request whose identity is the thread's already
/// (the common case) then costs no system call at all.
struct thread_identity {
  bool known = false;
  bool groups_known = false;  ///< false: getgroups failed, `groups` is not the thread's
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

thread_identity& current() noexcept {
  thread_local thread_identity id;
  if (!id.known) {
    id.uid = query_fsuid();
    id.gid = query_fsgid();
    int n = ::getgroups(0, nullptr);
    id.groups.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    id.groups_known = n >= 0 && (n == 0 || ::getgroups(n, id.groups.data()) == n);
    id.known = true;
  }
  return id;
}

// Sets the thread's fsuid and fsgid where they differ from `id`'s, and records in `id` what
// the kernel made of it (a refused change leaves the old value).
void set_ids(thread_identity& id, uid_t uid, gid_t gid) noexcept {
  if (gid != id.gid) {
    ::setfsgid(gid);
    id.gid = query_fsgid();
  }
  if (uid != id.uid) {
    ::setfsuid(uid);
    id.uid = query_fsuid();
  }
}

}  // namespace

scoped_identity::scoped_identity(uid_t uid, gid_t gid, std::span<const gid_t> groups) {
  thread_identity& id = current();
  if (!id.groups_known) throw std::system_error(EINVAL, std::system_category(), "scoped_identity: getgroups");
  prev_uid_ = id.uid;
  prev_gid_ = id.gid;
  // Only what differs is changed: a thread that already acts as the caller makes no
  // credential change, which the kernel makes expensive.
  groups_changed_ = !std::equal(groups.begin(), groups.end(), id.groups.begin(), id.groups.end());
  if (groups_changed_) {
    if (thread_setgroups(groups.size(), groups.data()) != 0)
      throw std::system_error(errno, std::system_category(), "scoped_identity: setgroups");
    prev_groups_ = std::move(id.groups);
    id.groups.assign(groups.begin(), groups.end());
  }
  uid_changed_ = uid != prev_uid_;
  gid_changed_ = gid != prev_gid_;
  set_ids(id, uid, gid);
  if (id.uid != uid || id.gid != gid) {
    restore();
    throw std::system_error(EPERM, std::system_category(), "scoped_identity: setfsuid/setfsgid");
  }
}

void scoped_identity::restore() noexcept {
  thread_identity& id = current();
  if (uid_changed_ || gid_changed_) set_ids(id, prev_uid_, prev_gid_);
  if (!groups_changed_) return;
  // Should putting them back fail, the thread's groups are unknown from now on, and every
  // later scoped_identity on this thread refuses to run.
  id.groups_known = thread_setgroups(prev_groups_.size(), prev_groups_.data()) == 0;
  id.groups = std::move(prev_groups_);
}

scoped_identity::~scoped_identity() { restore(); }

thread_fs_identity current_fs_identity() noexcept {
  const thread_identity& id = current();
  return {id.groups_known, id.uid, id.gid, id.groups};
}

scoped_fs_root::scoped_fs_root() noexcept {
  thread_identity& id = current();
  prev_uid_ = id.uid;
  if (prev_uid_ != 0) {
    ::setfsuid(0);
    id.uid = query_fsuid();
  }
}

scoped_fs_root::~scoped_fs_root() {
  if (prev_uid_ == 0) return;
  thread_identity& id = current();
  ::setfsuid(prev_uid_);
  id.uid = query_fsuid();
}

}  // namespace vnfs::server::fs
