// Per-request identity: kernel permission checks on the caller's behalf, per thread.
#include <sys/fsuid.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "fixture.hpp"
#include "server/fs/access.hpp"
#include "server/fs/attributes.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/identity.hpp"
#include "server/fs/io.hpp"
#include "server/fs/readdir.hpp"

using namespace vnfs::server::fs;
using vnfs::server::fs::test::export_fixture;

namespace {

std::error_code sys(int e) { return {e, std::system_category()}; }
uid_t fsuid() { return static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))); }

}  // namespace

TEST_CASE("a request identity gets the kernel's permission checks", "[fs][identity]") {
  REQUIRE(::geteuid() == 0);  // CI runs the tests as root
  export_fixture f;
  std::error_code ec;
  const auto& root = f.exp.root();
  object locked = mkdir(root, "locked", 0755, ec);
  object open = mkdir(root, "open", 0777, ec);
  object priv = mkdir(root, "private", 0700, ec);
  auto secret = create(priv, "secret", {.perm = 0600}, ec).file;
  auto shared = create(root, "shared", {.perm = 0640}, ec).file;
  REQUIRE_FALSE(ec);
  auto secret_fh = f.exp.fh_of(secret, ec);
  REQUIRE_FALSE(ec);
  auto priv_fh = f.exp.fh_of(priv, ec);
  REQUIRE_FALSE(ec);

  {
    const gid_t groups[] = {4242};
    scoped_identity id(1000, 1000, groups);
    CHECK(fsuid() == 1000);

    create(locked, "nope", {}, ec);
    CHECK(ec == sys(EACCES));
    mkdir(locked, "nope", 0755, ec);
    CHECK(ec == sys(EACCES));
    auto mine = create(open, "mine", {.perm = 0644}, ec);
    REQUIRE_FALSE(ec);
    auto a = stat(mine.file, ec);
    CHECK(a.uid == 1000);
    CHECK(a.gid == 1000);
    object sub = mkdir(open, "subdir", 0755, ec);
    REQUIRE_FALSE(ec);
    CHECK(stat(sub, ec).uid == 1000);

    lookup(priv, "secret", ec);  // no search permission on a 0700 root directory
    CHECK(ec == sys(EACCES));
    readdir(priv, 0, {}, ec);
    CHECK(ec == sys(EACCES));
    // Resolution is the server's business (CAP_DAC_READ_SEARCH): it works...
    object s = f.exp.resolve(secret_fh, ec);
    REQUIRE_FALSE(ec);
    object p = f.exp.resolve(priv_fh, ec);  // directories get a containment check too
    REQUIRE_FALSE(ec);
    CHECK(p.is_directory());
    // ... but the data stays the kernel's decision.
    std::byte buf[8];
    read(s, 0, buf, ec);
    CHECK(ec == sys(EACCES));
    write(s, 0, buf, stability::unstable, ec);
    CHECK(ec == sys(EACCES));
    CHECK(access(s, access_read | access_write | access_execute, ec) == 0);
    CHECK_FALSE(ec);
    setattr(s, {.mode = 0777}, ec);
    CHECK(ec == sys(EPERM));
    setattr(mine.file, {.uid = 0}, ec);  // chown needs CAP_CHOWN, which is dropped
    CHECK(ec == sys(EPERM));
    mknod(open, "dev", file_type::character, 0600, 1, 3, ec);  // CAP_MKNOD dropped
    CHECK(ec == sys(EPERM));
    // COMMIT works regardless of access mode.
    sync(s, false, ec);
    CHECK_FALSE(ec);
    // Supplementary groups take part: the thread is not in group 0.
    CHECK(access(shared, access_read, ec) == 0);

    // The rest of the name space works for what the identity owns.
    create_how excl{.mode = create_mode::exclusive, .perm = 0600};
    excl.verifier.fill(std::byte{3});
    auto x = create(open, "excl", excl, ec);
    REQUIRE_FALSE(ec);
    CHECK(x.created);
    auto again = create(open, "excl", excl, ec);
    REQUIRE_FALSE(ec);
    CHECK_FALSE(again.created);
    link(x.file, open, "excl-link", ec);
    CHECK_FALSE(ec);
    rename(open, "excl-link", open, "renamed", ec);
    CHECK_FALSE(ec);
    remove(open, "renamed", ec);
    CHECK_FALSE(ec);
    CHECK(write(x.file, 0, std::as_bytes(std::span("hi", 2)), stability::unstable, ec) == 2);
    CHECK_FALSE(ec);
    setattr(x.file, {.mode = 0644, .mtime = time_update::at({1234, 5})}, ec);
    CHECK_FALSE(ec);
    CHECK(stat(x.file, ec).mtime == timestamp{1234, 5});
    CHECK(access(x.file, access_read | access_write | access_execute, ec) ==
          (access_read | access_write));
    object l = symlink(open, "sl", "/etc/shadow", ec);
    CHECK(stat(l, ec).uid == 1000);
    remove(open, "sl", ec);
    CHECK_FALSE(ec);
    remove(root, "shared", ec);  // the root directory is 0755 root-owned
    CHECK(ec == sys(EACCES));
  }
  CHECK(fsuid() == 0);
  {
    const gid_t groups[] = {0};
    scoped_identity id(1000, 1000, groups);
    CHECK(access(shared, access_read | access_write, ec) == access_read);  // via group 0 (r--)
  }
  // Root again: everything the identity could not do works.
  create(locked, "yes", {}, ec);
  CHECK_FALSE(ec);
  auto y = lookup(locked, "yes", ec);
  CHECK(stat(y, ec).uid == 0);
}

TEST_CASE("a read through the descriptor an earlier caller kept is checked against its own caller",
          "[fs][identity][io]") {
  REQUIRE(::geteuid() == 0);
  export_fixture f;
  std::error_code ec;
  auto made = create(f.exp.root(), "data", {.perm = 0640}, ec).file;
  REQUIRE_FALSE(ec);
  REQUIRE(write(made, 0, std::as_bytes(std::span("private", 7)), stability::unstable, ec) == 7);
  setattr(made, {.uid = 1000, .gid = 2000}, ec);
  REQUIRE_FALSE(ec);
  const auto fh = f.exp.fh_of(made, ec);
  REQUIRE_FALSE(ec);
  object file = f.exp.resolve(fh, ec);  // the handle cache's object, shared by later resolves
  REQUIRE_FALSE(ec);
  std::byte buf[16];
  auto read_as = [&](uid_t uid, gid_t gid, std::span<const gid_t> groups) {
    scoped_identity id(uid, gid, groups);
    object o = f.exp.resolve(fh, ec);
    REQUIRE_FALSE(ec);
    return read(o, 0, buf, ec).count;
  };
  const gid_t none[] = {4242};
  const gid_t member[] = {2000};

  // A refused open keeps nothing.
  CHECK(read_as(3000, 3000, none) == 0);
  CHECK(ec == sys(EACCES));
  CHECK(file.kept_reader() == -1);
  // The owner's read keeps its descriptor with the object; every clone shares it.
  CHECK(read_as(1000, 1000, none) == 7);
  CHECK_FALSE(ec);
  CHECK(std::memcmp(buf, "private", 7) == 0);
  const int kept = file.kept_reader();
  CHECK(kept >= 0);
  // Later callers read through it, each checked: others are refused, the group may read.
  CHECK(read_as(3000, 3000, none) == 0);
  CHECK(ec == sys(EACCES));
  CHECK(read_as(3000, 3000, member) == 7);
  CHECK_FALSE(ec);
  // A change of mode counts at once.
  setattr(file, {.mode = 0600}, ec);
  REQUIRE_FALSE(ec);
  CHECK(read_as(3000, 3000, member) == 0);
  CHECK(ec == sys(EACCES));
  CHECK(read_as(1000, 1000, none) == 7);
  CHECK_FALSE(ec);
  setattr(file, {.mode = 0000}, ec);
  REQUIRE_FALSE(ec);
  CHECK(read_as(1000, 1000, none) == 0);
  CHECK(ec == sys(EACCES));
  // Root keeps CAP_DAC_OVERRIDE.
  CHECK(read(file, 0, buf, ec).count == 7);
  CHECK_FALSE(ec);
  CHECK(file.kept_reader() == kept);
}

TEST_CASE("the identity belongs to the calling thread only", "[fs][identity]") {
  export_fixture f;
  std::error_code ec;
  object open = mkdir(f.exp.root(), "open", 0777, ec);
  REQUIRE_FALSE(ec);

  std::mutex m;
  std::condition_variable cv;
  int stage = 0;
  std::error_code thread_ec;
  uid_t thread_owner = 99;
  std::thread t([&] {
    scoped_identity id(1000, 1000);
    auto r = create(open, "by-thread", {}, thread_ec);
    if (!thread_ec) thread_owner = stat(r.file, thread_ec).uid;
    std::unique_lock lk(m);
    stage = 1;
    cv.notify_all();
    cv.wait(lk, [&] { return stage == 2; });  // keep the identity while main works
  });
  {
    std::unique_lock lk(m);
    cv.wait(lk, [&] { return stage == 1; });
  }
  CHECK(fsuid() == 0);
  auto r = create(open, "by-main", {}, ec);
  REQUIRE_FALSE(ec);
  CHECK(stat(r.file, ec).uid == 0);
  {
    std::lock_guard lk(m);
    stage = 2;
  }
  cv.notify_all();
  t.join();
  CHECK_FALSE(thread_ec);
  CHECK(thread_owner == 1000);
}

TEST_CASE("a failed switch changes nothing", "[fs][identity]") {
  std::vector<gid_t> too_many(70000, 1);  // more than NGROUPS_MAX (65536)
  CHECK_THROWS_AS(scoped_identity(1000, 1000, too_many), std::system_error);
  CHECK(fsuid() == 0);
  CHECK(::getgroups(0, nullptr) == 0);
}

TEST_CASE("nested identities restore in order", "[fs][identity]") {
  {
    scoped_identity a(1000, 1000);
    CHECK(fsuid() == 1000);
    {
      scoped_fs_root r;
      CHECK(fsuid() == 0);
    }
    CHECK(fsuid() == 1000);
    {
      scoped_identity b(2000, 2000);
      CHECK(fsuid() == 2000);
    }
    CHECK(fsuid() == 1000);
  }
  CHECK(fsuid() == 0);
  gid_t none[1];
  CHECK(::getgroups(0, none) >= 0);
}
