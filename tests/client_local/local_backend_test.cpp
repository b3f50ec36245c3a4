// The file:// backend through the detail::backend interface, on scratch directories: results,
// errno values, confinement (symlinks never followed), paging, stats, registered memory,
// close and close_all.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <latch>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/backend.hpp"
#include "client/local/local_backend.hpp"
#include "client/memory/registration.hpp"
#include "vnfs/test/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace vnfs;

namespace {

struct outcome {
  std::error_code ec;
  std::size_t bytes = 0;
  std::thread::id thread;
};

// Starts one backend call and waits for its completion.
template <class Start>
outcome call(Start start) {
  std::promise<outcome> p;
  auto fut = p.get_future();
  start([&p](std::error_code ec, std::size_t n) { p.set_value({ec, n, std::this_thread::get_id()}); });
  return fut.get();
}

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}
std::string string_of(std::span<const std::byte> b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const fs::path& p, std::string_view s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

std::size_t open_fd_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

bool is_system(const std::error_code& ec, int e) { return ec.category() == std::system_category() && ec.value() == e; }

struct fixture {
  test::temp_dir dir{"vnfs-local"};
  client_options options;
  std::unique_ptr<detail::backend> b;

  explicit fixture(client_options o = {}) : options(o), b(detail::make_local_backend(dir.path(), options)) {}

  outcome open(const std::string& p, int flags, std::uint32_t mode, file& f) {
    return call([&](detail::done_fn d) { b->open(p, flags, mode, &f, std::move(d)); });
  }
  file open_ok(const std::string& p, int flags, std::uint32_t mode = 0644) {
    file f;
    auto r = open(p, flags, mode, f);
    REQUIRE_FALSE(r.ec);
    REQUIRE(f);
    return f;
  }
  outcome close(const file& f) {
    return call([&](detail::done_fn d) { b->close(f, std::move(d)); });
  }
  outcome pwrite(const file& f, std::uint64_t off, std::string_view s) {
    auto data = bytes_of(s);
    return call([&](detail::done_fn d) { b->write(f, off, detail::write_source{{}, data}, std::move(d)); });
  }
  outcome pread(const file& f, std::uint64_t off, std::size_t len, std::string& out) {
    std::vector<std::byte> buf(len);
    auto r = call([&](detail::done_fn d) { b->read(f, off, detail::read_target{{}, buf}, std::move(d)); });
    out = string_of(std::span(buf).first(r.bytes));
    return r;
  }
  outcome stat(const std::string& p, file_stat& st) {
    return call([&](detail::done_fn d) { b->stat(p, &st, std::move(d)); });
  }
  outcome fstat(const file& f, file_stat& st) {
    return call([&](detail::done_fn d) { b->fstat(f, &st, std::move(d)); });
  }
  outcome fsync(const file& f) {
    return call([&](detail::done_fn d) { b->fsync(f, std::move(d)); });
  }
  outcome truncate(const std::string& p, std::uint64_t size) {
    return call([&](detail::done_fn d) { b->truncate(p, size, std::move(d)); });
  }
  outcome mkdir(const std::string& p, std::uint32_t mode = 0755) {
    return call([&](detail::done_fn d) { b->mkdir(p, mode, std::move(d)); });
  }
  outcome unlink(const std::string& p) {
    return call([&](detail::done_fn d) { b->unlink(p, std::move(d)); });
  }
  outcome rmdir(const std::string& p) {
    return call([&](detail::done_fn d) { b->rmdir(p, std::move(d)); });
  }
  outcome rename(const std::string& a, const std::string& c) {
    return call([&](detail::done_fn d) { b->rename(a, c, std::move(d)); });
  }
  outcome link(const std::string& a, const std::string& c) {
    return call([&](detail::done_fn d) { b->link(a, c, std::move(d)); });
  }
  outcome symlink(const std::string& target, const std::string& p) {
    return call([&](detail::done_fn d) { b->symlink(target, p, std::move(d)); });
  }
  outcome readlink(const std::string& p, std::string& out) {
    return call([&](detail::done_fn d) { b->readlink(p, &out, std::move(d)); });
  }
  outcome readdir(dir_stream& ds) {
    return call([&](detail::done_fn d) { b->readdir(&ds, std::move(d)); });
  }
};

// Process umask 022 for the tests that check exact modes (restored after).
struct umask_guard {
  mode_t old;
  explicit umask_guard(mode_t m) : old(::umask(m)) {}
  ~umask_guard() { ::umask(old); }
};

}  // namespace

TEST_CASE("local: write then read the same bytes; stats count them as direct payload", "[client_local]") {
  fixture fx;
  file f = fx.open_ok("data", O_RDWR | O_CREAT);
  CHECK(detail::internals::state_of(f)->path == "data");

  auto w = fx.pwrite(f, 0, "hello, world");
  CHECK_FALSE(w.ec);
  CHECK(w.bytes == 12);
  w = fx.pwrite(f, 100, "tail");  // a hole between
  CHECK(w.bytes == 4);

  std::string got;
  auto r = fx.pread(f, 7, 5, got);
  CHECK_FALSE(r.ec);
  CHECK(r.bytes == 5);
  CHECK(got == "world");
  r = fx.pread(f, 98, 10, got);  // short: ends at end of file
  CHECK(r.bytes == 6);
  CHECK(got == std::string("\0\0tail", 6));
  r = fx.pread(f, 104, 10, got);  // at end of file
  CHECK_FALSE(r.ec);
  CHECK(r.bytes == 0);

  CHECK(slurp(fx.dir / "data").substr(0, 12) == "hello, world");
  CHECK(fs::file_size(fx.dir / "data") == 104);

  auto s = fx.b->stats();
  CHECK(s.payload_bytes_direct == 12 + 4 + 5 + 6);
  CHECK(s.payload_bytes_copied == 0);
  CHECK(s.compounds == 0);
  CHECK(s.operations == 0);
  CHECK(s.bytes_sent == 0);
  CHECK(s.bytes_received == 0);

  CHECK_FALSE(fx.fsync(f).ec);
  file_stat st;
  CHECK_FALSE(fx.fstat(f, st).ec);
  CHECK(st.size == 104);
  CHECK(st.type == file_type::regular);
  CHECK_FALSE(fx.close(f).ec);
}

TEST_CASE("local: done runs on a worker thread", "[client_local]") {
  fixture fx;
  file_stat st;
  auto r = fx.stat("", st);
  CHECK_FALSE(r.ec);
  CHECK(r.thread != std::this_thread::get_id());
  CHECK(st.type == file_type::directory);
}

TEST_CASE("local: open flags", "[client_local]") {
  fixture fx;
  spit(fx.dir / "f", "0123456789");
  file f;

  SECTION("missing file without O_CREAT") {
    CHECK(is_system(fx.open("nope", O_RDONLY, 0, f).ec, ENOENT));
    CHECK_FALSE(f);
  }
  SECTION("O_CREAT | O_EXCL on an existing file") {
    CHECK(is_system(fx.open("f", O_RDWR | O_CREAT | O_EXCL, 0644, f).ec, EEXIST));
    CHECK(slurp(fx.dir / "f") == "0123456789");
  }
  SECTION("O_CREAT on an existing file opens it unchanged") {
    REQUIRE(::chmod((fx.dir / "f").c_str(), 0604) == 0);
    f = fx.open_ok("f", O_RDWR | O_CREAT, 0600);
    CHECK(slurp(fx.dir / "f") == "0123456789");
    struct stat st {};
    REQUIRE(::stat((fx.dir / "f").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0604);  // the mode is only for a new file
  }
  SECTION("O_TRUNC") {
    f = fx.open_ok("f", O_WRONLY | O_TRUNC);
    CHECK(fs::file_size(fx.dir / "f") == 0);
  }
  SECTION("O_APPEND writes at the end whatever the offset") {
    f = fx.open_ok("f", O_WRONLY | O_APPEND);
    CHECK(fx.pwrite(f, 0, "ab").bytes == 2);
    CHECK(slurp(fx.dir / "f") == "0123456789ab");
  }
  SECTION("O_RDONLY refuses writes, O_WRONLY refuses reads") {
    f = fx.open_ok("f", O_RDONLY);
    CHECK(is_system(fx.pwrite(f, 0, "x").ec, EBADF));
    file g = fx.open_ok("f", O_WRONLY);
    std::string got;
    CHECK(is_system(fx.pread(g, 0, 4, got).ec, EBADF));
    CHECK(slurp(fx.dir / "f") == "0123456789");
  }
  SECTION("bad flags") {
    CHECK(is_system(fx.open("f", O_ACCMODE, 0, f).ec, EINVAL));
    CHECK(is_system(fx.open("f", O_RDONLY | O_DIRECTORY, 0, f).ec, EINVAL));
    CHECK(is_system(fx.open("f", O_RDONLY | O_PATH, 0, f).ec, EINVAL));
    CHECK_FALSE(f);
  }
  SECTION("in a missing directory") {
    CHECK(is_system(fx.open("no/f", O_RDWR | O_CREAT, 0644, f).ec, ENOENT));
  }
  SECTION("through a regular file") {
    CHECK(is_system(fx.open("f/g", O_RDWR | O_CREAT, 0644, f).ec, ENOTDIR));
  }
}

TEST_CASE("local: open refuses directories, symlinks and other non-regular files", "[client_local]") {
  fixture fx;
  fs::create_directory(fx.dir / "d");
  REQUIRE(::mkfifo((fx.dir / "fifo").c_str(), 0644) == 0);
  spit(fx.dir / "f", "x");
  fs::create_symlink("f", fx.dir / "ln");
  file f;
  CHECK(is_system(fx.open("d", O_RDONLY, 0, f).ec, EISDIR));
  CHECK(is_system(fx.open("", O_RDONLY, 0, f).ec, EISDIR));
  CHECK(is_system(fx.open("ln", O_RDONLY, 0, f).ec, ELOOP));
  CHECK(is_system(fx.open("ln", O_RDWR | O_CREAT, 0644, f).ec, ELOOP));
  // A FIFO would block an open for reading until a writer comes: it must not be opened at all.
  CHECK(is_system(fx.open("fifo", O_RDONLY, 0, f).ec, EINVAL));
  CHECK(is_system(fx.open("fifo", O_WRONLY | O_CREAT, 0644, f).ec, EINVAL));
  CHECK_FALSE(f);
}

TEST_CASE("local: new files and directories get exactly the requested mode", "[client_local]") {
  umask_guard um(022);
  fixture fx;
  file f = fx.open_ok("f", O_RDWR | O_CREAT | O_EXCL, 0666);
  file_stat st;
  REQUIRE_FALSE(fx.stat("f", st).ec);
  CHECK(st.mode == 0666);
  file g = fx.open_ok("g", O_WRONLY | O_CREAT, 0640);
  REQUIRE_FALSE(fx.stat("g", st).ec);
  CHECK(st.mode == 0640);
  // No read permission, opened read-write: creation still succeeds (the fd was made by create).
  file h = fx.open_ok("h", O_RDWR | O_CREAT, 0000);
  REQUIRE_FALSE(fx.stat("h", st).ec);
  CHECK(st.mode == 0000);

  REQUIRE_FALSE(fx.mkdir("d", 0777).ec);
  REQUIRE_FALSE(fx.stat("d", st).ec);
  CHECK(st.type == file_type::directory);
  CHECK(st.mode == 0777);
  REQUIRE_FALSE(fx.mkdir("d/e", 0700).ec);
  REQUIRE_FALSE(fx.stat("d/e", st).ec);
  CHECK(st.mode == 0700);
}

TEST_CASE("local: stat reports what lstat does", "[client_local]") {
  fixture fx;
  spit(fx.dir / "f", std::string(5000, 'a'));
  fs::create_directory(fx.dir / "d");
  fs::create_symlink("some/target", fx.dir / "ln");
  REQUIRE(::mkfifo((fx.dir / "fifo").c_str(), 0600) == 0);
  fs::create_hard_link(fx.dir / "f", fx.dir / "f2");

  struct expect {
    const char* path;
    file_type type;
  };
  for (auto [path, type] : {expect{"f", file_type::regular}, expect{"d", file_type::directory},
                            expect{"ln", file_type::symlink}, expect{"fifo", file_type::fifo},
                            expect{"", file_type::directory}}) {
    INFO(path);
    file_stat st;
    REQUIRE_FALSE(fx.stat(path, st).ec);
    struct stat ls {};
    REQUIRE(::lstat((fx.dir / path).c_str(), &ls) == 0);
    CHECK(st.type == type);
    CHECK(st.mode == (ls.st_mode & 07777));
    CHECK(st.nlink == ls.st_nlink);
    CHECK(st.uid == ls.st_uid);
    CHECK(st.gid == ls.st_gid);
    CHECK(st.size == static_cast<std::uint64_t>(ls.st_size));
    CHECK(st.space_used == static_cast<std::uint64_t>(ls.st_blocks) * 512);
    CHECK(st.fileid == ls.st_ino);
    CHECK(st.mtime.tv_sec == ls.st_mtim.tv_sec);
    CHECK(st.mtime.tv_nsec == ls.st_mtim.tv_nsec);
    CHECK(st.atime.tv_sec == ls.st_atim.tv_sec);
    CHECK(st.ctime.tv_nsec == ls.st_ctim.tv_nsec);
    CHECK(st.change == static_cast<std::uint64_t>(ls.st_ctim.tv_sec) * 1'000'000'000u +
                           static_cast<std::uint64_t>(ls.st_ctim.tv_nsec));
  }
  file_stat st;
  REQUIRE_FALSE(fx.stat("f", st).ec);
  CHECK(st.nlink == 2);
  CHECK(st.size == 5000);
  REQUIRE_FALSE(fx.stat("ln", st).ec);
  CHECK(st.size == std::string("some/target").size());
  CHECK(is_system(fx.stat("missing", st).ec, ENOENT));
  CHECK(is_system(fx.stat("f/x", st).ec, ENOTDIR));
}

TEST_CASE("local: paths that are not normalized are refused", "[client_local]") {
  fixture fx;
  fs::create_directory(fx.dir / "d");
  file_stat st;
  file f;
  for (const char* p : {"..", "d/..", "d/../..", ".", "d/.", "/d", "d/", "d//x", "../x"}) {
    INFO(p);
    CHECK(is_system(fx.stat(p, st).ec, EINVAL));
    CHECK(is_system(fx.open(p, O_RDWR | O_CREAT, 0644, f).ec, EINVAL));
    CHECK(is_system(fx.mkdir(p).ec, EINVAL));
  }
  CHECK(is_system(fx.rename("d", "../d").ec, EINVAL));
  CHECK(is_system(fx.link("d", "../x").ec, EINVAL));
  dir_stream ds{.path = ".."};
  CHECK(is_system(fx.readdir(ds).ec, EINVAL));
  CHECK(fs::exists(fx.dir / "d"));
}

/// For its scope, file:// resolves paths by the O_NOFOLLOW walk (walk) or by openat2; openat2
/// again afterwards.
struct resolution_scope {
  explicit resolution_scope(bool walk) { detail::set_local_resolution_walk(walk); }
  ~resolution_scope() { detail::set_local_resolution_walk(false); }
  resolution_scope(const resolution_scope&) = delete;
  resolution_scope& operator=(const resolution_scope&) = delete;
};

TEST_CASE("local: symlinks are never followed, so none leads out of the root", "[client_local]") {
  // Both ways of resolving: openat2, and the walk used where openat2 is missing.
  const bool walk = GENERATE(false, true);
  resolution_scope resolving(walk);
  INFO("walk: " << walk);

  test::temp_dir outside("vnfs-outside");
  spit(outside / "secret", "secret");
  fs::create_directory(outside / "sub");
  fixture fx;
  fs::create_directory(fx.dir / "in");
  spit(fx.dir / "in" / "f", "inside");
  fs::create_symlink(outside.path(), fx.dir / "out");               // to a directory outside
  fs::create_symlink(outside / "secret", fx.dir / "secret");         // to a file outside
  fs::create_symlink("in", fx.dir / "rel");                           // relative, inside
  fs::create_symlink("../" + outside.path().filename().string(), fx.dir / "up");

  file f;
  file_stat st;
  std::string s;
  CHECK(is_system(fx.open("secret", O_RDONLY, 0, f).ec, ELOOP));
  CHECK(is_system(fx.open("secret", O_WRONLY | O_TRUNC, 0, f).ec, ELOOP));
  CHECK(is_system(fx.open("out/secret", O_RDONLY, 0, f).ec, ELOOP));
  CHECK(is_system(fx.open("out/new", O_RDWR | O_CREAT, 0644, f).ec, ELOOP));
  CHECK(is_system(fx.open("rel/f", O_RDONLY, 0, f).ec, ELOOP));  // even inside the root
  CHECK(is_system(fx.open("up/secret", O_RDONLY, 0, f).ec, ELOOP));
  CHECK_FALSE(f);
  CHECK(is_system(fx.stat("out/secret", st).ec, ELOOP));
  CHECK(is_system(fx.stat("out/sub", st).ec, ELOOP));
  CHECK(is_system(fx.truncate("secret", 0).ec, ELOOP));
  CHECK(is_system(fx.truncate("out/secret", 0).ec, ELOOP));
  CHECK(is_system(fx.mkdir("out/d").ec, ELOOP));
  CHECK(is_system(fx.symlink("x", "out/ln").ec, ELOOP));
  CHECK(is_system(fx.unlink("out/secret").ec, ELOOP));
  CHECK(is_system(fx.rmdir("out/sub").ec, ELOOP));
  CHECK(is_system(fx.rename("out/secret", "stolen").ec, ELOOP));
  CHECK(is_system(fx.rename("in/f", "out/planted").ec, ELOOP));
  CHECK(is_system(fx.link("out/secret", "stolen").ec, ELOOP));
  CHECK(is_system(fx.readlink("out/x", s).ec, ELOOP));
  dir_stream ds{.path = "out"};
  CHECK(is_system(fx.readdir(ds).ec, ELOOP));
  CHECK(ds.entries.empty());
  dir_stream ds2{.path = "rel"};
  CHECK(is_system(fx.readdir(ds2).ec, ELOOP));

  // The link itself is what stat, readlink, link, rename and unlink see.
  REQUIRE_FALSE(fx.stat("secret", st).ec);
  CHECK(st.type == file_type::symlink);
  REQUIRE_FALSE(fx.readlink("secret", s).ec);
  CHECK(s == (outside / "secret").string());
  REQUIRE_FALSE(fx.link("secret", "secret2").ec);
  REQUIRE_FALSE(fx.stat("secret2", st).ec);
  CHECK(st.type == file_type::symlink);
  REQUIRE_FALSE(fx.rename("out", "out2").ec);
  REQUIRE_FALSE(fx.unlink("out2").ec);
  REQUIRE_FALSE(fx.unlink("secret").ec);
  REQUIRE_FALSE(fx.unlink("secret2").ec);

  // Nothing outside changed.
  CHECK(slurp(outside / "secret") == "secret");
  std::set<std::string> names;
  for (auto& e : fs::directory_iterator(outside.path())) names.insert(e.path().filename().string());
  CHECK(names == std::set<std::string>{"secret", "sub"});
  CHECK(fs::is_empty(outside / "sub"));
  CHECK_FALSE(fs::exists(fx.dir / "stolen"));
}

TEST_CASE("local: walk and openat2 agree on non-directories in the path", "[client_local]") {
  const bool walk = GENERATE(false, true);
  resolution_scope resolving(walk);
  INFO("walk: " << walk);
  fixture fx;
  spit(fx.dir / "f", "x");
  fs::create_directory(fx.dir / "d");
  fs::create_directory(fx.dir / "d" / "e");
  file_stat st;
  CHECK(is_system(fx.stat("f/x", st).ec, ENOTDIR));
  CHECK(is_system(fx.stat("nope/x", st).ec, ENOENT));
  CHECK_FALSE(fx.stat("d/e", st).ec);
  CHECK(st.type == file_type::directory);
  CHECK(is_system(fx.truncate("d/e", 0).ec, EISDIR));
  dir_stream ds{.path = "f"};
  CHECK(is_system(fx.readdir(ds).ec, ENOTDIR));
  dir_stream de{.path = "d"};
  REQUIRE_FALSE(fx.readdir(de).ec);
  REQUIRE(de.entries.size() == 1);
  CHECK(de.entries[0].name == "e");
}

TEST_CASE("local: namespace operations", "[client_local]") {
  fixture fx;
  spit(fx.dir / "f", "content");
  REQUIRE_FALSE(fx.mkdir("d").ec);
  CHECK(fs::is_directory(fx.dir / "d"));
  CHECK(is_system(fx.mkdir("d").ec, EEXIST));
  CHECK(is_system(fx.mkdir("").ec, EEXIST));
  CHECK(is_system(fx.mkdir("x/y").ec, ENOENT));

  REQUIRE_FALSE(fx.rename("f", "d/g").ec);
  CHECK_FALSE(fs::exists(fx.dir / "f"));
  CHECK(slurp(fx.dir / "d" / "g") == "content");
  CHECK(is_system(fx.rename("f", "h").ec, ENOENT));

  REQUIRE_FALSE(fx.link("d/g", "h").ec);
  file_stat st;
  REQUIRE_FALSE(fx.stat("h", st).ec);
  CHECK(st.nlink == 2);
  CHECK(is_system(fx.link("d/g", "h").ec, EEXIST));
  CHECK(is_system(fx.link("d", "d2").ec, EPERM));  // no hard links to directories

  REQUIRE_FALSE(fx.symlink("d/g", "s").ec);
  std::string target;
  REQUIRE_FALSE(fx.readlink("s", target).ec);
  CHECK(target == "d/g");
  std::string long_target(3000, 'x');
  REQUIRE_FALSE(fx.symlink(long_target, "long").ec);
  REQUIRE_FALSE(fx.readlink("long", target).ec);
  CHECK(target == long_target);
  CHECK(is_system(fx.readlink("h", target).ec, EINVAL));  // not a link
  CHECK(is_system(fx.readlink("", target).ec, EINVAL));
  CHECK(is_system(fx.symlink("", "empty").ec, EINVAL));
  CHECK(is_system(fx.symlink("x", "s").ec, EEXIST));

  CHECK(is_system(fx.rmdir("d").ec, ENOTEMPTY));
  CHECK(is_system(fx.unlink("d").ec, EISDIR));
  CHECK(is_system(fx.rmdir("h").ec, ENOTDIR));
  REQUIRE_FALSE(fx.unlink("d/g").ec);
  REQUIRE_FALSE(fx.rmdir("d").ec);
  CHECK_FALSE(fs::exists(fx.dir / "d"));
  CHECK(is_system(fx.unlink("d/g").ec, ENOENT));
  // The root itself cannot be removed or renamed.
  CHECK(fx.rmdir("").ec);
  CHECK(fx.unlink("").ec);
  CHECK(fx.rename("", "r").ec);
  CHECK(fs::is_directory(fx.dir.path()));
}

TEST_CASE("local: truncate", "[client_local]") {
  fixture fx;
  spit(fx.dir / "f", "0123456789");
  REQUIRE_FALSE(fx.truncate("f", 4).ec);
  CHECK(slurp(fx.dir / "f") == "0123");
  REQUIRE_FALSE(fx.truncate("f", 6).ec);
  CHECK(slurp(fx.dir / "f") == std::string("0123\0\0", 6));
  fs::create_directory(fx.dir / "d");
  CHECK(is_system(fx.truncate("d", 0).ec, EISDIR));
  CHECK(is_system(fx.truncate("missing", 0).ec, ENOENT));
  REQUIRE(::mkfifo((fx.dir / "fifo").c_str(), 0644) == 0);
  CHECK(fx.truncate("fifo", 0).ec);  // refused without blocking (ENXIO: no reader, or EINVAL)
}

TEST_CASE("local: readdir pages through every entry once", "[client_local]") {
  fixture fx;
  fs::create_directory(fx.dir / "d");
  const std::size_t n = GENERATE(std::size_t(0), std::size_t(1), detail::local_readdir_page,
                                 detail::local_readdir_page + 1, std::size_t(600));
  INFO("entries: " << n);
  std::set<std::string> want;
  for (std::size_t i = 0; i < n; ++i) {
    std::string name = "f" + std::to_string(i);
    if (i % 7 == 0) {
      fs::create_directory(fx.dir / "d" / name);
    } else {
      spit(fx.dir / "d" / name, std::string(i, 'x'));
    }
    want.insert(name);
  }

  dir_stream ds{.path = "d"};
  std::set<std::string> seen;
  std::vector<std::size_t> page_sizes;
  while (!ds.eof) {
    REQUIRE(page_sizes.size() < 10);
    std::size_t before = ds.entries.size();
    auto r = fx.readdir(ds);
    REQUIRE_FALSE(r.ec);
    CHECK(r.bytes == 0);
    page_sizes.push_back(ds.entries.size() - before);
  }
  for (auto& e : ds.entries) {
    CHECK(seen.insert(e.name).second);  // no duplicates
    struct stat ls {};
    REQUIRE(::lstat((fx.dir / "d" / e.name).c_str(), &ls) == 0);
    CHECK(e.stat.fileid == ls.st_ino);
    CHECK(e.stat.size == static_cast<std::uint64_t>(ls.st_size));
    CHECK(e.stat.type == (S_ISDIR(ls.st_mode) ? file_type::directory : file_type::regular));
  }
  CHECK(seen == want);
  // Full pages, then the rest; a listing that ends exactly at a page end needs no extra call.
  const std::size_t page = detail::local_readdir_page;
  std::vector<std::size_t> expected;
  for (std::size_t left = n; left > page; left -= page) expected.push_back(page);
  expected.push_back(n == 0 ? 0 : (n % page == 0 ? page : n % page));
  CHECK(page_sizes == expected);
}

TEST_CASE("local: readdir of the root and of missing or non-directories", "[client_local]") {
  fixture fx;
  spit(fx.dir / "a", "");
  fs::create_directory(fx.dir / "b");
  fs::create_symlink("a", fx.dir / "c");
  dir_stream ds{.path = ""};
  REQUIRE_FALSE(fx.readdir(ds).ec);
  CHECK(ds.eof);
  std::set<std::pair<std::string, file_type>> got;
  for (auto& e : ds.entries) got.insert({e.name, e.stat.type});
  CHECK(got == std::set<std::pair<std::string, file_type>>{
                   {"a", file_type::regular}, {"b", file_type::directory}, {"c", file_type::symlink}});
  dir_stream missing{.path = "zz"};
  CHECK(is_system(fx.readdir(missing).ec, ENOENT));
  dir_stream file_ds{.path = "a"};
  CHECK(is_system(fx.readdir(file_ds).ec, ENOTDIR));
}

TEST_CASE("local: closed, foreign and empty files are refused with EBADF", "[client_local]") {
  fixture fx;
  fixture other;
  file f = fx.open_ok("f", O_RDWR | O_CREAT);
  file g = other.open_ok("g", O_RDWR | O_CREAT);
  file empty;
  std::string got;
  file_stat st;
  CHECK(is_system(fx.pwrite(g, 0, "x").ec, EBADF));  // another backend's file
  CHECK(is_system(fx.pread(empty, 0, 1, got).ec, EBADF));
  CHECK(is_system(fx.close(empty).ec, EBADF));
  CHECK(fs::file_size(other.dir / "g") == 0);

  const std::size_t fds = open_fd_count();
  file copy = f;
  REQUIRE_FALSE(fx.close(f).ec);
  CHECK(open_fd_count() == fds - 1);
  CHECK(is_system(fx.close(copy).ec, EBADF));
  CHECK(is_system(fx.pwrite(copy, 0, "x").ec, EBADF));
  CHECK(is_system(fx.pread(f, 0, 1, got).ec, EBADF));
  CHECK(is_system(fx.fstat(f, st).ec, EBADF));
  CHECK(is_system(fx.fsync(f).ec, EBADF));
}

TEST_CASE("local: the descriptor goes with the last copy of an unclosed file", "[client_local]") {
  fixture fx;
  const std::size_t fds = open_fd_count();
  {
    file f = fx.open_ok("f", O_RDWR | O_CREAT);
    CHECK(open_fd_count() == fds + 1);
  }
  CHECK(open_fd_count() == fds);
}

TEST_CASE("local: registered memory", "[client_local]") {
  client_options o;
  o.max_registered_bytes = 1 << 20;
  fixture fx(o);
  auto& table = fx.b->registrations();
  CHECK(table.cap() == std::size_t(1) << 20);

  std::vector<std::byte> mem(8192);
  std::optional<memory_region> region(detail::internals::make_region(table.add(mem.data(), mem.size(), access::read_write)));
  memory_region& mr = *region;
  CHECK(table.registered_bytes() == 8192);
  std::memcpy(mem.data(), "registered!", 11);

  file f = fx.open_ok("f", O_RDWR | O_CREAT);
  auto w = call([&](detail::done_fn d) { fx.b->write(f, 0, detail::write_source{mr.slice(0, 11), {}}, std::move(d)); });
  REQUIRE_FALSE(w.ec);
  CHECK(w.bytes == 11);
  CHECK(slurp(fx.dir / "f") == "registered!");

  auto r = call([&](detail::done_fn d) { fx.b->read(f, 0, detail::read_target{mr.slice(4096, 100), {}}, std::move(d)); });
  REQUIRE_FALSE(r.ec);
  CHECK(r.bytes == 11);
  CHECK(string_of(std::span(mem).subspan(4096, 11)) == "registered!");
  CHECK(fx.b->stats().payload_bytes_direct == 22);

  SECTION("a region only for writes cannot receive reads, and the other way round") {
    std::vector<std::byte> wmem(64), rmem(64);
    memory_region wr = detail::internals::make_region(table.add(wmem.data(), wmem.size(), access::write));
    memory_region rr = detail::internals::make_region(table.add(rmem.data(), rmem.size(), access::read));
    auto e = call([&](detail::done_fn d) { fx.b->read(f, 0, detail::read_target{wr.all(), {}}, std::move(d)); });
    CHECK(e.ec == make_error_code(errc::bad_argument));
    e = call([&](detail::done_fn d) { fx.b->write(f, 0, detail::write_source{rr.all(), {}}, std::move(d)); });
    CHECK(e.ec == make_error_code(errc::bad_argument));
    CHECK(wmem == std::vector<std::byte>(64));
    CHECK(slurp(fx.dir / "f") == "registered!");
  }
  SECTION("a deregistered region is refused") {
    memory_slice s = mr.slice(0, 11);
    region.reset();  // deregisters; the slice keeps the registration object alive
    CHECK(table.registered_bytes() == 0);
    auto e = call([&](detail::done_fn d) { fx.b->write(f, 20, detail::write_source{s, {}}, std::move(d)); });
    CHECK(e.ec == make_error_code(errc::bad_argument));
    CHECK(fs::file_size(fx.dir / "f") == 11);
  }
}

TEST_CASE("local: concurrent writes and reads on several workers", "[client_local]") {
  client_options o;
  o.local_threads = 4;
  fixture fx(o);
  file f = fx.open_ok("f", O_RDWR | O_CREAT);
  constexpr std::size_t n = 64, chunk = 4096;
  std::vector<std::vector<std::byte>> bufs(n);
  std::vector<std::promise<outcome>> done(n);
  for (std::size_t i = 0; i < n; ++i) {
    bufs[i].assign(chunk, std::byte(i));
    fx.b->write(f, i * chunk, detail::write_source{{}, bufs[i]},
                [&done, i](std::error_code ec, std::size_t b) { done[i].set_value({ec, b, {}}); });
  }
  for (auto& p : done) {
    auto r = p.get_future().get();
    CHECK_FALSE(r.ec);
    CHECK(r.bytes == chunk);
  }
  std::string content = slurp(fx.dir / "f");
  REQUIRE(content.size() == n * chunk);
  for (std::size_t i = 0; i < n; ++i) CHECK(content[i * chunk] == char(i));
  CHECK(std::count(content.begin(), content.end(), char(n - 1)) == chunk);
}

TEST_CASE("local: workers are started only as calls need them, up to local_threads", "[client_local]") {
  client_options o;
  o.local_threads = 3;
  fixture fx(o);
  spit(fx.dir / "f", "x");
  CHECK(detail::local_workers_started(*fx.b) == 1);
  // (Calls made one after another mostly share one worker, but not always: a caller woken
  // by a completion may post its next call before that worker is back for it.)

  // The first call takes the first worker; a worker held by a completion that waits makes
  // the next call start another one.
  file_stat st;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::promise<void>> entered(3);
  std::vector<std::promise<std::error_code>> finished(3);
  std::vector<file_stat> stats(3);
  auto hold = [&](std::size_t k) {
    fx.b->stat("f", &stats[k], [&, k](std::error_code ec, std::size_t) {
      entered[k].set_value();
      released.wait();
      finished[k].set_value(ec);
    });
  };
  hold(0);
  entered[0].get_future().wait();
  CHECK(detail::local_workers_started(*fx.b) == 1);
  hold(1);
  entered[1].get_future().wait();  // ran although the first worker is held: a second one
  CHECK(detail::local_workers_started(*fx.b) == 2);
  hold(2);
  entered[2].get_future().wait();
  CHECK(detail::local_workers_started(*fx.b) == 3);
  // Every worker held: a further call waits in the queue, no fourth worker.
  std::promise<std::error_code> queued;
  fx.b->stat("f", &st, [&](std::error_code ec, std::size_t) { queued.set_value(ec); });
  CHECK(detail::local_workers_started(*fx.b) == 3);
  release.set_value();
  for (auto& f : finished) CHECK_FALSE(f.get_future().get());
  CHECK_FALSE(queued.get_future().get());
  CHECK(detail::local_workers_started(*fx.b) == 3);
  CHECK(st.size == 1);
}

TEST_CASE("local: close_all completes what runs, then refuses with errc::closed", "[client_local]") {
  fixture fx;
  file f = fx.open_ok("f", O_RDWR | O_CREAT);
  const std::size_t fds_open = open_fd_count();

  constexpr int n = 200;
  std::atomic<int> completed{0};
  std::vector<int> status(n, -1);  // 0 written, 1 refused as closed, 2 other error
  std::vector<std::byte> buf(16, std::byte('z'));
  for (int i = 0; i < n; ++i) {
    fx.b->write(f, std::uint64_t(i) * 16, detail::write_source{{}, buf}, [&, i](std::error_code ec, std::size_t) {
      status[i] = !ec ? 0 : ec == make_error_code(errc::closed) ? 1 : 2;
      ++completed;
    });
  }
  fx.b->close_all();
  // Every call accepted before close_all has completed when it returns.
  CHECK(completed == n);
  CHECK(std::count(status.begin(), status.end(), 2) == 0);
  CHECK(std::count(status.begin(), status.end(), -1) == 0);
  const std::string content = slurp(fx.dir / "f");
  for (int i = 0; i < n; ++i) {
    if (status[i] == 0) {
      INFO("write " << i);
      REQUIRE(content.size() >= std::size_t(i + 1) * 16);
      CHECK(content.substr(std::size_t(i) * 16, 16) == std::string(16, 'z'));
    }
  }
  // The descriptors of files left open are released.
  CHECK(open_fd_count() == fds_open - 1);

  file_stat st;
  auto r = fx.stat("", st);
  CHECK(r.ec == make_error_code(errc::closed));
  CHECK(r.thread != std::this_thread::get_id());  // still delivered on a worker
  CHECK(fx.pwrite(f, 0, "x").ec == make_error_code(errc::closed));
  file g;
  CHECK(fx.open("g", O_RDWR | O_CREAT, 0644, g).ec == make_error_code(errc::closed));
  CHECK_FALSE(g);
  CHECK_FALSE(fs::exists(fx.dir / "g"));
  fx.b->close_all();  // idempotent
  CHECK(fx.close(f).ec == make_error_code(errc::closed));
}

TEST_CASE("local: close_all from a completion does not wait for itself", "[client_local]") {
  fixture fx;
  std::promise<outcome> p;
  file_stat out;
  fx.b->stat("", &out, [&](std::error_code ec, std::size_t n) {
    fx.b->close_all();
    p.set_value({ec, n, {}});
  });
  CHECK_FALSE(p.get_future().get().ec);
  file_stat st;
  CHECK(fx.stat("", st).ec == make_error_code(errc::closed));
}

TEST_CASE("local: close_all from two completions at once", "[client_local]") {
  client_options o;
  o.local_threads = 2;
  fixture fx(o);
  std::latch both(2);
  std::promise<void> p1, p2;
  file_stat s1, s2;
  // Each callback waits for the other to be running too, so both close_all calls overlap.
  fx.b->stat("", &s1, [&](std::error_code, std::size_t) {
    both.arrive_and_wait();
    fx.b->close_all();
    p1.set_value();
  });
  fx.b->stat("", &s2, [&](std::error_code, std::size_t) {
    both.arrive_and_wait();
    fx.b->close_all();
    p2.set_value();
  });
  p1.get_future().get();
  p2.get_future().get();
  file_stat st;
  CHECK(fx.stat("", st).ec == make_error_code(errc::closed));
}

TEST_CASE("local: a root that is missing or not a directory", "[client_local]") {
  test::temp_dir d;
  spit(d / "f", "x");
  try {
    detail::make_local_backend(d / "missing", {});
    FAIL("no exception");
  } catch (const std::system_error& e) {
    CHECK(is_system(e.code(), ENOENT));
  }
  try {
    detail::make_local_backend(d / "f", {});
    FAIL("no exception");
  } catch (const std::system_error& e) {
    CHECK(is_system(e.code(), ENOTDIR));
  }
}

TEST_CASE("local: through vnfs::client with a file:// URL", "[client_local]") {
  test::temp_dir d("vnfs-local-client");
  fs::create_directory(d / "sub");
  auto c = client::connect("file://" + d.path().string());

  file f = c.open("/sub/f", O_RDWR | O_CREAT | O_EXCL, 0600);
  CHECK(f.path() == "sub/f");
  auto data = bytes_of("via the client");
  CHECK(c.pwrite(f, 0, std::span<const std::byte>(data)) == data.size());
  std::vector<std::byte> back(64);
  memory_region mr = c.register_memory(back.data(), back.size());
  CHECK(c.pread(f, 4, mr.slice(0, 64)) == data.size() - 4);
  CHECK(string_of(std::span(back).first(data.size() - 4)) == "the client");
  c.close(f);
  CHECK(c.stat("sub/f").mode == 0600);
  CHECK(slurp(d / "sub" / "f") == "via the client");

  c.symlink("f", "sub/ln");
  CHECK(c.readlink("sub/ln") == "f");
  try {
    c.open("sub/ln", O_RDONLY);
    FAIL("opened a symlink");
  } catch (const std::system_error& e) {
    CHECK(e.code() == std::errc::too_many_symbolic_link_levels);
  }

  dir_stream ds = c.opendir("sub");
  std::set<std::string> names;
  while (auto e = c.readdir(ds)) names.insert(e->name);
  CHECK(names == std::set<std::string>{"f", "ln"});

  auto s = c.stats();
  CHECK(s.payload_bytes_direct == 2 * data.size() - 4);
  CHECK(s.compounds == 0);

  c.close();
  try {
    c.stat("sub/f");
    FAIL("stat after close");
  } catch (const std::system_error& e) {
    CHECK(e.code() == make_error_code(errc::closed));
  }
}

// The vectorized calls run every item of a call on one worker, with the call's directories
// resolved once: the same confinement and the same per-item results as the scalar calls.
TEST_CASE("local: vectorized calls stop at a symlink on the way, item by item, in both resolutions",
          "[client_local]") {
  const bool walk = GENERATE(false, true);
  resolution_scope resolving(walk);
  INFO("walk: " << walk);
  test::temp_dir outside("vnfs-outside");
  spit(outside / "secret", "secret");
  ::chmod((outside / "secret").c_str(), 0600);
  test::temp_dir d("vnfs-local-vector");
  fs::create_directory(d / "in");
  spit(d / "in" / "f", "inside");
  fs::create_symlink(outside.path(), d / "out");
  fs::create_symlink(outside / "secret", d / "secret");
  auto c = client::connect("file://" + d.path().string());
  const std::error_code not_executed = make_error_code(errc::not_executed);

  auto data = bytes_of("planted");
  std::vector<vio> w{vio("in/a", 0, std::span<const std::byte>(data), vio_flags::create),
                     vio("out/planted", 0, std::span<const std::byte>(data), vio_flags::create),
                     vio("in/b", 0, std::span<const std::byte>(data), vio_flags::create)};
  vresult r = c.vwrite(w);
  CHECK(r.failed_index == 1);
  CHECK(r.error == std::errc::too_many_symbolic_link_levels);
  CHECK_FALSE(r.status[0]);
  CHECK(r.status[2] == not_executed);
  CHECK(slurp(d / "in" / "a") == "planted");
  CHECK_FALSE(fs::exists(d / "in" / "b"));

  std::vector<std::byte> buf(16);
  std::vector<vio> rd{vio("in/f", 0, std::span<std::byte>(buf)), vio("secret", 0, std::span<std::byte>(buf))};
  r = c.vread(rd);
  CHECK(r.failed_index == 1);
  CHECK(r.error == std::errc::too_many_symbolic_link_levels);
  CHECK(rd[0].bytes == 6);
  CHECK(rd[0].eof);

  std::vector<vattr> st{vattr("in/f"), vattr("out/secret")};
  CHECK(c.vgetattrs(st).error == std::errc::too_many_symbolic_link_levels);
  std::vector<vattr> chmods(1);
  chmods[0].file = "secret";  // the link itself: its mode is never changed, its target untouched
  chmods[0].mask = attr::mode;
  chmods[0].stat.mode = 0666;
  CHECK(c.vsetattrs(chmods).error == std::errc::operation_not_supported);
  std::vector<vmkdir_item> dirs{{"in/d", 0755}, {"out/d", 0755}};
  CHECK(c.vmkdir(dirs).failed_index == 1);
  std::vector<std::string> rm{"out/secret"};
  CHECK(c.vremove(rm).error == std::errc::too_many_symbolic_link_levels);
  std::vector<vcopy_item> copies(2);
  copies[0].src = "in/f", copies[0].dst = "out/copy";
  copies[1].src = "secret", copies[1].dst = "in/copy";
  CHECK(c.vscopy(std::span(copies).first(1)).error == std::errc::too_many_symbolic_link_levels);
  CHECK(c.vscopy(std::span(copies).subspan(1)).error == std::errc::invalid_argument);  // not a regular file
  CHECK_FALSE(fs::exists(d / "in" / "copy"));
  std::vector<vrename_item> moves{{"out/secret", "stolen"}};
  CHECK(c.vrename(moves).error == std::errc::too_many_symbolic_link_levels);

  // Nothing outside changed.
  CHECK(slurp(outside / "secret") == "secret");
  CHECK((fs::status(outside / "secret").permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  std::set<std::string> names;
  for (auto& e : fs::directory_iterator(outside.path())) names.insert(e.path().filename().string());
  CHECK(names == std::set<std::string>{"secret"});
  CHECK_FALSE(fs::exists(d / "stolen"));
}

TEST_CASE("local: a directory renamed by an item is resolved anew by the later items", "[client_local]") {
  test::temp_dir d("vnfs-local-vector");
  fs::create_directory(d / "p");
  spit(d / "p" / "x", "x");
  auto c = client::connect("file://" + d.path().string());
  // Item 0 resolves p; item 1 moves it to q; item 2 names p/x2, which no longer exists.
  std::vector<vrename_item> moves{{"p/x", "p/x2"}, {"p", "q"}, {"p/x2", "y"}};
  vresult r = c.vrename(moves);
  CHECK(r.failed_index == 2);
  CHECK(r.error == std::errc::no_such_file_or_directory);
  CHECK(r.ok_count == 2);
  CHECK(slurp(d / "q" / "x2") == "x");
  CHECK_FALSE(fs::exists(d / "y"));
}

TEST_CASE("local: vscopy copies with the kernel, whole, in part and within one file", "[client_local]") {
  test::temp_dir d("vnfs-local-vector");
  spit(d / "f", "abcdefgh");
  ::chmod((d / "f").c_str(), 0444);
  spit(d / "old", "a longer old content");
  fs::create_directory(d / "dir");
  auto c = client::connect("file://" + d.path().string());

  std::vector<vcopy_item> items(3);
  items[0].src = "f", items[0].dst = "whole";                                  // created, mode 0444
  items[1].src = "f", items[1].dst = "old";                                    // truncated to the copy
  items[2].src = "f", items[2].dst = "part", items[2].src_offset = 6, items[2].length = 10;  // to the end: 2
  vresult r = c.vscopy(items);
  REQUIRE(r.ok());
  CHECK(items[0].bytes == 8);
  CHECK(items[1].bytes == 8);
  CHECK(items[2].bytes == 2);
  CHECK(slurp(d / "whole") == "abcdefgh");
  CHECK((fs::status(d / "whole").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read));
  CHECK(slurp(d / "old") == "abcdefgh");
  CHECK(slurp(d / "part") == "gh");

  // Within one file: copied whole onto itself it stays as it is; with overlapping ranges the
  // source range is read before it is written.
  ::chmod((d / "f").c_str(), 0644);
  std::vector<vcopy_item> within(2);
  within[0].src = "f", within[0].dst = "f";
  within[1].src = "f", within[1].dst = "f", within[1].src_offset = 0, within[1].dst_offset = 2, within[1].length = 4;
  REQUIRE(c.vscopy(within).ok());
  CHECK(within[0].bytes == 8);
  CHECK(within[1].bytes == 4);
  CHECK(slurp(d / "f") == "ababcdgh");

  std::vector<vcopy_item> bad(3);
  bad[0].src = "f", bad[0].dst = "g";
  bad[1].src = "f", bad[1].dst = "dir";   // a directory in the way
  bad[2].src = "dir", bad[2].dst = "h";
  r = c.vscopy(bad);
  CHECK(r.failed_index == 1);
  CHECK(r.error == std::errc::is_a_directory);
  CHECK(r.status[2] == make_error_code(errc::not_executed));
  CHECK(slurp(d / "g") == "ababcdgh");
  CHECK(c.vscopy(std::span(bad).subspan(2)).error == std::errc::invalid_argument);
  CHECK_FALSE(fs::exists(d / "h"));
}

TEST_CASE("local: vremove takes files, symlinks and empty directories in one call", "[client_local]") {
  test::temp_dir d("vnfs-local-vector");
  spit(d / "f", "x");
  fs::create_symlink("f", d / "ln");
  fs::create_directories(d / "e");
  fs::create_directories(d / "full" / "sub");
  auto c = client::connect("file://" + d.path().string());
  std::vector<std::string> paths{"f", "ln", "e", "full", "never"};
  vresult r = c.vremove(paths);
  CHECK(r.failed_index == 3);
  CHECK(r.error == std::errc::directory_not_empty);
  CHECK(r.ok_count == 3);
  CHECK(r.status[4] == make_error_code(errc::not_executed));
  CHECK_FALSE(fs::exists(fs::symlink_status(d / "f")));
  CHECK_FALSE(fs::exists(fs::symlink_status(d / "ln")));
  CHECK_FALSE(fs::exists(d / "e"));
  CHECK(fs::exists(d / "full" / "sub"));
}
