// The cma fabric provider: messages with receive accounting, one-sided RDMA Read/Write
// into registered memory, and the owner-side checks that refuse forged, stale,
// out-of-bounds and wrong-right accesses.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <queue>

#include "fabric_fixture.hpp"
#include "raw_peers.hpp"
#include "transport/rdma/cma/cma_fabric.hpp"

using namespace vnfs;
using namespace vnfs::test;
namespace rr = vnfs::rpc::rdma;

namespace {

/// A connected pair of endpoints: `server` accepted from a listener, `client` connected.
struct pair_fixture {
  io_thread t;
  std::unique_ptr<rdma::fabric> server_fabric = rdma::make_fabric("cma", t.io);
  std::unique_ptr<rdma::fabric> client_fabric = rdma::make_fabric("cma", t.io);
  std::unique_ptr<rdma::listener> lst;
  std::shared_ptr<rdma::endpoint> server, client;

  std::mutex mu;
  std::vector<std::vector<std::byte>> server_got, client_got;
  std::promise<std::error_code> server_closed;

  explicit pair_fixture(rdma::endpoint_options sopts = {}, rdma::endpoint_options copts = {}) {
    std::promise<std::shared_ptr<rdma::endpoint>> accepted;
    auto af = accepted.get_future();
    lst = server_fabric->listen("127.0.0.1", 0, sopts, [&](std::shared_ptr<rdma::endpoint> ep) { accepted.set_value(ep); });
    std::promise<std::pair<std::error_code, std::shared_ptr<rdma::endpoint>>> connected;
    auto cf = connected.get_future();
    client_fabric->connect("127.0.0.1", lst->port(), copts,
                           [&](std::error_code ec, std::shared_ptr<rdma::endpoint> ep) { connected.set_value({ec, ep}); });
    auto [ec, c] = wait_for(cf);
    REQUIRE_FALSE(ec);
    client = c;
    server = wait_for(af);
    server->start([this](std::span<const std::byte> m) {
      std::lock_guard l(mu);
      server_got.emplace_back(m.begin(), m.end());
    }, [this](std::error_code ec) { server_closed.set_value(ec); });
    client->start([this](std::span<const std::byte> m) {
      std::lock_guard l(mu);
      client_got.emplace_back(m.begin(), m.end());
    }, [](std::error_code) {});
  }
  ~pair_fixture() {
    // On the io thread, so the close handlers have run before the promises go.
    on_io(t.io, [this] {
      if (client) client->close();
      if (server) server->close();
      return 0;
    });
  }
  std::size_t server_count() {
    std::lock_guard l(mu);
    return server_got.size();
  }
};

}  // namespace

TEST_CASE("cma: private data and receive sizes are exchanged while connecting") {
  rdma::endpoint_options s, c;
  s.private_data = bytes_of("server-pd");
  s.recv_size = 8192;
  c.private_data = bytes_of("client");
  c.recv_size = 2048;
  pair_fixture p(s, c);
  auto spd = p.client->peer_private_data();
  CHECK(std::vector<std::byte>(spd.begin(), spd.end()) == bytes_of("server-pd"));
  auto cpd = p.server->peer_private_data();
  CHECK(std::vector<std::byte>(cpd.begin(), cpd.end()) == bytes_of("client"));
  CHECK(p.client->peer_recv_size() == 8192);
  CHECK(p.server->peer_recv_size() == 2048);
  CHECK(rdma::cma::socket_name("127.0.0.1", 20049) == "vnfs-rdma-cma/127.0.0.1:20049");
}

TEST_CASE("cma: a message consumes one posted receive; messages keep their order") {
  pair_fixture p;
  CHECK(p.server->post_recv(3) == 3);
  CHECK(p.server->posted_receives() == 3);
  auto a = bytes_of("first"), b = bytes_of("second"), c = bytes_of("third");
  CHECK_FALSE(sync_send(*p.client, {a}));
  CHECK_FALSE(sync_send(*p.client, {b, c}));
  for (int i = 0; i < 2000 && p.server_count() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(p.server_count() == 2);
  CHECK(p.server_got[0] == a);
  CHECK(p.server_got[1] == bytes_of("secondthird"));
  CHECK(p.server->posted_receives() == 1);
  CHECK(p.server->is_open());
}

TEST_CASE("cma: post_recv never exceeds max_recv") {
  rdma::endpoint_options s;
  s.max_recv = 4;
  pair_fixture p(s);
  CHECK(p.server->post_recv(3) == 3);
  CHECK(p.server->post_recv(3) == 1);
  CHECK(p.server->post_recv(1) == 0);
  CHECK(p.server->posted_receives() == 4);
}

TEST_CASE("cma: a message with no receive posted closes that connection (RNR)") {
  pair_fixture p;
  auto closed = p.server_closed.get_future();
  auto m = bytes_of("unexpected");
  CHECK_FALSE(sync_send(*p.client, {m}));
  CHECK(wait_for(closed) == std::make_error_code(std::errc::no_buffer_space));
  CHECK_FALSE(p.server->is_open());
  CHECK(p.server_count() == 0);
}

TEST_CASE("cma: a message above the peer's receive size is refused by the sender") {
  rdma::endpoint_options s;
  s.recv_size = 1024;
  pair_fixture p(s);
  p.server->post_recv(1);
  std::vector<std::byte> big(1025);
  CHECK(sync_send(*p.client, {big}) == std::make_error_code(std::errc::message_size));
  std::vector<std::byte> fits(1024, std::byte{7});
  CHECK_FALSE(sync_send(*p.client, {fits}));
}

TEST_CASE("cma: registrations are counted when made, and as live until destroyed") {
  io_thread t;
  auto f = rdma::make_fabric("cma", t.io);
  std::vector<std::byte> mem(8192);
  CHECK(f->registrations().made == 0);
  CHECK(f->registrations().live == 0);
  auto kept = f->register_memory(mem.data(), 4096, rdma::remote_access::read_write);
  {
    auto brief = f->register_memory(mem.data() + 4096, 4096, rdma::remote_access::read);
    CHECK(f->registrations().made == 2);
    CHECK(f->registrations().live == 2);
  }
  CHECK(f->registrations().made == 2);
  CHECK(f->registrations().live == 1);
  CHECK_THROWS_AS(f->register_memory(nullptr, 0, rdma::remote_access::read), std::system_error);
  CHECK(f->registrations().made == 2);  // a refused registration is not one
  kept.reset();
  CHECK(f->registrations().live == 0);
}

TEST_CASE("cma: RDMA Write and RDMA Read move bytes into and out of registered memory") {
  pair_fixture p;
  std::vector<std::byte> target(1 << 20, std::byte{0});
  auto reg = p.client_fabric->register_memory(target.data(), target.size(), rdma::remote_access::read_write);
  std::vector<std::byte> src(300000);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 7 + 1);
  // Gathered from two pieces into the middle of the region.
  auto seg = reg->segment(4096, src.size());
  CHECK_FALSE(sync_write(*p.server, seg, {std::span(src).first(1000), std::span(src).subspan(1000)}));
  CHECK(std::memcmp(target.data() + 4096, src.data(), src.size()) == 0);
  CHECK(target[4095] == std::byte{0});
  CHECK(target[4096 + src.size()] == std::byte{0});
  // And read back.
  std::vector<std::byte> back(src.size());
  CHECK_FALSE(sync_read(*p.server, seg, back));
  CHECK(back == src);
}

TEST_CASE("cma security: forged, stale, out-of-bounds and wrong-right accesses are refused") {
  pair_fixture p;
  std::vector<std::byte> mem(8192, std::byte{0x5a});
  std::vector<std::byte> data(100, std::byte{1});
  std::vector<std::byte> sink(100);
  const auto denied = std::make_error_code(std::errc::permission_denied);

  SECTION("forged handle") {
    auto reg = p.client_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
    auto seg = reg->segment(0, 100);
    seg.handle ^= 0x5a5a5a5a;
    CHECK(sync_write(*p.server, seg, {data}) == denied);
    CHECK(sync_read(*p.server, seg, sink) == denied);
  }
  SECTION("stale handle: deregistered") {
    auto reg = p.client_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
    auto seg = reg->segment(0, 100);
    CHECK_FALSE(sync_write(*p.server, seg, {data}));
    reg.reset();
    std::vector<std::byte> two(100, std::byte{2});
    CHECK(sync_write(*p.server, seg, {two}) == denied);
    CHECK(mem[0] == std::byte{1});
    // A new registration of the same memory gets a new handle; the old one stays dead.
    auto again = p.client_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
    CHECK(again->handle() != seg.handle);
    CHECK(sync_write(*p.server, seg, {two}) == denied);
  }
  SECTION("out of bounds") {
    auto reg = p.client_fabric->register_memory(mem.data() + 1024, 4096, rdma::remote_access::read_write);
    auto seg = reg->segment(4000, 96);
    seg.length = 97;  // one byte past the end
    std::vector<std::byte> d97(97, std::byte{3});
    CHECK(sync_write(*p.server, seg, {d97}) == denied);
    auto before = reg->segment(0, 100);
    before.offset -= 1;  // one byte before the start
    CHECK(sync_write(*p.server, before, {data}) == denied);
    auto wrap = reg->segment(0, 100);
    wrap.offset = UINT64_MAX - 10;  // address arithmetic that would wrap
    CHECK(sync_read(*p.server, wrap, sink) == denied);
    CHECK(mem[1023] == std::byte{0x5a});
    CHECK(mem[1024 + 4096] == std::byte{0x5a});
    CHECK_THROWS_AS(reg->segment(4000, 97), std::out_of_range);
  }
  SECTION("write access to a read-only registration; read from a write-only one") {
    auto ro = p.client_fabric->register_memory(mem.data(), 4096, rdma::remote_access::read);
    CHECK(sync_write(*p.server, ro->segment(0, 100), {data}) == denied);
    CHECK(mem[0] == std::byte{0x5a});
    CHECK_FALSE(sync_read(*p.server, ro->segment(0, 100), sink));
    CHECK(sink[0] == std::byte{0x5a});
    auto wo = p.client_fabric->register_memory(mem.data() + 4096, 4096, rdma::remote_access::write);
    CHECK(sync_read(*p.server, wo->segment(0, 100), sink) == denied);
    CHECK_FALSE(sync_write(*p.server, wo->segment(0, 100), {data}));
  }
  SECTION("the handle of another fabric (another domain) is not valid here") {
    auto other = p.server_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
    CHECK(sync_write(*p.server, other->segment(0, 100), {data}) == denied);
  }
  // A refused access leaves the connection usable.
  CHECK(p.server->is_open());
  CHECK(p.client->is_open());
  p.server->post_recv(1);
  auto m = bytes_of("still here");
  CHECK_FALSE(sync_send(*p.client, {m}));
}

TEST_CASE("cma pre-authorization: a granted registration is accessed with no message to its owner, within its range and rights only") {
  // The owner (client) runs on an io thread of its own, which the test blocks: an access
  // that needed the owner's answer could not complete then.
  io_thread owner_io;
  io_thread peer_io;
  auto owner_fabric = rdma::make_fabric("cma", owner_io.io);
  auto peer_fabric = rdma::make_fabric("cma", peer_io.io);
  std::promise<std::shared_ptr<rdma::endpoint>> accepted;
  auto af = accepted.get_future();
  auto lst = peer_fabric->listen("127.0.0.1", 0, {}, [&](std::shared_ptr<rdma::endpoint> ep) { accepted.set_value(ep); });
  std::promise<std::pair<std::error_code, std::shared_ptr<rdma::endpoint>>> connected;
  auto cf = connected.get_future();
  owner_fabric->connect("127.0.0.1", lst->port(), {},
                        [&](std::error_code ec, std::shared_ptr<rdma::endpoint> ep) { connected.set_value({ec, ep}); });
  auto [ec, owner] = wait_for(cf);
  REQUIRE_FALSE(ec);
  auto peer = wait_for(af);
  std::atomic<int> peer_got{0};
  peer->post_recv(8);
  peer->start([&](std::span<const std::byte>) { ++peer_got; }, [](std::error_code) {});
  owner->start([](std::span<const std::byte>) {}, [](std::error_code) {});
  const auto denied = std::make_error_code(std::errc::permission_denied);

  std::vector<std::byte> mem(8192, std::byte{0x5a});
  auto rw = owner_fabric->register_memory(mem.data() + 1024, 4096, rdma::remote_access::read_write);
  auto wo = owner_fabric->register_memory(mem.data() + 5120, 1024, rdma::remote_access::write);
  owner->grant(*rw);
  owner->grant(*wo);
  owner->grant(*rw);  // a second grant of the same registration sends nothing more
  auto hello = bytes_of("grants before me");
  CHECK_FALSE(sync_send(*owner, {hello}));  // ordered after the grants: processed by now
  REQUIRE(eventually([&] { return peer_got == 1; }));

  {
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    boost::asio::post(owner_io.io, [released] { released.wait(); });  // the owner answers nothing now
    std::vector<std::byte> data(100, std::byte{1}), sink(100);
    CHECK_FALSE(sync_write(*peer, rw->segment(4000, 96), {std::span(data).first(96)}));
    CHECK_FALSE(sync_read(*peer, rw->segment(4000, 96), std::span(sink).first(96)));
    CHECK(sink[0] == std::byte{1});
    CHECK_FALSE(sync_write(*peer, wo->segment(0, 100), {data}));
    // Refused by the peer's own check: one byte past the end, one before the start, a read
    // of a write-only registration.
    auto past = rw->segment(4000, 96);
    past.length = 97;
    std::vector<std::byte> d97(97, std::byte{3});
    CHECK(sync_write(*peer, past, {d97}) == denied);
    auto before = rw->segment(0, 100);
    before.offset -= 1;
    CHECK(sync_write(*peer, before, {data}) == denied);
    CHECK(sync_read(*peer, wo->segment(0, 100), sink) == denied);
    release.set_value();
  }
  CHECK(mem[1024 + 4000] == std::byte{1});
  CHECK(mem[1023] == std::byte{0x5a});
  CHECK(mem[5120 + 100] == std::byte{0x5a});
  CHECK(mem[5120] == std::byte{1});

  // A handle the owner granted nothing for still goes to the owner, which refuses a forged
  // one; a deregistered one is refused once the owner's revoke arrived (before any message
  // the owner sends after deregistering).
  std::vector<std::byte> two(100, std::byte{2});
  auto forged = rw->segment(0, 100);
  forged.handle ^= 0x5a5a5a5a;
  CHECK(sync_write(*peer, forged, {two}) == denied);
  const auto stale = rw->segment(0, 100);
  rw.reset();
  auto bye = bytes_of("after the deregistration");
  CHECK_FALSE(sync_send(*owner, {bye}));
  REQUIRE(eventually([&] { return peer_got == 2; }));
  CHECK(sync_write(*peer, stale, {two}) == denied);
  CHECK(mem[1024] == std::byte{0x5a});
  CHECK(peer->is_open());
  CHECK(owner->is_open());
  on_io(owner_io.io, [&] {
    owner->close();
    return 0;
  });
  on_io(peer_io.io, [&] {
    peer->close();
    return 0;
  });
}

namespace {

/// An owner and its peer, each with a fabric on an io thread of its own (the owner's made
/// with `fopts`), connected and started.
struct owner_and_peer {
  io_thread owner_io, peer_io;
  std::unique_ptr<rdma::fabric> owner_fabric, peer_fabric;
  std::unique_ptr<rdma::listener> lst;
  std::shared_ptr<rdma::endpoint> owner, peer;
  std::atomic<int> peer_got{0};

  explicit owner_and_peer(rdma::cma::fabric_options fopts = {})
      : owner_fabric(rdma::cma::make_fabric(owner_io.io, fopts)), peer_fabric(rdma::make_fabric("cma", peer_io.io)) {
    std::promise<std::shared_ptr<rdma::endpoint>> accepted;
    auto af = accepted.get_future();
    lst = peer_fabric->listen("127.0.0.1", 0, {}, [&](std::shared_ptr<rdma::endpoint> ep) { accepted.set_value(ep); });
    std::promise<std::pair<std::error_code, std::shared_ptr<rdma::endpoint>>> connected;
    auto cf = connected.get_future();
    owner_fabric->connect("127.0.0.1", lst->port(), {},
                          [&](std::error_code ec, std::shared_ptr<rdma::endpoint> ep) { connected.set_value({ec, ep}); });
    auto [ec, o] = wait_for(cf);
    REQUIRE_FALSE(ec);
    owner = o;
    peer = wait_for(af);
    peer->start([this](std::span<const std::byte>) { ++peer_got; }, [](std::error_code) {});
    owner->start([](std::span<const std::byte>) {}, [](std::error_code) {});
  }
  ~owner_and_peer() {
    on_io(owner_io.io, [this] {
      owner->close();
      return 0;
    });
    on_io(peer_io.io, [this] {
      peer->close();
      return 0;
    });
  }
  /// A message from the owner, received by the peer: what the owner sent before it arrived.
  void sync() {
    const int before = peer_got;
    peer->post_recv(1);
    auto m = bytes_of("sync");
    CHECK_FALSE(sync_send(*owner, {m}));
    REQUIRE(eventually([&] { return peer_got == before + 1; }));
  }
};

}  // namespace

TEST_CASE("cma pre-authorization: a granted access moves its bytes and completes in the calling thread") {
  // The thread that made a reply moves its payload itself, as a NIC's DMA runs beside the
  // CPU: with the initiator's io thread busy, the bytes are in place and the completion has
  // run when rdma_write returns.
  owner_and_peer p;
  std::vector<std::byte> mem(4096, std::byte{0x5a});
  auto reg = p.owner_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
  p.owner->grant(*reg);
  p.sync();

  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  boost::asio::post(p.peer_io.io, [released] { released.wait(); });  // the peer's strand cannot run
  std::vector<std::byte> data(512, std::byte{7});
  std::optional<std::error_code> wrote;
  const auto caller = std::this_thread::get_id();
  std::thread::id completed_in;
  p.peer->rdma_write(reg->segment(1024, 512), {data}, [&](std::error_code ec) {
    wrote = ec;
    completed_in = std::this_thread::get_id();
  });
  REQUIRE(wrote.has_value());
  CHECK_FALSE(*wrote);
  CHECK(completed_in == caller);
  CHECK(mem[1024] == std::byte{7});
  CHECK(mem[1024 + 511] == std::byte{7});
  CHECK(mem[1024 + 512] == std::byte{0x5a});
  std::vector<std::byte> sink(512);
  std::optional<std::error_code> read;
  p.peer->rdma_read(reg->segment(1024, 512), sink, [&read](std::error_code ec) { read = ec; });
  REQUIRE(read.has_value());
  CHECK_FALSE(*read);
  CHECK(sink[0] == std::byte{7});
  CHECK(sink[511] == std::byte{7});
  release.set_value();
}

namespace {

/// A connected pair whose io thread (both ends' strands) waits until release(), so that
/// nothing reads the client's messages: after a few, the socket's buffer is full. The
/// server has a receive posted for each of `messages` (512 of 4000 bytes, each its own
/// pattern).
struct blocked_pair {
  static rdma::endpoint_options server_options() {
    rdma::endpoint_options s;
    s.max_recv = 512;
    return s;
  }
  pair_fixture p{server_options()};
  std::promise<void> released;
  std::vector<std::vector<std::byte>> messages;

  blocked_pair() {
    p.server->post_recv(512);
    boost::asio::post(p.t.io, [f = released.get_future().share()] { f.wait(); });
    for (int i = 0; i < 512; ++i) messages.push_back(std::vector<std::byte>(4000, std::byte(i % 251)));
  }
  void release() { released.set_value(); }
};

}  // namespace

TEST_CASE("cma messages: sent from the calling thread while nothing waits, queued in order when the socket is full") {
  blocked_pair b;
  // The first message goes at once, its completion in this thread.
  std::atomic<int> completed{0};
  bool first_done = false;
  b.p.client->post_send({b.messages[0]}, [&](std::error_code ec) {
    first_done = !ec;
    completed++;
  });
  CHECK(first_done);
  // Nobody reads: the socket's buffer fills, and what follows waits for the strand.
  for (std::size_t i = 1; i < b.messages.size(); ++i)
    b.p.client->post_send({b.messages[i]}, [&](std::error_code ec) {
      if (!ec) completed++;
    });
  CHECK(completed.load() < 512);
  b.release();
  REQUIRE(eventually([&] { return b.p.server_count() == 512 && completed.load() == 512; }));
  std::lock_guard l(b.p.mu);
  CHECK(b.p.server_got == b.messages);
  CHECK(b.p.client->is_open());
}

TEST_CASE("cma messages: what is still queued when close() returns is never sent, and completes cancelled") {
  // The caller may free a queued message's memory once close() returned.
  blocked_pair b;
  auto& sent = b.messages;
  std::mutex mu;
  std::vector<std::error_code> outcome(sent.size(), make_error_code(std::errc::operation_in_progress));
  for (std::size_t i = 0; i < sent.size(); ++i)
    b.p.client->post_send({sent[i]}, [&, i](std::error_code ec) {
      std::lock_guard l(mu);
      outcome[i] = ec;
    });
  std::size_t went;
  {
    std::lock_guard l(mu);
    went = static_cast<std::size_t>(std::count(outcome.begin(), outcome.end(), std::error_code{}));
  }
  REQUIRE(went > 0);
  REQUIRE(went < sent.size());  // the socket's buffer filled: the rest is queued
  b.p.client->close();
  for (std::size_t i = went; i < sent.size(); ++i) std::fill(sent[i].begin(), sent[i].end(), std::byte{0xee});
  b.release();
  REQUIRE(eventually([&] {
    std::lock_guard l(mu);
    return std::count(outcome.begin(), outcome.end(), make_error_code(std::errc::operation_in_progress)) == 0;
  }));
  {
    std::lock_guard l(mu);
    for (std::size_t i = 0; i < sent.size(); ++i) {
      INFO("message " << i);
      CHECK(outcome[i] == (i < went ? std::error_code{} : make_error_code(std::errc::operation_canceled)));
    }
  }
  REQUIRE(eventually([&] { return b.p.server_count() == went; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // nothing more arrives
  std::lock_guard l(b.p.mu);
  CHECK(b.p.server_got.size() == went);
  CHECK(std::equal(b.p.server_got.begin(), b.p.server_got.end(), sent.begin()));
}

TEST_CASE("cma revocation: a handle used at once after its deregistration returned is refused, the memory untouched") {
  owner_and_peer p;
  const auto denied = std::make_error_code(std::errc::permission_denied);
  std::vector<std::byte> mem(4096, std::byte{0x5a});
  std::vector<std::byte> data(100, std::byte{1});
  SECTION("pre-authorized: the peer checks the access itself") {
    for (int round = 0; round < 50; ++round) {
      auto reg = p.owner_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
      p.owner->grant(*reg);
      p.sync();
      const auto seg = reg->segment(1000, 100);
      CHECK_FALSE(sync_write(*p.peer, seg, {data}));  // granted: no message to the owner
      std::fill(mem.begin(), mem.end(), std::byte{0x5a});
      reg.reset();  // returns once the peer acknowledged the revoke
      CHECK(sync_write(*p.peer, seg, {data}) == denied);
      std::vector<std::byte> sink(100, std::byte{7});
      CHECK(sync_read(*p.peer, seg, sink) == denied);
      CHECK(sink == std::vector<std::byte>(100, std::byte{7}));
      CHECK(mem == std::vector<std::byte>(4096, std::byte{0x5a}));
    }
  }
  SECTION("checked by the owner: the answer to a request before the deregistration is used before it returns") {
    auto reg = p.owner_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
    const auto seg = reg->segment(0, 100);
    CHECK_FALSE(sync_write(*p.peer, seg, {data}));
    CHECK(mem[0] == std::byte{1});
    std::fill(mem.begin(), mem.end(), std::byte{0x5a});
    reg.reset();  // the peer was answered yes once: it acknowledges a revoke too
    CHECK(sync_write(*p.peer, seg, {data}) == denied);
    CHECK(mem == std::vector<std::byte>(4096, std::byte{0x5a}));
  }
  CHECK(p.owner->is_open());
  CHECK(p.peer->is_open());
  CHECK(p.owner_fabric->registrations().live == 0);
}

TEST_CASE("cma revocation: deregistering in a completion handler on the io thread neither blocks nor leaves the grant usable") {
  // One io thread for both ends: had the handler waited for the peer's answer there, the
  // answer could never have come.
  pair_fixture p;
  const auto denied = std::make_error_code(std::errc::permission_denied);
  std::vector<std::byte> mem(4096, std::byte{0x5a});
  std::vector<std::byte> data(100, std::byte{1});
  auto reg = p.client_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::read_write);
  const auto seg = reg->segment(0, 100);
  p.client->grant(*reg);
  p.server->post_recv(2);
  auto first = bytes_of("first");
  CHECK_FALSE(sync_send(*p.client, {first}));
  REQUIRE(eventually([&] { return p.server_count() == 1; }));
  CHECK_FALSE(sync_write(*p.server, seg, {data}));
  CHECK(mem[0] == std::byte{1});

  // The owner's send, made on the io thread, completes there, and drops the registration.
  std::promise<bool> dropped;
  auto df = dropped.get_future();
  auto second = bytes_of("second");
  on_io(p.t.io, [&] {
    p.client->post_send({second}, [&](std::error_code ec) {
      reg.reset();
      dropped.set_value(!ec);
    });
    return 0;
  });
  CHECK(wait_for(df));
  // The peer learns of it before anything the owner sends after.
  auto third = bytes_of("third");
  p.server->post_recv(1);
  CHECK_FALSE(sync_send(*p.client, {third}));
  REQUIRE(eventually([&] { return p.server_count() == 3; }));
  std::fill(mem.begin(), mem.end(), std::byte{0x5a});
  CHECK(sync_write(*p.server, seg, {data}) == denied);
  CHECK(mem == std::vector<std::byte>(4096, std::byte{0x5a}));
  CHECK(p.client->is_open());
  CHECK(p.server->is_open());
  CHECK(p.client_fabric->registrations().live == 0);
}

TEST_CASE("cma revocation: a peer that never acknowledges is cut off within the bound, and the deregistration returns") {
  io_thread t;
  rdma::cma::fabric_options fopts;
  fopts.revoke_timeout = std::chrono::milliseconds(300);
  auto owner_fabric = rdma::cma::make_fabric(t.io, fopts);
  std::promise<std::shared_ptr<rdma::endpoint>> accepted;
  auto af = accepted.get_future();
  auto lst = owner_fabric->listen("127.0.0.1", 0, {}, [&](std::shared_ptr<rdma::endpoint> ep) { accepted.set_value(ep); });
  hand_peer peer(lst->port());  // speaks the packets itself, and never answers a revoke
  CHECK(peer.handshake().kind == 2);
  auto owner = wait_for(af);
  std::promise<std::error_code> closed;
  auto closed_f = closed.get_future();
  owner->start([](std::span<const std::byte>) {}, [&](std::error_code ec) { closed.set_value(ec); });

  std::vector<std::byte> mem(4096, std::byte{0x5a});
  auto reg = owner_fabric->register_memory(mem.data(), mem.size(), rdma::remote_access::write);
  const std::uint32_t handle = reg->handle();
  owner->grant(*reg);
  auto packet_kind = [](const std::vector<std::byte>& p) {
    std::uint32_t k = 0;
    std::memcpy(&k, p.data(), 4);
    return k;
  };
  auto grant = peer.receive();
  REQUIRE(grant);
  REQUIRE(grant->size() == 16 + 24);
  CHECK(packet_kind(*grant) == 6);
  std::uint32_t granted = 0;
  std::memcpy(&granted, grant->data() + 16, 4);
  CHECK(granted == handle);

  const auto start = std::chrono::steady_clock::now();
  reg.reset();  // waits: the revoke goes unanswered, the connection is shut, its end waited for
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= 2 * fopts.revoke_timeout);  // the bound for the answer, then for the peer's socket
  CHECK(waited < wait_limit);
  CHECK(owner_fabric->registrations().live == 0);
  CHECK(wait_for(closed_f) == std::make_error_code(std::errc::timed_out));
  CHECK_FALSE(owner->is_open());
  auto revoke = peer.receive();
  REQUIRE(revoke);
  REQUIRE(revoke->size() == 16);
  CHECK(packet_kind(*revoke) == 7);
  std::uint64_t revoked = 0;
  std::memcpy(&revoked, revoke->data() + 8, 8);
  CHECK(revoked == handle);
  CHECK_FALSE(peer.receive());  // then the end of the connection
}

TEST_CASE("cma revocation: an answer to no revoke is a protocol error") {
  io_thread t;
  auto owner_fabric = rdma::make_fabric("cma", t.io);
  std::promise<std::shared_ptr<rdma::endpoint>> accepted;
  auto af = accepted.get_future();
  auto lst = owner_fabric->listen("127.0.0.1", 0, {}, [&](std::shared_ptr<rdma::endpoint> ep) { accepted.set_value(ep); });
  hand_peer peer(lst->port());
  CHECK(peer.handshake().kind == 2);
  auto owner = wait_for(af);
  std::promise<std::error_code> closed;
  auto closed_f = closed.get_future();
  owner->start([](std::span<const std::byte>) {}, [&](std::error_code ec) { closed.set_value(ec); });
  peer.send(hand_peer::packet(8, {}));
  CHECK(wait_for(closed_f) == std::make_error_code(std::errc::protocol_error));
  CHECK_FALSE(peer.receive());
}

TEST_CASE("cma: connecting to nothing fails; closing completes pending work") {
  io_thread t;
  auto f = rdma::make_fabric("cma", t.io);
  std::promise<std::error_code> p;
  auto fut = p.get_future();
  f->connect("127.0.0.1", 1, {}, [&](std::error_code ec, std::shared_ptr<rdma::endpoint> ep) {
    CHECK(ep == nullptr);
    p.set_value(ec);
  });
  CHECK(wait_for(fut) == std::make_error_code(std::errc::connection_refused));
  CHECK_THROWS_AS(rdma::make_fabric("nope", t.io), std::system_error);
}
