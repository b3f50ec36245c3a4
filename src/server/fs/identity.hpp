// vnfsd export file system: the per-request identity of the calling thread.
#pragma once

#include <sys/types.h>

#include <span>
#include <vector>

namespace vnfs::server::fs {

/// Makes the CALLING THREAD act on the file system as uid:gid with supplementary `groups`
/// until destruction, then restores the identity it replaced (normally root).
///
/// Only the file-system identity changes: setfsuid/setfsgid, and setgroups through the raw
/// system call (glibc's setgroups() would change every thread of the process). While the
/// fsuid is not 0 the kernel clears the file-system capabilities (CAP_DAC_OVERRIDE,
/// CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN, CAP_FSETID, CAP_MKNOD, ...) from the thread's
/// effective set, so every permission check is the kernel's own, made on the caller's behalf;
/// they come back when the fsuid returns to 0. Other capabilities (CAP_SYS_ADMIN: trusted.*
/// xattrs; CAP_SETUID/CAP_SETGID: switching back) are kept.
///
/// The server changes a thread's file-system identity through this class and scoped_fs_root
/// only: they remember it per thread instead of asking the kernel each time.
///
/// Requires CAP_SETUID and CAP_SETGID. Throws std::system_error if the switch fails (e.g.
/// more than NGROUPS_MAX groups); then nothing is changed. Not movable: it belongs to the
/// scope and thread that made it. Nested scopes restore in reverse order.
class scoped_identity {
 public:
  scoped_identity(uid_t uid, gid_t gid, std::span<const gid_t> groups = {});
  ~scoped_identity();
  scoped_identity(const scoped_identity&) = delete;
  scoped_identity& operator=(const scoped_identity&) = delete;

 private:
  void restore() noexcept;

  uid_t prev_uid_;
  gid_t prev_gid_;
  std::vector<gid_t> prev_groups_;
  // What the constructor changed, and so what restore() puts back. The thread's identity is
  // known without asking the kernel (identity.cpp keeps it per thread), so a thread that
  // already acts as the caller makes no system call at all.
  bool groups_changed_ = false;
  bool uid_changed_ = false;
  bool gid_changed_ = false;
};

/// Temporarily gives the calling thread the process's root file-system identity (fsuid 0,
/// hence the file-system capabilities) for work the server does on its own behalf, not the
/// client's: open_by_handle_at (needs CAP_DAC_READ_SEARCH) and similar. Restores the
/// previous fsuid on destruction. No system call when the thread already is root.
class scoped_fs_root {
 public:
  scoped_fs_root() noexcept;
  ~scoped_fs_root();
  scoped_fs_root(const scoped_fs_root&) = delete;
  scoped_fs_root& operator=(const scoped_fs_root&) = delete;

 private:
  uid_t prev_uid_;
};

/// The calling thread's file-system identity as scoped_identity and scoped_fs_root keep it
/// (no system call). `known` is false when its groups could not be read; `groups` stays
/// valid until the thread's identity next changes.
struct thread_fs_identity {
  bool known = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::span<const gid_t> groups;
};
thread_fs_identity current_fs_identity() noexcept;

}  // namespace vnfs::server::fs
