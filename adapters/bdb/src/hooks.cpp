// The Berkeley DB hooks (db_env_set_func_*): mapped paths and the descriptors opened on
// them go to vnfs, everything else to the C library as Berkeley DB would call it itself.
#include <db.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "libc_calls.hpp"
#include "mapped_fs.hpp"
#include "state.hpp"
#include "vnfs/bdb/attach.hpp"
#include "vnfs/adapters/open_lost.hpp"
#include "vnfs/nfs4/status.hpp"

namespace vnfs::bdb {

namespace {

using detail::remote;

/// A file Berkeley DB opened under a mapping. Its descriptor is a placeholder (an empty
/// memfd) so that the numbers never collide with real files and the calls Berkeley DB makes
/// on it directly (fcntl F_SETFD, fchmod) are harmless.
struct open_vfile {
  remote where;
  std::string local_path;
  int reopen_flags = 0;      ///< the open's flags without O_CREAT, O_EXCL, O_TRUNC
  std::uint64_t offset = 0;  ///< for seek + read/write
  bool dsync = false;        ///< O_DSYNC: each write is committed
  std::mutex mu;             ///< guards f
  vnfs::file f;

  vnfs::file current() {
    std::lock_guard lk(mu);
    return f;
  }
};

/// Runs f(client, file) on an open file; when the server has forgotten the open (a server
/// restart: the client recovers its session, not the opens), opens the file again by its
/// path and runs f once more. 0 or an errno, as detail::call.
template <class F>
int on_file(open_vfile& v, const char* what, F&& f) {
  return detail::call(v.where, what, v.local_path.c_str(), [&](client& c) {
    vnfs::file used = v.current();
    try {
      f(c, used);
    } catch (const std::system_error& e) {
      if (!adapters::open_lost(e.code())) throw;
      vnfs::file again = c.open(v.where.path, v.reopen_flags, 0);
      {
        std::lock_guard lk(v.mu);
        v.f = again;
      }
      f(c, again);
    }
  });
}

/// Memory provided by region_map: anonymous (registered with the clients) or a local
/// region file that existed already.
struct region_memory {
  void* addr = nullptr;
  std::size_t size = 0;
  bool anonymous = false;
};

struct tables {
  std::mutex mu;
  std::unordered_map<int, std::shared_ptr<open_vfile>> files;
  std::unordered_map<void*, region_memory> regions;  ///< by address
  std::unordered_map<void*, std::size_t> file_maps;  ///< file_map's mappings and lengths
};

tables& the_tables() {
  static tables t;
  return t;
}

std::shared_ptr<open_vfile> vfile_of(int fd) {
  tables& t = the_tables();
  std::lock_guard lk(t.mu);
  auto it = t.files.find(fd);
  return it == t.files.end() ? nullptr : it->second;
}

int fail(int err) {
  errno = err;
  return -1;
}

// ---- Data transfer on a mapped file: registered memory straight, else through a span.

/// Reads [off, off + n) into buf until n bytes or the end of the file; zeros the rest.
int read_at(open_vfile& v, void* buf, std::size_t n, std::uint64_t off) {
  std::size_t got = 0;
  int err = on_file(v, "read of", [&](client& c, const vnfs::file& f) {
    got = 0;
    while (got < n) {
      auto* p = static_cast<std::byte*>(buf) + got;
      std::size_t k = 0;
      if (auto s = detail::registered_slice(&c, p, n - got))
        k = c.pread(f, off + got, *s);
      else
        k = c.pread(f, off + got, std::span<std::byte>(p, n - got));
      if (k == 0) break;
      got += k;
    }
  });
  if (err) return err;
  if (got < n) std::memset(static_cast<std::byte*>(buf) + got, 0, n - got);
  return 0;
}

int write_at(open_vfile& v, const void* buf, std::size_t n, std::uint64_t off) {
  return on_file(v, "write of", [&](client& c, const vnfs::file& f) {
    std::size_t put = 0;
    while (put < n) {
      auto* p = static_cast<const std::byte*>(buf) + put;
      std::size_t k = 0;
      if (auto s = detail::registered_slice(&c, p, n - put))
        k = c.pwrite(f, off + put, *s);
      else
        k = c.pwrite(f, off + put, std::span<const std::byte>(p, n - put));
      if (k == 0) throw std::system_error(std::make_error_code(std::errc::io_error));
      put += k;
    }
    if (v.dsync) c.fsync(f);
  });
}

/// read(2) until n bytes or the end of the file, zeros for the rest (see attach.hpp).
ssize_t local_read_full(int fd, void* buf, std::size_t n, const off_t* at) {
  std::size_t got = 0;
  while (got < n) {
    char* p = static_cast<char*>(buf) + got;
    ssize_t k = at ? ::pread(fd, p, n - got, *at + static_cast<off_t>(got)) : ::read(fd, p, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) break;
    got += static_cast<std::size_t>(k);
  }
  std::memset(static_cast<char*>(buf) + got, 0, n - got);
  return static_cast<ssize_t>(n);
}

ssize_t local_write_full(int fd, const void* buf, std::size_t n, const off_t* at) {
  std::size_t put = 0;
  while (put < n) {
    const char* p = static_cast<const char*>(buf) + put;
    ssize_t k = at ? ::pwrite(fd, p, n - put, *at + static_cast<off_t>(put)) : ::write(fd, p, n - put);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    put += static_cast<std::size_t>(k);
  }
  return static_cast<ssize_t>(n);
}

// ---- The hooks. Those returning int return 0 or an errno value, except open (a
// descriptor or -1 with errno) and read/write (a count or -1 with errno), as Berkeley DB's
// replacement functions must.

int hook_open(const char* path, int flags, ...) {
  int mode = 0;
  if (flags & O_CREAT) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, int);
    va_end(ap);
  }
  auto r = detail::lookup(path);
  if (!r) return ::open(path, flags, mode);
  if (r->error) return fail(r->error);
  const char* base = std::strrchr(path, '/');
  if (std::strcmp(base ? base + 1 : path, "__db.register") == 0) {
    detail::report(*r->t, "DB_REGISTER needs fcntl locks, which do not reach the server; refused for", path,
                   "open the environment without DB_REGISTER");
    return fail(ENOTSUP);
  }
  auto v = std::make_shared<open_vfile>();
  v->where = *r;
  v->local_path = path;
  v->dsync = (flags & O_DSYNC) != 0;  // O_SYNC includes it
  int remote_flags = flags & (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC);
  v->reopen_flags = flags & O_ACCMODE;
  if (int err = detail::call(*r, "open of", path, [&](client& c) {
        v->f = c.open(r->path, remote_flags, static_cast<std::uint32_t>(mode));
      }))
    return fail(err);
  int fd = ::memfd_create("vnfs-bdb", MFD_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    try {
      r->c->close(v->f);
    } catch (const std::exception&) {
    }
    return fail(err);
  }
  tables& t = the_tables();
  std::lock_guard lk(t.mu);
  t.files[fd] = std::move(v);
  return fd;
}

int hook_close(int fd) {
  std::shared_ptr<open_vfile> v;
  {
    tables& t = the_tables();
    std::lock_guard lk(t.mu);
    auto it = t.files.find(fd);
    if (it != t.files.end()) {
      v = std::move(it->second);
      t.files.erase(it);
    }
  }
  if (!v) return ::close(fd) == 0 ? 0 : errno;
  ::close(fd);
  return detail::call(v->where, "close of", v->local_path.c_str(), [&](client& c) {
    try {
      c.close(v->current());
    } catch (const std::system_error& e) {
      if (!adapters::open_lost(e.code())) throw;  // a server that forgot the open has closed it
    }
  });
}

ssize_t hook_read(int fd, void* buf, size_t n) {
  auto v = vfile_of(fd);
  if (!v) return local_read_full(fd, buf, n, nullptr);
  if (int err = read_at(*v, buf, n, v->offset)) return fail(err);
  v->offset += n;  // Berkeley DB serializes seek + read on a handle
  return static_cast<ssize_t>(n);
}

ssize_t hook_write(int fd, const void* buf, size_t n) {
  auto v = vfile_of(fd);
  if (!v) return local_write_full(fd, buf, n, nullptr);
  if (int err = write_at(*v, buf, n, v->offset)) return fail(err);
  v->offset += n;
  return static_cast<ssize_t>(n);
}

ssize_t hook_pread(int fd, void* buf, size_t n, off_t off) {
  auto v = vfile_of(fd);
  if (!v) return local_read_full(fd, buf, n, &off);
  if (int err = read_at(*v, buf, n, static_cast<std::uint64_t>(off))) return fail(err);
  return static_cast<ssize_t>(n);
}

ssize_t hook_pwrite(int fd, const void* buf, size_t n, off_t off) {
  auto v = vfile_of(fd);
  if (!v) return local_write_full(fd, buf, n, &off);
  if (int err = write_at(*v, buf, n, static_cast<std::uint64_t>(off))) return fail(err);
  return static_cast<ssize_t>(n);
}

int hook_seek(int fd, off_t off, int whence) {
  auto v = vfile_of(fd);
  if (!v) return ::lseek(fd, off, whence) == -1 ? errno : 0;
  std::int64_t base = 0;
  if (whence == SEEK_CUR) base = static_cast<std::int64_t>(v->offset);
  if (whence == SEEK_END) {
    file_stat st;
    if (int err = on_file(*v, "stat of", [&](client& c, const vnfs::file& f) { st = c.fstat(f); })) return err;
    base = static_cast<std::int64_t>(st.size);
  }
  if (base + off < 0) return EINVAL;
  v->offset = static_cast<std::uint64_t>(base + off);
  return 0;
}

int hook_fsync(int fd) {
  auto v = vfile_of(fd);
  if (!v) return ::fdatasync(fd) == 0 ? 0 : errno;
  return on_file(*v, "fsync of", [&](client& c, const vnfs::file& f) { c.fsync(f); });
}

int hook_ftruncate(int fd, off_t size) {
  auto v = vfile_of(fd);
  if (!v) return ::ftruncate(fd, size) == 0 ? 0 : errno;
  return detail::call(v->where, "truncate of", v->local_path.c_str(),
                      [&](client& c) { c.truncate(v->where.path, static_cast<std::uint64_t>(size)); });
}

int hook_ioinfo(const char*, int fd, u_int32_t* mbytes, u_int32_t* bytes, u_int32_t* iosize) {
  std::uint64_t size = 0;
  std::uint32_t blksize = 4096;  // what Linux file systems report: the same page size as on local disk
  if (auto v = vfile_of(fd)) {
    file_stat st;
    if (int err = on_file(*v, "stat of", [&](client& c, const vnfs::file& f) { st = c.fstat(f); })) return err;
    size = st.size;
  } else {
    struct stat sb;
    if (::fstat(fd, &sb) != 0) return errno;
    size = static_cast<std::uint64_t>(sb.st_size);
    if (sb.st_blksize > 0) blksize = static_cast<std::uint32_t>(sb.st_blksize);
  }
  constexpr std::uint64_t mega = 1024 * 1024;
  if (mbytes) *mbytes = static_cast<u_int32_t>(size / mega);
  if (bytes) *bytes = static_cast<u_int32_t>(size % mega);
  if (iosize) *iosize = blksize;
  return 0;
}

int hook_exists(const char* path, int* isdir) {
  struct stat sb;
  if (detail::stat_path(path, &sb) != 0) return errno;
  if (isdir) *isdir = S_ISDIR(sb.st_mode);
  return 0;
}

int hook_unlink(const char* path) {
  auto r = detail::lookup(path);
  if (!r) return ::unlink(path) == 0 ? 0 : errno;
  if (r->error) return r->error;
  return detail::call(*r, "unlink of", path, [&](client& c) { c.unlink(r->path); });
}

int hook_rename(const char* from, const char* to) {
  auto a = detail::lookup(from);
  auto b = detail::lookup(to);
  if (!a && !b) return ::rename(from, to) == 0 ? 0 : errno;
  if (!a || !b || a->t != b->t) return EXDEV;
  if (a->error) return a->error;
  return detail::call(*a, "rename of", from, [&](client& c) { c.rename(a->path, b->path); });
}

int hook_dirlist(const char* dir, char*** namesp, int* cntp) {
  std::vector<std::string> names;
  if (auto r = detail::lookup(dir)) {
    if (r->error) return r->error;
    if (int err = detail::call(*r, "listing of", dir, [&](client& c) {
          dir_stream d = c.opendir(r->path);
          while (auto e = c.readdir(d))
            if (e->stat.type == file_type::regular) names.push_back(e->name);
        }))
      return err;
  } else {
    DIR* d = ::opendir(dir);
    if (!d) return errno;
    while (dirent* e = ::readdir(d)) {
      std::string full = std::string(dir) + "/" + e->d_name;
      struct stat sb;
      if (::stat(full.c_str(), &sb) == 0 && S_ISREG(sb.st_mode)) names.push_back(e->d_name);
    }
    ::closedir(d);
  }
  char** out = static_cast<char**>(std::calloc(names.size() + 1, sizeof(char*)));
  if (!out) return ENOMEM;
  for (std::size_t i = 0; i < names.size(); ++i) out[i] = ::strdup(names[i].c_str());
  *namesp = out;
  *cntp = static_cast<int>(names.size());
  return 0;
}

void hook_dirfree(char** names, int cnt) {
  for (int i = 0; i < cnt; ++i) std::free(names[i]);
  std::free(names);
}

/// Mapped files are never mmap'd (Berkeley DB then reads them); local ones as before.
int hook_file_map(DB_ENV*, char* path, size_t len, int is_rdonly, void** addrp) {
  if (detail::lookup(path)) return EINVAL;
  int fd = ::open(path, is_rdonly ? O_RDONLY : O_RDWR);
  if (fd < 0) return errno;
  void* p = ::mmap(nullptr, len, PROT_READ | (is_rdonly ? 0 : PROT_WRITE), MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return err;
  tables& t = the_tables();
  std::lock_guard lk(t.mu);
  t.file_maps[p] = len;
  *addrp = p;
  return 0;
}

int hook_file_unmap(DB_ENV*, void* addr) {
  std::size_t len = 0;
  {
    tables& t = the_tables();
    std::lock_guard lk(t.mu);
    auto it = t.file_maps.find(addr);
    if (it == t.file_maps.end()) return EINVAL;
    len = it->second;
    t.file_maps.erase(it);
  }
  return ::munmap(addr, len) == 0 ? 0 : errno;
}

/// A region. Berkeley DB asks to create it whenever it may not exist (also when it only
/// tries to join an environment), and after a failed join it unmaps without unlinking: so
/// no region file is ever created. A local region file that exists (an environment made
/// without the hooks) is mapped as Berkeley DB would; any other region is process memory,
/// registered with the clients, that lives until it is unmapped (the environment is then
/// private to this process, see attach.hpp).
int hook_region_map(DB_ENV*, char* path, size_t len, int* create_ok, void** addrp) {
  region_memory m;
  m.size = len;
  int fd = detail::lookup(path) ? -1 : ::open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    m.addr = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    ::close(fd);
    if (m.addr == MAP_FAILED) return err;
    *create_ok = 0;
  } else {
    if (!*create_ok) return ENOENT;
    m.anonymous = true;
    m.addr = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m.addr == MAP_FAILED) return errno;
    detail::add_region(m.addr, len);
    *create_ok = 1;
  }
  tables& t = the_tables();
  std::lock_guard lk(t.mu);
  t.regions[m.addr] = m;
  *addrp = m.addr;
  return 0;
}

int hook_region_unmap(DB_ENV*, void* addr) {
  region_memory m;
  {
    tables& t = the_tables();
    std::lock_guard lk(t.mu);
    auto it = t.regions.find(addr);
    if (it == t.regions.end()) return EINVAL;
    m = it->second;
    t.regions.erase(it);
  }
  if (m.anonymous) detail::remove_region(m.addr);
  return ::munmap(m.addr, m.size) == 0 ? 0 : errno;
}

int hook_yield(u_long secs, u_long usecs) {
  if (secs == 0 && usecs == 0) return ::sched_yield();
  timespec ts{static_cast<time_t>(secs + usecs / 1000000), static_cast<long>((usecs % 1000000) * 1000)};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  return 0;
}

void install(bool on) {
  db_env_set_func_open(on ? hook_open : nullptr);
  db_env_set_func_close(on ? hook_close : nullptr);
  db_env_set_func_read(on ? hook_read : nullptr);
  db_env_set_func_write(on ? hook_write : nullptr);
  db_env_set_func_pread(on ? hook_pread : nullptr);
  db_env_set_func_pwrite(on ? hook_pwrite : nullptr);
  db_env_set_func_seek(on ? hook_seek : nullptr);
  db_env_set_func_fsync(on ? hook_fsync : nullptr);
  db_env_set_func_ftruncate(on ? hook_ftruncate : nullptr);
  db_env_set_func_ioinfo(on ? hook_ioinfo : nullptr);
  db_env_set_func_exists(on ? hook_exists : nullptr);
  db_env_set_func_unlink(on ? hook_unlink : nullptr);
  db_env_set_func_rename(on ? hook_rename : nullptr);
  db_env_set_func_dirlist(on ? hook_dirlist : nullptr);
  db_env_set_func_dirfree(on ? hook_dirfree : nullptr);
  db_env_set_func_file_map(on ? hook_file_map : nullptr, on ? hook_file_unmap : nullptr);
  db_env_set_func_region_map(on ? hook_region_map : nullptr, on ? hook_region_unmap : nullptr);
  db_env_set_func_yield(on ? hook_yield : nullptr);
}

}  // namespace

void attach(std::vector<mapping> maps, client_options options, region_options regions) {
  detach();
  detail::state& s = detail::the_state();
  {
    std::lock_guard lk(s.mu);
    for (mapping& m : maps) {
      auto t = std::make_unique<detail::target>();
      t->map = std::move(m);
      s.targets.push_back(std::move(t));
    }
    s.options = std::move(options);
    s.register_regions = regions.register_regions;
  }
  install(true);
}

void detach() {
  install(false);
  detail::state& s = detail::the_state();
  std::vector<detail::region> regions;
  std::vector<std::unique_ptr<detail::target>> targets;
  {
    std::lock_guard lk(s.mu);
    regions.swap(s.regions);
    targets.swap(s.targets);
  }
  {
    tables& t = the_tables();
    std::lock_guard lk(t.mu);
    t.files.clear();
  }
  regions.clear();  // deregistered before their clients close
}

std::optional<client_stats> stats(std::string_view prefix) {
  detail::state& s = detail::the_state();
  detail::target* found = nullptr;
  {
    std::lock_guard lk(s.mu);
    for (auto& t : s.targets)
      if (t->map.prefix == prefix) found = t.get();
  }
  if (!found) return std::nullopt;
  std::lock_guard tl(found->mu);  // before the state's lock, as everywhere
  if (!found->c) return std::nullopt;
  return found->c->stats();
}

}  // namespace vnfs::bdb
