#include "server/txn/undo.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <map>
#include <string>
#include <string_view>

#include "server/fs/attributes.hpp"
#include "server/fs/detail.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/error.hpp"
#include "server/fs/identity.hpp"

namespace vnfs::server::txn {

namespace {

using fs::last_error;

fs::setattr_args restore_args(const saved_attrs& a, bool with_size) {
  const auto type = static_cast<fs::file_type>(a.type);
  fs::setattr_args s;
  s.uid = a.uid;
  s.gid = a.gid;
  if (type != fs::file_type::symlink) s.mode = a.mode;
  if (with_size && type == fs::file_type::regular) s.size = a.size;
  s.atime = fs::time_update::at({a.atime_sec, a.atime_nsec});
  s.mtime = fs::time_update::at({a.mtime_sec, a.mtime_nsec});
  return s;
}

/// Removes `name` from the directory `dirfd` and, if it is a directory, everything in it
/// (only what the transaction created: nobody else could reach it). ENOENT counts as done.
std::error_code remove_created(int dirfd, const char* name, int depth = 0) {
  if (::unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return {};
  if (errno != EISDIR && errno != EPERM) return last_error();
  if (::unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return {};
  if ((errno != ENOTEMPTY && errno != EEXIST) || depth > 4096) return last_error();
  const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return last_error();
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return last_error();
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  std::error_code ec;
  for (const std::string& n : names)
    if ((ec = remove_created(::dirfd(d), n.c_str(), depth + 1))) break;
  ::closedir(d);
  if (ec) return ec;
  if (::unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return {};
  return last_error();
}

/// If `name` in `dirfd` is a regular file the transaction made (`made`), cuts it to size 0:
/// its space is back at once, though descriptors still hold it (its open states, the
/// filehandles of the COMPOUND rolling back), for an undo after this one that needs it (to
/// put back what a truncation freed, on a disk the file filled). Never a file the
/// transaction only gave a name (LINK): that one keeps its bytes.
void give_back_space(int dirfd, const char* name, const made_objects& made) {
  struct ::stat st {};
  if (made.empty() || ::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
      !made.contains({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}))
    return;
  const int f = ::openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (f < 0) return;  // the unlink after it gives the space back once the file is let go
  struct ::stat again {};
  if (::fstat(f, &again) == 0 && again.st_ino == st.st_ino && again.st_dev == st.st_dev) (void)::ftruncate(f, 0);
  ::close(f);
}

/// Directories an undo made again (rec_rmdir), by the filehandle of the one removed.
using remade_dirs = std::map<std::vector<std::byte>, fs::object>;

std::error_code undo_one(const fs::export_root& exp, int state_fd, int data_fd, const record& rec,
                         const made_objects& made, remade_dirs& remade) {
  std::error_code ec;
  auto resolve = [&](const std::vector<std::byte>& fh) {
    if (auto it = remade.find(fh); it != remade.end()) return it->second.clone(ec);
    return exp.resolve(fh, ec);
  };
  if (const auto* r = std::get_if<rec_attrs>(&rec)) {
    fs::object obj = resolve(r->fh);
    if (ec) return fs::object_gone(ec) ? std::error_code{} : ec;
    fs::setattr(obj, restore_args(r->attrs, true), ec);
    return ec;
  }
  if (const auto* r = std::get_if<rec_range>(&rec)) {
    fs::object obj = resolve(r->fh);
    if (ec) return fs::object_gone(ec) ? std::error_code{} : ec;
    int fd = fs::detail::open_data(obj, O_WRONLY, ec);
    if (fd < 0) return ec;
    fs::unique_fd closer(fd);
    if (data_fd < 0) return fs::sys_error(ENOENT);
    return copy_bytes(data_fd, r->data_offset, fd, r->offset, r->length);
  }
  if (const auto* r = std::get_if<rec_created>(&rec)) {
    fs::object dir = resolve(r->dir);
    if (ec) return fs::object_gone(ec) ? std::error_code{} : ec;
    give_back_space(dir.fd(), r->name.c_str(), made);
    return remove_created(dir.fd(), r->name.c_str());
  }
  if (const auto* r = std::get_if<rec_removed>(&rec)) {
    fs::object dir = resolve(r->dir);
    if (ec) return fs::object_gone(ec) ? std::error_code{} : ec;
    // EEXIST: the removal never happened; ENOENT: the grave is gone (already restored).
    if (::linkat(state_fd, r->grave.c_str(), dir.fd(), r->name.c_str(), 0) == 0 ||
        errno == EEXIST || errno == ENOENT)
      return {};
    return last_error();
  }
  if (const auto* r = std::get_if<rec_rmdir>(&rec)) {
    fs::object dir = resolve(r->dir);
    if (ec) return fs::object_gone(ec) ? std::error_code{} : ec;
    if (::mkdirat(dir.fd(), r->name.c_str(), 0700) != 0)
      return errno == EEXIST ? std::error_code{} : last_error();  // EEXIST: never removed
    fs::object made = fs::lookup(dir, r->name, ec);
    if (!ec) fs::setattr(made, restore_args(r->attrs, false), ec);
    if (!ec) remade[r->fh] = std::move(made);
    return ec;
  }
  if (const auto* r = std::get_if<rec_renamed>(&rec)) {
    fs::object from = resolve(r->from_dir);
    if (ec) return fs::object_gone(ec) ? std::error_code{} : ec;
    fs::object to = resolve(r->to_dir);
    if (ec) return fs::object_gone(ec) ? std::error_code{} : ec;
    // ENOENT or EEXIST: the rename never happened.
    if (::renameat2(to.fd(), r->to_name.c_str(), from.fd(), r->from_name.c_str(), RENAME_NOREPLACE) == 0 ||
        errno == ENOENT || errno == EEXIST)
      return {};
    return last_error();
  }
  return {};  // rec_begin, rec_commit
}

}  // namespace

std::error_code copy_bytes(int src, std::uint64_t src_offset, int dst, std::uint64_t dst_offset,
                           std::uint64_t length) {
  auto so = static_cast<off_t>(src_offset), d = static_cast<off_t>(dst_offset);
  bool plain = false;
  while (length > 0) {
    ssize_t n;
    if (!plain) {
      n = ::copy_file_range(src, &so, dst, &d, length, 0);
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)) {
        plain = true;
        continue;
      }
    } else {
      std::array<std::byte, 65536> buf;
      n = ::pread(src, buf.data(), std::min<std::uint64_t>(length, buf.size()), so);
      if (n > 0) {
        for (ssize_t w = 0; w < n;) {
          ssize_t m = ::pwrite(dst, buf.data() + w, static_cast<std::size_t>(n - w), d + w);
          if (m < 0 && errno == EINTR) continue;
          if (m <= 0) return last_error();
          w += m;
        }
        so += n;
        d += n;
      }
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return last_error();
    if (n == 0) break;  // end of src
    length -= static_cast<std::uint64_t>(n);
  }
  return {};
}

std::error_code undo(const fs::export_root& exp, int state_fd, int data_fd,
                     const std::vector<record>& records, const made_objects& made) {
  fs::scoped_fs_root as_root;
  remade_dirs remade;
  for (auto it = records.rbegin(); it != records.rend(); ++it)
    if (std::error_code ec = undo_one(exp, state_fd, data_fd, *it, made, remade)) return ec;
  return {};
}

}  // namespace vnfs::server::txn
