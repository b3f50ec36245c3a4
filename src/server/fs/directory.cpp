#include "server/fs/directory.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>

#include "server/fs/detail.hpp"
#include "server/fs/name.hpp"

namespace vnfs::server::fs {
namespace {

// check_name() has excluded '/', so the std::string is one NUL-terminated component.
bool bad(std::string_view name, std::error_code& ec) {
  ec = check_name(name);
  return static_cast<bool>(ec);
}

// openat2 with every escape closed: no symlink (the final one is opened as itself thanks
// to O_PATH|O_NOFOLLOW), no magic link, no mount crossing, nothing outside `dirfd`.
int open_component(int dirfd, const std::string& name) noexcept {
  struct open_how how {};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, name.c_str(), &how, sizeof how));
}

object lookup_checked(const object& dir, const std::string& name, std::error_code& ec) {
  unique_fd fd(open_component(dir.fd(), name));
  if (!fd) {
    ec = last_error();
    return {};
  }
  return object::from_fd(std::move(fd), ec);
}

// Sets exactly `perm` on a just-created object, undoing the process umask.
void set_exact_mode(const object& obj, std::uint32_t perm, std::error_code& ec) {
  struct statx st {};
  if (int e = detail::statx_fd(obj.fd(), STATX_MODE, st)) {
    ec = sys_error(e);
    return;
  }
  std::uint32_t want = perm & 07777;
  if (obj.is_directory()) want |= st.stx_mode & S_ISGID;  // inherited from a set-gid parent
  if ((st.stx_mode & 07777) == want) return;
  if (::chmod(detail::proc_path(obj.fd()).c_str(), want) != 0) ec = last_error();
}

std::error_code type_error(file_type t) {
  switch (t) {
    case file_type::regular: return {};
    case file_type::directory: return sys_error(EISDIR);
    case file_type::symlink: return sys_error(ELOOP);
    default: return errc::wrong_type;
  }
}

}  // namespace

object lookup(const object& dir, std::string_view name, std::error_code& ec) {
  if (bad(name, ec)) return {};
  return lookup_checked(dir, std::string(name), ec);
}

create_result create(const object& dir, std::string_view name, const create_how& how,
                     std::error_code& ec) {
  if (bad(name, ec)) return {};
  const std::string n(name);
  const mode_t perm = static_cast<mode_t>(how.perm & 07777);

  // A few rounds in case the name comes and goes between our create and lookup.
  for (int round = 0; round < 8; ++round) {
    // Opening O_RDONLY a file we have just created needs no read permission on it.
    unique_fd fd(::openat(dir.fd(), n.c_str(), O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, perm));
    if (fd) {
      if (how.mode == create_mode::exclusive &&
          ::fsetxattr(fd.get(), detail::createverf_xattr, how.verifier.data(), how.verifier.size(), 0) != 0) {
        ec = last_error();
        ::unlinkat(dir.fd(), n.c_str(), 0);
        return {};
      }
      if (::fchmod(fd.get(), perm) != 0) {  // exact mode: no umask
        ec = last_error();
        return {};
      }
      struct ::stat st {};  // its numbers now: the callers key state and locks by them
      if (::fstat(fd.get(), &st) != 0) {
        ec = last_error();
        return {};
      }
      unique_fd pfd(::open(detail::proc_path(fd.get()).c_str(), O_PATH | O_CLOEXEC));
      if (!pfd) {
        ec = last_error();
        return {};
      }
      ec.clear();
      object made(std::move(pfd), file_type::regular, detail::inode_of(st));
      if (how.mode != create_mode::exclusive) made.note_no_create_verifier();
      return {std::move(made), true};
    }
    if (errno != EEXIST) {
      ec = last_error();
      return {};
    }
    if (how.mode == create_mode::guarded) {
      ec = sys_error(EEXIST);
      return {};
    }
    object existing = lookup_checked(dir, n, ec);
    if (ec == std::errc::no_such_file_or_directory) continue;  // removed meanwhile: retry
    if (ec) return {};
    if (auto e = type_error(existing.type())) {
      ec = how.mode == create_mode::exclusive ? sys_error(EEXIST) : e;
      return {};
    }
    if (how.mode == create_mode::exclusive) {
      create_verifier stored{};
      ssize_t got = ::getxattr(detail::proc_path(existing.fd()).c_str(), detail::createverf_xattr,
                               stored.data(), stored.size());
      if (got != static_cast<ssize_t>(stored.size()) || stored != how.verifier) {
        ec = sys_error(EEXIST);
        return {};
      }
      ec.clear();
      return {std::move(existing), false};
    }
    if (how.truncate) {
      int wfd = detail::open_data(existing, O_WRONLY | O_TRUNC, ec);
      if (wfd < 0) return {};
      ::close(wfd);
    }
    ec.clear();
    return {std::move(existing), false};
  }
  ec = sys_error(EAGAIN);
  return {};
}

object mkdir(const object& dir, std::string_view name, std::uint32_t perm, std::error_code& ec) {
  if (bad(name, ec)) return {};
  const std::string n(name);
  if (::mkdirat(dir.fd(), n.c_str(), static_cast<mode_t>(perm & 07777)) != 0) {
    ec = last_error();
    return {};
  }
  object d = lookup_checked(dir, n, ec);
  if (ec) return {};
  if (!d.is_directory()) {  // replaced between mkdirat and the lookup
    ec = sys_error(EEXIST);
    return {};
  }
  set_exact_mode(d, perm, ec);
  if (ec) return {};
  return d;
}

object symlink(const object& dir, std::string_view name, std::string_view target,
               std::error_code& ec) {
  if (bad(name, ec)) return {};
  if (target.empty() || target.find('\0') != std::string_view::npos) {
    ec = sys_error(EINVAL);
    return {};
  }
  const std::string n(name);
  if (::symlinkat(std::string(target).c_str(), dir.fd(), n.c_str()) != 0) {
    ec = last_error();
    return {};
  }
  return lookup_checked(dir, n, ec);
}

object mknod(const object& dir, std::string_view name, file_type type, std::uint32_t perm,
             std::uint32_t major, std::uint32_t minor, std::error_code& ec) {
  if (bad(name, ec)) return {};
  mode_t kind = 0;
  dev_t dev = 0;
  switch (type) {
    case file_type::fifo: kind = S_IFIFO; break;
    case file_type::socket: kind = S_IFSOCK; break;
    case file_type::character: kind = S_IFCHR; dev = makedev(major, minor); break;
    case file_type::block: kind = S_IFBLK; dev = makedev(major, minor); break;
    default: ec = errc::wrong_type; return {};
  }
  const std::string n(name);
  if (::mknodat(dir.fd(), n.c_str(), kind | static_cast<mode_t>(perm & 07777), dev) != 0) {
    ec = last_error();
    return {};
  }
  object o = lookup_checked(dir, n, ec);
  if (ec) return {};
  if (o.type() != type) {
    ec = sys_error(EEXIST);
    return {};
  }
  set_exact_mode(o, perm, ec);
  if (ec) return {};
  return o;
}

void link(const object& target, const object& dir, std::string_view name, std::error_code& ec) {
  if (bad(name, ec)) return;
  if (target.is_directory()) {
    ec = sys_error(EPERM);
    return;
  }
  // linkat(fd, "", AT_EMPTY_PATH) would need CAP_DAC_READ_SEARCH, which a request identity
  // lacks; the magic link reaches the same inode without it (and, being the final
  // component, a symlink object is linked itself, not followed).
  if (::linkat(AT_FDCWD, detail::proc_path(target.fd()).c_str(), dir.fd(),
               std::string(name).c_str(), AT_SYMLINK_FOLLOW) != 0) {
    ec = last_error();
    return;
  }
  ec.clear();
}

void remove(const object& dir, std::string_view name, std::error_code& ec) {
  if (bad(name, ec)) return;
  const std::string n(name);
  if (::unlinkat(dir.fd(), n.c_str(), 0) == 0) return ec.clear();
  if (errno != EISDIR) {
    ec = last_error();
    return;
  }
  if (::unlinkat(dir.fd(), n.c_str(), AT_REMOVEDIR) == 0) return ec.clear();
  ec = sys_error(errno == EEXIST ? ENOTEMPTY : errno);
}

void rename(const object& from_dir, std::string_view from_name, const object& to_dir,
            std::string_view to_name, std::error_code& ec) {
  if (bad(from_name, ec) || bad(to_name, ec)) return;
  if (::renameat(from_dir.fd(), std::string(from_name).c_str(), to_dir.fd(),
                 std::string(to_name).c_str()) != 0) {
    ec = sys_error(errno == EEXIST ? ENOTEMPTY : errno);
    return;
  }
  ec.clear();
}

std::string readlink(const object& link, std::error_code& ec) {
  if (link.type() != file_type::symlink) {
    ec = sys_error(EINVAL);
    return {};
  }
  std::string buf(256, '\0');
  for (;;) {
    ssize_t n = ::readlinkat(link.fd(), "", buf.data(), buf.size());
    if (n < 0) {
      ec = last_error();
      return {};
    }
    if (static_cast<std::size_t>(n) < buf.size()) {
      buf.resize(static_cast<std::size_t>(n));
      ec.clear();
      return buf;
    }
    buf.resize(buf.size() * 2);
  }
}

}  // namespace vnfs::server::fs
