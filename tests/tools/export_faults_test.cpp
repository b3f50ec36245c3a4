// Refusals from vnfsd's own file system, end to end: an export that fills up answers
// NFS4ERR_NOSPC and keeps what was written before the failure; an export that is remounted
// read-only under a running vnfsd answers NFS4ERR_ROFS. The client reports both as error
// codes of its vectorized calls, and the vnfs command line as one line naming the path.
//
// The exports are small tmpfs mounts in a private mount namespace of this test process
// (vnfsd and vnfs, its children, share it; the host's mounts are never touched). Where the
// process may not make one (not root, or already multithreaded), the cases warn and stop.
#include <sched.h>
#include <sys/mount.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "vnfs/client.hpp"
#include "vnfs/nfs4/status.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"
#include "vnfs_cli_support.hpp"

using vnfs::nfs4::nfsstat4;
using vnfs::test::temp_dir;
using vnfs::test::vnfsd_process;
using bytes = std::vector<std::byte>;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kib = 1024;

/// Once per process, before any thread exists: a mount namespace of its own, mounts private.
bool private_mounts() {
  static const bool ok = ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
  return ok;
}

/// An export on a tmpfs of 1 MiB in a temporary folder, in the private namespace (so it goes
/// with it). make() warns and gives null where no private namespace can be had; the
/// destructor unmounts what unmount() did not.
struct tmpfs_export {
  temp_dir holder;
  fs::path path = holder.path() / "fs";
  bool mounted = false;

  static std::unique_ptr<tmpfs_export> make(const std::string& what) {
    if (!private_mounts()) {
      WARN("no private mount namespace here (unshare(CLONE_NEWNS) refused): " << what << " is not run");
      return nullptr;
    }
    auto e = std::make_unique<tmpfs_export>();
    fs::create_directories(e->path);
    const std::string opts = "size=" + std::to_string(1024 * kib) + ",mode=0755";
    e->mounted = ::mount("tmpfs", e->path.c_str(), "tmpfs", 0, opts.c_str()) == 0;
    REQUIRE(e->mounted);
    return e;
  }
  bool unmount() {
    mounted = mounted && ::umount2(path.c_str(), MNT_DETACH) != 0;
    return !mounted;
  }
  tmpfs_export() = default;
  tmpfs_export(const tmpfs_export&) = delete;
  tmpfs_export& operator=(const tmpfs_export&) = delete;
  ~tmpfs_export() {
    if (mounted) ::umount2(path.c_str(), MNT_DETACH);
  }
};

bytes pattern(std::size_t n) {
  bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte((i * 131 + i / 4096) % 251 + 1);  // never 0
  return b;
}

bytes read_local(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

/// Writes `file` until the file system is full.
void fill_up(const fs::path& file) {
  std::ofstream fill(file, std::ios::binary);
  const bytes block = pattern(4 * kib);
  while (fill.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(block.size()))) {
  }
}

}  // namespace

TEST_CASE("a full export: NFS4ERR_NOSPC, what came before the failure intact, the path named") {
  auto tmpfs = tmpfs_export::make("the full-export case");
  if (!tmpfs) return;
  const fs::path& exp = tmpfs->path;
  {
    vnfsd_process server(exp);
    const std::string url = "nfs://127.0.0.1:" + std::to_string(server.port()) + "/";
    vnfs::client c = vnfs::client::connect(url);

    // 4 MiB into a 1 MiB file system, in one call.
    const bytes data = pattern(4096 * kib);
    std::vector<vnfs::vio> w{vnfs::vio(vnfs::vfile("big"), 0, std::span<const std::byte>(data),
                                       vnfs::vio_flags::create | vnfs::vio_flags::truncate)};
    vnfs::vresult r = c.vwrite(w);
    CHECK(r.error == nfsstat4::NFS4ERR_NOSPC);
    CHECK(r.error == std::errc::no_space_on_device);
    CHECK(r.failed_index == 0);
    // What reached the disk is the data where it landed: WRITEs of one call run
    // concurrently, so a refused piece may leave a hole (zeros) below a written one, never
    // other bytes; and the file holds less than was sent.
    const bytes disk = read_local(exp / "big");
    CHECK(disk.size() < data.size());
    std::size_t landed = 0, wrong = 0;
    for (std::size_t i = 0; i < disk.size(); ++i) {
      if (disk[i] == data[i]) ++landed;
      else if (disk[i] != std::byte{0}) ++wrong;
    }
    CHECK(wrong == 0);
    CHECK(landed > 0);

    // The failed groups' opens were closed: once the same client removes the file, vnfsd
    // holds no descriptor of it and its space is free for the next write.
    std::vector<std::string> gone{"big"};
    REQUIRE(c.vremove(gone).ok());
    const bytes half = pattern(512 * kib);
    std::vector<vnfs::vio> again{vnfs::vio(vnfs::vfile("again"), 0, std::span<const std::byte>(half),
                                           vnfs::vio_flags::create | vnfs::vio_flags::truncate)};
    vnfs::vresult r2 = c.vwrite(again);
    INFO("the write after the removal: " << r2.error.message());
    CHECK(r2.ok());
    CHECK(read_local(exp / "again") == half);
    REQUIRE(c.vremove(std::vector<std::string>{"again"}).ok());

    // The command line: one line naming the destination and the reason, exit code 1.
    temp_dir local;
    {
      std::ofstream out(local.path() / "payload", std::ios::binary);
      out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    }
    vnfs::test::run_result cli = vnfs::test::vnfs_cli({"put", (local.path() / "payload").string(), url + "copy"});
    INFO(cli.err);
    CHECK(cli.code == 1);
    CHECK(cli.err.find("copy") != std::string::npos);
    CHECK(cli.err.find("No space left on device") != std::string::npos);
    CHECK(std::count(cli.err.begin(), cli.err.end(), '\n') == 1);
    REQUIRE(server.running());
  }
  CHECK(tmpfs->unmount());
}

TEST_CASE("an export remounted read-only under vnfsd: NFS4ERR_ROFS, the path named") {
  auto tmpfs = tmpfs_export::make("the read-only case");
  if (!tmpfs) return;
  const fs::path& exp = tmpfs->path;
  {
    std::ofstream(exp / "kept") << "kept bytes";
    vnfsd_process server(exp);  // makes its filehandle key while the export is writable
    REQUIRE(::mount(nullptr, exp.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, "size=1048576") == 0);
    const std::string url = "nfs://127.0.0.1:" + std::to_string(server.port()) + "/";
    vnfs::client c = vnfs::client::connect(url);

    const bytes data = pattern(8 * kib);
    for (const char* name : {"new", "kept"}) {
      std::vector<vnfs::vio> w{vnfs::vio(vnfs::vfile(name), 0, std::span<const std::byte>(data),
                                         vnfs::vio_flags::create | vnfs::vio_flags::truncate)};
      vnfs::vresult r = c.vwrite(w);
      INFO(name);
      CHECK(r.error == nfsstat4::NFS4ERR_ROFS);
      CHECK(r.error == std::errc::read_only_file_system);
    }
    std::vector<std::string> gone{"kept"};
    CHECK(c.vremove(gone).error == nfsstat4::NFS4ERR_ROFS);
    // Reading still works, and nothing changed.
    bytes back(64);
    std::vector<vnfs::vio> rd{vnfs::vio(vnfs::vfile("kept"), 0, std::span<std::byte>(back))};
    REQUIRE(c.vread(rd).ok());
    CHECK(rd[0].bytes == 10);
    CHECK(!fs::exists(exp / "new"));

    temp_dir local;
    std::ofstream(local.path() / "payload") << "x";
    vnfs::test::run_result cli = vnfs::test::vnfs_cli({"put", (local.path() / "payload").string(), url + "copy"});
    INFO(cli.err);
    CHECK(cli.code == 1);
    CHECK(cli.err.find("copy") != std::string::npos);
    CHECK(cli.err.find("Read-only file system") != std::string::npos);
    REQUIRE(server.running());
  }
  CHECK(tmpfs->unmount());
}

TEST_CASE("a transaction on a full export: NFS4ERR_NOSPC, nothing of it left, vnfsd still serving") {
  auto tmpfs = tmpfs_export::make("the full-export transaction case");
  if (!tmpfs) return;
  const fs::path& exp = tmpfs->path;
  {
    const bytes old = pattern(100 * kib), filler = pattern(300 * kib);
    {
      std::ofstream(exp / "old", std::ios::binary).write(reinterpret_cast<const char*>(old.data()), 100 * kib);
      std::ofstream(exp / "filler", std::ios::binary).write(reinterpret_cast<const char*>(filler.data()), 300 * kib);
    }
    vnfsd_process server(exp);
    const std::string url = "nfs://127.0.0.1:" + std::to_string(server.port()) + "/";
    vnfs::client_options o;
    o.atomic_vectors = true;
    vnfs::client c = vnfs::client::connect(url, o);

    // An overwrite of "old" (deferred to the commit) and two new files that do not fit.
    const bytes fresh = pattern(100 * kib + 7), big = pattern(400 * kib);
    std::vector<vnfs::vio> w{
        vnfs::vio(vnfs::vfile("old"), 0, std::span<const std::byte>(fresh), vnfs::vio_flags::truncate),
        vnfs::vio(vnfs::vfile("new1"), 0, std::span<const std::byte>(big), vnfs::vio_flags::create | vnfs::vio_flags::truncate),
        vnfs::vio(vnfs::vfile("new2"), 0, std::span<const std::byte>(big), vnfs::vio_flags::create | vnfs::vio_flags::truncate)};
    vnfs::vresult r = c.vwrite(w);
    INFO(r.error.message());
    CHECK(r.error == std::errc::no_space_on_device);
    CHECK((read_local(exp / "old") == old));
    CHECK(!fs::exists(exp / "new1"));
    CHECK(!fs::exists(exp / "new2"));
    REQUIRE(server.running());

    // With room again, a transaction that fits commits.
    fs::remove(exp / "filler");
    w.pop_back();
    vnfs::vresult r2 = c.vwrite(w);
    INFO("after making room: " << r2.error.message());
    CHECK(r2.ok());
    CHECK((read_local(exp / "old") == fresh));
    CHECK((read_local(exp / "new1") == big));
    CHECK(!fs::exists(exp / "new2"));
    REQUIRE(server.running());

    // Not a block left: an overwrite of part of "old" (its old bytes backed up first) has
    // nowhere to put the backup. Refused, and nothing changed.
    fill_up(exp / "filler");
    const bytes part = pattern(8 * kib + 3);
    std::vector<vnfs::vio> over{vnfs::vio(vnfs::vfile("old"), 4 * kib, std::span<const std::byte>(part))};
    vnfs::vresult r3 = c.vwrite(over);
    INFO("on a disk without a free block: " << r3.error.message());
    CHECK(r3.error == std::errc::no_space_on_device);
    CHECK((read_local(exp / "old") == fresh));
    // A truncating overwrite (the truncation a SETATTR, so the old bytes are backed up, in
    // memory until they can be written: here never; the rollback does without them).
    const bytes whole = pattern(90 * kib);
    std::vector<vnfs::vio> rewrite{
        vnfs::vio(vnfs::vfile("old"), 0, std::span<const std::byte>(whole), vnfs::vio_flags::truncate)};
    vnfs::vresult r4 = c.vwrite(rewrite);
    INFO("a truncating overwrite on a disk without a free block: " << r4.error.message());
    CHECK(r4.error == std::errc::no_space_on_device);
    CHECK((read_local(exp / "old") == fresh));
    REQUIRE(server.running());
  }
  CHECK(tmpfs->unmount());
}

TEST_CASE("a transaction whose commit finds the disk full: NFS4ERR_NOSPC, rolled back, vnfsd still serving") {
  auto tmpfs = tmpfs_export::make("the full-commit case");
  if (!tmpfs) return;
  const fs::path& exp = tmpfs->path;
  {
    const bytes old = pattern(100 * kib);
    std::ofstream(exp / "old", std::ios::binary).write(reinterpret_cast<const char*>(old.data()), 100 * kib);
    vnfsd_process server(exp);
    const std::string url = "nfs://127.0.0.1:" + std::to_string(server.port()) + "/";
    vnfs::client_options o;
    o.atomic_vectors = true;
    vnfs::client c = vnfs::client::connect(url, o);
    // A first transaction, so that vnfsd's state files exist; then all but 250 KiB filled.
    const bytes small = pattern(kib);
    std::vector<vnfs::vio> first{vnfs::vio(vnfs::vfile("first"), 0, std::span<const std::byte>(small),
                                           vnfs::vio_flags::create | vnfs::vio_flags::truncate)};
    REQUIRE(c.vwrite(first).ok());
    fill_up(exp / "filler");
    const auto filled = fs::file_size(exp / "filler");
    fs::resize_file(exp / "filler", filled - 210 * kib);

    // The overwrite of "old" is deferred to the commit (its 90 KiB go to the journal then;
    // when it ran, vnfsd had twice that free, as it requires); the new file's 150 KiB take
    // that room first. The commit's journal write fails: rolled back, the new file removed.
    const bytes whole = pattern(90 * kib), fresh = pattern(150 * kib);
    const auto overwrite = vnfs::vio_flags::create | vnfs::vio_flags::truncate;
    std::vector<vnfs::vio> w{vnfs::vio(vnfs::vfile("old"), 0, std::span<const std::byte>(whole), overwrite),
                             vnfs::vio(vnfs::vfile("new"), 0, std::span<const std::byte>(fresh), overwrite)};
    vnfs::vresult r = c.vwrite(w);
    INFO(r.error.message());
    CHECK(r.error == std::errc::no_space_on_device);
    CHECK((read_local(exp / "old") == old));
    CHECK(!fs::exists(exp / "new"));
    REQUIRE(server.running());

    // Truncated by a SETATTR instead (undo: its old bytes backed up, its blocks freed when it
    // is cut), and the new file takes those blocks: the undo must put 100 KiB back, which
    // only the new file's blocks can give, while descriptors still hold the new file.
    {
      const auto free_now = fs::space(exp).available;
      fs::resize_file(exp / "filler", fs::file_size(exp / "filler") + free_now - 250 * kib);
    }
    const bytes filling = pattern(200 * kib);
    std::vector<vnfs::vio> cut{
        vnfs::vio(vnfs::vfile("old"), 0, std::span<const std::byte>(whole), vnfs::vio_flags::truncate),
        vnfs::vio(vnfs::vfile("new"), 0, std::span<const std::byte>(filling), overwrite)};
    vnfs::vresult rc = c.vwrite(cut);
    INFO("truncated by SETATTR: " << rc.error.message());
    CHECK(rc.error == std::errc::no_space_on_device);
    CHECK((read_local(exp / "old") == old));
    CHECK(!fs::exists(exp / "new"));
    REQUIRE(server.running());
    // And with room again, it commits.
    fs::remove(exp / "filler");
    vnfs::vresult r2 = c.vwrite(w);
    INFO("after making room: " << r2.error.message());
    CHECK(r2.ok());
    CHECK((read_local(exp / "old") == whole));
    CHECK((read_local(exp / "new") == fresh));
  }
  CHECK(tmpfs->unmount());
}
