// Directory operations, attributes and readdir on a temporary export.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>

#include "fixture.hpp"
#include "server/fs/access.hpp"
#include "server/fs/attributes.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/io.hpp"
#include "server/fs/readdir.hpp"

using namespace vnfs::server::fs;
using vnfs::server::fs::test::export_fixture;

namespace {

std::error_code sys(int e) { return {e, std::system_category()}; }

attributes must_stat(const object& o) {
  std::error_code ec;
  auto a = stat(o, ec);
  REQUIRE_FALSE(ec);
  return a;
}

std::span<const std::byte> bytes(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

create_verifier verf(unsigned char v) {
  create_verifier r{};
  r.fill(std::byte{v});
  return r;
}

}  // namespace

TEST_CASE("create: guarded, unchecked, truncate, exact mode", "[fs][create]") {
  export_fixture f;
  std::error_code ec;
  const auto& root = f.exp.root();
  const mode_t old_umask = ::umask(077);
  auto r = create(root, "f", {.mode = create_mode::guarded, .perm = 0666}, ec);
  ::umask(old_umask);
  REQUIRE_FALSE(ec);
  CHECK(r.created);
  CHECK(r.file.type() == file_type::regular);
  CHECK(must_stat(r.file).mode == 0666);  // no umask
  CHECK(write(r.file, 0, bytes("hello"), stability::unstable, ec) == 5);

  create(root, "f", {.mode = create_mode::guarded}, ec);
  CHECK(ec == sys(EEXIST));

  auto u = create(root, "f", {.mode = create_mode::unchecked}, ec);
  REQUIRE_FALSE(ec);
  CHECK_FALSE(u.created);
  CHECK(must_stat(u.file).size == 5);
  CHECK(must_stat(u.file).ino == must_stat(r.file).ino);

  auto t = create(root, "f", {.mode = create_mode::unchecked, .truncate = true}, ec);
  REQUIRE_FALSE(ec);
  CHECK_FALSE(t.created);
  CHECK(must_stat(t.file).size == 0);

  auto n = create(root, "new", {.mode = create_mode::unchecked, .perm = 0600}, ec);
  REQUIRE_FALSE(ec);
  CHECK(n.created);
  CHECK(must_stat(n.file).mode == 0600);

  object d = mkdir(root, "d", 0755, ec);
  create(root, "d", {.mode = create_mode::unchecked}, ec);
  CHECK(ec == sys(EISDIR));
  mknod(root, "p", file_type::fifo, 0644, 0, 0, ec);
  create(root, "p", {.mode = create_mode::unchecked}, ec);
  CHECK(ec == errc::wrong_type);
  create(d, "x", {.mode = create_mode::guarded}, ec);  // inside a subdirectory
  CHECK_FALSE(ec);
  CHECK(std::filesystem::is_regular_file(f.dir / "d" / "x"));
}

TEST_CASE("create: exclusive with a verifier, replay, and its end", "[fs][create]") {
  export_fixture f;
  std::error_code ec;
  const auto& root = f.exp.root();
  create_how how{.mode = create_mode::exclusive, .perm = 0640, .verifier = verf(7)};
  auto r = create(root, "x", how, ec);
  REQUIRE_FALSE(ec);
  CHECK(r.created);
  CHECK(must_stat(r.file).mode == 0640);
  unsigned char stored[16];
  REQUIRE(::getxattr((f.dir / "x").c_str(), "trusted.vnfs.createverf", stored, sizeof stored) == 8);
  CHECK(stored[0] == 7);
  CHECK(stored[7] == 7);
  CHECK_FALSE(r.file.no_create_verifier());  // it carries one: writes must look for it

  auto replay = create(root, "x", how, ec);  // a retransmission: same verifier
  REQUIRE_FALSE(ec);
  CHECK_FALSE(replay.created);
  CHECK(must_stat(replay.file).ino == must_stat(r.file).ino);

  create_how other = how;
  other.verifier = verf(8);
  create(root, "x", other, ec);
  CHECK(ec == sys(EEXIST));

  // The first write ends the replay window.
  write(r.file, 0, bytes("data"), stability::unstable, ec);
  REQUIRE_FALSE(ec);
  CHECK(::getxattr((f.dir / "x").c_str(), "trusted.vnfs.createverf", stored, sizeof stored) < 0);
  CHECK(r.file.no_create_verifier());  // later writes through it make no system call for it
  create(root, "x", how, ec);
  CHECK(ec == sys(EEXIST));
  // Another object of the inode learns it at its first write.
  auto x = lookup(root, "x", ec);
  REQUIRE_FALSE(ec);
  CHECK_FALSE(x.no_create_verifier());
  write(x, 0, bytes("more"), stability::unstable, ec);
  REQUIRE_FALSE(ec);
  CHECK(x.no_create_verifier());

  // ... and so does a setattr.
  auto y = create(root, "y", how, ec);
  REQUIRE_FALSE(ec);
  setattr(y.file, {.mode = 0600}, ec);
  REQUIRE_FALSE(ec);
  create(root, "y", how, ec);
  CHECK(ec == sys(EEXIST));

  // A name taken by a file created otherwise is simply there; such a file never carries a
  // verifier, which its object knows from the start.
  auto plain = create(root, "plain", {}, ec);
  REQUIRE_FALSE(ec);
  CHECK(plain.file.no_create_verifier());
  create(root, "plain", how, ec);
  CHECK(ec == sys(EEXIST));
}

TEST_CASE("mkdir, symlink, mknod, link, readlink", "[fs][namespace]") {
  export_fixture f;
  std::error_code ec;
  const auto& root = f.exp.root();

  object d = mkdir(root, "dir", 0750, ec);
  REQUIRE_FALSE(ec);
  CHECK(d.type() == file_type::directory);
  CHECK(must_stat(d).mode == 0750);
  mkdir(root, "dir", 0750, ec);
  CHECK(ec == sys(EEXIST));

  object l = symlink(d, "link", "../../some/where", ec);
  REQUIRE_FALSE(ec);
  CHECK(l.type() == file_type::symlink);
  CHECK(readlink(l, ec) == "../../some/where");
  REQUIRE_FALSE(ec);
  std::string longtarget(3000, 'x');
  object l2 = symlink(d, "long", longtarget, ec);
  REQUIRE_FALSE(ec);
  CHECK(readlink(l2, ec) == longtarget);
  symlink(d, "empty", "", ec);
  CHECK(ec == sys(EINVAL));
  readlink(d, ec);
  CHECK(ec == sys(EINVAL));

  object fifo = mknod(root, "fifo", file_type::fifo, 0620, 0, 0, ec);
  REQUIRE_FALSE(ec);
  CHECK(fifo.type() == file_type::fifo);
  CHECK(must_stat(fifo).mode == 0620);
  object sock = mknod(root, "sock", file_type::socket, 0600, 0, 0, ec);
  REQUIRE_FALSE(ec);
  CHECK(sock.type() == file_type::socket);
  object chr = mknod(root, "null", file_type::character, 0666, 1, 3, ec);
  REQUIRE_FALSE(ec);
  CHECK(chr.type() == file_type::character);
  auto ca = must_stat(chr);
  CHECK(ca.rdev_major == 1);
  CHECK(ca.rdev_minor == 3);
  object blk = mknod(root, "blk", file_type::block, 0600, 7, 0, ec);
  REQUIRE_FALSE(ec);
  CHECK(blk.type() == file_type::block);
  CHECK(must_stat(blk).rdev_major == 7);
  mknod(root, "reg", file_type::regular, 0600, 0, 0, ec);
  CHECK(ec == errc::wrong_type);
  // Data I/O on special files is refused before anything is opened (a fifo would block).
  std::byte buf[4];
  read(fifo, 0, buf, ec);
  CHECK(ec == errc::wrong_type);
  read(chr, 0, buf, ec);
  CHECK(ec == errc::wrong_type);
  read(d, 0, buf, ec);
  CHECK(ec == sys(EISDIR));

  auto file = create(root, "file", {}, ec).file;
  link(file, d, "hard", ec);
  REQUIRE_FALSE(ec);
  CHECK(must_stat(file).nlink == 2);
  CHECK(must_stat(lookup(d, "hard", ec)).ino == must_stat(file).ino);
  link(file, d, "hard", ec);
  CHECK(ec == sys(EEXIST));
  link(d, root, "dirlink", ec);
  CHECK(ec == sys(EPERM));
  link(l, root, "linklink", ec);  // a hard link to the symlink itself
  REQUIRE_FALSE(ec);
  object ll = lookup(root, "linklink", ec);
  CHECK(ll.type() == file_type::symlink);
  CHECK(readlink(ll, ec) == "../../some/where");
}

TEST_CASE("remove and rename", "[fs][namespace]") {
  export_fixture f;
  std::error_code ec;
  const auto& root = f.exp.root();
  create(root, "a", {}, ec);
  object d1 = mkdir(root, "d1", 0755, ec);
  object d2 = mkdir(root, "d2", 0755, ec);
  create(d2, "inner", {}, ec);
  REQUIRE_FALSE(ec);

  rename(root, "a", d1, "b", ec);
  REQUIRE_FALSE(ec);
  CHECK(std::filesystem::exists(f.dir / "d1" / "b"));
  CHECK_FALSE(std::filesystem::exists(f.dir / "a"));
  rename(root, "a", root, "c", ec);
  CHECK(ec == sys(ENOENT));

  object e = mkdir(root, "empty", 0755, ec);
  rename(root, "empty", root, "d2", ec);  // onto a non-empty directory
  CHECK(ec == sys(ENOTEMPTY));
  rename(d1, "b", root, "d2", ec);  // a file onto a directory
  CHECK(ec == sys(EISDIR));
  rename(root, "d2", root, "empty", ec);  // onto an empty directory: replaces it
  REQUIRE_FALSE(ec);
  CHECK(std::filesystem::exists(f.dir / "empty" / "inner"));

  remove(root, "empty", ec);
  CHECK(ec == sys(ENOTEMPTY));
  object moved = lookup(root, "empty", ec);
  remove(moved, "inner", ec);
  REQUIRE_FALSE(ec);
  remove(root, "empty", ec);
  REQUIRE_FALSE(ec);
  remove(d1, "b", ec);
  REQUIRE_FALSE(ec);
  remove(d1, "b", ec);
  CHECK(ec == sys(ENOENT));
  symlink(root, "s", "d1", ec);
  remove(root, "s", ec);  // removes the link, not its target
  REQUIRE_FALSE(ec);
  CHECK(std::filesystem::is_directory(f.dir / "d1"));
  lookup(root, "s", ec);
  CHECK(ec == sys(ENOENT));
}

TEST_CASE("stat and setattr round trip", "[fs][attr]") {
  export_fixture f;
  std::error_code ec;
  auto file = create(f.exp.root(), "f", {.perm = 0644}, ec).file;
  REQUIRE_FALSE(ec);
  write(file, 0, bytes("0123456789"), stability::unstable, ec);
  auto a = must_stat(file);
  CHECK(a.type == file_type::regular);
  CHECK(a.mode == 0644);
  CHECK(a.nlink == 1);
  CHECK(a.uid == 0);
  CHECK(a.size == 10);
  CHECK(a.blocks > 0);
  struct stat st {};
  REQUIRE(::stat((f.dir / "f").c_str(), &st) == 0);
  CHECK(a.ino == st.st_ino);
  CHECK(makedev(a.dev_major, a.dev_minor) == st.st_dev);
  CHECK(a.mtime.sec == st.st_mtim.tv_sec);
  CHECK(a.mtime.nsec == st.st_mtim.tv_nsec);
  CHECK(a.ctime.nsec == st.st_ctim.tv_nsec);
  CHECK(a.has_btime);  // ext4/xfs/btrfs/tmpfs all report it
  CHECK(a.change == std::uint64_t(st.st_ctim.tv_sec) * 1000000000u + std::uint64_t(st.st_ctim.tv_nsec));

  setattr(file, {.mode = 04751, .uid = 1234, .gid = 5678}, ec);
  REQUIRE_FALSE(ec);
  auto b = must_stat(file);
  CHECK(b.mode == 04751);
  CHECK(b.uid == 1234);
  CHECK(b.gid == 5678);
  CHECK(b.change != a.change);

  setattr(file, {.size = 3}, ec);
  REQUIRE_FALSE(ec);
  CHECK(must_stat(file).size == 3);
  setattr(file, {.size = 1 << 20}, ec);
  REQUIRE_FALSE(ec);
  CHECK(must_stat(file).size == 1u << 20);

  setattr(file, {.atime = time_update::at({1000000000, 123456789}),
                 .mtime = time_update::at({1500000000, 42})}, ec);
  REQUIRE_FALSE(ec);
  auto c = must_stat(file);
  CHECK(c.atime == timestamp{1000000000, 123456789});
  CHECK(c.mtime == timestamp{1500000000, 42});
  // Size and times together: the given mtime wins over the truncation's.
  setattr(file, {.size = 0, .mtime = time_update::at({1600000000, 7})}, ec);
  REQUIRE_FALSE(ec);
  CHECK(must_stat(file).mtime == timestamp{1600000000, 7});
  CHECK(must_stat(file).size == 0);

  setattr(file, {.mtime = time_update::now()}, ec);
  REQUIRE_FALSE(ec);
  auto now = must_stat(file);
  CHECK(now.mtime.sec > 1600000000);
  CHECK(now.atime == timestamp{1000000000, 123456789});  // kept

  object d = mkdir(f.exp.root(), "d", 0700, ec);
  setattr(d, {.size = 0}, ec);
  CHECK(ec == sys(EISDIR));
  setattr(d, {.mode = 0711}, ec);
  REQUIRE_FALSE(ec);
  CHECK(must_stat(d).mode == 0711);
  CHECK(must_stat(d).type == file_type::directory);
  object l = symlink(f.exp.root(), "l", "f", ec);
  setattr(l, {.mode = 0600}, ec);
  CHECK(ec == sys(EOPNOTSUPP));
  setattr(l, {.uid = 77}, ec);  // the link itself, not its target
  REQUIRE_FALSE(ec);
  CHECK(must_stat(l).uid == 77);
  CHECK(must_stat(l).type == file_type::symlink);
  CHECK(must_stat(file).uid == 1234);
}

TEST_CASE("the change attribute moves on every modification", "[fs][attr]") {
  export_fixture f;
  std::error_code ec;
  auto file = create(f.exp.root(), "f", {}, ec).file;
  std::set<std::uint64_t> seen;
  std::uint64_t last = must_stat(file).change;
  seen.insert(last);
  for (int i = 0; i < 50; ++i) {
    write(file, 0, bytes("x"), stability::unstable, ec);  // same size, same bytes
    REQUIRE_FALSE(ec);
    auto c = must_stat(file).change;
    CHECK(c > last);
    last = c;
    seen.insert(c);
  }
  CHECK(seen.size() == 51);
  object d = mkdir(f.exp.root(), "d", 0755, ec);
  auto before = must_stat(d).change;
  create(d, "child", {}, ec);
  CHECK(must_stat(d).change > before);
}

TEST_CASE("access reports what the current identity may do", "[fs][access]") {
  export_fixture f;
  std::error_code ec;
  auto file = create(f.exp.root(), "f", {.perm = 0644}, ec).file;
  unsigned all = access_read | access_write | access_execute;
  CHECK(access(file, all, ec) == (access_read | access_write));  // root: no x without an x bit
  REQUIRE_FALSE(ec);
  setattr(file, {.mode = 0100}, ec);
  CHECK(access(file, all, ec) == all);
  CHECK(access(file, access_read, ec) == access_read);
  object d = mkdir(f.exp.root(), "d", 0, ec);
  CHECK(access(d, all, ec) == all);  // root may always read and search directories
}

TEST_CASE("readdir pages through 1000 entries with cookies", "[fs][readdir]") {
  export_fixture f;
  std::error_code ec;
  object d = mkdir(f.exp.root(), "big", 0755, ec);
  std::set<std::string> expected;
  for (int i = 0; i < 1000; ++i) {
    std::string name = "entry-" + std::to_string(i);
    if (i % 10 == 0) mkdir(d, name, 0755, ec);
    else create(d, name, {}, ec);
    REQUIRE_FALSE(ec);
    expected.insert(name);
  }

  std::map<std::string, int> count;
  std::uint64_t cookie = 0;
  int pages = 0;
  for (;;) {
    auto r = readdir(d, cookie, {.max_entries = 37}, ec);
    REQUIRE_FALSE(ec);
    ++pages;
    CHECK(r.entries.size() <= 37);
    for (auto& e : r.entries) {
      ++count[e.name];
      CHECK(e.cookie != 0);
      CHECK(e.cookie != 1);
      CHECK(e.cookie != 2);
      CHECK(e.type_known);
      CHECK(e.type == (std::stoi(e.name.substr(6)) % 10 == 0 ? file_type::directory : file_type::regular));
    }
    if (r.eof) break;
    REQUIRE_FALSE(r.entries.empty());
    cookie = r.entries.back().cookie;
    REQUIRE(pages < 100);
  }
  CHECK(count.size() == 1000);
  for (auto& [name, n] : count) {
    INFO(name);
    CHECK(n == 1);
    CHECK(expected.count(name) == 1);
  }
  CHECK(pages == 28);  // 27 full pages + 1 with 1 entry: eof is exact

  // Cookie 0 starts over; an exact fit reports eof without an extra empty page.
  auto all = readdir(d, 0, {.max_entries = 1000}, ec);
  REQUIRE_FALSE(ec);
  CHECK(all.entries.size() == 1000);
  CHECK(all.eof);
  auto rest = readdir(d, all.entries.back().cookie, {}, ec);
  REQUIRE_FALSE(ec);
  CHECK(rest.entries.empty());
  CHECK(rest.eof);
  auto part = readdir(d, 0, {.max_entries = 999}, ec);
  CHECK_FALSE(part.eof);
}

TEST_CASE("readdir: objects, empty directories, bad cookies, non-directories", "[fs][readdir]") {
  export_fixture f;
  std::error_code ec;
  const auto& root = f.exp.root();
  auto r0 = readdir(root, 0, {}, ec);
  REQUIRE_FALSE(ec);
  CHECK(r0.entries.empty());  // "." and ".." are left out
  CHECK(r0.eof);

  create(root, "file", {}, ec);
  mkdir(root, "dir", 0755, ec);
  symlink(root, "link", "/etc", ec);
  auto r = readdir(root, 0, {.open_objects = true}, ec);
  REQUIRE_FALSE(ec);
  REQUIRE(r.entries.size() == 3);
  std::map<std::string, file_type> types;
  for (auto& e : r.entries) {
    REQUIRE_FALSE(e.open_error);
    REQUIRE(e.obj);
    types[e.name] = e.obj.type();
    CHECK(must_stat(e.obj).ino == e.ino);
  }
  CHECK(types["file"] == file_type::regular);
  CHECK(types["dir"] == file_type::directory);
  CHECK(types["link"] == file_type::symlink);

  readdir(root, std::uint64_t(1) << 63, {}, ec);
  CHECK(ec == errc::bad_cookie);
  readdir(root, ~std::uint64_t(0), {}, ec);
  CHECK(ec == errc::bad_cookie);
  auto file = lookup(root, "file", ec);
  readdir(file, 0, {}, ec);
  CHECK(ec == sys(ENOTDIR));
}
