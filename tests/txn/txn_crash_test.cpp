// Crash recovery: vnfsd runs as its own process and exits abruptly (--txn-crash-at N, an
// _exit as sudden as SIGKILL) at every crash point of a transaction in turn: after the
// journal's first record, after each backup and record, after each operation, after the
// commit record, after a rollback's end record, and after the transaction ended but before
// its graves are removed. Restarted on the same export while the client waits, the server
// must show the tree exactly as before the transaction, or with all of its changes — never
// anything else, link counts included (a grave left behind would add a link) — and leave
// no unfinished journal, grave or other leftover in its state directory; the client, which lost the reply, must not run the transaction again but report
// exactly how it ended (docs/transactions.md, "Unknown outcomes").
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "state_leftovers.hpp"
#include "tree_digest.hpp"
#include "vnfs/client.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs;
using vnfs::test::temp_dir;
using vnfs::test::vnfsd_process;
using vnfs::txn_test::digest_options;
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
  // A second link of "a": a grave (the state directory's link to a removed file) that a
  // crash left behind would show in its link count.
  std::filesystem::create_hard_link(d / "a", d / "a.link");
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

/// Overwrites as bench/txn_overhead's transactions do (OPEN creating or truncating, WRITE
/// from 0, CLOSE): vnfsd defers both files' changes to the commit (redo).
vresult overwrite_scenario(client& c) {
  static const std::string data(6000, 'O');
  std::vector<vio> w;
  w.emplace_back(vfile("b"), 0, std::as_bytes(std::span(data).first(10)), vio_flags::create | vio_flags::truncate);
  w.emplace_back(vfile("c"), 0, std::as_bytes(std::span(data)), vio_flags::create | vio_flags::truncate);
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

/// Fails if it runs a second time after it committed: the exclusive create finds its file;
/// and a second run that got through would append twice.
std::vector<std::uint64_t> once_bytes;  ///< vio::bytes of once_scenario's last call

vresult once_scenario(client& c) {
  static const std::string data(700, 'X');
  std::vector<vio> w;
  w.emplace_back(vfile("excl"), 0, std::as_bytes(std::span(data)), vio_flags::create | vio_flags::exclusive);
  w.emplace_back(vfile("c"), 0, std::as_bytes(std::span(data).first(50)), vio_flags::append);
  vresult r = c.vwrite(w);
  once_bytes = {w[0].bytes, w[1].bytes};
  return r;
}

client connect_to(const vnfsd_process& p) {
  client_options o;
  o.atomic_vectors = true;
  o.connect_timeout = std::chrono::milliseconds(2000);
  o.reconnect_for = std::chrono::milliseconds(20'000);  // the test restarts the server meanwhile
  return client::connect("nfs://" + p.host() + ":" + std::to_string(p.port()) + "/w", o);
}

/// What the client was told, over the crashes of crash_at_every_point.
struct told {
  int crashes = 0, committed = 0, aborted = 0;
  int after_reply = 0;  ///< of the crashes: after the client had its reply (committed)
};

/// Runs `run` against a server that crashes at crash point n, for n = 1, 2, ... until the
/// transaction completes without reaching n. The test restarts a crashed server on the same
/// port (recovery runs first) while the client waits: the client must not run the
/// transaction again, but ask how it ended, and report exactly that — committed with the
/// tree as after one run, or errc::transaction_aborted with the tree as before.
/// A crash after the reply (a redo transaction's checkpoint, docs/transactions.md) leaves
/// the committed tree after recovery. `committed(reply_lost)` runs after each call that
/// reported committed: `reply_lost` if the server crashed before its reply.
told crash_at_every_point(const scenario& run, const std::function<void(bool)>& committed_check = {}) {
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
  told t;
  for (unsigned n = 1; n <= 200; ++n) {
    INFO("crash point " << n);
    temp_dir d("vnfs-txn-crash");
    populate(d.path());
    // Directories without their atimes: whatever lists one after the rollback restored it
    // (the restarted server serving the client that waits) may move it (tree_digest.hpp).
    const digest_options exact{.directory_atimes = false};
    const std::string before = settled_digest(work(d.path()), exact);
    bool crashed = false;
    bool reply_had = false;  ///< it crashed after the reply
    vresult r;
    {
      vnfsd_process p(d.path(), {"--txn-crash-at", std::to_string(n)});
      client c = connect_to(p);
      std::atomic<bool> finished{false};
      std::thread caller([&] {
        r = run(c);
        finished = true;
      });
      for (int i = 0; i < 3000 && !finished && !crashed; ++i) {  // at most 30 s
        if (!p.running()) {
          crashed = true;
          p.start({});  // recovery, then the same port: the client reconnects
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      caller.join();
      // Crash points after the reply: a redo transaction's checkpoint (it may run before the
      // server stops, or when stopping it finishes it). A crash there leaves the rest to
      // recovery. (One before the reply is restarted above before the caller can finish.)
      if (!crashed) {
        bool late = !p.running();
        if (!late) {
          const auto status = p.stop();
          late = status.exited() && status.code() == 86;
          if (!late) CHECK(status.success());
        }
        if (late) {
          crashed = reply_had = true;
          ++t.after_reply;
          p.start({});  // recovery
        }
      }
    }
    for (const std::string& left : vnfs::txn_test::state_leftovers(d.path())) FAIL_CHECK("left in the state directory: " << left);
    const std::string now = tree_digest(work(d.path()), exact);
    const bool rolled_back = now == before;
    const bool committed = tree_digest(work(d.path()), {.times = false}) == after;
    if (r.ok() && committed_check) committed_check(crashed && !reply_had);
    if (!crashed) {
      CHECK(r.ok());  // the transaction ended before crash point n
      CHECK(committed);
      return t;
    }
    ++t.crashes;
    if (r.ok()) {
      ++t.committed;
      CHECK(committed);
      CHECK(r.ok_count == r.status.size());
    } else {
      ++t.aborted;
      CHECK(r.error == errc::transaction_aborted);
      CHECK(r.failed_index == vresult::npos);
      CHECK(r.ok_count == 0);
      for (const auto& s : r.status) CHECK(s == errc::not_executed);
      if (!rolled_back) CHECK(now == before);  // shows what differs
      CHECK(rolled_back);
    }
  }
  FAIL("the transaction never completed within 200 crash points");
  return t;
}

}  // namespace

TEST_CASE("a crash at any point of a vwrite transaction leaves the export before or after", "[txn][crash]") {
  const told t = crash_at_every_point(write_scenario);
  CHECK(t.crashes > 10);
  // Its write to "a" is redo (deferred to the commit; "b" is truncated by a SETATTR, which
  // keeps undo). Committed: after the commit record, after the write applied, after the
  // checkpoint's syncfs, after its record, and when the transaction has ended. The last
  // three may come before or after the reply (the checkpoint runs beside it).
  CHECK(t.committed == 5);
  CHECK(t.after_reply <= 3);
  CHECK(t.aborted >= 8);
}

TEST_CASE("a crash at any point of an overwriting vwrite transaction (redo) leaves the export before or after",
          "[txn][crash]") {
  const told t = crash_at_every_point(overwrite_scenario);
  CHECK(t.crashes > 5);
  // Committed: after the commit record, after each of the two writes applied, after the
  // checkpoint's syncfs, after its record, and when the transaction has ended.
  CHECK(t.committed == 6);
  CHECK(t.after_reply <= 3);
  CHECK(t.aborted >= 2);
}

TEST_CASE("a crash at any point of a vrename transaction leaves the export before or after", "[txn][crash]") {
  const told t = crash_at_every_point(namespace_scenario);
  CHECK(t.crashes > 10);
  CHECK(t.committed >= 2);
  CHECK(t.aborted >= 8);
}

TEST_CASE("a crash at any point of a vremove transaction leaves the export before or after", "[txn][crash]") {
  const told t = crash_at_every_point(remove_scenario);
  CHECK(t.crashes > 10);
  CHECK(t.committed >= 2);
  CHECK(t.aborted >= 8);
}

TEST_CASE("a transaction whose reply a crash lost is not run again: committed once, or aborted", "[txn][crash]") {
  // Exclusive create and append: a second run would fail (the file exists) or append twice.
  const told t = crash_at_every_point(once_scenario, [](bool crashed) {
    // Committed with its reply: the bytes written; with the reply lost, not known (0).
    CHECK(once_bytes == (crashed ? std::vector<std::uint64_t>{0, 0} : std::vector<std::uint64_t>{700, 50}));
  });
  CHECK(t.committed >= 2);
  CHECK(t.aborted >= 4);
}
