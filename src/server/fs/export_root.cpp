#include "server/fs/export_root.hpp"

#include <ctime>

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
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

/// The largest number of filehandles whose objects the export keeps open (handle_cache);
/// the server lets go of those not used lately through export_root::sweep_handles().
constexpr std::size_t handle_cache_capacity = 1024;

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

/// export_root::max_file_size(): the largest size an unnamed file in `dirfd` can be cut to.
/// Never asks past RLIMIT_FSIZE (which would raise SIGXFSZ).
std::uint64_t largest_file_size(int dirfd) {
  std::uint64_t bound = static_cast<std::uint64_t>(LLONG_MAX);
  if (struct ::rlimit rl {}; ::getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    bound = std::min<std::uint64_t>(bound, rl.rlim_cur);
  const unique_fd probe(::openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!probe) return bound;
  const auto fits = [&](std::uint64_t size) {
    int r;
    do r = ::ftruncate(probe.get(), static_cast<off_t>(size));
    while (r != 0 && errno == EINTR);
    return r == 0;
  };
  if (fits(bound)) return bound;
  std::uint64_t lo = 0, hi = bound;  // lo fits, hi does not
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

/// HMAC-SHA256 under the export's key, keyed once: each MAC starts from a copy of the keyed
/// context instead of fetching the algorithm and setting the key again.
class export_root::mac_context {
 public:
  explicit mac_context(const std::array<unsigned char, key_size>& key) {
    mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    keyed_ = mac_ ? EVP_MAC_CTX_new(mac_) : nullptr;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_END};
    if (!keyed_ || EVP_MAC_init(keyed_, key.data(), key.size(), params) != 1) {
      release();
      throw std::runtime_error("HMAC-SHA256 is not available");
    }
  }
  ~mac_context() { release(); }
  mac_context(const mac_context&) = delete;
  mac_context& operator=(const mac_context&) = delete;

  /// The first mac_size bytes of HMAC-SHA256(key, data) into `out`. Thread-safe: the keyed
  /// context is only read (copied).
  void compute(const std::byte* data, std::size_t len, unsigned char* out) const {
    EVP_MAC_CTX* c = EVP_MAC_CTX_dup(keyed_);
    unsigned char md[EVP_MAX_MD_SIZE];
    std::size_t md_len = 0;
    const bool ok = c && EVP_MAC_update(c, reinterpret_cast<const unsigned char*>(data), len) == 1 &&
                    EVP_MAC_final(c, md, &md_len, sizeof md) == 1 && md_len >= mac_size;
    EVP_MAC_CTX_free(c);
    if (!ok) throw std::runtime_error("HMAC-SHA256 failed");
    std::memcpy(out, md, mac_size);
  }

 private:
  void release() noexcept {
    EVP_MAC_CTX_free(keyed_);
    EVP_MAC_free(mac_);
    keyed_ = nullptr;
    mac_ = nullptr;
  }
  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* keyed_ = nullptr;
};

export_root::~export_root() = default;
export_root::export_root(export_root&&) noexcept = default;
export_root& export_root::operator=(export_root&&) noexcept = default;

void export_root::sweep_handles() const { handles_->sweep(); }

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
  root_ = object(std::move(pfd), file_type::directory, detail::inode_of(st));
  max_file_size_ = largest_file_size(rd.get());
  mount_fd_ = std::move(rd);
  mac_ = std::make_unique<mac_context>(key_);
  handles_ = std::make_unique<handle_cache>(handle_cache_capacity);
}

std::vector<std::byte> export_root::fh_of(const object& obj, std::error_code& ec) const {
  // The key's context names this export's handles (it stays put when the export_root moves).
  if (std::vector<std::byte> known = obj.remembered_handle(mac_.get()); !known.empty()) {
    ec.clear();
    return known;
  }
  handle_buffer hb;
  hb.get()->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = -1;
  if (::name_to_handle_at(obj.fd(), "", hb.get(), &mount_id, AT_EMPTY_PATH) != 0) {
    ec = last_error();
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
  mac_->compute(fh.data(), fh_header + n, reinterpret_cast<unsigned char*>(fh.data() + fh_header + n));
  obj.remember_handle(mac_.get(), fh);
  ec.clear();
  return fh;
}

object export_root::resolve(std::span<const std::byte> fh, std::error_code& ec) const {
  std::optional<inode_status> unused;
  return resolve(fh, ec, unused);
}

object export_root::resolve(std::span<const std::byte> fh, std::error_code& ec,
                            std::optional<inode_status>& status) const {
  status.reset();
  if (fh.size() < fh_header + mac_size || fh.size() > max_fh_size ||
      fh[0] != std::byte{fh_version} ||
      fh.size() != fh_header + std::to_integer<std::size_t>(fh[1]) + mac_size) {
    ec = errc::bad_handle;
    return {};
  }
  // Bytes equal to those of a handle minted or verified before need no MAC.
  std::optional<object> kept = handles_->find(fh);
  unique_fd fd;
  if (!kept) {
    fd = open_handle(fh, ec);
    if (!fd) return {};
  }
  const int at = kept ? kept->fd() : fd.get();
  timespec before{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &before);
  struct statx st {};
  if (int e = detail::statx_fd(at, STATX_BASIC_STATS | STATX_BTIME, st)) {
    ec = sys_error(e);
    return {};
  }
  // A removed file that something still holds open (the cache, an open of a client) is
  // still reachable by handle; for NFS it is gone.
  const file_type type = file_type_of(st.stx_mode);
  if (st.stx_nlink == 0 || (type == file_type::directory && !contains_directory(at))) {
    if (kept) handles_->erase(fh);
    ec = sys_error(ESTALE);
    return {};
  }
  ec.clear();
  status.emplace();
  status->attrs = attributes_of(st);
  status->ctime_settled = (st.stx_mask & STATX_CTIME) != 0 &&
                          status->attrs.ctime < timestamp{before.tv_sec, static_cast<std::uint32_t>(before.tv_nsec)};
  if (kept) return std::move(*kept);
  const inode_id id = detail::inode_of(st);
  object obj(std::move(fd), type, id);
  obj.remember_handle(mac_.get(), fh);  // verified: the handle fh_of makes for this inode
  handles_->insert(fh, obj, id.dev, id.ino);
  return obj;
}

export_root::name_release export_root::before_unlinking(const object& dir, std::string_view name) const {
  struct statx st {};
  const std::string n(name);
  if (::statx(dir.fd(), n.c_str(), AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, STATX_INO, &st) != 0) return {};
  const inode_id id = detail::inode_of(st);
  name_release r;
  r.dev = id.dev;
  r.ino = id.ino;
  r.valid = true;
  return r;
}

void export_root::after_unlinking(const name_release& r) const {
  if (r.valid) handles_->erase_inode(r.dev, r.ino);
}

unique_fd export_root::open_handle(std::span<const std::byte> fh, std::error_code& ec) const {
  const std::size_t n = std::to_integer<std::size_t>(fh[1]);
  unsigned char mac[mac_size];
  mac_->compute(fh.data(), fh_header + n, mac);
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
  if (!fd) ec = sys_error(e == ENOENT ? ESTALE : e);
  return fd;
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
    ec = last_error();
    return {};
  }
  ec.clear();
  return object(std::move(fd), file_type::directory);
}

fs_stats export_root::statfs(std::error_code& ec) const {
  struct statvfs sv {};
  if (::fstatvfs(root_.fd(), &sv) != 0) {
    ec = last_error();
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
