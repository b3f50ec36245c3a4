#include "server/fs/readdir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <limits>

#include "server/fs/detail.hpp"
#include "server/fs/directory.hpp"

namespace vnfs::server::fs {
namespace {

// The kernel's record layout for getdents64 (glibc exposes no declaration of it).
struct linux_dirent64 {
  std::uint64_t d_ino;
  std::int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

bool from_dtype(unsigned char t, file_type& out) noexcept {
  switch (t) {
    case DT_REG: out = file_type::regular; return true;
    case DT_DIR: out = file_type::directory; return true;
    case DT_LNK: out = file_type::symlink; return true;
    case DT_BLK: out = file_type::block; return true;
    case DT_CHR: out = file_type::character; return true;
    case DT_FIFO: out = file_type::fifo; return true;
    case DT_SOCK: out = file_type::socket; return true;
    default: return false;
  }
}

}  // namespace

readdir_result readdir(const object& dir, std::uint64_t cookie, const readdir_options& opts,
                       std::error_code& ec) {
  readdir_result out;
  if (!dir.is_directory()) {
    ec = sys_error(ENOTDIR);
    return out;
  }
  if (cookie > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    ec = errc::bad_cookie;
    return out;
  }
  // A private descriptor per call: its position is ours alone, and opening checks read
  // access under the current identity.
  unique_fd fd(::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    ec = last_error();
    return out;
  }
  if (cookie != 0 && ::lseek(fd.get(), static_cast<off_t>(cookie), SEEK_SET) < 0) {
    ec = errno == EINVAL ? std::error_code(errc::bad_cookie) : last_error();
    return out;
  }

  const std::size_t max = opts.max_entries ? opts.max_entries : 1;
  alignas(linux_dirent64) char buf[32768];
  for (bool more = true; more;) {
    long n = ::syscall(SYS_getdents64, fd.get(), buf, sizeof buf);
    if (n < 0) {
      // Some file systems only notice an impossible position when reading from it.
      const int e = errno;
      ec = (e == EINVAL || e == ENOENT) ? std::error_code(errc::bad_cookie) : sys_error(e);
      return out;
    }
    if (n == 0) {
      out.eof = true;
      break;
    }
    for (long pos = 0; pos < n;) {
      auto* d = reinterpret_cast<linux_dirent64*>(buf + pos);
      pos += d->d_reclen;
      const std::string_view name(d->d_name);
      if (name == "." || name == "..") continue;
      if (out.entries.size() == max) {  // one more entry exists: not eof
        more = false;
        break;
      }
      dir_entry e;
      e.name = std::string(name);
      e.cookie = static_cast<std::uint64_t>(d->d_off);
      e.ino = d->d_ino;
      e.type_known = from_dtype(d->d_type, e.type);
      out.entries.push_back(std::move(e));
    }
  }
  if (opts.open_objects) {
    for (auto& e : out.entries) {
      e.obj = lookup(dir, e.name, e.open_error);
      if (!e.open_error) {
        e.type = e.obj.type();
        e.type_known = true;
      }
    }
  }
  ec.clear();
  return out;
}

}  // namespace vnfs::server::fs
