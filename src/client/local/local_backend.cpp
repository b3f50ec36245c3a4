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
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "client/memory/registration.hpp"

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

// A directory to make *at() calls in: the root (not owned) or a descriptor opened beneath it.
class dir_ref {
 public:
  explicit dir_ref(int root) : fd_(root) {}
  explicit dir_ref(unique_fd owned) : owned_(std::move(owned)), fd_(owned_.get()) {}
  int fd() const noexcept { return fd_; }

 private:
  unique_fd owned_;
  int fd_;
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

// Paths come normalized from the front; checked again here because confinement must not
// depend on the caller: no empty, "." or ".." component, no leading or trailing '/'.
bool valid_path(std::string_view p) {
  if (p.empty()) return true;
  std::size_t start = 0;
  while (true) {
    std::size_t end = p.find('/', start);
    std::string_view c = p.substr(start, end == std::string_view::npos ? end : end - start);
    if (c.empty() || c == "." || c == "..") return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

// dirname / basename of a valid path; the root ("") is "." in itself.
std::pair<std::string, std::string> split(const std::string& p) {
  if (p.empty()) return {"", "."};
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return {"", p};
  return {p.substr(0, slash), p.substr(slash + 1)};
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

// The directory a path's last component lives in.
dir_ref parent_of(int root, const std::string& dir, std::error_code& ec) {
  if (dir.empty()) return dir_ref(root);
  unique_fd fd = open_beneath(root, dir, O_PATH | O_DIRECTORY, ec);
  return dir_ref(std::move(fd));
}

std::string proc_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Gives a just-made directory exactly `perm` (mkdirat applied the umask), as vnfsd does.
// A set-gid bit inherited from the parent stays.
std::error_code set_exact_dir_mode(int dirfd, const std::string& name, std::uint32_t perm) {
  unique_fd fd(::openat(dirfd, name.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return last_error();
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return last_error();
  mode_t want = static_cast<mode_t>(perm & 07777) | (st.st_mode & S_ISGID);
  if ((st.st_mode & 07777) == want) return {};
  if (::chmod(proc_path(fd.get()).c_str(), want) != 0) return last_error();
  return {};
}

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
        pool_(options.local_threads == 0 ? 1 : options.local_threads),
        files_(std::make_shared<file_table>()),
        registrations_(registration_table::create(options.max_registered_bytes)) {}

  ~local_backend() override {
    close_all();
    pool_.join();
  }

  void open(const std::string& path, int flags, std::uint32_t mode, file* out, done_fn done) override {
    submit(std::move(done), [this, path, flags, mode, out]() -> result {
      std::error_code ec;
      auto f = do_open(path, flags, mode, ec);
      if (ec) return {ec, 0};
      *out = internals::make_file(std::move(f));
      return {};
    });
  }

  void close(const file& f, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f)]() -> result {
      auto* lf = mine(st);
      if (!lf) return {sys_error(EBADF), 0};
      std::unique_lock lock(lf->mutex);
      if (lf->fd < 0) return {sys_error(EBADF), 0};
      int fd = std::exchange(lf->fd, -1);
      // Linux releases the descriptor even when close reports an error (EIO of a delayed write).
      if (::close(fd) != 0 && errno != EINTR) return {last_error(), 0};
      return {};
    });
  }

  void read(const file& f, std::uint64_t offset, read_target dst, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f), offset, dst]() -> result {
      if (auto ec = check(dst.registered, access::read)) return {ec, 0};
      auto* lf = mine(st);
      if (!lf) return {sys_error(EBADF), 0};
      std::shared_lock lock(lf->mutex);
      if (lf->fd < 0) return {sys_error(EBADF), 0};
      std::span<std::byte> b = dst.bytes();
      std::size_t got = 0;
      while (got < b.size()) {
        ssize_t n = ::pread(lf->fd, b.data() + got, b.size() - got, static_cast<off_t>(offset + got));
        if (n < 0) {
          if (errno == EINTR) continue;
          return {last_error(), 0};
        }
        if (n == 0) break;  // end of file
        got += static_cast<std::size_t>(n);
      }
      payload_direct_.fetch_add(got, std::memory_order_relaxed);
      return {{}, got};
    });
  }

  void write(const file& f, std::uint64_t offset, write_source src, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f), offset, src]() -> result {
      if (auto ec = check(src.registered, access::write)) return {ec, 0};
      auto* lf = mine(st);
      if (!lf) return {sys_error(EBADF), 0};
      std::shared_lock lock(lf->mutex);
      if (lf->fd < 0) return {sys_error(EBADF), 0};
      std::span<const std::byte> b = src.bytes();
      std::size_t put = 0;
      while (put < b.size()) {
        ssize_t n = ::pwrite(lf->fd, b.data() + put, b.size() - put, static_cast<off_t>(offset + put));
        if (n < 0) {
          if (errno == EINTR) continue;
          return {last_error(), 0};
        }
        put += static_cast<std::size_t>(n);
      }
      payload_direct_.fetch_add(put, std::memory_order_relaxed);
      return {{}, put};
    });
  }

  void fsync(const file& f, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f)]() -> result {
      auto* lf = mine(st);
      if (!lf) return {sys_error(EBADF), 0};
      std::shared_lock lock(lf->mutex);
      if (lf->fd < 0) return {sys_error(EBADF), 0};
      if (::fsync(lf->fd) != 0) return {last_error(), 0};
      return {};
    });
  }

  void stat(const std::string& path, file_stat* out, done_fn done) override {
    submit(std::move(done), [this, path, out]() -> result {
      std::error_code ec;
      auto [dir, name] = split(path);
      if (!valid_path(path)) return {sys_error(EINVAL), 0};
      dir_ref d = parent_of(root_.get(), dir, ec);
      if (ec) return {ec, 0};
      struct stat st {};
      if (::fstatat(d.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {last_error(), 0};
      *out = to_file_stat(st);
      return {};
    });
  }

  void fstat(const file& f, file_stat* out, done_fn done) override {
    submit(std::move(done), [this, st = internals::state_of(f), out]() -> result {
      auto* lf = mine(st);
      if (!lf) return {sys_error(EBADF), 0};
      std::shared_lock lock(lf->mutex);
      if (lf->fd < 0) return {sys_error(EBADF), 0};
      struct stat s {};
      if (::fstat(lf->fd, &s) != 0) return {last_error(), 0};
      *out = to_file_stat(s);
      return {};
    });
  }

  void truncate(const std::string& path, std::uint64_t size, done_fn done) override {
    submit(std::move(done), [this, path, size]() -> result {
      if (!valid_path(path)) return {sys_error(EINVAL), 0};
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

  // Size first, times last (a truncate would change mtime); none follows a final symlink.
  void setattr(const std::string& path, unsigned mask, const file_stat& v, done_fn done) override {
    submit(std::move(done), [this, path, mask, v]() -> result {
      if (mask & ~attr::settable) return {make_error_code(errc::bad_argument), 0};
      if (mask & attr::size) {
        std::error_code ec;
        unique_fd fd = open_beneath(root_.get(), path, O_WRONLY | O_NONBLOCK, ec);
        if (ec) return {ec, 0};
        if (::ftruncate(fd.get(), static_cast<off_t>(v.size)) != 0) return {last_error(), 0};
      }
      return at_parent(path, [mask, &v](int dirfd, const std::string& name) -> std::error_code {
        if ((mask & attr::mode) && ::fchmodat(dirfd, name.c_str(), v.mode & 07777, AT_SYMLINK_NOFOLLOW) != 0)
          return last_error();
        if (mask & (attr::uid | attr::gid)) {
          uid_t u = (mask & attr::uid) ? v.uid : static_cast<uid_t>(-1);
          gid_t g = (mask & attr::gid) ? v.gid : static_cast<gid_t>(-1);
          if (::fchownat(dirfd, name.c_str(), u, g, AT_SYMLINK_NOFOLLOW) != 0) return last_error();
        }
        if (mask & (attr::atime | attr::mtime)) {
          timespec ts[2] = {v.atime, v.mtime};
          if (!(mask & attr::atime)) ts[0].tv_nsec = UTIME_OMIT;
          if (!(mask & attr::mtime)) ts[1].tv_nsec = UTIME_OMIT;
          if (::utimensat(dirfd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) return last_error();
        }
        return {};
      });
    });
  }

  void mkdir(const std::string& path, std::uint32_t mode, done_fn done) override {
    submit(std::move(done), [this, path, mode]() -> result {
      return at_parent(path, [mode](int dirfd, const std::string& name) -> std::error_code {
        if (::mkdirat(dirfd, name.c_str(), static_cast<mode_t>(mode & 07777)) != 0) return last_error();
        return set_exact_dir_mode(dirfd, name, mode);
      });
    });
  }

  void unlink(const std::string& path, done_fn done) override {
    submit(std::move(done), [this, path]() -> result {
      return at_parent(path, [](int dirfd, const std::string& name) -> std::error_code {
        if (::unlinkat(dirfd, name.c_str(), 0) != 0) return last_error();
        return {};
      });
    });
  }

  void rmdir(const std::string& path, done_fn done) override {
    submit(std::move(done), [this, path]() -> result {
      return at_parent(path, [](int dirfd, const std::string& name) -> std::error_code {
        if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) return last_error();
        return {};
      });
    });
  }

  void rename(const std::string& from, const std::string& to, done_fn done) override {
    submit(std::move(done), [this, from, to]() -> result {
      return at_parents(from, to, [](int d1, const std::string& n1, int d2, const std::string& n2) -> std::error_code {
        if (::renameat(d1, n1.c_str(), d2, n2.c_str()) != 0) return last_error();
        return {};
      });
    });
  }

  void link(const std::string& existing, const std::string& new_path, done_fn done) override {
    submit(std::move(done), [this, existing, new_path]() -> result {
      return at_parents(existing, new_path, [](int d1, const std::string& n1, int d2, const std::string& n2) -> std::error_code {
        // Flags 0: a symlink is linked itself, not its target.
        if (::linkat(d1, n1.c_str(), d2, n2.c_str(), 0) != 0) return last_error();
        return {};
      });
    });
  }

  void symlink(const std::string& target, const std::string& link_path, done_fn done) override {
    submit(std::move(done), [this, target, link_path]() -> result {
      // The target is stored as text, never resolved here; an empty one is refused as by NFS.
      if (target.empty() || target.find('\0') != std::string::npos) return {sys_error(EINVAL), 0};
      return at_parent(link_path, [&target](int dirfd, const std::string& name) -> std::error_code {
        if (::symlinkat(target.c_str(), dirfd, name.c_str()) != 0) return last_error();
        return {};
      });
    });
  }

  void readlink(const std::string& path, std::string* out, done_fn done) override {
    submit(std::move(done), [this, path, out]() -> result {
      return at_parent(path, [out](int dirfd, const std::string& name) -> std::error_code {
        std::string buf(256, '\0');
        while (true) {
          ssize_t n = ::readlinkat(dirfd, name.c_str(), buf.data(), buf.size());
          if (n < 0) return last_error();
          if (static_cast<std::size_t>(n) < buf.size()) {
            buf.resize(static_cast<std::size_t>(n));
            *out = std::move(buf);
            return {};
          }
          buf.resize(buf.size() * 2);  // may have been cut: try with more room
        }
      });
    });
  }

  void readdir(dir_stream* d, done_fn done) override {
    submit(std::move(done), [this, d]() -> result { return do_readdir(*d); });
  }

  void close_all() override {
    registrations_->close();
    {
      std::unique_lock lock(mutex_);
      closed_ = true;
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

 private:
  struct result {
    std::error_code ec;
    std::size_t bytes = 0;
  };

  // Runs `work` on a worker and reports its result. Calls accepted before close_all count as
  // in flight until their done returns; queued ones that find the backend closing complete
  // with errc::closed. Calls after close_all are refused on a worker too, so done never runs
  // inside the caller's stack.
  template <class Work>
  void submit(done_fn done, Work work) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        boost::asio::post(pool_, [done = std::move(done)] { done(make_error_code(errc::closed), 0); });
        return;
      }
      ++in_flight_;
    }
    boost::asio::post(pool_, [this, done = std::move(done), work = std::move(work)]() mutable {
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
      bool closing;
      {
        std::lock_guard lock(mutex_);
        closing = closed_;
      }
      result r = closing ? result{make_error_code(errc::closed), 0} : work();
      done(r.ec, r.bytes);
    });
  }

  // The state of a file this backend opened, or nullptr (an empty file, another backend's).
  local_file* mine(const std::shared_ptr<open_file>& st) const {
    auto* lf = dynamic_cast<local_file*>(st.get());
    return lf && lf->table == files_ ? lf : nullptr;
  }

  // A registered slice must still be registered and allow the transfer's direction.
  static std::error_code check(const memory_slice& s, access a) {
    if (!s.data()) return {};
    const auto& r = internals::registration_of(s);
    if (!r || !r->valid() || !r->allows(a)) return make_error_code(errc::bad_argument);
    return {};
  }

  template <class Op>
  result at_parent(const std::string& path, Op op) {
    if (!valid_path(path)) return {sys_error(EINVAL), 0};
    auto [dir, name] = split(path);
    std::error_code ec;
    dir_ref d = parent_of(root_.get(), dir, ec);
    if (ec) return {ec, 0};
    return {op(d.fd(), name), 0};
  }

  template <class Op>
  result at_parents(const std::string& a, const std::string& b, Op op) {
    if (!valid_path(a) || !valid_path(b)) return {sys_error(EINVAL), 0};
    auto [dir_a, name_a] = split(a);
    auto [dir_b, name_b] = split(b);
    std::error_code ec;
    dir_ref da = parent_of(root_.get(), dir_a, ec);
    if (ec) return {ec, 0};
    dir_ref db = parent_of(root_.get(), dir_b, ec);
    if (ec) return {ec, 0};
    return {op(da.fd(), name_a, db.fd(), name_b), 0};
  }

  std::shared_ptr<local_file> do_open(const std::string& path, int flags, std::uint32_t mode, std::error_code& ec) {
    if (!valid_path(path) || (flags & ~(open_flags_allowed | open_flags_ignored)) != 0 ||
        (flags & O_ACCMODE) == O_ACCMODE) {
      ec = sys_error(EINVAL);
      return {};
    }
    auto [dir, name] = split(path);
    dir_ref d = parent_of(root_.get(), dir, ec);
    if (ec) return {};
    const int base = (flags & (O_ACCMODE | O_APPEND)) | O_NOFOLLOW | O_CLOEXEC;
    const mode_t perm = static_cast<mode_t>(mode & 07777);

    unique_fd fd;
    // A few rounds in case the name comes and goes between our create and open.
    for (int round = 0; round < 8 && !fd; ++round) {
      if (flags & O_CREAT) {
        fd = unique_fd(::openat(d.fd(), name.c_str(), base | O_CREAT | O_EXCL, perm));
        if (fd) {
          if (::fchmod(fd.get(), perm) != 0) {  // exact mode: no umask
            ec = last_error();
            return {};
          }
          break;
        }
        if (errno != EEXIST || (flags & O_EXCL)) {
          ec = last_error();
          return {};
        }
      }
      // An existing name: its type is checked before opening, so a FIFO never blocks us ...
      struct stat st {};
      if (::fstatat(d.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT && (flags & O_CREAT)) continue;
        ec = last_error();
        return {};
      }
      if ((ec = open_type_error(st.st_mode))) return {};
      fd = unique_fd(::openat(d.fd(), name.c_str(), base | (flags & O_TRUNC) | O_NONBLOCK));
      if (!fd) {
        if (errno == ENOENT && (flags & O_CREAT)) continue;
        ec = last_error();
        return {};
      }
      // ... and after, in case the name was replaced meanwhile.
      if (::fstat(fd.get(), &st) != 0) {
        ec = last_error();
        return {};
      }
      if ((ec = open_type_error(st.st_mode))) return {};
      // O_NONBLOCK means nothing for a regular file; cleared so F_GETFL shows the caller's flags.
      ::fcntl(fd.get(), F_SETFL, base & O_APPEND);
    }
    if (!fd) {
      ec = sys_error(EAGAIN);
      return {};
    }

    auto f = std::make_shared<local_file>();
    f->path = path;
    f->table = files_;
    std::lock_guard lock(files_->mutex);
    if (files_->closed) {  // close_all ran while we opened (cannot happen: we are in flight)
      ec = make_error_code(errc::closed);
      return {};
    }
    f->fd = fd.release();
    files_->files.insert(f.get());
    return f;
  }

  // One page: the entries after d.cookie (a telldir position; 0 = the start), "." and ".."
  // left out, each with its attributes (fstatat NOFOLLOW). An entry removed between readdir and
  // fstatat is skipped.
  result do_readdir(dir_stream& d) {
    if (!valid_path(d.path)) return {sys_error(EINVAL), 0};
    std::error_code ec;
    unique_fd fd = open_beneath(root_.get(), d.path, O_RDONLY | O_DIRECTORY, ec);
    if (ec) return {ec, 0};
    DIR* dir = ::fdopendir(fd.get());
    if (!dir) return {last_error(), 0};
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
        if (errno != 0) return {last_error(), 0};
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
        return {last_error(), 0};
      }
      d.entries.push_back(dir_entry{std::string(n), to_file_stat(st)});
      ++added;
    }
  }

  unique_fd root_;
  boost::asio::thread_pool pool_;
  std::shared_ptr<file_table> files_;
  std::shared_ptr<registration_table> registrations_;
  std::atomic<std::uint64_t> payload_direct_{0};

  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t in_flight_ = 0;
  std::size_t closing_on_workers_ = 0;  // close_all calls made from done callbacks, running
  bool closed_ = false;
};

}  // namespace

void set_local_resolution_walk(bool on) { force_walk.store(on); }

std::unique_ptr<backend> make_local_backend(const std::filesystem::path& root, const client_options& options) {
  unique_fd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw std::system_error(last_error(), "file://" + root.string());
  return std::make_unique<local_backend>(std::move(fd), options);
}

}  // namespace vnfs::detail
