#include "server/fs/export_root.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "server/fs/detail.hpp"
#include "server/fs/identity.hpp"

namespace vnfs::server::fs {
namespace {

constexpr std::uint8_t fh_version = 1;
constexpr std::size_t fh_header = 6;  // version, length, 4-byte handle type
constexpr std::size_t max_kernel_handle = export_root::max_fh_size - fh_header - export_root::mac_size;

// A struct file_handle with room for the largest handle the kernel makes.
struct handle_buffer {
  alignas(struct file_handle) unsigned char storage[sizeof(struct file_handle) + MAX_HANDLE_SZ];
  struct file_handle* get() noexcept { return reinterpret_cast<struct file_handle*>(storage); }
};

[[noreturn]] void fail(int e, const std::filesystem::path& dir, const std::string& what) {
  throw std::system_error(e, std::system_category(), "export " + dir.string() + ": " + what);
}

void compute_mac(const std::array<unsigned char, export_root::key_size>& key,
                 const std::byte* data, std::size_t len, unsigned char* out) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(data), len, md, &md_len) ||
      md_len < export_root::mac_size)
    throw std::runtime_error("HMAC-SHA256 failed");
  std::memcpy(out, md, export_root::mac_size);
}

void load_or_create_key(int dirfd, const std::filesystem::path& dir,
                        std::array<unsigned char, export_root::key_size>& key) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    ssize_t n = ::fgetxattr(dirfd, export_root::key_xattr, key.data(), key.size());
    if (n == static_cast<ssize_t>(key.size())) return;
    if (n >= 0 || errno == ERANGE)
      fail(EINVAL, dir,
           std::string("corrupt filehandle key in xattr ") + export_root::key_xattr +
               " (expected 32 bytes; remove it to start over, invalidating all handles)");
    if (errno == ENOTSUP || errno == EPERM)
      fail(errno, dir,
           std::string("the file system refuses the extended attribute ") + export_root::key_xattr +
               " (vnfsd needs trusted.* xattrs, i.e. CAP_SYS_ADMIN and xattr support, to "
               "keep filehandles stable)");
    if (errno != ENODATA) fail(errno, dir, std::string("reading xattr ") + export_root::key_xattr);

    std::size_t got = 0;
    while (got < key.size()) {
      ssize_t r = ::getrandom(key.data() + got, key.size() - got, 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        fail(errno, dir, "getrandom");
      }
      got += static_cast<std::size_t>(r);
    }
    if (::fsetxattr(dirfd, export_root::key_xattr, key.data(), key.size(), XATTR_CREATE) == 0)
      return;
    if (errno == EEXIST) continue;  // another instance created it first: use theirs
    if (errno == ENOTSUP || errno == EPERM)
      fail(errno, dir,
           std::string("the file system refuses the extended attribute ") + export_root::key_xattr +
               " (vnfsd needs trusted.* xattrs, i.e. CAP_SYS_ADMIN and xattr support, to "
               "keep filehandles stable)");
    fail(errno, dir, std::string("writing xattr ") + export_root::key_xattr);
  }
  fail(EAGAIN, dir, "could not settle the filehandle key");
}

// The path the kernel reports for a descriptor ("/proc/self/fd/N" -> d_path).
bool fd_path(int fd, std::string& out) {
  char buf[PATH_MAX + 1];
  ssize_t n = ::readlink(detail::proc_path(fd).c_str(), buf, sizeof buf);
  if (n < 0 || static_cast<std::size_t>(n) >= sizeof buf) return false;
  out.assign(buf, static_cast<std::size_t>(n));
  return true;
}

}  // namespace

bool export_root::contains_directory(int fd) const {
  // Directories are always connected to their parents, so the kernel's path of one is
  // exact; both paths are taken now, so a renamed export root is no problem.
  std::string root, dir;
  if (!fd_path(root_.fd(), root) || !fd_path(fd, dir)) return false;
  if (root == "/") return dir.starts_with("/");
  return dir == root || (dir.starts_with(root) && dir.size() > root.size() && dir[root.size()] == '/');
}

export_root::export_root(const std::filesystem::path& dir) : path_(dir) {
  unique_fd rd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!rd) fail(errno, dir, "cannot open directory");
  load_or_create_key(rd.get(), dir, key_);

  unique_fd pfd(::openat(rd.get(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!pfd) fail(errno, dir, "open O_PATH");
  struct statx st {};
  if (int e = detail::statx_fd(pfd.get(), STATX_TYPE | STATX_INO, st)) fail(e, dir, "statx");
  root_ino_ = st.stx_ino;
  root_dev_major_ = st.stx_dev_major;
  root_dev_minor_ = st.stx_dev_minor;

  handle_buffer hb;
  hb.get()->handle_bytes = MAX_HANDLE_SZ;
  if (::name_to_handle_at(pfd.get(), "", hb.get(), &mount_id_, AT_EMPTY_PATH) != 0)
    fail(errno, dir, "the file system cannot make persistent file handles (name_to_handle_at)");
  root_ = object(std::move(pfd), file_type::directory);
  mount_fd_ = std::move(rd);
}

std::vector<std::byte> export_root::fh_of(const object& obj, std::error_code& ec) const {
  handle_buffer hb;
  hb.get()->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = -1;
  if (::name_to_handle_at(obj.fd(), "", hb.get(), &mount_id, AT_EMPTY_PATH) != 0) {
    ec = detail::last_error();
    return {};
  }
  if (mount_id != mount_id_) {
    ec = sys_error(EXDEV);
    return {};
  }
  const std::size_t n = hb.get()->handle_bytes;
  if (n > max_kernel_handle) {
    ec = sys_error(EOVERFLOW);
    return {};
  }
  std::vector<std::byte> fh(fh_header + n + mac_size);
  const auto type = static_cast<std::uint32_t>(hb.get()->handle_type);
  fh[0] = std::byte{fh_version};
  fh[1] = std::byte(n);
  fh[2] = std::byte(type >> 24);
  fh[3] = std::byte(type >> 16);
  fh[4] = std::byte(type >> 8);
  fh[5] = std::byte(type);
  std::memcpy(fh.data() + fh_header, hb.get()->f_handle, n);
  compute_mac(key_, fh.data(), fh_header + n,
              reinterpret_cast<unsigned char*>(fh.data() + fh_header + n));
  ec.clear();
  return fh;
}

object export_root::resolve(std::span<const std::byte> fh, std::error_code& ec) const {
  if (fh.size() < fh_header + mac_size || fh.size() > max_fh_size ||
      fh[0] != std::byte{fh_version} ||
      fh.size() != fh_header + std::to_integer<std::size_t>(fh[1]) + mac_size) {
    ec = errc::bad_handle;
    return {};
  }
  const std::size_t n = std::to_integer<std::size_t>(fh[1]);
  unsigned char mac[mac_size];
  compute_mac(key_, fh.data(), fh_header + n, mac);
  if (CRYPTO_memcmp(mac, fh.data() + fh_header + n, mac_size) != 0) {
    ec = errc::bad_handle;
    return {};
  }

  handle_buffer hb;
  hb.get()->handle_bytes = static_cast<unsigned>(n);
  hb.get()->handle_type = static_cast<int>((std::to_integer<std::uint32_t>(fh[2]) << 24) |
                                           (std::to_integer<std::uint32_t>(fh[3]) << 16) |
                                           (std::to_integer<std::uint32_t>(fh[4]) << 8) |
                                           std::to_integer<std::uint32_t>(fh[5]));
  std::memcpy(hb.get()->f_handle, fh.data() + fh_header, n);

  unique_fd fd;
  int e = 0;
  {
    scoped_fs_root as_root;
    // ext4 answers ENOMEM, not ESTALE, for an inode that the last close of a removed file
    // is evicting at this moment (measured: ~1 in 200 resolutions right after such a
    // close). Eviction ends within microseconds, so wait briefly and ask again; if it
    // still says ENOMEM the client is told to retry (NFS4ERR_DELAY), not that I/O failed.
    for (int attempt = 1;; ++attempt) {
      fd.reset(::open_by_handle_at(mount_fd_.get(), hb.get(), O_PATH | O_CLOEXEC));
      if (fd || errno != ENOMEM) break;
      if (attempt == 8) {
        errno = EAGAIN;
        break;
      }
      ::usleep(static_cast<useconds_t>(20 * attempt));
    }
    e = errno;
  }
  if (!fd) {
    ec = sys_error(e == ENOENT ? ESTALE : e);
    return {};
  }
  struct statx st {};
  if (int e = detail::statx_fd(fd.get(), STATX_TYPE | STATX_NLINK, st)) {
    ec = sys_error(e);
    return {};
  }
  // A removed file that something still holds open is still reachable by handle; for
  // NFS it is gone.
  if (st.stx_nlink == 0) {
    ec = sys_error(ESTALE);
    return {};
  }
  const file_type type = file_type_of(st.stx_mode);
  if (type == file_type::directory && !contains_directory(fd.get())) {
    ec = sys_error(ESTALE);
    return {};
  }
  ec.clear();
  return object(std::move(fd), type);
}

bool export_root::is_root(const object& obj) const noexcept {
  struct statx st {};
  if (detail::statx_fd(obj.fd(), STATX_INO, st) != 0) return false;
  return st.stx_ino == root_ino_ && st.stx_dev_major == root_dev_major_ &&
         st.stx_dev_minor == root_dev_minor_;
}

object export_root::parent(const object& dir, std::error_code& ec) const {
  if (!dir.is_directory()) {
    ec = sys_error(ENOTDIR);
    return {};
  }
  if (is_root(dir)) {
    ec = sys_error(ENOENT);
    return {};
  }
  unique_fd fd(::openat(dir.fd(), "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    ec = detail::last_error();
    return {};
  }
  ec.clear();
  return object(std::move(fd), file_type::directory);
}

fs_stats export_root::statfs(std::error_code& ec) const {
  struct statvfs sv {};
  if (::fstatvfs(root_.fd(), &sv) != 0) {
    ec = detail::last_error();
    return {};
  }
  ec.clear();
  fs_stats s;
  const std::uint64_t unit = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
  s.bytes_total = std::uint64_t(sv.f_blocks) * unit;
  s.bytes_free = std::uint64_t(sv.f_bfree) * unit;
  s.bytes_avail = std::uint64_t(sv.f_bavail) * unit;
  s.files_total = sv.f_files;
  s.files_free = sv.f_ffree;
  s.files_avail = sv.f_favail;
  s.name_max = static_cast<std::uint32_t>(sv.f_namemax);
  return s;
}

}  // namespace vnfs::server::fs
