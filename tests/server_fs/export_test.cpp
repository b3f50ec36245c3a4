// export_root: key persistence, filehandles (stability, forgery, staleness), confinement.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "fixture.hpp"
#include "server/fs/attributes.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/io.hpp"
#include "server/fs/name.hpp"

using namespace vnfs::server::fs;
using vnfs::server::fs::test::export_fixture;

namespace {

std::error_code sys(int e) { return {e, std::system_category()}; }

object must_create(const object& dir, const char* name) {
  std::error_code ec;
  auto r = create(dir, name, {}, ec);
  REQUIRE_FALSE(ec);
  REQUIRE(r.created);
  return std::move(r.file);
}

std::uint64_t ino_of(const object& o) {
  std::error_code ec;
  auto a = stat(o, ec);
  REQUIRE_FALSE(ec);
  return a.ino;
}

}  // namespace

TEST_CASE("export key is created once as a 32-byte trusted xattr and reused", "[fs][export]") {
  export_fixture f;
  unsigned char key1[64];
  ssize_t n = ::getxattr(f.dir.c_str(), export_root::key_xattr, key1, sizeof key1);
  REQUIRE(n == 32);
  export_root second(f.dir);
  unsigned char key2[64];
  REQUIRE(::getxattr(f.dir.c_str(), export_root::key_xattr, key2, sizeof key2) == 32);
  CHECK(std::memcmp(key1, key2, 32) == 0);
}

TEST_CASE("a corrupt key is a clear error", "[fs][export]") {
  export_fixture f;
  const char junk[5] = "abcd";
  REQUIRE(::setxattr(f.dir.c_str(), export_root::key_xattr, junk, 4, 0) == 0);
  try {
    export_root again(f.dir);
    FAIL("opened an export with a corrupt key");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()).find("corrupt filehandle key") != std::string::npos);
  }
}

TEST_CASE("max_file_size is the largest size a file of the export can have, found without a trace", "[fs][export]") {
  export_fixture f;
  const std::uint64_t max = f.exp.max_file_size();
  REQUIRE(max > 0);
  REQUIRE(max <= static_cast<std::uint64_t>(LLONG_MAX));
  const int fd = ::open(f.dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  CHECK(::ftruncate(fd, static_cast<off_t>(max)) == 0);
  if (max < static_cast<std::uint64_t>(LLONG_MAX)) {  // (tmpfs takes any size)
    CHECK(::ftruncate(fd, static_cast<off_t>(max + 1)) == -1);
    CHECK(errno == EFBIG);
  }
  ::close(fd);

  // The probe left nothing: no name, and the root's times are as they were.
  struct ::stat before {}, after {};
  REQUIRE(::stat(f.dir.c_str(), &before) == 0);
  export_root again(f.dir);
  CHECK(again.max_file_size() == max);
  REQUIRE(::stat(f.dir.c_str(), &after) == 0);
  CHECK(std::filesystem::is_empty(f.dir));
  CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
  CHECK(after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);

  // Under a file-size resource limit, the limit (never asking past it: no SIGXFSZ).
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const struct ::rlimit one_mib {1u << 20, 1u << 20};
    if (::setrlimit(RLIMIT_FSIZE, &one_mib) != 0) ::_exit(90);
    try {
      ::_exit(export_root(f.dir).max_file_size() == (1u << 20) ? 0 : 1);
    } catch (...) {
      ::_exit(2);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("opening a missing export directory throws", "[fs][export]") {
  export_fixture f;
  CHECK_THROWS_AS(export_root(f.dir / "nope"), std::system_error);
}

TEST_CASE("filehandles are stable across export_root instances", "[fs][fh]") {
  export_fixture f;
  std::error_code ec;
  object file = must_create(f.exp.root(), "file");
  object d = mkdir(f.exp.root(), "dir", 0755, ec);
  REQUIRE_FALSE(ec);

  auto fh_file = f.exp.fh_of(file, ec);
  REQUIRE_FALSE(ec);
  auto fh_dir = f.exp.fh_of(d, ec);
  REQUIRE_FALSE(ec);
  auto fh_root = f.exp.fh_of(f.exp.root(), ec);
  REQUIRE_FALSE(ec);
  CHECK(fh_file.size() <= export_root::max_fh_size);
  CHECK(fh_file.size() >= 22);
  CHECK(fh_file[0] == std::byte{1});
  CHECK(fh_file.size() == 22 + std::to_integer<std::size_t>(fh_file[1]));
  CHECK(fh_file != fh_dir);

  export_root other(f.dir);  // as after a restart of vnfsd
  CHECK(other.fh_of(file, ec) == fh_file);
  CHECK(other.fh_of(d, ec) == fh_dir);
  CHECK(other.fh_of(other.root(), ec) == fh_root);

  object r = other.resolve(fh_file, ec);
  REQUIRE_FALSE(ec);
  CHECK(r.type() == file_type::regular);
  CHECK(ino_of(r) == ino_of(file));
  object rd = other.resolve(fh_dir, ec);
  REQUIRE_FALSE(ec);
  CHECK(rd.type() == file_type::directory);
  CHECK(ino_of(rd) == ino_of(d));
  object rr = other.resolve(fh_root, ec);
  REQUIRE_FALSE(ec);
  CHECK(other.is_root(rr));
  CHECK(f.exp.is_root(rr));
  CHECK_FALSE(f.exp.is_root(rd));
}

TEST_CASE("an object remembers one handle per maker, shared by its clones", "[fs][fh]") {
  export_fixture f;
  std::error_code ec;
  object file = must_create(f.exp.root(), "file");
  const int maker_a = 0, maker_b = 0;
  CHECK(file.remembered_handle(&maker_a).empty());
  const std::vector<std::byte> fh{std::byte{1}, std::byte{2}, std::byte{3}};
  file.remember_handle(&maker_a, fh);
  CHECK(file.remembered_handle(&maker_a) == fh);
  CHECK(file.remembered_handle(&maker_b).empty());  // another export's key: not its handle
  object twin = file.clone(ec);
  REQUIRE_FALSE(ec);
  CHECK(twin.remembered_handle(&maker_a) == fh);
  object again = lookup(f.exp.root(), "file", ec);  // a new object of the same inode
  REQUIRE_FALSE(ec);
  CHECK(again.remembered_handle(&maker_a).empty());

  // What export_root remembers is the handle it makes, whichever way the object came.
  const auto made = f.exp.fh_of(again, ec);
  REQUIRE_FALSE(ec);
  CHECK(f.exp.fh_of(again, ec) == made);
  export_root other(f.dir);
  object resolved = other.resolve(made, ec);
  REQUIRE_FALSE(ec);
  CHECK(other.fh_of(resolved, ec) == made);
  CHECK(f.exp.fh_of(resolved, ec) == made);
}

TEST_CASE("handles of symlinks and special files resolve to the object itself", "[fs][fh]") {
  export_fixture f;
  std::error_code ec;
  object l = symlink(f.exp.root(), "l", "/etc/passwd", ec);
  REQUIRE_FALSE(ec);
  object p = mknod(f.exp.root(), "p", file_type::fifo, 0600, 0, 0, ec);
  REQUIRE_FALSE(ec);
  object rl = f.exp.resolve(f.exp.fh_of(l, ec), ec);
  REQUIRE_FALSE(ec);
  CHECK(rl.type() == file_type::symlink);
  CHECK(readlink(rl, ec) == "/etc/passwd");
  object rp = f.exp.resolve(f.exp.fh_of(p, ec), ec);
  REQUIRE_FALSE(ec);
  CHECK(rp.type() == file_type::fifo);
}

TEST_CASE("modified or malformed handles are bad handles", "[fs][fh]") {
  export_fixture f;
  std::error_code ec;
  object file = must_create(f.exp.root(), "file");
  const auto good = f.exp.fh_of(file, ec);
  REQUIRE_FALSE(ec);

  // Every single bit flip anywhere (version, length, type, kernel handle, MAC) is caught.
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[i] ^= std::byte(1u << bit);
      object o = f.exp.resolve(bad, ec);
      INFO("byte " << i << " bit " << bit);
      CHECK(ec == errc::bad_handle);
      CHECK_FALSE(o);
    }
  }
  auto shorter = good;
  shorter.pop_back();
  f.exp.resolve(shorter, ec);
  CHECK(ec == errc::bad_handle);
  auto longer = good;
  longer.push_back(std::byte{0});
  f.exp.resolve(longer, ec);
  CHECK(ec == errc::bad_handle);
  f.exp.resolve({}, ec);
  CHECK(ec == errc::bad_handle);
  std::vector<std::byte> huge(129, std::byte{0});
  f.exp.resolve(huge, ec);
  CHECK(ec == errc::bad_handle);
  CHECK(ec.message() == "not a filehandle of this export");
}

TEST_CASE("a handle from another export (other key) is a bad handle", "[fs][fh]") {
  export_fixture a;
  export_fixture b;
  std::error_code ec;
  object file = must_create(a.exp.root(), "file");
  auto fh = a.exp.fh_of(file, ec);
  REQUIRE_FALSE(ec);
  b.exp.resolve(fh, ec);
  CHECK(ec == errc::bad_handle);
}

TEST_CASE("a hand-made handle of a file outside the export is rejected", "[fs][fh][confinement]") {
  export_fixture f;
  std::ofstream(f.outside / "secret") << "secret";
  // The kernel handle of the outside file, wrapped in our format with a guessed MAC.
  alignas(struct file_handle) unsigned char storage[sizeof(struct file_handle) + MAX_HANDLE_SZ];
  auto* h = reinterpret_cast<struct file_handle*>(storage);
  h->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  REQUIRE(::name_to_handle_at(AT_FDCWD, (f.outside / "secret").c_str(), h, &mount_id, 0) == 0);
  std::vector<std::byte> fh(6 + h->handle_bytes + 16, std::byte{0x5a});
  fh[0] = std::byte{1};
  fh[1] = std::byte(h->handle_bytes);
  const auto t = static_cast<std::uint32_t>(h->handle_type);
  fh[2] = std::byte(t >> 24);
  fh[3] = std::byte(t >> 16);
  fh[4] = std::byte(t >> 8);
  fh[5] = std::byte(t);
  std::memcpy(fh.data() + 6, h->f_handle, h->handle_bytes);
  std::error_code ec;
  object o = f.exp.resolve(fh, ec);
  CHECK(ec == errc::bad_handle);
  CHECK_FALSE(o);
  // Same bytes with the MAC of another export: still rejected.
  export_fixture other;
  std::ofstream(other.dir / "x") << "x";
  object x = lookup(other.exp.root(), "x", ec);
  REQUIRE_FALSE(ec);
  auto xfh = other.exp.fh_of(x, ec);
  REQUIRE_FALSE(ec);
  f.exp.resolve(xfh, ec);
  CHECK(ec == errc::bad_handle);
}

TEST_CASE("the handle of a removed file is stale, not bad", "[fs][fh]") {
  export_fixture f;
  std::error_code ec;
  std::vector<std::byte> fh;
  {
    object file = must_create(f.exp.root(), "gone");
    fh = f.exp.fh_of(file, ec);
    REQUIRE_FALSE(ec);
  }
  object d = mkdir(f.exp.root(), "dgone", 0755, ec);
  auto dfh = f.exp.fh_of(d, ec);
  REQUIRE_FALSE(ec);
  d = object();

  remove(f.exp.root(), "gone", ec);
  REQUIRE_FALSE(ec);
  remove(f.exp.root(), "dgone", ec);
  REQUIRE_FALSE(ec);
  object o = f.exp.resolve(fh, ec);
  CHECK(ec == sys(ESTALE));
  CHECK_FALSE(o);
  f.exp.resolve(dfh, ec);
  CHECK(ec == sys(ESTALE));
}

TEST_CASE("a removed file still held open is stale too", "[fs][fh]") {
  export_fixture f;
  std::error_code ec;
  object file = must_create(f.exp.root(), "held");
  auto fh = f.exp.fh_of(file, ec);
  REQUIRE_FALSE(ec);
  remove(f.exp.root(), "held", ec);
  REQUIRE_FALSE(ec);
  f.exp.resolve(fh, ec);  // `file` keeps the inode alive
  CHECK(ec == sys(ESTALE));
}

TEST_CASE("a handle resolved just as its removed file's last close evicts the inode is stale",
          "[fs][fh]") {
  // Resolving a handle right after the last close of a removed file races the kernel's
  // eviction of the inode; ext4 then answers ENOMEM for a while. Every answer must still
  // be ESTALE (vnfsd once answered NFS4ERR_IO here). Two threads, as in vnfsd.
  export_fixture f;
  constexpr int per_thread = 5000;
  std::atomic<int> stale{0};
  std::mutex m;
  std::map<std::string, int> other;  // error message -> count
  auto work = [&](int t) {
    for (int i = 0; i < per_thread; ++i) {
      std::error_code ec;
      const std::string name = "evict" + std::to_string(t) + "_" + std::to_string(i);
      std::vector<std::byte> fh;
      {
        object file = must_create(f.exp.root(), name.c_str());
        fh = f.exp.fh_of(file, ec);
        if (!ec) remove(f.exp.root(), name, ec);
        if (ec) {
          std::lock_guard lk(m);
          ++other["setup: " + ec.message()];
          continue;
        }
      }  // the last close of the removed file
      f.exp.resolve(fh, ec);
      if (ec == sys(ESTALE)) {
        ++stale;
      } else {
        std::lock_guard lk(m);
        ++other[ec ? ec.message() : std::string("resolved")];
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  std::string answers;
  for (const auto& [what, n] : other) answers += what + ": " + std::to_string(n) + "; ";
  INFO("answers other than ESTALE: " << answers);
  CHECK(other.empty());
  CHECK(stale.load() == 2 * per_thread);
}

namespace {

// The descriptors this process has open.
std::size_t open_descriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

}  // namespace

TEST_CASE("a resolved handle's object stays open until removed through the export or swept", "[fs][fh]") {
  export_fixture f;
  std::error_code ec;
  std::vector<std::byte> fh;
  {
    object file = must_create(f.exp.root(), "kept");
    fh = f.exp.fh_of(file, ec);
    REQUIRE_FALSE(ec);
  }
  const std::size_t before = open_descriptors();
  int fd = -1;
  {
    object a = f.exp.resolve(fh, ec);
    REQUIRE_FALSE(ec);
    fd = a.fd();
  }
  CHECK(open_descriptors() == before + 1);  // kept by the export
  {
    object b = f.exp.resolve(fh, ec);  // the same object again, no new descriptor
    REQUIRE_FALSE(ec);
    CHECK(b.fd() == fd);
  }
  // Removing the name through the export lets go of it at once: the handle is stale, and
  // the removed file holds no descriptor (hence no space).
  const auto release = f.exp.before_unlinking(f.exp.root(), "kept");
  remove(f.exp.root(), "kept", ec);
  REQUIRE_FALSE(ec);
  f.exp.after_unlinking(release);
  CHECK(open_descriptors() == before);
  f.exp.resolve(fh, ec);
  CHECK(ec == sys(ESTALE));
  CHECK(open_descriptors() == before);

  // Unused for two sweeps, an object is let go of; used between them, it is kept.
  object other = must_create(f.exp.root(), "other");
  auto other_fh = f.exp.fh_of(other, ec);
  other = object();
  REQUIRE_FALSE(ec);
  f.exp.resolve(other_fh, ec);
  REQUIRE_FALSE(ec);
  CHECK(open_descriptors() == before + 1);
  f.exp.sweep_handles();
  f.exp.resolve(other_fh, ec);
  f.exp.sweep_handles();
  CHECK(open_descriptors() == before + 1);
  f.exp.sweep_handles();
  CHECK(open_descriptors() == before);
}

TEST_CASE("names are single components", "[fs][confinement]") {
  CHECK(check_name("") == errc::empty_name);
  CHECK(check_name(".") == errc::bad_name);
  CHECK(check_name("..") == errc::bad_name);
  CHECK(check_name("a/b") == errc::bad_name);
  CHECK(check_name("/") == errc::bad_name);
  CHECK(check_name(std::string_view("a\0b", 3)) == errc::bad_name);
  CHECK_FALSE(check_name("..."));
  CHECK_FALSE(check_name(".hidden"));
  CHECK_FALSE(check_name("a b"));

  export_fixture f;
  std::error_code ec;
  object d = mkdir(f.exp.root(), "a", 0755, ec);
  REQUIRE_FALSE(ec);
  must_create(d, "b");
  const auto& root = f.exp.root();
  CHECK_FALSE(lookup(root, "..", ec));
  CHECK(ec == errc::bad_name);
  CHECK_FALSE(lookup(root, ".", ec));
  CHECK(ec == errc::bad_name);
  CHECK_FALSE(lookup(root, "a/b", ec));
  CHECK(ec == errc::bad_name);
  CHECK_FALSE(lookup(root, std::string_view("a\0b", 3), ec));
  CHECK(ec == errc::bad_name);
  CHECK_FALSE(lookup(root, "", ec));
  CHECK(ec == errc::empty_name);
  CHECK(make_error_code(errc::empty_name).category().name() == std::string("vnfs.server.fs"));

  // The same checks guard every name-taking operation.
  create(root, "..", {}, ec);
  CHECK(ec == errc::bad_name);
  mkdir(root, "x/y", 0755, ec);
  CHECK(ec == errc::bad_name);
  symlink(root, "", "t", ec);
  CHECK(ec == errc::empty_name);
  remove(root, "..", ec);
  CHECK(ec == errc::bad_name);
  rename(root, "a", root, "../a", ec);
  CHECK(ec == errc::bad_name);
  rename(root, ".", root, "z", ec);
  CHECK(ec == errc::bad_name);
  link(lookup(d, "b", ec), root, "../b", ec);
  CHECK(ec == errc::bad_name);
  CHECK(std::filesystem::exists(f.dir / "a"));
}

TEST_CASE("symlinks inside the export are never followed", "[fs][confinement]") {
  export_fixture f;
  std::ofstream(f.outside / "target") << "outside data";
  std::error_code ec;
  const auto& root = f.exp.root();
  REQUIRE(::symlink("/etc", (f.dir / "etc").c_str()) == 0);
  REQUIRE(::symlink("../../..", (f.dir / "up").c_str()) == 0);
  REQUIRE(::symlink((f.outside / "target").c_str(), (f.dir / "tfile").c_str()) == 0);
  REQUIRE(::symlink((f.outside / "newfile").c_str(), (f.dir / "dangling").c_str()) == 0);

  for (const char* name : {"etc", "up", "tfile", "dangling"}) {
    INFO(name);
    object l = lookup(root, name, ec);
    REQUIRE_FALSE(ec);
    CHECK(l.type() == file_type::symlink);
    // Cannot be used as a directory...
    CHECK_FALSE(lookup(l, "passwd", ec));
    CHECK(ec == sys(ENOTDIR));
    // ... nor as a file.
    std::byte buf[16];
    read(l, 0, buf, ec);
    CHECK(ec == sys(ELOOP));
    write(l, 0, buf, stability::unstable, ec);
    CHECK(ec == sys(ELOOP));
    append(l, buf, stability::unstable, ec);
    CHECK(ec == sys(ELOOP));
    setattr(l, setattr_args{.size = 0}, ec);
    CHECK(ec == sys(ELOOP));
    f.exp.parent(l, ec);
    CHECK(ec == sys(ENOTDIR));
    // Opening by name does not follow it either.
    create(root, name, {.mode = create_mode::unchecked}, ec);
    CHECK(ec == sys(ELOOP));
    create(root, name, {.mode = create_mode::unchecked, .truncate = true}, ec);
    CHECK(ec == sys(ELOOP));
    create(root, name, {.mode = create_mode::guarded}, ec);
    CHECK(ec == sys(EEXIST));
    create(root, name, {.mode = create_mode::exclusive}, ec);
    CHECK(ec == sys(EEXIST));
  }
  CHECK_FALSE(std::filesystem::exists(f.outside / "newfile"));
  std::ifstream in(f.outside / "target");
  std::string s;
  std::getline(in, s);
  CHECK(s == "outside data");
  CHECK(readlink(lookup(root, "up", ec), ec) == "../../..");
}

TEST_CASE("parent() walks up to the root and stops there", "[fs][confinement]") {
  export_fixture f;
  std::error_code ec;
  object a = mkdir(f.exp.root(), "a", 0755, ec);
  object b = mkdir(a, "b", 0755, ec);
  REQUIRE_FALSE(ec);
  object pb = f.exp.parent(b, ec);
  REQUIRE_FALSE(ec);
  CHECK(ino_of(pb) == ino_of(a));
  object pa = f.exp.parent(pb, ec);
  REQUIRE_FALSE(ec);
  CHECK(f.exp.is_root(pa));
  object pr = f.exp.parent(pa, ec);
  CHECK(ec == sys(ENOENT));
  CHECK_FALSE(pr);
  f.exp.parent(f.exp.root(), ec);
  CHECK(ec == sys(ENOENT));
  // A resolved root handle is the root too.
  object rr = f.exp.resolve(f.exp.fh_of(f.exp.root(), ec), ec);
  REQUIRE_FALSE(ec);
  f.exp.parent(rr, ec);
  CHECK(ec == sys(ENOENT));
  object file = must_create(a, "file");
  f.exp.parent(file, ec);
  CHECK(ec == sys(ENOTDIR));
}

TEST_CASE("statfs reports the export's file system", "[fs][export]") {
  export_fixture f;
  std::error_code ec;
  fs_stats s = f.exp.statfs(ec);
  REQUIRE_FALSE(ec);
  struct statvfs sv {};
  REQUIRE(::statvfs(f.dir.c_str(), &sv) == 0);
  CHECK(s.bytes_total == std::uint64_t(sv.f_blocks) * sv.f_frsize);
  CHECK(s.files_total == sv.f_files);
  CHECK(s.bytes_total > 0);
  CHECK(s.bytes_free <= s.bytes_total);
  CHECK(s.bytes_avail <= s.bytes_free);
  CHECK(s.files_free <= s.files_total);
  CHECK(s.name_max == sv.f_namemax);
}

TEST_CASE("clone gives an object of the same inode that outlives the original", "[fs][object]") {
  export_fixture f;
  std::error_code ec;
  object a = must_create(f.exp.root(), "a");
  object c = a.clone(ec);
  REQUIRE_FALSE(ec);
  CHECK(c.fd() == a.fd());  // shared: no second descriptor
  CHECK(c.type() == file_type::regular);
  a = object();
  CHECK(ino_of(c) != 0);
  CHECK(file_type_of(S_IFDIR | 0755) == file_type::directory);
  CHECK(static_cast<int>(file_type::fifo) == 7);  // nfs_ftype4 NF4FIFO
}

TEST_CASE("an export on a file system without xattrs is refused clearly", "[fs][export]") {
  try {
    export_root bad("/proc/self");
    FAIL("opened an export without xattr support");
  } catch (const std::system_error& e) {
    CHECK(e.code() == sys(EOPNOTSUPP));
    CHECK(std::string(e.what()).find("refuses the extended attribute trusted.vnfs.fhkey") !=
          std::string::npos);
  }
}

TEST_CASE("mount points inside the export are not crossed", "[fs][confinement]") {
  export_fixture f;
  std::filesystem::create_directory(f.dir / "mnt");
  std::ofstream(f.outside / "other") << "x";
  // A child in its own mount namespace bind-mounts "outside" onto export/mnt, so the host's
  // mounts stay untouched. It reports through its exit code: 0 = all checks held.
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 0;
    try {
      if (::unshare(CLONE_NEWNS) != 0) ::_exit(90);
      if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(91);
      if (::mount(f.outside.c_str(), (f.dir / "mnt").c_str(), nullptr, MS_BIND, nullptr) != 0)
        ::_exit(92);
      export_root exp(f.dir);
      std::error_code ec;
      object m = lookup(exp.root(), "mnt", ec);
      if (ec != sys(EXDEV) || m) code |= 1;
      unique_fd raw(::open((f.dir / "mnt").c_str(), O_PATH | O_DIRECTORY));
      object across = object::from_fd(std::move(raw), ec);
      if (ec) code |= 2;
      exp.fh_of(across, ec);
      if (ec != sys(EXDEV)) code |= 4;
      auto other = lookup(across, "other", ec);  // (a hand-made object on the other mount)
      exp.fh_of(other, ec);
      if (ec != sys(EXDEV)) code |= 8;
    } catch (...) {
      code |= 64;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a directory moved out of the export turns stale", "[fs][confinement]") {
  export_fixture f;
  std::error_code ec;
  object d = mkdir(f.exp.root(), "d", 0755, ec);
  object inner = mkdir(d, "inner", 0755, ec);
  REQUIRE_FALSE(ec);
  auto fh = f.exp.fh_of(d, ec);
  auto inner_fh = f.exp.fh_of(inner, ec);
  REQUIRE_FALSE(ec);
  d = object();
  inner = object();

  std::filesystem::rename(f.dir / "d", f.outside / "d");  // by a local process
  f.exp.resolve(fh, ec);
  CHECK(ec == sys(ESTALE));
  f.exp.resolve(inner_fh, ec);
  CHECK(ec == sys(ESTALE));

  std::filesystem::rename(f.outside / "d", f.dir / "back");
  object again = f.exp.resolve(inner_fh, ec);
  REQUIRE_FALSE(ec);
  CHECK(again.is_directory());

  // A sibling whose name merely starts with the export's name is outside too.
  std::filesystem::create_directory(f.tree.path() / "export2");
  std::filesystem::rename(f.dir / "back", f.tree.path() / "export2" / "d");
  f.exp.resolve(fh, ec);
  CHECK(ec == sys(ESTALE));
}
