// Transactions spanning COMPOUNDs (vnfs::transaction, docs/transactions.md): begin, calls
// of many COMPOUNDs inside, commit or abort — whole or nothing, with exact outcomes; reads
// inside see the transaction's own changes, other clients see nothing of it before its
// commit; refused by servers without the extension (NFS-Ganesha) and by file://; the
// outcome of a commit whose server crashed is exact once the server is back.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "client_fixture.hpp"
#include "state_leftovers.hpp"
#include "tree_digest.hpp"
#include "vnfs/nfs4/status.hpp"
#include "vnfs/nfs4/txn_ops.hpp"
#include "vnfs/test/blocking_session.hpp"
#include "vnfs/test/tcp_proxy.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"
#include "vnfs/transaction.hpp"

using namespace vnfs;
using namespace vnfs::client_test;
using vnfs::txn_test::digest_options;
using vnfs::txn_test::settled_digest;
using vnfs::txn_test::tree_digest;

namespace {

void write_local(const std::filesystem::path& p, std::string_view text) { std::ofstream(p) << text; }

void populate(const std::filesystem::path& d) {
  write_local(d / "a", "aaaaaaaaaaaaaaaaaaaa");
  write_local(d / "b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  std::filesystem::create_directory(d / "sub");
  std::int64_t t = 1'500'000'000;
  for (const char* n : {"a", "b", "sub", "."}) {
    struct timespec ts[2] = {{t, 1}, {t + 1, 2}};
    REQUIRE(::utimensat(AT_FDCWD, (d / n).c_str(), ts, AT_SYMLINK_NOFOLLOW) == 0);
    t += 10;
  }
}

/// 1,500 directories: more operations than one COMPOUND takes (vnfsd grants 1,024).
std::vector<vmkdir_item> many_dirs() {
  std::vector<vmkdir_item> v;
  for (int i = 0; i < 1500; ++i) v.push_back({"d" + std::to_string(i), 0755});
  return v;
}

const std::string data = "written inside the transaction";

std::vector<vio> one_write(const std::string& path) {
  std::vector<vio> w;
  w.emplace_back(vfile(path), 0, std::as_bytes(std::span(data)), vio_flags::create);
  return w;
}

std::vector<vattr> stats_of(std::vector<std::string> paths) {
  std::vector<vattr> v;
  for (auto& p : paths) v.emplace_back(vfile(p));
  return v;
}

const std::error_code noent = nfs4::nfsstat4::NFS4ERR_NOENT;

/// The COMPOUNDs client `c` sent since the last call (or since construction).
class compounds_since {
 public:
  explicit compounds_since(const client& c) : c_(c), from_(c.stats().compounds) {}
  std::uint64_t operator()() {
    const std::uint64_t now = c_.stats().compounds;
    const std::uint64_t n = now - from_;
    from_ = now;
    return n;
  }

 private:
  const client& c_;
  std::uint64_t from_;
};

}  // namespace

TEST_CASE("a transaction spanning COMPOUNDs commits whole; others see it only after the commit", "[txn][multi]") {
  client_env env(target::vnfsd);
  populate(env.dir());
  client other = client::connect(env.url());
  transaction t = transaction::begin(env.c());
  CHECK(t.state() == txn_state::open);
  const auto sent = env.c().stats().compounds;
  auto dirs = many_dirs();
  vresult r = t.view().vmkdir(dirs);
  REQUIRE(r.ok());
  CHECK(r.ok_count == 1500);
  CHECK(env.c().stats().compounds - sent >= 2);  // the call needed more than one COMPOUND

  // Reads inside see the transaction's own changes.
  auto seen = stats_of({"d0", "d1499"});
  CHECK(t.view().vgetattrs(seen).ok());
  // Another client's read waits for the transaction's end: it runs after the commit, so
  // it finds "last" (written after it was issued) as well as "d0".
  completion_group g;
  auto outside = stats_of({"d0", "last"});
  vresult outside_r;
  other.async_vgetattrs(outside, &outside_r, g, 1);
  auto w = one_write("last");
  REQUIRE(t.view().vwrite(w).ok());
  std::vector<std::byte> back(data.size());
  std::vector<vio> rd;
  rd.emplace_back(vfile("last"), 0, std::span(back));
  REQUIRE(t.view().vread(rd).ok());
  CHECK(std::string(reinterpret_cast<const char*>(back.data()), back.size()) == data);

  CHECK(t.commit() == std::error_code());
  CHECK(t.state() == txn_state::committed);
  completion e = g.wait();
  CHECK(e.status == std::error_code());
  CHECK(outside_r.ok_count == 2);
  CHECK(std::filesystem::is_directory(env / "d1499"));
  CHECK(std::filesystem::file_size(env / "last") == data.size());
  // Nothing runs in an ended transaction.
  CHECK(t.view().vmkdir(dirs).error == errc::closed);
  CHECK(vnfs::txn_test::state_leftovers(env.server().export_dir()).empty());
}

TEST_CASE("a failing item rolls back the whole transaction, earlier calls included", "[txn][multi]") {
  client_env env(target::vnfsd);
  populate(env.dir());
  const std::string before = settled_digest(env.dir());
  client other = client::connect(env.url());
  transaction t = transaction::begin(env.c());
  auto dirs = many_dirs();
  REQUIRE(t.view().vmkdir(dirs).ok());
  std::vector<std::string> removals{"a", "sub"};
  REQUIRE(t.view().vremove(removals).ok());
  completion_group g;
  auto outside = stats_of({"a", "d0"});
  vresult outside_r;
  other.async_vgetattrs(outside, &outside_r, g, 1);

  std::vector<vio> w;
  w.emplace_back(vfile("b"), 0, std::as_bytes(std::span(data)), vio_flags::truncate);
  w.emplace_back(vfile("new"), 0, std::as_bytes(std::span(data)), vio_flags::create);
  w.emplace_back(vfile("missing/x"), 0, std::as_bytes(std::span(data)), vio_flags::create);
  vresult r = t.view().vwrite(w);
  CHECK(r.failed_index == 2);
  CHECK(r.error == noent);
  CHECK(r.ok_count == 0);
  CHECK(r.status[0] == errc::rolled_back);
  CHECK(r.status[1] == errc::rolled_back);
  CHECK(t.state() == txn_state::aborted);
  CHECK(t.failed_index() == 2);
  CHECK(t.failed_error() == noent);

  // Later calls run nothing.
  const auto sent = env.c().stats().compounds;
  CHECK(t.view().vmkdir(dirs).error == errc::transaction_aborted);
  CHECK(env.c().stats().compounds == sent);
  CHECK(t.commit() == errc::transaction_aborted);
  CHECK(t.abort() == std::error_code());

  // The outside read ran after the rollback: "a" is back, "d0" never was.
  g.wait();
  CHECK(outside_r.status[0] == std::error_code());
  CHECK(outside_r.status[1] == noent);
  CHECK(tree_digest(env.dir()) == before);
}

TEST_CASE("abort undoes a transaction; every call form of commit and abort", "[txn][multi]") {
  client_env env(target::vnfsd);
  populate(env.dir());
  const std::string before = settled_digest(env.dir());
  {
    transaction t = transaction::begin(env.c());
    auto dirs = many_dirs();
    REQUIRE(t.view().vmkdir(dirs).ok());
    std::vector<vrename_item> mv{{"a", "d7/a"}, {"b", "sub/b"}};
    REQUIRE(t.view().vrename(mv).ok());
    completion_group g;
    t.async_abort(g, 5);
    completion e = g.wait();
    CHECK(e.tag == 5);
    CHECK(e.status == std::error_code());
    CHECK(t.state() == txn_state::aborted);
  }
  CHECK(tree_digest(env.dir()) == before);
  const std::string before2 = settled_digest(env.dir());  // that read set the directory's atime
  {
    // The destructor aborts a transaction left open.
    transaction t = transaction::begin(env.c());
    auto w = one_write("gone");
    REQUIRE(t.view().vwrite(w).ok());
  }
  CHECK(tree_digest(env.dir()) == before2);
  {
    // Callback begin and commit.
    transaction t;
    std::promise<std::error_code> began;
    transaction::begin(env.c(), &t, [&](std::error_code ec, std::size_t) { began.set_value(ec); });
    REQUIRE(began.get_future().get() == std::error_code());
    auto w = one_write("kept");
    REQUIRE(t.view().vwrite(w).ok());
    std::promise<std::error_code> done;
    t.commit([&](std::error_code ec, std::size_t) { done.set_value(ec); });
    CHECK(done.get_future().get() == std::error_code());
    CHECK(std::filesystem::file_size(env / "kept") == data.size());
  }
}

TEST_CASE("once the server is known to have the extension, TXN_BEGIN rides in the transaction's first COMPOUND",
          "[txn][multi]") {
  client_env env(target::vnfsd);
  compounds_since sent(env.c());
  // The client's first transaction learns that the server has the extension: TXN_BEGIN alone.
  transaction first = transaction::begin(env.c());
  CHECK(sent() == 1);
  CHECK(first.commit() == std::error_code());
  CHECK(sent() == 1);

  // From then on begin sends nothing; the first call's COMPOUND begins the transaction.
  transaction t = transaction::begin(env.c());
  CHECK(sent() == 0);
  CHECK(t.state() == txn_state::open);
  std::vector<vmkdir_item> top{{"t", 0755}};
  REQUIRE(t.view().vmkdir(top).ok());
  CHECK(sent() == 1);
  auto w = one_write("t/f");
  REQUIRE(t.view().vwrite(w).ok());
  CHECK(sent() == 1);
  CHECK(t.commit() == std::error_code());
  CHECK(sent() == 1);
  CHECK(std::filesystem::file_size(env / "t" / "f") == data.size());

  // An empty transaction never reaches the server: its commit and abort are exact at once.
  transaction empty = transaction::begin(env.c());
  CHECK(empty.commit() == std::error_code());
  CHECK(empty.state() == txn_state::committed);
  transaction dropped = transaction::begin(env.c());
  CHECK(dropped.abort() == std::error_code());
  CHECK(dropped.state() == txn_state::aborted);
  CHECK(sent() == 0);

  // A first call of many COMPOUNDs: the first carries TXN_BEGIN, the others wait for its
  // reply and join; two calls at once as well. Aborted, nothing of it remains.
  const std::string before = settled_digest(env.dir());
  {
    transaction u = transaction::begin(env.c());
    auto dirs = many_dirs();
    std::vector<vmkdir_item> more{{"m1", 0755}, {"m2", 0755}};
    completion_group g;
    vresult r1, r2;
    u.view().async_vmkdir(dirs, &r1, g, 1);
    u.view().async_vmkdir(more, &r2, g, 2);
    g.wait();
    g.wait();
    CHECK(r1.ok_count == 1500);
    CHECK(r2.ok_count == 2);
    CHECK(sent() >= 3);
    CHECK(std::filesystem::is_directory(env / "d1499"));  // this test sees the export itself
    CHECK(u.abort() == std::error_code());
  }
  CHECK(tree_digest(env.dir()) == before);

  // A first COMPOUND that fails having changed nothing begins the transaction all the same,
  // and leaves it open: the next call joins it.
  {
    transaction v = transaction::begin(env.c());
    auto missing = one_write("no/such/dir/f");
    CHECK(t.view().vwrite(missing).error == errc::closed);  // t ended
    vresult r = v.view().vwrite(missing);
    CHECK(r.error == noent);
    CHECK(v.state() == txn_state::open);
    auto kept = one_write("kept");
    REQUIRE(v.view().vwrite(kept).ok());
    CHECK(v.commit() == std::error_code());
    CHECK(std::filesystem::file_size(env / "kept") == data.size());
  }
  CHECK(vnfs::txn_test::state_leftovers(env.server().export_dir()).empty());
}

TEST_CASE("committing(): the commit rides in the last COMPOUND of the transaction's last call", "[txn][multi]") {
  client_env env(target::vnfsd);
  compounds_since sent(env.c());
  transaction first = transaction::begin(env.c());  // learns that the server has the extension
  CHECK(first.commit() == std::error_code());
  sent();

  // begin, a call, and a last call that commits: 2 COMPOUNDs in all.
  transaction t = transaction::begin(env.c());
  std::vector<vmkdir_item> c{{"c", 0755}};
  REQUIRE(t.view().vmkdir(c).ok());
  auto w = one_write("c/f");
  CHECK(t.committing().vwrite(w).ok());
  CHECK(sent() == 2);
  CHECK(t.state() == txn_state::committed);
  CHECK(t.commit() == std::error_code());  // what the call ended it with; nothing sent
  CHECK(t.abort() == make_error_code(errc::bad_argument));
  CHECK(sent() == 0);
  CHECK(std::filesystem::file_size(env / "c" / "f") == data.size());
  CHECK(t.view().vmkdir(c).error == errc::closed);

  // A transaction that is one COMPOUND: TXN_ONE_COMPOUND.
  transaction u = transaction::begin(env.c());
  std::vector<vmkdir_item> u1{{"u1", 0700}};
  CHECK(u.committing().vmkdir(u1).ok());
  CHECK(sent() == 1);
  CHECK(u.state() == txn_state::committed);
  CHECK(std::filesystem::is_directory(env / "u1"));
  transaction u2 = transaction::begin(env.c());
  std::vector<vio> both = one_write("u2");
  both.emplace_back(vfile("no/such/dir/f"), 0, std::as_bytes(std::span(data)), vio_flags::create);
  vresult ur = u2.committing().vwrite(both);
  CHECK(sent() == 1);
  CHECK(ur.failed_index == 1);
  CHECK(ur.status[0] == errc::rolled_back);
  CHECK(u2.state() == txn_state::aborted);
  CHECK_FALSE(std::filesystem::exists(env / "u2"));

  // A last call of many COMPOUNDs: the commit goes with the last, after the others.
  transaction v = transaction::begin(env.c());
  auto dirs = many_dirs();
  vresult r = v.committing().vmkdir(dirs);
  CHECK(r.ok_count == 1500);
  CHECK(sent() >= 2);
  CHECK(v.state() == txn_state::committed);
  CHECK(std::filesystem::is_directory(env / "d1499"));

  // A failure that changed nothing leaves the transaction open, and commit() ends it.
  transaction x = transaction::begin(env.c());
  std::vector<vmkdir_item> x1{{"x1", 0755}};
  REQUIRE(x.view().vmkdir(x1).ok());
  auto missing = one_write("no/such/dir/f");
  CHECK(x.committing().vwrite(missing).error == noent);
  CHECK(x.state() == txn_state::open);
  CHECK(x.commit() == std::error_code());
  CHECK(std::filesystem::is_directory(env / "x1"));

  // A failure after a change: everything rolled back, the item named.
  const std::string before = settled_digest(env.dir());
  transaction y = transaction::begin(env.c());
  std::vector<vmkdir_item> y1{{"y1", 0755}};
  REQUIRE(y.view().vmkdir(y1).ok());
  std::vector<vio> two = one_write("y2");
  two.emplace_back(vfile("no/such/dir/f"), 0, std::as_bytes(std::span(data)), vio_flags::create);
  r = y.committing().vwrite(two);
  CHECK(r.failed_index == 1);
  CHECK(r.error == noent);
  CHECK(r.status[0] == errc::rolled_back);
  CHECK(y.state() == txn_state::aborted);
  CHECK(y.commit() == make_error_code(errc::transaction_aborted));
  CHECK(tree_digest(env.dir()) == before);

  // The composed calls make several calls: refused, nothing sent.
  transaction z = transaction::begin(env.c());
  sent();
  CHECK(z.committing().ensure_directory("z", 0755).error == errc::bad_argument);
  std::vector<vcopy_item> copies(1);
  copies[0].src = "c/f";
  copies[0].dst = "z2";
  CHECK(z.committing().vcopy(copies).error == errc::bad_argument);
  CHECK(z.committing().vscopy(copies).error == errc::bad_argument);
  CHECK(sent() == 0);
  CHECK(z.state() == txn_state::open);
  CHECK(z.abort() == std::error_code());
  CHECK(vnfs::txn_test::state_leftovers(env.server().export_dir()).empty());
}

TEST_CASE("scalar calls on a transaction's view are refused", "[txn][multi]") {
  client_env env(target::vnfsd);
  transaction t = transaction::begin(env.c());
  CHECK(error_of([&] { t.view().mkdir("x", 0755); }) == errc::bad_argument);
  CHECK(t.abort() == std::error_code());
  CHECK_FALSE(std::filesystem::exists(env / "x"));
}

TEST_CASE("transactions need nfs:// with compound_vectors", "[txn][multi]") {
  client_env env(target::vnfsd);
  client local = client::connect("file://" + env.dir().string());
  CHECK(error_of([&] { transaction::begin(local); }) == errc::transactions_unsupported);
  client_options o;
  o.compound_vectors = false;
  client scalar = client::connect(env.url(), o);
  CHECK(error_of([&] { transaction::begin(scalar); }) == errc::transactions_unsupported);
}

TEST_CASE("NFS-Ganesha refuses a transaction before anything runs", "[txn][multi][ganesha]") {
  if (skipped(target::ganesha)) return;
  client_env env(target::ganesha);
  const auto sent = env.c().stats().compounds;
  CHECK(error_of([&] { transaction::begin(env.c()); }) == errc::transactions_unsupported);
  CHECK(env.c().stats().compounds == sent + 1);  // TXN_BEGIN alone: nothing else was sent
  CHECK(std::filesystem::is_empty(env.dir()));
  std::vector<vmkdir_item> dirs{{"g1", 0755}};
  CHECK(env.c().vmkdir(dirs).ok());  // plain calls are unaffected
}

TEST_CASE("a transaction left open by a vanished client is rolled back at its age limit", "[txn][multi]") {
  test::temp_dir d("vnfs-txn-age");
  ::chmod(d.path().c_str(), 0755);
  test::vnfsd_process p(d.path(), {"--txn-max-age", "1"});
  const std::string url = "nfs://" + p.host() + ":" + std::to_string(p.port()) + "/";
  client c = client::connect(url);
  const auto begun = std::chrono::steady_clock::now();
  transaction t = transaction::begin(c);
  auto w = one_write("orphan");
  REQUIRE(t.view().vwrite(w).ok());
  // Another client is delayed until the server rolls the transaction back (max age 1 s,
  // checked by the reaper every second: a quarter of the shorter of the lease and the age
  // limit, at least a second), then runs: it finds nothing.
  client other = client::connect(url);
  auto seen = stats_of({"orphan"});
  vresult r = other.vgetattrs(seen);
  CHECK(r.error == noent);
  // The age limit holds within a reaper period or two: about 2 s. (With the reaper at a
  // quarter of the 90 s lease, as before, the transaction stayed open 22 s.) 10 s leaves a
  // slow machine room.
  CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(10));
  CHECK(t.commit() == errc::transaction_aborted);
  CHECK(t.state() == txn_state::aborted);
  CHECK_FALSE(std::filesystem::exists(d.path() / "orphan"));
}

namespace {

/// One multi-COMPOUND transaction against a vnfsd that crashes at its crash point n; the
/// test's thread restarts the server when it dies, so the client's calls reconnect and the
/// commit's outcome is asked for. Returns whether it crashed.
bool crash_run(unsigned n, std::string& before, std::string& after_no_times) {
  test::temp_dir d("vnfs-txn-mcrash");
  ::chmod(d.path().c_str(), 0755);
  std::filesystem::create_directory(d.path() / "w");
  populate(d.path() / "w");
  before = settled_digest(d.path() / "w");
  test::vnfsd_process p(d.path(), n ? std::vector<std::string>{"--txn-crash-at", std::to_string(n)}
                                    : std::vector<std::string>{});
  client_options o;
  o.reconnect_for = std::chrono::milliseconds(20'000);
  client c = client::connect("nfs://" + p.host() + ":" + std::to_string(p.port()) + "/w", o);
  std::error_code began, committed = make_error_code(errc::not_executed);
  txn_state state = txn_state::none;
  std::thread run([&] {
    transaction t;
    try {
      t = transaction::begin(c);
    } catch (const std::system_error& e) {
      began = e.code();
      return;
    }
    std::vector<vmkdir_item> dirs{{"m", 0755}, {"m/n", 0700}};
    (void)t.view().vmkdir(dirs);
    std::vector<vio> w;
    w.emplace_back(vfile("m/f"), 0, std::as_bytes(std::span(data)), vio_flags::create);
    w.emplace_back(vfile("a"), 3, std::as_bytes(std::span(data)));
    (void)t.view().vwrite(w);
    std::vector<std::string> rm{"b"};
    (void)t.view().vremove(rm);
    committed = t.commit();
    state = t.state();
  });
  bool crashed = false;
  for (int i = 0; i < 3000 && !crashed; ++i) {  // at most 30 s
    if (!p.running()) {
      crashed = true;
      p.start({});  // recovery, then the same port: the client reconnects
      break;
    }
    if (committed != errc::not_executed || began) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  run.join();
  INFO("crash point " << n);
  const std::string now = tree_digest(d.path() / "w");
  if (n == 0) {
    after_no_times = tree_digest(d.path() / "w", {.times = false});
    REQUIRE(committed == std::error_code());
    return false;
  }
  CHECK(vnfs::txn_test::state_leftovers(d.path()).empty());
  if (began) {  // the crash came during TXN_BEGIN: nothing ran
    CHECK(now == before);
    return crashed;
  }
  // The outcome is exact: committed exactly when the tree is the committed one.
  CHECK(state != txn_state::unknown);
  if (state == txn_state::committed) {
    CHECK(committed == std::error_code());
    CHECK(tree_digest(d.path() / "w", {.times = false}) == after_no_times);
  } else {
    CHECK(state == txn_state::aborted);
    CHECK(committed == errc::transaction_aborted);
    CHECK(now == before);
  }
  return crashed;
}

}  // namespace

TEST_CASE("a crash at any point of a multi-COMPOUND transaction: before or after, and the client is told which",
          "[txn][multi][crash]") {
  std::string before, after;
  crash_run(0, before, after);
  int crashes = 0;
  for (unsigned n = 1; n <= 100; ++n) {
    if (!crash_run(n, before, after)) break;
    ++crashes;
  }
  CHECK(crashes > 10);
}

namespace {

constexpr int accounts = 4, start_balance = 1000, width = 16;

std::string balance_text(long v) {
  std::string s = std::to_string(v);
  return std::string(width - s.size(), '0') + s;
}

/// Reads every account in one vread (one COMPOUND) through `c` into `v`; false if the
/// call failed (inside a transaction: it was rolled back to avoid a deadlock).
bool read_accounts(client& c, std::vector<long>& v) {
  std::vector<std::array<char, width>> buf(accounts);
  std::vector<vio> rd;
  for (int i = 0; i < accounts; ++i)
    rd.emplace_back(vfile("acc" + std::to_string(i)), 0,
                    std::span<std::byte>(std::as_writable_bytes(std::span(buf[static_cast<std::size_t>(i)]))));
  if (!c.vread(rd).ok()) return false;
  v.clear();
  for (auto& b : buf) v.push_back(std::stol(std::string(b.data(), b.size())));
  return true;
}

}  // namespace

TEST_CASE("isolation: 8 clients transfer between accounts in transactions, every transfer commits, readers always "
          "see the same sum",
          "[txn][multi][isolation]") {
  client_env env(target::vnfsd);
  for (int i = 0; i < accounts; ++i) write_local(env / ("acc" + std::to_string(i)), balance_text(start_balance));
  constexpr int writers = 8, transfers = 12, readers = 2, reads = 40, attempts = 1000;
  std::atomic<int> bad_sums{0}, committed{0}, lost{0}, reads_done{0}, failed_reads{0}, rolled_back{0}, most_attempts{0};
  std::array<std::atomic<long>, accounts> expected{};
  for (auto& e : expected) e = start_balance;
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      client c = client::connect(env.url());
      for (int k = 0; k < transfers; ++k) {
        const int from = (w + k) % accounts, to = (w + k + 1 + k % 3) % accounts;
        const long amount = 1 + (w * 7 + k) % 50;
        // Every transfer reads all accounts and writes two: they all conflict, and the
        // server rolls back the younger of two that would wait for each other (wait-die).
        // The transfer is then run again keeping its age, so it becomes the oldest in the
        // end and commits: none starves.
        transaction t = transaction::begin(c);
        for (int a = 1;; ++a) {
          std::vector<long> v;
          if (read_accounts(t.view(), v)) {  // inside: read, then write
            v[static_cast<std::size_t>(from)] -= amount;
            v[static_cast<std::size_t>(to)] += amount;
            std::vector<std::string> text{balance_text(v[static_cast<std::size_t>(from)]),
                                          balance_text(v[static_cast<std::size_t>(to)])};
            std::vector<vio> wr;
            wr.emplace_back(vfile("acc" + std::to_string(from)), 0, std::as_bytes(std::span(text[0])));
            wr.emplace_back(vfile("acc" + std::to_string(to)), 0, std::as_bytes(std::span(text[1])));
            if (t.view().vwrite(wr).ok() && !t.commit()) {
              ++committed;
              expected[static_cast<std::size_t>(from)] -= amount;
              expected[static_cast<std::size_t>(to)] += amount;
              for (int m = most_attempts; m < a && !most_attempts.compare_exchange_weak(m, a);) {
              }
              break;
            }
          }
          ++rolled_back;
          if (a == attempts) {  // bounded: a transfer that never commits is counted as lost
            ++lost;
            break;
          }
          // A pause (1 ms more per run, up to 8 ms) lets the older transactions finish
          // instead of competing with retries that would die against them again.
          std::this_thread::sleep_for(std::chrono::milliseconds(std::min(a, 8)));
          t = transaction::begin(c, t);
        }
      }
    });
  }
  for (int r = 0; r < readers; ++r) {
    threads.emplace_back([&] {
      client c = client::connect(env.url());
      for (int k = 0; k < reads; ++k) {
        std::vector<long> v;
        if (!read_accounts(c, v)) {  // outside any transaction: delayed, never failed
          ++failed_reads;
          continue;
        }
        long sum = 0;
        for (long x : v) sum += x;
        if (sum != accounts * start_balance) ++bad_sums;
        ++reads_done;
      }
    });
  }
  for (auto& t : threads) t.join();
  UNSCOPED_INFO("transfers rolled back and run again: " << rolled_back << ", most runs of one transfer: " << most_attempts);
  CHECK(committed == writers * transfers);  // serialized, none starved
  CHECK(lost == 0);
  CHECK(reads_done == readers * reads);
  CHECK(failed_reads == 0);
  CHECK(bad_sums == 0);
  // Each transfer took effect exactly once.
  std::vector<long> v;
  REQUIRE(read_accounts(env.c(), v));
  for (int i = 0; i < accounts; ++i) CHECK(v[static_cast<std::size_t>(i)] == expected[static_cast<std::size_t>(i)]);
}

TEST_CASE("a commit whose reply a restart lost is asked about again while the server answers TXN_OPEN",
          "[txn][multi][crash]") {
  // The client's transaction changes nothing, so its commit writes no journal, and the
  // server's first crash point (after that commit, before its reply) leaves the restarted
  // server knowing nothing of its txnid. Before the client gets through again (its
  // connection goes through a proxy that holds what it sends), another client ID begins a
  // transaction of the same txnid there: the client's TXN_STATUS meets TXN_OPEN and must
  // ask again until that transaction ends, then report how it ended.
  for (const bool commit_it : {false, true}) {
    INFO("the other client ID " << (commit_it ? "commits" : "aborts"));
    test::temp_dir d("vnfs-txn-open");
    ::chmod(d.path().c_str(), 0755);
    std::filesystem::create_directory(d.path() / "w");
    test::vnfsd_process p(d.path(), {"--txn-crash-at", "1"});
    test::tcp_proxy proxy(p.host(), p.port());
    client_options o;
    o.reconnect_for = std::chrono::milliseconds(20'000);
    client c = client::connect("nfs://" + proxy.host() + ":" + std::to_string(proxy.port()) + "/w", o);
    transaction t = transaction::begin(c);
    const std::uint64_t id = t.id();
    std::error_code committed = make_error_code(errc::not_executed);
    std::atomic<bool> done{false};
    std::thread run([&] {
      committed = t.commit();
      done = true;
    });
    for (int i = 0; i < 3000 && p.running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE_FALSE(p.running());
    proxy.hold(test::tcp_proxy::direction::to_server, true);
    p.start({});
    test::blocking_session other(p.host(), p.port(), {"w"});
    const auto txn_op = [&](nfs4::txn_action4 a) {
      nfs4::COMPOUND4res r = other.compound({nfs4::VNFS_TXN4args{static_cast<std::uint32_t>(a), id, 0}});
      REQUIRE(r.resarray.size() == 2);
      REQUIRE(nfs4::status_of(r.resarray[1]) == nfs4::nfsstat4::NFS4_OK);
      return static_cast<nfs4::txn_outcome4>(std::get<nfs4::VNFS_TXN4res>(r.resarray[1]).outcome);
    };
    CHECK(txn_op(nfs4::txn_action4::TXN_STATUS) == nfs4::txn_outcome4::TXN_UNKNOWN);
    CHECK(txn_op(nfs4::txn_action4::TXN_BEGIN) == nfs4::txn_outcome4::TXN_OPEN);
    const std::uint64_t before = c.stats().compounds;
    proxy.hold(test::tcp_proxy::direction::to_server, false);
    // The new client ID and session (at most four COMPOUNDs: BIND_CONN_TO_SESSION refused,
    // EXCHANGE_ID, CREATE_SESSION, then TXN_STATUS with the set-up riders), then TXN_STATUS
    // again and again: ten COMPOUNDs mean at least six answers TXN_OPEN, every one while
    // the commit still waited.
    for (int i = 0; i < 2000 && c.stats().compounds < before + 10 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(c.stats().compounds >= before + 10);
    CHECK_FALSE(done);
    CHECK(txn_op(commit_it ? nfs4::txn_action4::TXN_COMMIT : nfs4::txn_action4::TXN_ABORT) ==
          (commit_it ? nfs4::txn_outcome4::TXN_COMMITTED : nfs4::txn_outcome4::TXN_ABORTED));
    run.join();
    if (commit_it) {
      CHECK(committed == std::error_code());
      CHECK(t.state() == txn_state::committed);
    } else {
      CHECK(committed == errc::transaction_aborted);
      CHECK(t.state() == txn_state::aborted);
    }
  }
}
