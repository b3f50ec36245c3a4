// Faults under load (issue 17): several clients work on one vnfsd while connections are cut
// at random points, or while vnfsd is killed with SIGKILL and started again. What each call
// was told is then checked against the export on disk.
//
// Sizes are bounded in count (cuts, kills, rounds per client); a run takes seconds.
#include <fcntl.h>

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
}
