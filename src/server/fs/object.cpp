#include "server/fs/object.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "server/fs/detail.hpp"
#include "server/fs/identity.hpp"

namespace vnfs::server::fs {

file_type file_type_of(mode_t mode) noexcept {
  switch (mode & S_IFMT) {
    case S_IFDIR: return file_type::directory;
    case S_IFLNK: return file_type::symlink;
    case S_IFBLK: return file_type::block;
    case S_IFCHR: return file_type::character;
    case S_IFIFO: return file_type::fifo;
    case S_IFSOCK: return file_type::socket;
    default: return file_type::regular;
  }
}

object::object(unique_fd fd, file_type type) : type_(type) {
  auto n = std::make_shared<node>();
  n->path = std::move(fd);
  fd_ = std::move(n);
}

object::object(unique_fd fd, file_type type, inode_id id) : type_(type) {
  auto n = std::make_shared<node>();
  n->path = std::move(fd);
  n->id = id;
  fd_ = std::move(n);
}

inode_id object::inode(std::error_code& ec) const {
  if (const std::optional<inode_id> known = id()) {
    ec.clear();
    return *known;
  }
  struct ::stat st {};
  if (!*this) {
    ec = sys_error(EBADF);
    return {};
  }
  if (::fstat(fd(), &st) != 0) {
    ec = last_error();
    return {};
  }
  ec.clear();
  return detail::inode_of(st);
}

object::node::~node() {
  if (const int r = reader.load(std::memory_order_relaxed); r >= 0) ::close(r);
}

int object::keep_reader(unique_fd fd) const noexcept {
  if (!fd_) return -1;
  int expected = -1;
  if (fd_->reader.compare_exchange_strong(expected, fd.get(), std::memory_order_acq_rel)) return fd.release();
  return expected;  // another thread's descriptor won; ours closes here
}

bool object::read_granted(const timestamp& ctime) const {
  if (!fd_) return false;
  const thread_fs_identity who = current_fs_identity();
  if (!who.known) return false;
  std::lock_guard lock(fd_->grant_mu);
  const std::optional<read_grant>& g = fd_->grant;
  return g && g->ctime == ctime && g->uid == who.uid && g->gid == who.gid &&
         std::equal(g->groups.begin(), g->groups.end(), who.groups.begin(), who.groups.end());
}

void object::grant_read(const timestamp& ctime) const {
  if (!fd_) return;
  const thread_fs_identity who = current_fs_identity();
  if (!who.known) return;
  std::lock_guard lock(fd_->grant_mu);
  fd_->grant = read_grant{who.uid, who.gid, {who.groups.begin(), who.groups.end()}, ctime};
}

std::vector<std::byte> object::remembered_handle(const void* maker) const {
  if (!fd_) return {};
  std::lock_guard lock(fd_->handle_mu);
  return fd_->handle_maker == maker ? fd_->handle : std::vector<std::byte>{};
}

void object::remember_handle(const void* maker, std::span<const std::byte> fh) const {
  if (!fd_) return;
  std::lock_guard lock(fd_->handle_mu);
  fd_->handle_maker = maker;
  fd_->handle.assign(fh.begin(), fh.end());
}

object object::clone(std::error_code& ec) const {
  ec.clear();
  return share();
}

object object::share() const noexcept { return *this; }

object object::from_fd(unique_fd fd, std::error_code& ec) {
  struct statx st {};
  if (int e = detail::statx_fd(fd.get(), STATX_TYPE | STATX_INO, st)) {
    ec = sys_error(e);
    return {};
  }
  ec.clear();
  return object(std::move(fd), file_type_of(st.stx_mode), detail::inode_of(st));
}

}  // namespace vnfs::server::fs
