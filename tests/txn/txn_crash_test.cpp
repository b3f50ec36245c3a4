// Crash recovery: vnfsd runs as its own process and exits abruptly (--txn-crash-at N, an
// _exit as sudden as SIGKILL) at every crash point of a transaction in turn: after the
// journal's first record, after each backup and record, after each operation, after the
// commit record and while the finished transaction's files are removed. Restarted on the
// same export, the server must show the tree exactly as before the transaction, or with
// all of its changes — never anything else — and leave no journal behind.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "tree_digest.hpp"
#include "vnfs/client.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs;
using vnfs::test::temp_dir;
using vnfs::test::vnfsd_process;
using vnfs::txn_test::digest_options;
using vnfs::txn_test::leftover_journals;
using vnfs::txn_test::settled_digest;
using vnfs::txn_test::tree_digest;

namespace {

void write_local(const std::filesystem::path& p, std::size_t n, char fill) {
  std::ofstream(p) << std::string(n, fill);
}

/// The client's root: a directory under the export root (whose own times and link count
/// change when vnfsd makes its state directory there).
std::filesystem::path work(const std::filesystem::path& export_root) { return export_root / "w"; }

void populate(const std::filesystem::path& export_root) {
  ::chmod(export_root.c_str(), 0755);
  const auto d = work(export_root);
  std::filesystem::create_directory(d);
  write_local(d / "a", 9000, 'a');
  write_local(d / "b", 3000, 'b');
  write_local(d / "c", 100, 'c');
  std::filesystem::create_directory(d / "sub");
  write_local(d / "sub" / "s", 10, 's');
  std::int64_t t = 1'500'000'000;
  for (const char* n : {"a", "b", "c", "sub/s", "sub", "."}) {
    struct timespec ts[2] = {{t, 1}, {t + 1, 2}};
    REQUIRE(::utimensat(AT_FDCWD, (d / n).c_str(), ts, AT_SYMLINK_NOFOLLOW) == 0);
    t += 10;
  }
}

using scenario = std::function<vresult(client&)>;

vresult write_scenario(client& c) {
  static const std::string data(6000, 'N');
  std::vector<vio> w;
  w.emplace_back(vfile("new"), 0, std::as_bytes(std::span(data)), vio_flags::create);
  w.emplace_back(vfile("a"), 4000, std::as_bytes(std::span(data)));  // overwrite and extend
  w.emplace_back(vfile("b"), 0, std::as_bytes(std::span(data).first(10)), vio_flags::truncate);
  return c.vwrite(w);
}

vresult namespace_scenario(client& c) {
  std::vector<vrename_item> r{{"a", "sub/a"}, {"b", "c"}, {"sub/s", "s2"}};
  return c.vrename(r);
}

vresult remove_scenario(client& c) {
  std::vector<std::string> r{"a", "sub/s", "sub"};
  return c.vremove(r);
}

client connect_to(const vnfsd_process& p) {
  client_options o;
  o.atomic_vectors = true;
  o.connect_timeout = std::chrono::milliseconds(2000);
  o.reconnect_for = std::chrono::milliseconds(200);
  return client::connect("nfs://" + p.host() + ":" + std::to_string(p.port()) + "/w", o);
}

/// Runs `run` against a server that crashes at crash point n, for n = 1, 2, ... until the
/// transaction completes without reaching n. Returns how many crashes were checked.
int crash_at_every_point(const scenario& run) {
  // The committed tree, without times (the server sets those when it runs).
  std::string after;
  {
    temp_dir d("vnfs-txn-crash");
    populate(d.path());
    vnfsd_process p(d.path());
    client c = connect_to(p);
    REQUIRE(run(c).ok());
    after = settled_digest(work(d.path()), {.times = false});
  }
  int crashes = 0;
  for (unsigned n = 1; n <= 200; ++n) {
    INFO("crash point " << n);
    temp_dir d("vnfs-txn-crash");
    populate(d.path());
    const std::string before = settled_digest(work(d.path()));
    bool crashed = false;
    {
      vnfsd_process p(d.path(), {"--txn-crash-at", std::to_string(n)});
      vresult r;
      {
        client c = connect_to(p);
        r = run(c);
      }
      for (int i = 0; i < 200 && p.running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      crashed = !p.running();
      if (!crashed) REQUIRE(r.ok());  // the transaction ended before crash point n
      else CHECK_FALSE(r.ok());
    }
    if (crashed) {
      // Restart: recovery runs before the server listens.
      vnfsd_process again(d.path());
      ++crashes;
    }
    CHECK(leftover_journals(d.path()) == 0);
    const std::string now = tree_digest(work(d.path()));
    const bool rolled_back = now == before;
    const bool committed = tree_digest(work(d.path()), {.times = false}) == after;
    if (!rolled_back && !committed) CHECK(now == before);  // shows what differs
    CHECK((rolled_back || committed));
    if (!crashed) {
      CHECK(committed);
      return crashes;
    }
  }
  FAIL("the transaction never completed within 200 crash points");
  return crashes;
}

}  // namespace

TEST_CASE("a crash at any point of a vwrite transaction leaves the export before or after", "[txn][crash]") {
  CHECK(crash_at_every_point(write_scenario) > 10);
}

TEST_CASE("a crash at any point of a vrename transaction leaves the export before or after", "[txn][crash]") {
  CHECK(crash_at_every_point(namespace_scenario) > 10);
}

TEST_CASE("a crash at any point of a vremove transaction leaves the export before or after", "[txn][crash]") {
  CHECK(crash_at_every_point(remove_scenario) > 10);
}
