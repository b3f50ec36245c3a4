// Faults between the client and vnfsd: connections cut by a TCP proxy (in a request, in a
// reply, under many calls), replies held back while the client closes, a server restart,
// a short lease. The counters of client_stats say what the client did about them.
#include <fcntl.h>

#include <array>
#include <thread>

#include "client_fixture.hpp"
#include "vnfs/nfs4/status.hpp"
#include "vnfs/test/tcp_proxy.hpp"

using namespace vnfs;
using namespace vnfs::client_test;
using vnfs::test::tcp_proxy;
using dir = vnfs::test::tcp_proxy::direction;

namespace {

/// A fresh working directory on the shared vnfsd and a client that reaches it through a
/// proxy.
class proxied_env {
 public:
  explicit proxied_env(client_options o = {}) : server_(shared_server(target::vnfsd)) {
    static std::atomic<int> counter{0};
    name_ = "p" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    dir_ = server_.export_dir() / name_;
    std::filesystem::create_directory(dir_);
    proxy_ = std::make_unique<tcp_proxy>(server_.vnfsd->host(), server_.vnfsd->port());
    client_ = std::make_unique<client>(
        client::connect("nfs://127.0.0.1:" + std::to_string(proxy_->port()) + "/" + name_, o));
  }
  client& c() { return *client_; }
  tcp_proxy& proxy() { return *proxy_; }
  std::filesystem::path operator/(const std::string& rel) const { return dir_ / rel; }

 private:
  target_server& server_;
  std::string name_;
  std::filesystem::path dir_;
  std::unique_ptr<tcp_proxy> proxy_;  // destroyed after the client
  std::unique_ptr<client> client_;
};

std::vector<std::byte> write_file(client& c, const std::string& name, std::size_t n, unsigned seed) {
  auto data = pattern(n, seed);
  file f = c.open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  REQUIRE(c.pwrite(f, 0, std::span<const std::byte>(data)) == n);
  c.close(f);
  return data;
}

bool is_stale_state(std::error_code ec) {
  using nfs4::nfsstat4;
  return ec == nfsstat4::NFS4ERR_BAD_STATEID || ec == nfsstat4::NFS4ERR_STALE_STATEID ||
         ec == nfsstat4::NFS4ERR_EXPIRED || ec == nfsstat4::NFS4ERR_STALE_CLIENTID;
}

}  // namespace

TEST_CASE("tcp_proxy forwards, cuts after exactly N bytes, and holds", "[client][fault][proxy]") {
  proxied_env env;
  client& c = env.c();
  auto& p = env.proxy();
  CHECK(p.accepted() == 1);
  auto s0 = c.stats();
  auto to_client = p.bytes(dir::to_client), to_server = p.bytes(dir::to_server);
  c.stat("");
  auto d = c.stats() - s0;
  // The proxy passed exactly what the client counted on the wire.
  CHECK(p.bytes(dir::to_client) - to_client == d.bytes_received);
  CHECK(p.bytes(dir::to_server) - to_server == d.bytes_sent);
  CHECK(p.cuts() == 0);
  CHECK(!p.cut_pending());
  p.cut_after(dir::to_client, 1000);
  CHECK(p.cut_pending());
}

TEST_CASE("a mkdir whose reply is lost is answered from the reply cache: it succeeds once",
          "[client][fault]") {
  proxied_env env;
  client& c = env.c();
  auto& p = env.proxy();
  // mkdir("x") is the root's walk (the same COMPOUND as stat("")), then CREATE: let the walk's
  // reply through and cut the connection when CREATE's reply comes.
  auto before = p.bytes(dir::to_client);
  c.stat("");
  const std::uint64_t walk_reply = p.bytes(dir::to_client) - before;
  REQUIRE(walk_reply > 0);

  p.cut_after(dir::to_client, walk_reply);
  auto s0 = c.stats();
  c.mkdir("x");  // had the server run CREATE twice, this would fail with NFS4ERR_EXIST
  auto d = c.stats() - s0;
  CHECK(!p.cut_pending());
  CHECK(p.cuts() == 1);
  CHECK(p.accepted() == 2);
  CHECK(d.reconnects == 1);
  CHECK(d.retransmissions == 1);
  CHECK(d.compounds == 4);  // walk, CREATE, BIND_CONN_TO_SESSION, CREATE again (same slot and seqid)
  CHECK(std::filesystem::is_directory(env / "x"));
  // A new mkdir of the same name is a new request, and fails.
  CHECK(error_of([&] { c.mkdir("x"); }) == std::errc::file_exists);
}

TEST_CASE("a WRITE cut in the middle of its request is sent again", "[client][fault]") {
  proxied_env env;
  client& c = env.c();
  auto& p = env.proxy();
  std::vector<std::byte> data = pattern(1 << 20, 21);
  memory_region mr = c.register_memory(data.data(), data.size(), access::write);
  file f = c.open("f", O_CREAT | O_RDWR, 0644);

  p.cut_after(dir::to_server, 300'000);  // a third of the record: the server never saw a call
  auto s0 = c.stats();
  CHECK(c.pwrite(f, 0, mr.all()) == data.size());
  auto d = c.stats() - s0;
  CHECK(p.cuts() == 1);
  CHECK(d.reconnects == 1);
  CHECK(d.retransmissions == 1);
  CHECK(d.compounds == 3);  // WRITE, BIND_CONN_TO_SESSION, WRITE again
  // Each transmission leaves from the registered memory.
  CHECK(d.payload_bytes_direct == data.size());
  CHECK(d.payload_bytes_copied == 0);
  c.fsync(f);
  c.close(f);
  std::vector<std::byte> back(data.size());
  file r = c.open("f", O_RDONLY);
  CHECK(c.pread(r, 0, std::span<std::byte>(back)) == data.size());
  CHECK(back == data);
  c.close(r);
}

TEST_CASE("a READ whose reply is lost runs again as a new request (replies to reads are not cached)",
          "[client][fault]") {
  proxied_env env;
  client& c = env.c();
  auto& p = env.proxy();
  auto data = write_file(c, "f", 4096, 3);
  file f = c.open("f", O_RDONLY);
  std::vector<std::byte> back(4096);

  p.cut_after(dir::to_client, 0);
  auto s0 = c.stats();
  CHECK(c.pread(f, 0, std::span<std::byte>(back)) == 4096);
  auto d = c.stats() - s0;
  CHECK(back == data);
  CHECK(d.reconnects == 1);
  // READ; BIND_CONN_TO_SESSION; READ again on the same slot and seqid, which vnfsd answers
  // NFS4ERR_RETRY_UNCACHED_REP (RFC 8881 §2.10.6.1.3); READ as the slot's next request.
  CHECK(d.compounds == 4);
  CHECK(d.retransmissions == 2);
  c.close(f);
}

TEST_CASE("connections cut under 128 reads in flight: every read completes once, with its bytes",
          "[client][fault]") {
  proxied_env env;
  client& c = env.c();
  auto& p = env.proxy();
  constexpr std::size_t n = 128, block = 4096;
  auto data = write_file(c, "f", n * block, 8);
  std::vector<std::byte> buf(n * block);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  file f = c.open("f", O_RDONLY);
  completion_group g = c.make_group();

  auto s0 = c.stats();
  for (std::size_t i = 0; i < n; ++i) c.read(f, i * block, mr.slice(i * block, block), g, i);
  p.cut_all();
  std::vector<int> seen(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto e = g.wait_for(std::chrono::seconds(30));
    REQUIRE(e);
    REQUIRE(e->tag < n);
    seen[e->tag]++;
    CHECK(!e->status);
    CHECK(e->bytes == block);
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == std::ptrdiff_t(n));
  CHECK(buf == data);
  auto d = c.stats() - s0;
  CHECK(d.reconnects == 1);
  CHECK(p.accepted() == 2);
  CHECK(d.compounds >= n);
  // The session survived: the open file still works.
  CHECK(c.pread(f, 0, mr.slice(0, 10)) == 10);
  c.close(f);
}

TEST_CASE("close while replies are held: every operation completes once with errc::closed",
          "[client][fault][close]") {
  client_options o;
  o.connect_timeout = std::chrono::milliseconds(500);  // bounds the unanswered DESTROY_SESSION
  proxied_env env(o);
  client& c = env.c();
  auto& p = env.proxy();
  write_file(c, "f", 4096, 1);
  file f = c.open("f", O_RDONLY);
  std::vector<std::byte> buf(64 * 4096);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  completion_group g = c.make_group();

  p.hold(dir::to_client, true);
  constexpr std::size_t n = 100;  // more than the 64 slots: some wait for a slot, some are sent
  for (std::size_t i = 0; i < n; ++i) c.read(f, 0, mr.slice((i % 64) * 4096, 4096), g, i);
  file_stat st;
  c.stat("", &st, g, n);
  c.close();
  std::vector<int> seen(n + 1);
  for (std::size_t i = 0; i <= n; ++i) {
    auto e = g.wait_for(std::chrono::seconds(30));
    REQUIRE(e);
    REQUIRE(e->tag <= n);
    seen[e->tag]++;
    CHECK(e->status == errc::closed);
    CHECK(e->bytes == 0);
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == std::ptrdiff_t(n + 1));
  CHECK(!g.poll());
  CHECK(g.outstanding() == 0);
  p.hold(dir::to_client, false);
}

TEST_CASE("vnfsd restarts under an open client: a new session; old open state is stale", "[client][fault]") {
  test::temp_dir export_dir("vnfs-client-restart");
  test::vnfsd_process server(export_dir.path());
  client c = client::connect("nfs://" + server.host() + ":" + std::to_string(server.port()) + "/");
  auto data = write_file(c, "f", 5000, 6);
  file f = c.open("f", O_RDWR);
  std::vector<std::byte> ten(10);
  CHECK(c.pread(f, 0, std::span<std::byte>(ten)) == 10);

  auto s0 = c.stats();
  server.restart();
  // The client notices the lost connection, reconnects, finds its session gone
  // (BIND_CONN_TO_SESSION: NFS4ERR_BADSESSION) and makes a new client ID and session.
  file_stat st = c.stat("f");
  CHECK(st.size == 5000);
  auto d = c.stats() - s0;
  CHECK(d.reconnects >= 1);

  // The open of before the restart is unknown to the new server.
  std::vector<std::byte> back(5000);
  std::error_code ec = error_of([&] { c.pread(f, 0, std::span<std::byte>(back)); });
  INFO("pread on the old open: " << ec.message());
  CHECK(ec);
  CHECK(is_stale_state(ec));
  ec = error_of([&] { c.close(f); });
  INFO("close of the old open: " << ec.message());
  CHECK(is_stale_state(ec));

  // New opens work, and see the data.
  file g = c.open("f", O_RDONLY);
  CHECK(c.pread(g, 0, std::span<std::byte>(back)) == 5000);
  CHECK(back == data);
  c.close(g);
}

TEST_CASE("a client silent for longer than the lease keeps it by renewing", "[client][fault][lease]") {
  test::temp_dir export_dir("vnfs-client-lease");
  test::vnfsd_process server(export_dir.path(), {"--lease", "2"});
  client c = client::connect("nfs://" + server.host() + ":" + std::to_string(server.port()) + "/");
  auto data = write_file(c, "f", 100, 2);
  file f = c.open("f", O_RDONLY);

  auto s0 = c.stats();
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // the application is silent
  auto d = c.stats() - s0;
  CHECK(d.compounds >= 1);  // the client was not: lease renewals (SEQUENCE)
  CHECK(d.operations == d.compounds);
  CHECK(d.reconnects == 0);

  // Its open state survived: the lease never expired, no session was recovered (a new
  // client ID would have made this stateid stale).
  s0 = c.stats();
  std::vector<std::byte> back(100);
  CHECK(c.pread(f, 0, std::span<std::byte>(back)) == 100);
  CHECK(back == data);
  CHECK((c.stats() - s0).reconnects == 0);
  c.close(f);
}
