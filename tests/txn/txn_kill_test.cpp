// vnfsd killed from outside (SIGKILL) at random moments while several clients run
// transactional untar-like work (docs/transactions.md): each transaction spans COMPOUNDs
// (begin, vmkdir, vwrite of several files, commit) in its own directory. The test kills
// and restarts the server on the same export and port a few times; afterwards every
// transaction's directory is whole (committed) or absent (rolled back) — the tree equals
// the state before or after each transaction — and matches what its client was told.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "state_leftovers.hpp"
#include "test_pattern.hpp"
#include "tree_digest.hpp"
#include "vnfs/client.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"
#include "vnfs/transaction.hpp"

using namespace vnfs;
using vnfs::txn_test::tree_digest;

namespace {

const std::vector<std::byte> small = test::pattern(3000, 1), large = test::pattern(200'000, 2);

/// One transaction's work: `name` with a subdirectory and three files.
struct outcome {
  std::string name;
  bool began = false;
  std::error_code calls;  ///< the first error of vmkdir or vwrite
  std::error_code committed;
  txn_state state = txn_state::none;
};

outcome untar(client& c, const std::string& name) {
  outcome o{name};
  transaction t;
  try {
    t = transaction::begin(c);
  } catch (const std::system_error&) {
    return o;  // never began: nothing ran
  }
  o.began = true;
  std::vector<vmkdir_item> dirs{{name, 0755}, {name + "/sub", 0750}};
  // A failure that changed nothing (none is expected here: a server in its grace period
  // is waited for) would leave the transaction open; one after a change aborts it, and
  // commit says so.
  o.calls = t.view().vmkdir(dirs).error;
  std::vector<vio> w;
  w.emplace_back(vfile(name + "/a"), 0, std::span(small), vio_flags::create);
  w.emplace_back(vfile(name + "/sub/b"), 0, std::span(large), vio_flags::create);
  w.emplace_back(vfile(name + "/c"), 0, std::span(small).first(100), vio_flags::create);
  const std::error_code written = t.view().vwrite(w).error;
  if (!o.calls) o.calls = written;
  o.committed = t.commit();
  o.state = t.state();
  return o;
}

}  // namespace

TEST_CASE("vnfsd killed at random moments under transactional load: every tree whole or absent, as its client was told",
          "[txn][crash]") {
  test::temp_dir d("vnfs-txn-kill");
  ::chmod(d.path().c_str(), 0755);
  test::vnfsd_process p(d.path());
  const std::string url = "nfs://" + p.host() + ":" + std::to_string(p.port()) + "/";
  client_options opts;
  opts.reconnect_for = std::chrono::milliseconds(20'000);

  // The committed tree of one transaction, as the reference.
  std::string committed_tree;
  {
    client c = client::connect(url, opts);
    outcome ref = untar(c, "ref");
    REQUIRE(ref.committed == std::error_code());
    committed_tree = tree_digest(d.path() / "ref", {.times = false});
  }

  constexpr int clients = 3, kills = 4, max_per_client = 200;
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::atomic<bool> stop{false};
  std::vector<std::vector<outcome>> results(clients);
  // Connected before the first kill: connect() itself does not wait for a server that dies
  // during the session set-up (it reports the failure).
  std::vector<client> conns;
  for (int k = 0; k < clients; ++k) conns.push_back(client::connect(url, opts));
  std::vector<std::thread> threads;
  for (int k = 0; k < clients; ++k) {
    threads.emplace_back([&, k] {
      client& c = conns[static_cast<std::size_t>(k)];
      for (int i = 0; i < max_per_client && !stop; ++i)
        results[static_cast<std::size_t>(k)].push_back(untar(c, "t" + std::to_string(k) + "_" + std::to_string(i)));
    });
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pause_ms(20, 120);
  int killed = 0;
  for (int i = 0; i < kills; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    if (p.running()) {
      (void)p.kill();  // SIGKILL: no clean-up of any kind
      ++killed;
    }
    p.start();  // recovery rolls back what was not committed, then the same port
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
  stop = true;
  for (auto& t : threads) t.join();

  CHECK(killed == kills);
  int committed = 0, aborted = 0;
  for (const auto& per_client : results) {
    for (const outcome& o : per_client) {
      INFO(o.name);
      const auto dir = d.path() / o.name;
      if (o.began && o.state == txn_state::committed) {
        CHECK(o.committed == std::error_code());
        CHECK(o.calls.message() == std::error_code().message());
        CHECK(tree_digest(dir, {.times = false}) == committed_tree);
        ++committed;
      } else {
        // Rolled back, or never began; never unknown (the server came back each time).
        CHECK((!o.began || (o.state == txn_state::aborted && o.committed == errc::transaction_aborted)));
        CHECK_FALSE(std::filesystem::exists(dir));
        ++aborted;
      }
    }
  }
  CHECK(committed > 0);
  CHECK(aborted > 0);  // at least one kill met a transaction in flight
  (void)p.stop();
  CHECK(vnfs::txn_test::state_leftovers(d.path()).empty());
}
