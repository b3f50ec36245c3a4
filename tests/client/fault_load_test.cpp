// Faults under load (issue 17): several clients work on one vnfsd while connections are cut
// at random points, or while vnfsd is killed with SIGKILL and started again. What each call
// was told is then checked against the export on disk.
//
// Sizes are bounded in count (cuts, kills, rounds per client); a run takes seconds.
#include <fcntl.h>

#include <csignal>
#include <cstring>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "client_fixture.hpp"
#include "vnfs/nfs4/status.hpp"
#include "vnfs/test/reliability.hpp"
#include "vnfs/test/tcp_proxy.hpp"

using namespace vnfs;
using namespace vnfs::client_test;
using vnfs::test::tcp_proxy;
using dir = vnfs::test::tcp_proxy::direction;

namespace {

std::string read_local(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

/// The failures the workers saw (read once they are joined).
struct failures {
  std::mutex mu;
  std::vector<std::string> seen;
  std::atomic<bool> any{false};
  void add(const std::string& what, std::error_code ec) {
    std::lock_guard lock(mu);
    seen.push_back(what + ": " + ec.message());
    any = true;
  }
};

}  // namespace

// Each client, round after round: appends a 64-byte record to a log all clients share (WRITE
// at offset 2^64-1), creates a file exclusively (OPEN GUARDED4), renames it, and removes it
// every other round. Meanwhile the proxy between the clients and vnfsd cuts one connection
// after a random number of bytes, in a random direction, again and again. Had any of these
// run twice (a retransmission executed instead of answered from the session's reply cache),
// a record would be in the log twice, the create would fail with NFS4ERR_EXIST, the rename
// or remove with NFS4ERR_NOENT.
TEST_CASE("connections cut at random points under load: appends, exclusive creates, renames and removes each run once",
          "[client][fault][load]") {
  constexpr int n_clients = 4, n_cuts = 200, min_rounds = 20, max_rounds = 5000;
  constexpr std::size_t record = 64;
  test::temp_dir export_dir("vnfs-fault-load-cut");
  test::vnfsd_process server(export_dir.path());
  tcp_proxy proxy(server.host(), server.port());
  for (int i = 0; i < n_clients; ++i) std::filesystem::create_directory(export_dir.path() / ("k" + std::to_string(i)));
  std::vector<std::unique_ptr<client>> clients;
  for (int i = 0; i < n_clients; ++i)
    clients.push_back(std::make_unique<client>(client::connect("nfs://127.0.0.1:" + std::to_string(proxy.port()) + "/")));
  std::vector<client_stats> before;
  for (auto& c : clients) before.push_back(c->stats());

  std::atomic<bool> cutting_done{false};
  std::vector<int> rounds(n_clients, 0);
  failures errors;
  std::vector<std::thread> workers;
  for (int i = 0; i < n_clients; ++i)
    workers.emplace_back([&, i] {
      client& c = *clients[i];
      const std::string k = "k" + std::to_string(i) + "/";
      int r = 0;
      for (; r < max_rounds && (r < min_rounds || !cutting_done); ++r) {
        const std::string tag = "client " + std::to_string(i) + " round " + std::to_string(r);
        std::string rec = tag;
        rec.resize(record - 1, '.');
        rec += '\n';
        std::vector<vio> app{vio(vfile("log"), 0, bytes_of(rec), vio_flags::create | vio_flags::append)};
        vresult res = c.vwrite(app);
        if (!res.ok()) errors.add(tag + " append", res.error);
        const std::string made = k + "c" + std::to_string(r), moved = k + "d" + std::to_string(r);
        std::vector<vio> mk{vio(vfile(made), 0, bytes_of(tag), vio_flags::create | vio_flags::exclusive)};
        res = c.vwrite(mk);
        if (!res.ok()) errors.add(tag + " exclusive create", res.error);
        std::vector<vrename_item> mv{{made, moved}};
        res = c.vrename(mv);
        if (!res.ok()) errors.add(tag + " rename", res.error);
        if (r % 2 == 1) {
          std::vector<std::string> rm{moved};
          res = c.vremove(rm);
          if (!res.ok()) errors.add(tag + " remove", res.error);
        }
        if (errors.any) break;
      }
      rounds[i] = r;
    });

  // The cutter: seed 17, or $VNFS_FAULT_SEED, so a failing run can be repeated.
  const char* seed = std::getenv("VNFS_FAULT_SEED");
  std::mt19937 rng(seed ? unsigned(std::stoul(seed)) : 17u);
  int fired = 0;
  while (fired < n_cuts) {
    const dir d = rng() % 2 ? dir::to_server : dir::to_client;
    // One cut in four within 256 bytes: often in the reconnection itself (its
    // BIND_CONN_TO_SESSION) or in the retransmissions after it.
    proxy.cut_after(d, rng() % 4 == 0 ? rng() % 256 : rng() % 16384);
    for (int wait = 0; proxy.cut_pending() && wait < 10'000; ++wait) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (proxy.cut_pending()) break;  // ten seconds without traffic: the workers stopped
    ++fired;
  }
  proxy.cut_after(dir::to_server, UINT64_MAX);  // disarmed
  cutting_done = true;
  for (auto& t : workers) t.join();

  INFO((errors.seen.empty() ? std::string("no errors") : "first error: " + errors.seen.front()));
  CHECK(errors.seen.empty());
  CHECK(fired == n_cuts);
  CHECK(proxy.cuts() == std::uint64_t(n_cuts));
  // Each cut took one client's connection; that client reconnected once.
  std::uint64_t reconnects = 0;
  for (int i = 0; i < n_clients; ++i) reconnects += (clients[i]->stats() - before[i]).reconnects;
  CHECK(reconnects == std::uint64_t(n_cuts));
  clients.clear();  // sessions closed: what follows reads the export directly

  // The log: every record exactly once, whole.
  const std::string log = read_local(export_dir.path() / "log");
  std::size_t total = 0;
  for (int r : rounds) total += std::size_t(r);
  CHECK(log.size() == total * record);
  std::map<std::string, int> seen;
  std::size_t malformed = 0;
  for (std::size_t at = 0; at + record <= log.size(); at += record) {
    const std::string rec = log.substr(at, record);
    if (rec.back() != '\n') ++malformed;
    seen[rec.substr(0, rec.find('.'))]++;
  }
  CHECK(malformed == 0);
  std::size_t once = 0, twice_or_more = 0;
  for (auto& [tag, n] : seen) (n == 1 ? once : twice_or_more)++;
  CHECK(twice_or_more == 0);
  CHECK(once == total);
  // The names: c<r> renamed away, d<r> kept in even rounds with its content.
  std::size_t wrong_names = 0;
  for (int i = 0; i < n_clients; ++i)
    for (int r = 0; r < rounds[i]; ++r) {
      const auto k = export_dir.path() / ("k" + std::to_string(i));
      const std::string tag = "client " + std::to_string(i) + " round " + std::to_string(r);
      const auto d = k / ("d" + std::to_string(r));
      if (std::filesystem::exists(k / ("c" + std::to_string(r)))) ++wrong_names;
      if (r % 2 == 0 ? read_local(d) != tag : std::filesystem::exists(d)) ++wrong_names;
    }
  CHECK(wrong_names == 0);
  vnfs::test::record_reliability(
      "test_client_fault_load (cuts)",
      std::to_string(n_clients) + " clients, " + std::to_string(fired) + " connection cuts, " + std::to_string(total) +
          " rounds of append at 2^64-1, exclusive create, rename, remove",
      "every call succeeds; each appended record on disk exactly once, whole; names as the rounds left them; one "
      "reconnect per cut",
      std::to_string(errors.seen.size()) + " errors, " + std::to_string(reconnects) + " reconnects, " +
          std::to_string(once) + "/" + std::to_string(total) + " records once, " + std::to_string(twice_or_more) +
          " twice, " + std::to_string(malformed) + " torn, " + std::to_string(wrong_names) + " wrong names");
}

// vnfsd is killed with SIGKILL three times while clients write, and started again on the same
// export and port. Three clients write with vio_flags::stable (each WRITE on disk before its
// reply), one writes UNSTABLE4 through an open file and calls fsync (COMMIT) every fourth
// write. A fifth client holds an open file behind a proxy that stalls it through the first
// restart and the grace period after it. Every client recovers its session by itself; what
// each was told is then checked on disk: every stable write acknowledged, every write an
// fsync vouched for, is there with its bytes. fsync answers EIO at most once per kill (the
// write verifier changed: writes from before it are not vouched for). The stalled client's
// open could not be reclaimed in time: it is reported stale (NFS4ERR_STALE_STATEID), and new
// opens work.
TEST_CASE("vnfsd killed with SIGKILL and restarted under load: sessions recovered, no acknowledged "
          "write lost, stale state reported", "[client][fault][load][kill]") {
  // Each phase lets every worker do `quota` more rounds; a kill comes once each has done
  // `per_phase` of them, so it falls while they write.
  constexpr int n_stable = 3, n_kills = 3, per_phase = 10, quota = 300;
  constexpr std::size_t block = 512;
  test::temp_dir export_dir("vnfs-fault-load-kill");
  test::vnfsd_process server(export_dir.path(), {"--grace", "5"});
  const std::string url = "nfs://" + server.host() + ":" + std::to_string(server.port()) + "/";
  tcp_proxy stall(server.host(), server.port());
  client late = client::connect("nfs://127.0.0.1:" + std::to_string(stall.port()) + "/");
  file held = late.open("late", O_CREAT | O_RDWR, 0644);
  std::vector<std::unique_ptr<client>> clients;
  for (int i = 0; i <= n_stable; ++i) clients.push_back(std::make_unique<client>(client::connect(url)));

  auto block_of = [](int who, int r) { return pattern(block, unsigned(who * 1000 + r)); };
  std::vector<std::atomic<int>> progress(n_stable + 1);
  std::atomic<bool> stop{false};
  std::atomic<int> allowed{quota};
  // A worker's next round, when the phase allows it; false once it is to stop.
  auto may_go = [&](int r) {
    while (r >= allowed && !stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return !stop;
  };
  std::vector<std::vector<int>> acked(n_stable + 1);  // rounds whose write each worker was told is durable
  std::vector<std::vector<std::string>> errors(n_stable + 1);
  std::vector<int> eio(n_stable + 1, 0);
  std::vector<std::thread> workers;
  for (int i = 0; i < n_stable; ++i)
    workers.emplace_back([&, i] {
      for (int r = 0; may_go(r); ++r) {
        const auto data = block_of(i, r);
        std::vector<vio> w{vio(vfile("w" + std::to_string(i)), std::uint64_t(r) * block, std::span<const std::byte>(data),
                               vio_flags::create | vio_flags::stable)};
        vresult res = clients[i]->vwrite(w);
        if (res.ok()) acked[i].push_back(r);
        else errors[i].push_back("round " + std::to_string(r) + ": " + res.error.message());
        ++progress[i];
      }
    });
  workers.emplace_back([&, i = n_stable] {
    client& c = *clients[i];
    file f = c.open("u", O_CREAT | O_RDWR, 0644);
    std::vector<int> since;  // written since the last COMMIT
    for (int r = 0; may_go(r); ++r) {
      const auto data = block_of(i, r);
      std::error_code ec = error_of([&] { c.pwrite(f, std::uint64_t(r) * block, std::span<const std::byte>(data)); });
      if (ec) errors[i].push_back("pwrite " + std::to_string(r) + ": " + ec.message());
      else since.push_back(r);
      if (r % 4 == 3) {
        ec = error_of([&] { c.fsync(f); });
        if (!ec) acked[i].insert(acked[i].end(), since.begin(), since.end());
        else if (ec == std::errc::io_error) ++eio[i];
        else errors[i].push_back("fsync " + std::to_string(r) + ": " + ec.message());
        since.clear();
      }
      ++progress[i];
    }
    std::error_code ec = error_of([&] { c.close(f); });  // its COMMIT vouches for the rest
    if (!ec) acked[i].insert(acked[i].end(), since.begin(), since.end());
    else if (ec == std::errc::io_error) ++eio[i];
    else errors[i].push_back("close: " + ec.message());
  });

  // Waits (at most a minute) until every worker has done `n` more rounds.
  auto advance = [&](int n) {
    std::vector<int> from(n_stable + 1);
    for (int i = 0; i <= n_stable; ++i) from[i] = progress[i];
    for (int wait = 0; wait < 60'000; ++wait) {
      bool all = true;
      for (int i = 0; i <= n_stable; ++i) all = all && progress[i] >= from[i] + n;
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  };
  std::vector<client_stats> before;
  for (auto& c : clients) before.push_back(c->stats());
  bool advanced = true;
  for (int k = 0; k < n_kills; ++k) {
    allowed = quota * (k + 1);
    advanced = advanced && advance(per_phase);
    if (k == 0) stall.hold(dir::to_server, true);  // `late` cannot come back in time to reclaim
    const auto st = server.kill();
    CHECK(st.signal() == SIGKILL);
    server.start();
    if (k == 0) {
      // The others write again once the grace period (5 s, waiting for `late`) is over.
      advanced = advanced && advance(1);
      stall.hold(dir::to_server, false);
      std::vector<std::byte> back(10);
      std::error_code ec = error_of([&] { late.pread(held, 0, std::span<std::byte>(back)); });
      INFO("the stalled client's old open: " << ec.message());
      CHECK(ec == nfs4::nfsstat4::NFS4ERR_STALE_STATEID);
      CHECK(error_of([&] { late.close(held); }) == nfs4::nfsstat4::NFS4ERR_STALE_STATEID);
      file again = late.open("late", O_RDWR);
      CHECK(late.pwrite(again, 0, std::span<const std::byte>(back)) == back.size());
      late.close(again);
    }
  }
  allowed = quota * (n_kills + 1);
  advanced = advanced && advance(per_phase);
  stop = true;
  for (auto& t : workers) t.join();
  CHECK(advanced);

  for (int i = 0; i <= n_stable; ++i) {
    INFO("worker " << i << (errors[i].empty() ? std::string(": no errors") : ": first error " + errors[i].front()));
    CHECK(errors[i].empty());
    CHECK(eio[i] <= (i == n_stable ? n_kills : 0));
    // Each worker noticed each kill and recovered its session over a new connection (or
    // more than one: a connection the dying vnfsd's listen queue accepted is reset).
    CHECK((clients[i]->stats() - before[i]).reconnects >= std::uint64_t(n_kills));
    CHECK(acked[i].size() >= std::size_t(per_phase * n_kills));
  }
  clients.clear();
  server.stop();

  // On disk: every acknowledged block with its bytes.
  std::size_t checked = 0, lost = 0;
  for (int i = 0; i <= n_stable; ++i) {
    const std::string disk = read_local(export_dir.path() / (i == n_stable ? std::string("u") : "w" + std::to_string(i)));
    for (int r : acked[i]) {
      const auto want = block_of(i, r);
      const std::size_t at = std::size_t(r) * block;
      ++checked;
      if (disk.size() < at + block || std::memcmp(disk.data() + at, want.data(), block) != 0) ++lost;
    }
  }
  CHECK(lost == 0);
  CHECK(checked > 0);
  std::size_t errors_seen = 0, eio_total = 0;
  for (int i = 0; i <= n_stable; ++i) {
    errors_seen += errors[i].size();
    eio_total += std::size_t(eio[i]);
  }
  vnfs::test::record_reliability(
      "test_client_fault_load (SIGKILL)",
      std::to_string(n_kills) + " kills of vnfsd under " + std::to_string(n_stable + 1) +
          " writing clients and one stalled through the first restart",
      "no errors; every acknowledged stable or fsync-vouched block on disk with its bytes; EIO at most once per kill; "
      "the stalled open reported stale",
      std::to_string(errors_seen) + " errors, " + std::to_string(checked) + " blocks checked, " + std::to_string(lost) +
          " lost, " + std::to_string(eio_total) + " fsync EIO");
}
