#include "server/fs/object.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include "server/fs/detail.hpp"

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

object::object(unique_fd fd, file_type type) : fd_(std::make_shared<const unique_fd>(std::move(fd))), type_(type) {}

object object::clone(std::error_code& ec) const {
  ec.clear();
  return share();
}

object object::share() const noexcept { return *this; }

object object::from_fd(unique_fd fd, std::error_code& ec) {
  struct statx st {};
  if (int e = detail::statx_fd(fd.get(), STATX_TYPE, st)) {
    ec = sys_error(e);
    return {};
  }
  ec.clear();
  return object(std::move(fd), file_type_of(st.stx_mode));
}

}  // namespace vnfs::server::fs
