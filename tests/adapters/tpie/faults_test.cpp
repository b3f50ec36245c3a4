// Failures behind the application: a WRITE queued by write-behind that the server refuses
// is thrown, with the path, by the next call on the file or at the latest by close; with
// write-behind off by the write itself. The refusals are real ones from vnfsd's file system:
// a file-size limit (ulimit -f on vnfsd: NFS4ERR_FBIG) and, where this process may mount
// a 2 MiB tmpfs, an export that is full (NFS4ERR_NOSPC -> out_of_space_error). And a vnfsd
// restart in the middle of a sequential scan is survived, the bytes exact.
#include <catch2/catch.hpp>

#include <sys/mount.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "tpie_fixture.hpp"
#include "vnfs/tpie/raw_file_accessor.hpp"

using namespace vnfs::tpie;
using vnfs::tpie::test::mounted_server;
using vnfs::tpie::test::pattern_bytes;

namespace {

constexpr std::size_t mib = 1 << 20;

/// vnfsd under a file-size limit of `limit_kib` KiB: started through a shell that ignores
/// SIGXFSZ and lowers RLIMIT_FSIZE before exec'ing it, so that a WRITE beyond the limit fails
/// with EFBIG (NFS4ERR_FBIG) instead of killing the server.
struct limited_server {
  vnfs::test::temp_dir scripts{"vnfs-tpie-limit"};
  std::unique_ptr<mounted_server> server;

  explicit limited_server(unsigned limit_kib) {
    const std::filesystem::path wrapper = scripts / "vnfsd-limited";
    {
      std::ofstream out(wrapper);
      out << "#!/bin/sh\ntrap '' XFSZ\nulimit -f " << limit_kib << "\nexec '"
          << vnfs::test::vnfsd_process::binary().string() << "' \"$@\"\n";
    }
    std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
    const char* old = std::getenv("VNFSD_BIN");
    const std::string saved = old ? old : "";
    ::setenv("VNFSD_BIN", wrapper.c_str(), 1);
    try {
      server = std::make_unique<mounted_server>();
    } catch (...) {
      old ? ::setenv("VNFSD_BIN", saved.c_str(), 1) : ::unsetenv("VNFSD_BIN");
      throw;
    }
    old ? ::setenv("VNFSD_BIN", saved.c_str(), 1) : ::unsetenv("VNFSD_BIN");
  }
  mounted_server* operator->() { return server.get(); }
};

/// A write of 1 MiB at 4 MiB: beyond the limit of 3 MiB. One full request: sent at once.
void write_beyond(raw_file_accessor& a) {
  auto data = pattern_bytes(4 * mib, mib);
  a.seek_i(4 * mib);
  a.write_i(data.data(), data.size());
}

/// Waits until the WRITE sent last has certainly been answered.
void let_it_fail() { std::this_thread::sleep_for(std::chrono::milliseconds(500)); }

void check_names(const io_error& e, const std::string& path) {
  CHECK(e.path() == path);
  CHECK(std::string(e.what()).find(path) != std::string::npos);
}

/// A tmpfs of `bytes` mounted on `dir` (created); detached on destruction.
struct small_tmpfs {
  std::filesystem::path dir;
  bool mounted = false;
  small_tmpfs(std::filesystem::path d, std::size_t bytes) : dir(std::move(d)) {
    std::filesystem::create_directory(dir);
    const std::string opts = "size=" + std::to_string(bytes) + ",mode=0777";
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) == 0;
  }
  ~small_tmpfs() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
};

}  // namespace

TEST_CASE("a failed write-behind surfaces at the next call, with the path") {
  limited_server s(3072);
  const std::string path = s->remote("limited");
  raw_file_accessor a;
  a.open_wo(path);
  auto first = pattern_bytes(0, mib);
  a.write_i(first.data(), first.size());
  write_beyond(a);  // returns: the WRITE is behind the application
  let_it_fail();
  REQUIRE(s->vnfsd->running());
  try {
    a.seek_i(0);
    FAIL("the failed WRITE was not reported by the next call");
  } catch (const out_of_space_error&) {
    FAIL("a file-size limit is not a full export");
  } catch (const io_error& e) {
    check_names(e, path);
    CHECK(e.code() == std::errc::file_too_large);
    CHECK(std::string(e.what()).find("write-behind of 1048576 bytes at offset 4194304") != std::string::npos);
  }
  // Reported once; the file stays usable.
  CHECK_NOTHROW(a.seek_i(0));
  CHECK(a.is_open());
  CHECK_NOTHROW(a.close_i());
  CHECK(s->server_bytes("limited") == first);
}

TEST_CASE("a failed write-behind surfaces at close, with the path") {
  limited_server s(3072);
  const std::string path = s->remote("limited-at-close");
  raw_file_accessor a;
  a.open_wo(path);
  write_beyond(a);
  try {
    a.close_i();
    FAIL("close did not report the failed WRITE");
  } catch (const io_error& e) {
    check_names(e, path);
    CHECK(e.code() == std::errc::file_too_large);
  }
  CHECK_FALSE(a.is_open());
}

TEST_CASE("without write-behind the write itself fails") {
  limited_server s(3072);
  const std::string path = s->remote("limited-sync");
  engine_options o;
  o.write_behind = false;
  raw_file_accessor a;
  a.set_engine_options(o);
  a.open_wo(path);
  try {
    write_beyond(a);
    FAIL("the synchronous write did not fail");
  } catch (const io_error& e) {
    check_names(e, path);
    CHECK(e.code() == std::errc::file_too_large);
  }
  CHECK_NOTHROW(a.close_i());
}

TEST_CASE("an export that fills up: out_of_space_error with the path") {
  vnfs::test::temp_dir holder{"vnfs-tpie-full"};
  small_tmpfs full(holder / "fs", 2 * mib);  // unmounted after the server below stops
  if (!full.mounted) {
    WARN("cannot mount a tmpfs here (not privileged): the full-export case is not run");
    return;
  }
  mounted_server s(vnfs::tpie::test::transport::tcp, {}, full.dir);
  const std::string path = s.remote("big");
  raw_file_accessor a;
  a.open_wo(path);
  bool reported = false;
  try {
    for (std::size_t k = 0; k < 8; ++k) {  // 8 MiB into 2 MiB
      auto data = pattern_bytes(k * mib, mib);
      a.write_i(data.data(), data.size());
    }
    a.close_i();
  } catch (const out_of_space_error& e) {
    reported = true;
    check_names(e, path);
    CHECK(e.code() == std::errc::no_space_on_device);
  }
  CHECK(reported);
  // Write-behinds still in flight when the first failure surfaced may fail the same way:
  // close reports the next one (with the path) and closes the file either way.
  if (a.is_open()) {
    try {
      a.close_i();
    } catch (const out_of_space_error& e) {
      check_names(e, path);
    }
  }
  CHECK_FALSE(a.is_open());
}

TEST_CASE("a vnfsd restart in the middle of a sequential scan is survived") {
  mounted_server s;
  const std::size_t total = 16 * mib;
  {
    raw_file_accessor w;
    w.open_wo(s.remote("long"));
    auto data = pattern_bytes(0, total);
    w.write_i(data.data(), data.size());
    w.close_i();
  }
  raw_file_accessor a;
  a.set_cache_hint(cache_hint::sequential);
  a.open_ro(s.remote("long"));
  std::vector<char> buf(2 * mib);
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < total / buf.size(); ++k) {
    if (k == 3) s.vnfsd->restart();  // with READs of the window in flight or about to be
    a.read_i(buf.data(), buf.size());
    if (buf != pattern_bytes(k * buf.size(), buf.size())) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(s.stats().reconnects >= 1);
  CHECK_NOTHROW(a.close_i());
}
