// vnfs client: the file:// backend (see local_backend.hpp for the contract).
#include "client/local/local_backend.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "client/local/worker_pool.hpp"
#include "client/memory/registration.hpp"
#include "client/path.hpp"
#include "client/vector/attr_mask.hpp"
#include "client/vector/item_runner.hpp"

namespace vnfs::detail {
namespace {

std::error_code sys_error(int e) { return {e, std::system_category()}; }
std::error_code last_error() { return sys_error(errno); }

class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~unique_fd() { reset(); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

file_type type_of(mode_t m) {
  switch (m & S_IFMT) {
    case S_IFREG: return file_type::regular;
    case S_IFDIR: return file_type::directory;
    case S_IFLNK: return file_type::symlink;
    case S_IFBLK: return file_type::block;
    case S_IFCHR: return file_type::character;
    case S_IFIFO: return file_type::fifo;
    case S_IFSOCK: return file_type::socket;
    default: return file_type::unknown;
  }
}

file_stat to_file_stat(const struct stat& st) {
  file_stat s;
  s.type = type_of(st.st_mode);
  s.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  s.nlink = static_cast<std::uint32_t>(st.st_nlink);
  s.uid = st.st_uid;
  s.gid = st.st_gid;
  s.size = static_cast<std::uint64_t>(st.st_size);
  s.space_used = static_cast<std::uint64_t>(st.st_blocks) * 512;
  s.fileid = st.st_ino;
  s.change = static_cast<std::uint64_t>(st.st_ctim.tv_sec) * 1'000'000'000u +
             static_cast<std::uint64_t>(st.st_ctim.tv_nsec);
  s.atime = st.st_atim;
  s.mtime = st.st_mtim;
  s.ctime = st.st_ctim;
  return s;
}

// Open files are refused for these types, with the errno the nfs backend's statuses map to
// (NFS4ERR_ISDIR, NFS4ERR_SYMLINK; NFS4ERR_WRONG_TYPE has no errno: EINVAL).
std::error_code open_type_error(mode_t m) {
  if (S_ISREG(m)) return {};
  if (S_ISDIR(m)) return sys_error(EISDIR);
  if (S_ISLNK(m)) return sys_error(ELOOP);
  return sys_error(EINVAL);
}

// dirname / basename of a valid path, without copying: the name is the path's own tail (so
// NUL-terminated, for the *at() calls); the root ("") is "." in itself.
struct parent_and_name {
  std::string_view dir;
  const char* name;
};
parent_and_name split(const std::string& p) {
  if (p.empty()) return {"", "."};
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return {"", p.c_str()};
  return {std::string_view(p).substr(0, slash), p.c_str() + slash + 1};
}

std::atomic<bool> force_walk{false};

int openat2_beneath(int root, const char* path, std::uint64_t flags) {
  open_how how{};
  how.flags = flags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root, path, &how, sizeof how));
}

// Whether openat2 works here: probed once, on an O_PATH open of the root, since an ENOSYS
// (kernel before 5.6) or EPERM (a seccomp filter) from a real call could not be told apart
// from the errors of the file itself.
bool have_openat2(int root) {
  static const bool have = [root] {
    unique_fd fd(openat2_beneath(root, ".", O_PATH | O_CLOEXEC));
    return fd || (errno != ENOSYS && errno != EPERM);
  }();
  return have;
}

// Opens `path` (valid, relative) beneath `root` without following any symlink on the way or at
// its end: ELOOP for a symlink component, ENOTDIR for a non-directory one.
unique_fd open_beneath(int root, const std::string& path, int flags, std::error_code& ec) {
  const std::string rel = path.empty() ? std::string(".") : path;
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if (!force_walk.load(std::memory_order_relaxed) && have_openat2(root)) {
    int fd = -1;
    // EAGAIN: a concurrent rename somewhere in the file system; the kernel asks to retry.
    for (int round = 0; round < 64; ++round) {
      fd = openat2_beneath(root, rel.c_str(), static_cast<std::uint64_t>(flags));
      if (fd >= 0 || (errno != EAGAIN && errno != EINTR)) break;
    }
    if (fd >= 0) return unique_fd(fd);
    ec = last_error();
    if (errno == ENOTDIR && (flags & O_DIRECTORY)) {
      // O_DIRECTORY is checked before O_NOFOLLOW: a trailing symlink is ENOTDIR. Say ELOOP,
      // as for a symlink anywhere else in the path.
      unique_fd lfd(openat2_beneath(root, rel.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      struct stat st {};
      if (lfd && ::fstat(lfd.get(), &st) == 0 && S_ISLNK(st.st_mode)) ec = sys_error(ELOOP);
    }
    return {};
  }
  // The portable walk: every component opened O_PATH|O_NOFOLLOW and checked, the last one
  // too, so a symlink is ELOOP wherever it is (as with RESOLVE_NO_SYMLINKS).
  unique_fd cur;
  int at = root;
  std::size_t start = 0;
  while (true) {
    std::size_t end = rel.find('/', start);
    const bool last = end == std::string::npos;
    const std::string comp = rel.substr(start, last ? end : end - start);
    unique_fd next(::openat(at, comp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      ec = last_error();
      return {};
    }
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) {
      ec = last_error();
      return {};
    }
    if (S_ISLNK(st.st_mode)) {
      ec = sys_error(ELOOP);
      return {};
    }
    if (!S_ISDIR(st.st_mode) && (!last || (flags & O_DIRECTORY))) {
      ec = sys_error(ENOTDIR);
      return {};
    }
    if (last) {
      if (flags & O_PATH) return next;
      // Replaced by a symlink since the check: O_NOFOLLOW still refuses it.
      unique_fd fd(::openat(at, comp.c_str(), flags));
      if (!fd) ec = last_error();
      return fd;
    }
    cur = std::move(next);
    at = cur.get();
    start = end + 1;
  }
}

// fchmodat(2) with AT_SYMLINK_NOFOLLOW: the fchmodat2 system call (Linux 6.6) where the
// kernel has it, one call; else glibc's emulation (an O_PATH open and a chmod through
// /proc). A symlink is refused (EOPNOTSUPP) either way: its mode is never changed and it
// is never followed.
int chmod_nofollow(int dirfd, const char* name, mode_t mode) {
#ifdef __linux__
  constexpr long sys_fchmodat2 = 452;  // the same number on every Linux architecture
  static std::atomic<bool> missing{false};
  if (!missing.load(std::memory_order_relaxed)) {
    long r = ::syscall(sys_fchmodat2, dirfd, name, mode, AT_SYMLINK_NOFOLLOW);
    if (r == 0 || errno != ENOSYS) return static_cast<int>(r);
    missing.store(true, std::memory_order_relaxed);
  }
#endif
  return ::fchmodat(dirfd, name, mode, AT_SYMLINK_NOFOLLOW);
}

// Gives a just-made directory exactly `perm` (mkdirat applied the umask), as vnfsd does.
// A set-gid bit inherited from the parent stays.
std::error_code set_exact_dir_mode(int dirfd, const char* name, std::uint32_t perm) {
  struct stat st {};
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return last_error();
  if (!S_ISDIR(st.st_mode)) return sys_error(ENOTDIR);  // replaced meanwhile
  mode_t want = static_cast<mode_t>(perm & 07777) | (st.st_mode & S_ISGID);
  if ((st.st_mode & 07777) == want) return {};
  if (chmod_nofollow(dirfd, name, want) != 0) return last_error();
  return {};
}

// The directories the paths of one call (a scalar call, or every item of a vectorized one)
// live in: each resolved once, by open_beneath from the root (so no symlink and no ".." is
// ever followed), and kept as an O_PATH descriptor that the call's *at() calls name their
// last components in. It lives for one call only, on one worker: a directory renamed by
// the call itself is forgotten (forget_all), one renamed by someone else meanwhile is seen
// as it was when the call first used it, as with a descriptor a POSIX program holds.
class dir_cache {
 public:
  explicit dir_cache(int root) : root_(root) {}

  // The descriptor of directory `dir` (a valid path; "" is the root), or -1 with `ec`:
  // ELOOP for a symlink on the way, ENOTDIR for a non-directory, ENOENT, ...
  int get(std::string_view dir, std::error_code& ec) {
    if (dir.empty()) return root_;
    if (auto it = dirs_.find(dir); it != dirs_.end()) return it->second.get();
    std::string key(dir);
    unique_fd fd = open_beneath(root_, key, O_PATH | O_DIRECTORY, ec);
    if (ec) return -1;
    if (dirs_.size() >= max_dirs) dirs_.clear();
    return dirs_.emplace(std::move(key), std::move(fd)).first->second.get();
  }
  void forget_all() { dirs_.clear(); }

 private:
  static constexpr std::size_t max_dirs = 256;  // descriptors held at once
  int root_;
  // Looked up by string_view, without making a key string.
  struct key_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const noexcept { return std::hash<std::string_view>{}(k); }
  };
  std::unordered_map<std::string, unique_fd, key_hash, std::equal_to<>> dirs_;
};

struct local_file;

// The open files of one backend, so close_all can release their descriptors. Shared with the
// files, which may outlive the backend.
struct file_table {
  std::mutex mutex;
  std::unordered_set<local_file*> files;
  bool closed = false;
};

struct local_file final : open_file {
  std::shared_ptr<file_table> table;
  // I/O holds it shared while it uses fd; close holds it exclusively, so a descriptor is
  // never closed (and its number reused) under a pread in flight.
  std::shared_mutex mutex;
  int fd = -1;

  ~local_file() override {
    {
      std::lock_guard lock(table->mutex);
      table->files.erase(this);
    }
    if (fd >= 0) ::close(fd);
  }
};

// The backend whose call the current thread is running (to let close_all be called from a
// done callback without waiting for itself).
thread_local const backend* running_on_worker = nullptr;

constexpr int open_flags_allowed = O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND;
// Harmless flags callers pass out of habit: accepted and ignored.
constexpr int open_flags_ignored = O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_LARGEFILE;

class local_backend final : public backend {
 public:
  local_backend(unique_fd root, const client_options& options)
      : root_(std::move(root)),
        pool_(options.local_threads),
        files_(std::make_shared<file_table>()),
        registrations_(registration_table::create(options.max_registered_bytes)) {}

  ~local_backend() override {
    close_all();
    pool_.join();
  }

  // ---- the scalar calls: one worker hand-off each

  void open(const std::string& path, int flags, std::uint32_t mode, file* out, done_fn done) override {
    submit(std::move(done), [this, path, flags, mode, out]() -> result {
      dir_cache dirs(root_.get());
      return {open_item(dirs, path, flags, mode, *out), 0};
    });
  }

  void close(const file& f, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f)]() -> result { return {close_item(st), 0}; });
  }

  void read(const file& f, std::uint64_t offset, read_target dst, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f), offset, dst]() -> result {
      if (auto ec = check(dst.registered, access::read)) return {ec, 0};
      std::size_t got = 0;
      auto ec = with_fd(st, [&](int fd) { return read_at(fd, dst.bytes(), offset, got); });
      return {ec, ec ? 0 : got};
    });
  }

  void write(const file& f, std::uint64_t offset, write_source src, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f), offset, src]() -> result {
      if (auto ec = check(src.registered, access::write)) return {ec, 0};
      std::size_t put = 0;
      auto ec = with_fd(st, [&](int fd) { return write_at(fd, src.bytes(), offset, put); });
      return {ec, ec ? 0 : put};
    });
  }

  void fsync(const file& f, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f)]() -> result {
      return {with_fd(st, [](int fd) { return ::fsync(fd) == 0 ? std::error_code() : last_error(); }), 0};
    });
  }

  void stat(const std::string& path, file_stat* out, done_fn done) override {
    submit(std::move(done), [this, path, out]() -> result {
      dir_cache dirs(root_.get());
      return {stat_item(dirs, path, *out), 0};
    });
  }

  void fstat(const file& f, file_stat* out, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f), out]() -> result { return {fstat_item(st, *out), 0}; });
  }

  void truncate(const std::string& path, std::uint64_t size, done_fn done) override {
    submit(std::move(done), [this, path, size]() -> result {
      if (!is_normal_path(path)) return {sys_error(EINVAL), 0};
      std::error_code ec;
      // O_NONBLOCK: a FIFO put in the file's place must not block the worker.
      unique_fd fd = open_beneath(root_.get(), path, O_WRONLY | O_NONBLOCK, ec);
      if (ec) return {ec, 0};
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0) return {last_error(), 0};
      if (auto e = open_type_error(st.st_mode)) return {e, 0};
      if (size > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) return {sys_error(EFBIG), 0};
      if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return {last_error(), 0};
      return {};
    });
  }

  void setattr(const std::string& path, unsigned mask, const file_stat& v, done_fn done) override {
    submit(std::move(done), [this, path, mask, v]() -> result {
      dir_cache dirs(root_.get());
      return {setattr_item(dirs, path, mask, v), 0};
    });
  }

  void mkdir(const std::string& path, std::uint32_t mode, done_fn done) override {
    submit(std::move(done), [this, path, mode]() -> result {
      dir_cache dirs(root_.get());
      return {mkdir_item(dirs, path, mode), 0};
    });
  }

  void unlink(const std::string& path, done_fn done) override {
    submit(std::move(done), [this, path]() -> result {
      dir_cache dirs(root_.get());
      return {at_parent(dirs, path, [](int dirfd, const char* name) -> std::error_code {
                if (::unlinkat(dirfd, name, 0) != 0) return last_error();
                return {};
              }),
              0};
    });
  }

  void rmdir(const std::string& path, done_fn done) override {
    submit(std::move(done), [this, path]() -> result {
      dir_cache dirs(root_.get());
      return {at_parent(dirs, path, [](int dirfd, const char* name) -> std::error_code {
                if (::unlinkat(dirfd, name, AT_REMOVEDIR) != 0) return last_error();
                return {};
              }),
              0};
    });
  }

  void rename(const std::string& from, const std::string& to, done_fn done) override {
    submit(std::move(done), [this, from, to]() -> result {
      dir_cache dirs(root_.get());
      return {rename_item(dirs, from, to), 0};
    });
  }

  void link(const std::string& existing, const std::string& new_path, done_fn done) override {
    submit(std::move(done), [this, existing, new_path]() -> result {
      dir_cache dirs(root_.get());
      return {link_item(dirs, existing, new_path), 0};
    });
  }

  void symlink(const std::string& target, const std::string& link_path, done_fn done) override {
    submit(std::move(done), [this, target, link_path]() -> result {
      dir_cache dirs(root_.get());
      return {symlink_item(dirs, target, link_path), 0};
    });
  }

  void readlink(const std::string& path, std::string* out, done_fn done) override {
    submit(std::move(done), [this, path, out]() -> result {
      dir_cache dirs(root_.get());
      return {readlink_item(dirs, path, *out), 0};
    });
  }

  void readdir(dir_stream* d, done_fn done) override {
    submit(std::move(done), [this, d]() -> result { return {do_readdir(*d), 0}; });
  }

  // ---- the vectorized calls: every item of a call on one worker, in one hand-off, with the
  // same POSIX calls and results as the scalar calls above made item by item (the default
  // vectorized calls of backend.hpp), the call's directories resolved once (dir_cache).

  void vopen(std::span<vopen_item> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done), [this, items](std::size_t i, dir_cache& dirs) {
      return open_item(dirs, items[i].path, items[i].flags, items[i].mode, items[i].result);
    });
  }

  void vclose(std::span<const file> files, vresult* out, done_fn done) override {
    run_items(files.size(), out, std::move(done), [this, files](std::size_t i, dir_cache&) {
      return close_item(internals::state_of(files[i]));
    });
  }

  void vread(std::span<vio> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done),
              [this, items](std::size_t i, dir_cache& dirs) { return io_item(dirs, items[i], false); });
  }

  void vwrite(std::span<vio> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done), [this, items](std::size_t i, dir_cache& dirs) {
      vio& v = items[i];
      std::error_code ec = io_item(dirs, v, true);
      if (ec || !v.attrs_after) return ec;
      return setattr_item(dirs, path_of(v.file), v.attrs_after, v.attrs);
    });
  }

  void vgetattrs(std::span<vattr> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done), [this, items](std::size_t i, dir_cache& dirs) {
      vattr& a = items[i];
      file_stat st;
      std::error_code ec;
      if (const file* f = a.file.descriptor()) {
        ec = fstat_item(internals::state_of(*f), st);
      } else {
        std::string path = a.file.path() ? *a.file.path() : handle_path(*a.file.handle());
        if (a.mask & attr::handle) {
          auto b = reinterpret_cast<const std::byte*>(path.data());
          a.handle.bytes.assign(b, b + path.size());
        }
        ec = stat_item(dirs, path, st);
      }
      if (!ec) copy_masked(st, a.mask, a.stat);
      return ec;
    });
  }

  void vsetattrs(std::span<const vattr> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done), [this, items](std::size_t i, dir_cache& dirs) {
      const vattr& a = items[i];
      return setattr_item(dirs, path_of(a.file), a.mask, a.stat);
    });
  }

  void vmkdir(std::span<const vmkdir_item> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done),
              [this, items](std::size_t i, dir_cache& dirs) { return mkdir_item(dirs, items[i].path, items[i].mode); });
  }

  void vsymlink(std::span<const vlink> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done), [this, items](std::size_t i, dir_cache& dirs) {
      return symlink_item(dirs, items[i].target, items[i].path);
    });
  }

  void vhardlink(std::span<const vlink> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done), [this, items](std::size_t i, dir_cache& dirs) {
      return link_item(dirs, items[i].target, items[i].path);
    });
  }

  void vreadlink(std::span<const std::string> paths, std::string* targets, vresult* out, done_fn done) override {
    run_items(paths.size(), out, std::move(done), [this, paths, targets](std::size_t i, dir_cache& dirs) {
      return readlink_item(dirs, paths[i], targets[i]);
    });
  }

  // A file or symlink is unlinked; a directory (unlink says EISDIR) is removed as one.
  void vremove(std::span<const std::string> paths, vresult* out, done_fn done) override {
    run_items(paths.size(), out, std::move(done), [this, paths](std::size_t i, dir_cache& dirs) {
      return at_parent(dirs, paths[i], [](int dirfd, const char* name) -> std::error_code {
        if (::unlinkat(dirfd, name, 0) == 0) return {};
        if (errno == EISDIR && ::unlinkat(dirfd, name, AT_REMOVEDIR) == 0) return {};
        return last_error();
      });
    });
  }

  void vrename(std::span<const vrename_item> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done), [this, items](std::size_t i, dir_cache& dirs) {
      auto ec = rename_item(dirs, items[i].from, items[i].to);
      dirs.forget_all();  // a directory may have moved: later items resolve their paths anew
      return ec;
    });
  }

  void vreaddir(std::span<dir_stream* const> streams, unsigned, vresult* out, done_fn done) override {
    run_items(streams.size(), out, std::move(done), [this, streams](std::size_t i, dir_cache&) {
      return streams[i]->eof ? std::error_code() : do_readdir(*streams[i]);
    });
  }

  // The copy is made here, with copy_file_range (the kernel moves the data; on file systems
  // that share blocks, it shares them), as vcopy would make it through the client.
  void vscopy(std::span<vcopy_item> items, vresult* out, done_fn done) override {
    run_items(items.size(), out, std::move(done),
              [this, items](std::size_t i, dir_cache& dirs) { return copy_item(dirs, items[i]); });
  }

  void close_all() override {
    registrations_->close();
    {
      std::unique_lock lock(mutex_);
      closed_ = true;
      closing_.store(true, std::memory_order_relaxed);
      // Called from a done callback, the call that runs it is still in flight: not waited for.
      // (Several callbacks may do so at once: each waits for the calls that are not one.)
      const bool on_worker = running_on_worker == this;
      if (on_worker) ++closing_on_workers_;
      idle_.notify_all();
      idle_.wait(lock, [this] { return in_flight_ <= closing_on_workers_; });
      if (on_worker) --closing_on_workers_;
    }
    // No call runs any more: release the descriptors of the files still open.
    std::lock_guard lock(files_->mutex);
    files_->closed = true;
    for (local_file* f : files_->files) {
      std::unique_lock flock(f->mutex);
      if (f->fd >= 0) ::close(std::exchange(f->fd, -1));
    }
  }

  client_stats stats() const override {
    client_stats s;
    s.payload_bytes_direct = payload_direct_.load(std::memory_order_relaxed);
    return s;
  }

  registration_table& registrations() override { return *registrations_; }

  std::size_t workers_started() const { return pool_.threads_started(); }

 private:
  struct result {
    std::error_code ec;
    std::size_t bytes = 0;
  };

  // Runs `work(closing)` on a worker and reports its result; `closing` says that the call
  // found the backend closed (close_all). Calls accepted before close_all count as in flight
  // until their done returns. Calls after close_all run on a worker too (with closing set),
  // so done never runs inside the caller's stack.
  template <class Work>
  void submit_on_worker(done_fn done, Work work) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        pool_.post([done = std::move(done), work = std::move(work)]() mutable {
          result r = work(true);
          done(r.ec, r.bytes);
        });
        return;
      }
      ++in_flight_;
    }
    pool_.post([this, done = std::move(done), work = std::move(work)]() mutable {
      struct finish {
        local_backend* self;
        ~finish() {
          std::lock_guard lock(self->mutex_);
          --self->in_flight_;
          self->idle_.notify_all();
        }
      } guard{this};
      running_on_worker = this;
      struct unmark {
        ~unmark() { running_on_worker = nullptr; }
      } unmark_guard;
      result r = work(closing_.load(std::memory_order_relaxed));
      done(r.ec, r.bytes);
    });
  }

  // A scalar call: `work()` on a worker, or errc::closed once the backend is closing.
  template <class Work>
  void submit(done_fn done, Work work) {
    submit_on_worker(std::move(done), [work = std::move(work)](bool closing) mutable -> result {
      return closing ? result{make_error_code(errc::closed), 0} : work();
    });
  }

  // A vectorized call: `item(i, dirs)` gives item i's status, for i = 0, 1, ... on one
  // worker, stopping at the first failure (later items stay errc::not_executed); an item
  // that finds the backend closing fails with errc::closed. *out is then finished and done
  // gets out->ok_count.
  template <class Item>
  void run_items(std::size_t n, vresult* out, done_fn done, Item item) {
    submit_on_worker(std::move(done), [this, n, out, item = std::move(item)](bool closing) mutable -> result {
      reset_result(*out, n);
      dir_cache dirs(root_.get());
      for (std::size_t i = 0; i < n; ++i) {
        if (closing || closing_.load(std::memory_order_relaxed)) {
          out->status[i] = make_error_code(errc::closed);
          break;
        }
        out->status[i] = item(i, dirs);
        if (out->status[i]) break;
      }
      finish_result(*out);
      return {out->error, out->ok_count};
    });
  }

  // The state of a file this backend opened, or nullptr (an empty file, another backend's).
  local_file* mine(const std::shared_ptr<open_file>& st) const {
    auto* lf = dynamic_cast<local_file*>(st.get());
    return lf && lf->table == files_ ? lf : nullptr;
  }

  // Runs op(fd) on an open file of this backend, its descriptor held against close; EBADF
  // for another backend's file or a closed one.
  template <class Op>
  std::error_code with_fd(const std::shared_ptr<open_file>& st, Op op) {
    auto* lf = mine(st);
    if (!lf) return sys_error(EBADF);
    std::shared_lock lock(lf->mutex);
    if (lf->fd < 0) return sys_error(EBADF);
    return op(lf->fd);
  }

  // A registered slice must still be registered and allow the transfer's direction.
  static std::error_code check(const memory_slice& s, access a) {
    if (!s.data()) return {};
    const auto& r = internals::registration_of(s);
    if (!r || !r->valid() || !r->allows(a)) return make_error_code(errc::bad_argument);
    return {};
  }

  // Reads into all of `b` from `offset` until it is full or the file ends; `got` bytes.
  std::error_code read_at(int fd, std::span<std::byte> b, std::uint64_t offset, std::size_t& got) {
    got = 0;
    while (got < b.size()) {
      ssize_t n = ::pread(fd, b.data() + got, b.size() - got, static_cast<off_t>(offset + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        return last_error();
      }
      if (n == 0) break;  // end of file
      got += static_cast<std::size_t>(n);
    }
    payload_direct_.fetch_add(got, std::memory_order_relaxed);
    return {};
  }

  // Writes all of `b` at `offset`; `put` bytes.
  std::error_code write_at(int fd, std::span<const std::byte> b, std::uint64_t offset, std::size_t& put) {
    put = 0;
    while (put < b.size()) {
      ssize_t n = ::pwrite(fd, b.data() + put, b.size() - put, static_cast<off_t>(offset + put));
      if (n < 0) {
        if (errno == EINTR) continue;
        return last_error();
      }
      put += static_cast<std::size_t>(n);
    }
    payload_direct_.fetch_add(put, std::memory_order_relaxed);
    return {};
  }

  template <class Op>
  std::error_code at_parent(dir_cache& dirs, const std::string& path, Op op) {
    if (!is_normal_path(path)) return sys_error(EINVAL);
    auto [dir, name] = split(path);
    std::error_code ec;
    int d = dirs.get(dir, ec);
    if (ec) return ec;
    return op(d, name);
  }

  template <class Op>
  std::error_code at_parents(dir_cache& dirs, const std::string& a, const std::string& b, Op op) {
    if (!is_normal_path(a) || !is_normal_path(b)) return sys_error(EINVAL);
    auto [dir_a, name_a] = split(a);
    auto [dir_b, name_b] = split(b);
    std::error_code ec;
    int da = dirs.get(dir_a, ec);
    if (ec) return ec;
    int db = dirs.get(dir_b, ec);
    if (ec) return ec;
    return op(da, name_a, db, name_b);
  }

  // ---- one item of each call

  std::error_code stat_item(dir_cache& dirs, const std::string& path, file_stat& out) {
    return at_parent(dirs, path, [&out](int dirfd, const char* name) -> std::error_code {
      struct stat st {};
      if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return last_error();
      out = to_file_stat(st);
      return {};
    });
  }

  std::error_code fstat_item(const std::shared_ptr<open_file>& f, file_stat& out) {
    return with_fd(f, [&out](int fd) -> std::error_code {
      struct stat s {};
      if (::fstat(fd, &s) != 0) return last_error();
      out = to_file_stat(s);
      return {};
    });
  }

  // Size first, times last (a truncate would change mtime); none follows a final symlink.
  std::error_code setattr_item(dir_cache& dirs, const std::string& path, unsigned mask, const file_stat& v) {
    if (mask & ~attr::settable) return make_error_code(errc::bad_argument);
    if (mask & attr::size) {
      std::error_code ec;
      unique_fd fd = open_beneath(root_.get(), path, O_WRONLY | O_NONBLOCK, ec);
      if (ec) return ec;
      if (::ftruncate(fd.get(), static_cast<off_t>(v.size)) != 0) return last_error();
    }
    return at_parent(dirs, path, [mask, &v](int dirfd, const char* name) -> std::error_code {
      if ((mask & attr::mode) && chmod_nofollow(dirfd, name, v.mode & 07777) != 0) return last_error();
      if (mask & (attr::uid | attr::gid)) {
        uid_t u = (mask & attr::uid) ? v.uid : static_cast<uid_t>(-1);
        gid_t g = (mask & attr::gid) ? v.gid : static_cast<gid_t>(-1);
        if (::fchownat(dirfd, name, u, g, AT_SYMLINK_NOFOLLOW) != 0) return last_error();
      }
      if (mask & (attr::atime | attr::mtime)) {
        timespec ts[2] = {v.atime, v.mtime};
        if (!(mask & attr::atime)) ts[0].tv_nsec = UTIME_OMIT;
        if (!(mask & attr::mtime)) ts[1].tv_nsec = UTIME_OMIT;
        if (::utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) != 0) return last_error();
      }
      return {};
    });
  }

  std::error_code mkdir_item(dir_cache& dirs, const std::string& path, std::uint32_t mode) {
    return at_parent(dirs, path, [mode](int dirfd, const char* name) -> std::error_code {
      if (::mkdirat(dirfd, name, static_cast<mode_t>(mode & 07777)) != 0) return last_error();
      return set_exact_dir_mode(dirfd, name, mode);
    });
  }

  std::error_code rename_item(dir_cache& dirs, const std::string& from, const std::string& to) {
    return at_parents(dirs, from, to, [](int d1, const char* n1, int d2, const char* n2) -> std::error_code {
      if (::renameat(d1, n1, d2, n2) != 0) return last_error();
      return {};
    });
  }

  std::error_code link_item(dir_cache& dirs, const std::string& existing, const std::string& new_path) {
    return at_parents(dirs, existing, new_path,
                      [](int d1, const char* n1, int d2, const char* n2) -> std::error_code {
                        // Flags 0: a symlink is linked itself, not its target.
                        if (::linkat(d1, n1, d2, n2, 0) != 0) return last_error();
                        return {};
                      });
  }

  std::error_code symlink_item(dir_cache& dirs, const std::string& target, const std::string& link_path) {
    // The target is stored as text, never resolved here; an empty one is refused as by NFS.
    if (target.empty() || target.find('\0') != std::string::npos) return sys_error(EINVAL);
    return at_parent(dirs, link_path, [&target](int dirfd, const char* name) -> std::error_code {
      if (::symlinkat(target.c_str(), dirfd, name) != 0) return last_error();
      return {};
    });
  }

  std::error_code readlink_item(dir_cache& dirs, const std::string& path, std::string& out) {
    return at_parent(dirs, path, [&out](int dirfd, const char* name) -> std::error_code {
      std::string buf(256, '\0');
      while (true) {
        ssize_t n = ::readlinkat(dirfd, name, buf.data(), buf.size());
        if (n < 0) return last_error();
        if (static_cast<std::size_t>(n) < buf.size()) {
          buf.resize(static_cast<std::size_t>(n));
          out = std::move(buf);
          return {};
        }
        buf.resize(buf.size() * 2);  // may have been cut: try with more room
      }
    });
  }

  std::error_code open_item(dir_cache& dirs, const std::string& path, int flags, std::uint32_t mode, file& out) {
    if (!is_normal_path(path) || (flags & ~(open_flags_allowed | open_flags_ignored)) != 0 ||
        (flags & O_ACCMODE) == O_ACCMODE)
      return sys_error(EINVAL);
    std::error_code ec;
    opened o = open_fd(dirs, path, flags, mode, ec);
    if (ec) return ec;
    // O_NONBLOCK means nothing for a regular file; cleared so F_GETFL shows the caller's flags.
    if (!o.created) ::fcntl(o.fd.get(), F_SETFL, flags & O_APPEND);
    auto f = std::make_shared<local_file>();
    f->path = path;
    f->table = files_;
    std::lock_guard lock(files_->mutex);
    if (files_->closed) return make_error_code(errc::closed);  // cannot happen: we are in flight
    f->fd = o.fd.release();
    files_->files.insert(f.get());
    out = internals::make_file(std::move(f));
    return {};
  }

  std::error_code close_item(const std::shared_ptr<open_file>& st) {
    auto* lf = mine(st);
    if (!lf) return sys_error(EBADF);
    std::unique_lock lock(lf->mutex);
    if (lf->fd < 0) return sys_error(EBADF);
    int fd = std::exchange(lf->fd, -1);
    // Linux releases the descriptor even when close reports an error (EIO of a delayed write).
    if (::close(fd) != 0 && errno != EINTR) return last_error();
    return {};
  }

  struct opened {
    unique_fd fd;
    bool created = false;  ///< made by this open (else it existed: `st` describes it)
    struct stat st {};
  };

  // Opens a regular file named by a valid path with open(2)'s flags (`mode`: the exact
  // permission bits of a file it creates, no umask). A symlink is ELOOP, a directory EISDIR,
  // another non-regular file EINVAL: the type is checked before opening, so a FIFO never
  // blocks us, and after, in case the name was replaced meanwhile. The descriptor has
  // O_NONBLOCK when the file existed (meaningless for a regular file).
  opened open_fd(dir_cache& dirs, const std::string& path, int flags, std::uint32_t mode, std::error_code& ec) {
    auto [dir, name] = split(path);
    opened o;
    int d = dirs.get(dir, ec);
    if (ec) return o;
    const int base = (flags & (O_ACCMODE | O_APPEND)) | O_NOFOLLOW | O_CLOEXEC;
    const mode_t perm = static_cast<mode_t>(mode & 07777);
    // A few rounds in case the name comes and goes between our create and open.
    for (int round = 0; round < 8; ++round) {
      if (flags & O_CREAT) {
        o.fd = unique_fd(::openat(d, name, base | O_CREAT | O_EXCL, perm));
        if (o.fd) {
          if (::fchmod(o.fd.get(), perm) != 0) {  // exact mode: no umask
            ec = last_error();
            return {};
          }
          o.created = true;
          return o;
        }
        if (errno != EEXIST || (flags & O_EXCL)) {
          ec = last_error();
          return o;
        }
      }
      if (::fstatat(d, name, &o.st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT && (flags & O_CREAT)) continue;
        ec = last_error();
        return o;
      }
      if ((ec = open_type_error(o.st.st_mode))) return o;
      o.fd = unique_fd(::openat(d, name, base | (flags & O_TRUNC) | O_NONBLOCK));
      if (!o.fd) {
        if (errno == ENOENT && (flags & O_CREAT)) continue;
        ec = last_error();
        return o;
      }
      if (::fstat(o.fd.get(), &o.st) != 0) {
        ec = last_error();
        return {};
      }
      if ((ec = open_type_error(o.st.st_mode))) return {};
      return o;
    }
    ec = sys_error(EAGAIN);
    return {};
  }

  // One vio: through its open file, or through the file its path (or handle) names, opened
  // for it and closed after (the close's error counts when the transfer succeeded).
  std::error_code io_item(dir_cache& dirs, vio& item, bool writing) {
    item.bytes = 0;
    item.eof = false;
    if (auto ec = check(item.region, writing ? access::write : access::read)) return ec;
    if (const file* f = item.file.descriptor())
      return with_fd(internals::state_of(*f), [&](int fd) { return transfer(fd, item, writing); });
    std::string path = item.file.path() ? *item.file.path() : handle_path(*item.file.handle());
    if (!is_normal_path(path)) return sys_error(EINVAL);
    int flags = open_flags_of(item, writing);
    // A file written anew from offset 0 is written over and then cut where the data ends:
    // that leaves what O_TRUNC leaves, without freeing its blocks and allocating them again
    // (as vnfsd does: compound_context::truncation).
    const bool over_old = (flags & O_TRUNC) && item.offset == 0 && !(item.flags & vio_flags::append);
    if (over_old) flags &= ~O_TRUNC;
    std::error_code ec;
    opened o = open_fd(dirs, path, flags, item.mode, ec);
    if (ec) return ec;
    ec = transfer(o.fd.get(), item, writing, over_old && !o.created);
    if (::close(o.fd.release()) != 0 && errno != EINTR && !ec) ec = last_error();
    return ec;
  }

  // Moves a vio's data: reads until its buffer is full (eof: the file ended first), writes
  // all of it (append: at the file's size; cut: then ends the file where the data ends;
  // stable: fsync after).
  std::error_code transfer(int fd, vio& item, bool writing, bool cut = false) {
    std::span<std::byte> all = item.data();
    std::size_t n = 0;
    if (!writing) {
      auto ec = read_at(fd, all, item.offset, n);
      if (ec) return ec;
      item.bytes = n;
      item.eof = n < all.size();
      return {};
    }
    if (item.flags & vio_flags::append) {
      // As a kernel client appends: at the size it last saw (not atomic; see vio_flags).
      struct stat st {};
      if (::fstat(fd, &st) != 0) return last_error();
      item.offset = static_cast<std::uint64_t>(st.st_size);
    }
    auto ec = write_at(fd, all, item.offset, n);
    if (cut && ::ftruncate(fd, static_cast<off_t>(item.offset + n)) != 0 && !ec) ec = last_error();
    if (ec) return ec;
    item.bytes = n;
    if ((item.flags & vio_flags::stable) && ::fsync(fd) != 0) return last_error();
    return {};
  }

  // One vcopy_item, as vcopy makes it: the source must be a regular file (else EINVAL); the
  // destination is created with its permission bits if missing, and truncated to the copy
  // for a whole-file copy.
  std::error_code copy_item(dir_cache& dirs, vcopy_item& it) {
    it.bytes = 0;
    if (!is_normal_path(it.src) || !is_normal_path(it.dst)) return sys_error(EINVAL);
    auto [sdir, sname] = split(it.src);
    std::error_code ec;
    int sd = dirs.get(sdir, ec);
    if (ec) return ec;
    struct stat st {};
    if (::fstatat(sd, sname, &st, AT_SYMLINK_NOFOLLOW) != 0) return last_error();
    if (!S_ISREG(st.st_mode)) return sys_error(EINVAL);
    unique_fd src(::openat(sd, sname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!src) return errno == ELOOP ? sys_error(EINVAL) : last_error();
    if (::fstat(src.get(), &st) != 0) return last_error();
    if (!S_ISREG(st.st_mode)) return sys_error(EINVAL);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::uint64_t len = it.src_offset >= size ? 0 : size - it.src_offset;
    if (it.length != vcopy_item::to_end) len = std::min(len, it.length);
    const bool whole = it.src_offset == 0 && it.length == vcopy_item::to_end;

    opened dst = open_fd(dirs, it.dst, O_WRONLY | O_CREAT, st.st_mode & 07777, ec);
    if (ec) return ec;
    const bool same_file = !dst.created && dst.st.st_dev == st.st_dev && dst.st.st_ino == st.st_ino;
    if (same_file && whole) {
      it.bytes = len;  // a file copied whole onto itself stays as it is
    } else {
      // A whole-file copy onto an existing file at offset 0 writes over it and then cuts it
      // where the copy ends, as io_item does; at another offset it truncates first.
      const bool cut = whole && !dst.created && it.dst_offset == 0;
      if (whole && !dst.created && !cut && ::ftruncate(dst.fd.get(), 0) != 0) return last_error();
      // Within one file, the source range is read whole before it is written, in rounds as
      // vcopy's (the ranges may overlap).
      ec = same_file ? copy_by_buffer(src.get(), it.src_offset, dst.fd.get(), it.dst_offset, len, copy_round, it.bytes)
                     : copy_range(src.get(), it.src_offset, dst.fd.get(), it.dst_offset, len, it.bytes);
      if (cut && ::ftruncate(dst.fd.get(), static_cast<off_t>(it.bytes)) != 0 && !ec) ec = last_error();
    }
    if (::close(dst.fd.release()) != 0 && errno != EINTR && !ec) ec = last_error();
    return ec;
  }

  // Bytes one round of a copy through memory holds (as vcopy's rounds).
  static constexpr std::uint64_t copy_round = std::uint64_t(64) << 20;

  // Copies up to `len` bytes between two files by copy_file_range (less if the source ends
  // first), or through memory where the kernel cannot (another file system, ...).
  std::error_code copy_range(int in, std::uint64_t in_off, int out, std::uint64_t out_off, std::uint64_t len,
                             std::uint64_t& copied) {
    auto a = static_cast<loff_t>(in_off), b = static_cast<loff_t>(out_off);
    while (copied < len) {
      std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(len - copied, copy_round));
      ssize_t n = ::copy_file_range(in, &a, out, &b, want, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EPERM)
          return copy_by_buffer(in, in_off + copied, out, out_off + copied, len - copied, std::uint64_t(1) << 20,
                                copied);
        return last_error();
      }
      if (n == 0) break;  // the source ended
      copied += static_cast<std::uint64_t>(n);
      payload_direct_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    }
    return {};
  }

  // Copies through a buffer of at most `round` bytes: each round read whole, then written.
  std::error_code copy_by_buffer(int in, std::uint64_t in_off, int out, std::uint64_t out_off, std::uint64_t len,
                                 std::uint64_t round, std::uint64_t& copied) {
    std::vector<std::byte> buf(static_cast<std::size_t>(std::min(len, round)));
    std::uint64_t done_here = 0;
    while (done_here < len) {
      auto want = static_cast<std::size_t>(std::min<std::uint64_t>(len - done_here, buf.size()));
      std::size_t got = 0, put = 0;
      if (auto ec = read_at(in, std::span(buf).first(want), in_off + done_here, got)) return ec;
      if (auto ec = write_at(out, std::span<const std::byte>(buf).first(got), out_off + done_here, put)) return ec;
      done_here += got;
      copied += got;
      if (got < want) break;  // the source ended
    }
    return {};
  }

  // One page: the entries after d.cookie (a telldir position; 0 = the start), "." and ".."
  // left out, each with its attributes (fstatat NOFOLLOW). An entry removed between readdir and
  // fstatat is skipped.
  std::error_code do_readdir(dir_stream& d) {
    if (!is_normal_path(d.path)) return sys_error(EINVAL);
    std::error_code ec;
    unique_fd fd = open_beneath(root_.get(), d.path, O_RDONLY | O_DIRECTORY, ec);
    if (ec) return ec;
    DIR* dir = ::fdopendir(fd.get());
    if (!dir) return last_error();
    fd.release();
    struct closer {
      DIR* d;
      ~closer() { ::closedir(d); }
    } close_dir{dir};

    if (d.cookie != 0) ::seekdir(dir, static_cast<long>(d.cookie));
    std::size_t added = 0;
    while (true) {
      long before = ::telldir(dir);
      errno = 0;
      struct dirent* e = ::readdir(dir);
      if (!e) {
        if (errno != 0) return last_error();
        d.eof = true;
        d.cookie = static_cast<std::uint64_t>(before);
        return {};
      }
      std::string_view n(e->d_name);
      if (n == "." || n == "..") continue;
      if (added == local_readdir_page) {  // full: this entry starts the next page
        d.eof = false;
        d.cookie = static_cast<std::uint64_t>(before);
        return {};
      }
      struct stat st {};
      if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;
        return last_error();
      }
      d.entries.push_back(dir_entry{std::string(n), to_file_stat(st)});
      ++added;
    }
  }

  unique_fd root_;
  worker_pool pool_;
  std::shared_ptr<file_table> files_;
  std::shared_ptr<registration_table> registrations_;
  std::atomic<std::uint64_t> payload_direct_{0};

  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t in_flight_ = 0;
  std::size_t closing_on_workers_ = 0;  // close_all calls made from done callbacks, running
  bool closed_ = false;
  std::atomic<bool> closing_{false};  // closed_, read by running calls without the mutex
};

}  // namespace

void set_local_resolution_walk(bool on) { force_walk.store(on); }

std::size_t local_workers_started(backend& b) { return dynamic_cast<local_backend&>(b).workers_started(); }

std::unique_ptr<backend> make_local_backend(const std::filesystem::path& root, const client_options& options) {
  unique_fd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw std::system_error(last_error(), "file://" + root.string());
  return std::make_unique<local_backend>(std::move(fd), options);
}

}  // namespace vnfs::detail
