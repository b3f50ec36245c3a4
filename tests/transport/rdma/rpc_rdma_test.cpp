// RPC-over-RDMA v1 over the cma provider, below NFS: chunk choice and placement, RDMA_ERROR
// paths, RFC 8797 inline thresholds, credits. The "RPC program" here is a toy whose calls
// are [xid][op][args] and whose replies the handler builds per op. Hostile peers at the end:
// chunks beyond, beside or without registrations, messages above the inline size.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>

#include "raw_peers.hpp"
#include "transport/rdma/chunks.hpp"
#include "transport/rdma/rpc_client.hpp"
#include "transport/rdma/rpc_server.hpp"
#include "vnfs/test/reliability.hpp"

using namespace vnfs;
using namespace vnfs::test;
namespace rr = vnfs::rpc::rdma;
using rdma::rpc_client;
using rdma::rpc_server;

namespace {

enum op : std::uint32_t {
  op_echo = 1,      // reply: xid, then the whole call record as opaque (copied)
  op_read = 2,      // args: n. reply: xid, n, then n pattern bytes by reference (READ-like)
  op_big = 3,       // args: n. reply: xid, then n bytes copied into the encoder
  op_hold = 4,      // no reply until released
  op_digest = 5,    // reply: xid, record size, a checksum of the record
  op_reads = 6,     // args: k, then k lengths n_i. reply: xid, k, then per i the pattern
                    // bytes at i * 4096, n_i of them, by reference (a COMPOUND of READs)
};

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte((i * 131 + seed) >> 3);
  return v;
}
std::uint64_t checksum(std::span<const std::byte> b) {
  std::uint64_t h = 1469598103934665603ull;
  for (auto x : b) h = (h ^ std::uint64_t(x)) * 1099511628211ull;
  return h;
}

struct toy_server {
  io_thread& t;
  std::unique_ptr<rdma::fabric> fab;
  std::shared_ptr<rdma::fixed_grant_policy> grants;
  std::unique_ptr<rpc_server> server;
  std::mutex mu;
  std::vector<std::shared_ptr<rpc_server::responder>> held;
  std::vector<std::vector<std::byte>> records;
  std::shared_ptr<std::vector<std::byte>> read_data = std::make_shared<std::vector<std::byte>>(pattern(1 << 20, 7));

  explicit toy_server(io_thread& io, rdma::rpc_server_options o = {}, std::uint32_t fixed_grant = 0)
      : t(io), fab(rdma::make_fabric("cma", io.io)) {
    if (fixed_grant != 0) {
      grants = std::make_shared<rdma::fixed_grant_policy>(fixed_grant);
      o.grant_policy = grants;
    }
    server = std::make_unique<rpc_server>(*fab, "127.0.0.1", 0, o,
                                          [this](std::vector<std::byte> rec, std::shared_ptr<rpc_server::responder> r) {
                                            on_call(std::move(rec), std::move(r));
                                          });
  }
  ~toy_server() { server->stop(); }

  void on_call(std::vector<std::byte> rec, std::shared_ptr<rpc_server::responder> r) {
    xdr::decoder d(rec);
    std::uint32_t xid = d.get_u32();
    std::uint32_t o = d.get_u32();
    xdr::encoder e;
    e.put_u32(xid);
    std::shared_ptr<const void> keep;
    switch (o) {
      case op_echo:
        e.put_opaque(rec);
        break;
      case op_read: {
        std::uint32_t n = d.get_u32();
        e.put_u32(n);
        e.put_opaque_ref(std::span(*read_data).first(n));
        keep = read_data;
        break;
      }
      case op_reads: {
        const std::uint32_t k = d.get_u32();
        e.put_u32(k);
        for (std::uint32_t i = 0; i < k; ++i) e.put_opaque_ref(std::span(*read_data).subspan(i * 4096, d.get_u32()));
        keep = read_data;
        break;
      }
      case op_big: {
        std::uint32_t n = d.get_u32();
        auto b = pattern(n, 3);
        e.put_fixed_opaque(b);
        break;
      }
      case op_hold: {
        std::lock_guard l(mu);
        held.push_back(r);
        records.push_back(std::move(rec));
        return;
      }
      case op_digest:
        e.put_u64(rec.size());
        e.put_u64(checksum(rec));
        break;
    }
    {
      std::lock_guard l(mu);
      records.push_back(std::move(rec));
    }
    r->reply(std::move(e), keep);
  }
  std::size_t held_count() {
    std::lock_guard l(mu);
    return held.size();
  }
  /// Answers every held call with [xid].
  void release() {
    std::vector<std::shared_ptr<rpc_server::responder>> h;
    std::vector<std::vector<std::byte>> recs;
    {
      std::lock_guard l(mu);
      h.swap(held);
      recs = records;
    }
    for (auto& r : h) {
      xdr::encoder e;
      e.put_u32(0);
      r->reply(std::move(e), nullptr);
    }
  }
};

std::shared_ptr<rpc_client> connect(io_thread& t, rdma::fabric& f, std::uint16_t port, rdma::rpc_client_options o = {}) {
  std::promise<std::pair<std::error_code, std::shared_ptr<rpc_client>>> p;
  auto fut = p.get_future();
  boost::asio::post(t.io, [&] {
    rpc_client::connect(f, "127.0.0.1", port, o, [](std::error_code) {},
                        [&](std::error_code ec, std::shared_ptr<rpc_client> c) { p.set_value({ec, c}); });
  });
  auto [ec, c] = wait_for(fut);
  REQUIRE_FALSE(ec);
  return c;
}

struct call_result {
  std::error_code ec;
  rdma::rpc_result r;
};

std::shared_ptr<xdr::encoder> message(std::uint32_t xid, std::uint32_t o, std::initializer_list<std::uint32_t> args = {}) {
  auto e = std::make_shared<xdr::encoder>();
  e->put_u32(xid);
  e->put_u32(o);
  for (auto a : args) e->put_u32(a);
  return e;
}

std::future<call_result> start_call(io_thread& t, const std::shared_ptr<rpc_client>& c, rdma::rpc_call call) {
  auto p = std::make_shared<std::promise<call_result>>();
  auto f = p->get_future();
  boost::asio::post(t.io, [c, call, p] {
    c->call(call, [p](std::error_code ec, rdma::rpc_result r) { p->set_value({ec, std::move(r)}); });
  });
  return f;
}

call_result do_call(io_thread& t, const std::shared_ptr<rpc_client>& c, rdma::rpc_call call) {
  auto f = start_call(t, c, std::move(call));
  return wait_for(f);
}


}  // namespace

TEST_CASE("rpc/rdma chunks: reduce takes payloads and their padding out of the stream") {
  std::vector<std::byte> payload = pattern(1001, 1);
  xdr::encoder e;
  e.put_u32(1);
  e.put_opaque_ref(payload);  // length 1001: 3 bytes of padding
  e.put_u32(2);
  auto red = rdma::reduce(e.chain(), 1000, 4);
  REQUIRE(red.items.size() == 1);
  CHECK(red.items[0].position == 8);  // after the word and the length
  CHECK(red.items[0].data.size() == 1001);
  CHECK(rdma::total_size(red.inline_part) == 12);
  std::vector<std::byte> flat;
  for (auto v : red.inline_part) flat.insert(flat.end(), v.begin(), v.end());
  CHECK(flat == std::vector<std::byte>{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1}, std::byte{0}, std::byte{0},
                                       std::byte{0x03}, std::byte{0xe9}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{2}});
  CHECK(rdma::reduce(e.chain(), 2000, 4).items.empty());
  // Layout: the chunk goes back at its position with its padding.
  auto l = rdma::layout_read_chunks(12, {{{8, {1, 1001, 0}}}}, 1 << 20);
  REQUIRE(l);
  CHECK(l->total == e.size());
  CHECK(l->offsets == std::vector<std::size_t>{8});
  CHECK_FALSE(rdma::layout_read_chunks(12, {{{13, {1, 4, 0}}}}, 1 << 20));  // beyond the inline bytes
  CHECK_FALSE(rdma::layout_read_chunks(12, {{{8, {1, 4, 0}}}, {{4, {1, 4, 0}}}}, 1 << 20));  // descending
  CHECK_FALSE(rdma::layout_read_chunks(12, {{{8, {1, 2000, 0}}}}, 1024));  // too large
  // split_over fills segments in order.
  std::vector<rdma::gather_list> parts;
  std::vector<std::uint32_t> written;
  auto src = pattern(10, 0);
  rdma::gather_list g{std::span(src).first(3), std::span(src).subspan(3)};
  CHECK(rdma::split_over({{1, 4, 0}, {2, 4, 0}, {3, 4, 0}}, g, parts, written));
  CHECK(written == std::vector<std::uint32_t>{4, 4, 2});
  CHECK(parts[0].size() == 2);  // 3 bytes of the first piece, 1 of the second
  CHECK_FALSE(rdma::split_over({{1, 4, 0}}, g, parts, written));
}

TEST_CASE("rpc/rdma: a small call and reply travel inline") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  CHECK(c->inline_send() == 4096);
  auto r = do_call(t, c, {7, message(7, op_echo)});
  REQUIRE_FALSE(r.ec);
  xdr::decoder d(r.r.record);
  CHECK(d.get_u32() == 7);
  CHECK(d.get_opaque().size() == 8);
  CHECK(r.r.written.empty());
  CHECK(c->stats().inline_calls == 1);
  CHECK(s.server->stats().inline_replies == 1);
  CHECK(c->granted() == 32);  // Figure 11: the request (8) is covered by the 32 posted receives
}

TEST_CASE("rpc/rdma: READ payload is RDMA-Written straight into the registered target (Write list)") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  std::vector<std::byte> target(200000, std::byte{0xee});
  rdma::rpc_call call{9, message(9, op_read, {100001})};
  call.read_targets = {target};
  auto r = do_call(t, c, call);
  REQUIRE_FALSE(r.ec);
  CHECK(r.r.written == std::vector<std::uint32_t>{100001});
  CHECK(std::memcmp(target.data(), s.read_data->data(), 100001) == 0);
  CHECK(target[100001] == std::byte{0xee});
  // Inline: xid, n, the opaque's length (the payload and its padding are cut out).
  CHECK(r.r.record.size() == 12);
  xdr::decoder d(r.r.record);
  CHECK(d.get_u32() == 9);
  CHECK(d.get_u32() == 100001);
  CHECK(d.get_u32() == 100001);
  CHECK(s.server->stats().write_list_replies == 1);
  CHECK(s.server->stats().bytes_rdma_written == 100001);
  CHECK(c->stats().bytes_placed == 100001);
  // A small payload (which the encoder copies rather than references) is placed too: a
  // Write chunk belongs to its payload whatever the payload's length.
  std::fill(target.begin(), target.end(), std::byte{0xee});
  rdma::rpc_call small{10, message(10, op_read, {16})};
  small.read_targets = {target};
  auto r2 = do_call(t, c, small);
  REQUIRE_FALSE(r2.ec);
  CHECK(r2.r.written == std::vector<std::uint32_t>{16});
  CHECK(r2.r.record.size() == 12);
  CHECK(std::memcmp(target.data(), s.read_data->data(), 16) == 0);
  CHECK(target[16] == std::byte{0xee});
}

TEST_CASE("rpc/rdma: several Write chunks: each payload of a reply is RDMA-Written into its own chunk, in order") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  // Five payloads of 65536, 4096, 16 (copied by the encoder), 0 and 4001 bytes, each into a
  // buffer of its own, one byte longer than its payload.
  const std::vector<std::uint32_t> lengths{65536, 4096, 16, 0, 4001};
  std::vector<std::vector<std::byte>> targets;
  for (auto n : lengths) targets.emplace_back(n + 1, std::byte{0xee});
  auto call_with = [&](std::uint32_t xid, std::size_t chunks) {
    auto m = message(xid, op_reads, {static_cast<std::uint32_t>(lengths.size())});
    for (auto n : lengths) m->put_u32(n);
    rdma::rpc_call call{xid, m};
    for (std::size_t i = 0; i < chunks; ++i) call.read_targets.push_back(targets[i]);
    call.max_reply = 8;  // the reply's bound, each payload counted at its target's size
    for (const auto& tg : targets) call.max_reply += 4 + (tg.size() + 3) / 4 * 4;
    return call;
  };
  auto placed_ok = [&](std::size_t i) {
    return std::memcmp(targets[i].data(), s.read_data->data() + i * 4096, lengths[i]) == 0 &&
           targets[i][lengths[i]] == std::byte{0xee};
  };
  auto untouched = [&](std::size_t i) {
    return std::all_of(targets[i].begin(), targets[i].end(), [](std::byte b) { return b == std::byte{0xee}; });
  };

  SECTION("one chunk per payload: every payload placed, the reply carries only their lengths") {
    auto r = do_call(t, c, call_with(60, 5));
    REQUIRE_FALSE(r.ec);
    CHECK(r.r.written == lengths);
    for (std::size_t i = 0; i < lengths.size(); ++i) CHECK(placed_ok(i));
    CHECK(r.r.record.size() == 4 + 4 + 5 * 4);  // xid, k, five lengths
    xdr::decoder d(r.r.record);
    CHECK(d.get_u32() == 60);
    CHECK(d.get_u32() == 5);
    for (auto n : lengths) CHECK(d.get_u32() == n);
    CHECK(c->stats().write_chunks_offered == 5);
    CHECK(c->stats().write_chunks_filled == 4);  // the empty payload wrote nothing
    CHECK(s.server->stats().write_chunks_used == 5);
    CHECK(s.server->stats().write_list_replies == 1);
    CHECK(s.server->stats().bytes_rdma_written == 65536 + 4096 + 16 + 4001);
    CHECK(c->stats().bytes_placed == 65536 + 4096 + 16 + 4001);
  }
  SECTION("fewer chunks than payloads: the first ones placed, the rest inline as without chunks (RFC 8166)") {
    auto r = do_call(t, c, call_with(61, 2));
    REQUIRE_FALSE(r.ec);
    CHECK(r.r.written == std::vector<std::uint32_t>{65536, 4096});
    CHECK(placed_ok(0));
    CHECK(placed_ok(1));
    CHECK(untouched(2));
    CHECK(untouched(4));
    xdr::decoder d(r.r.record);
    CHECK(d.get_u32() == 61);
    CHECK(d.get_u32() == 5);
    CHECK(d.get_u32() == 65536);
    CHECK(d.get_u32() == 4096);
    auto p2 = d.get_opaque();
    CHECK(std::equal(p2.begin(), p2.end(), s.read_data->begin() + 2 * 4096, s.read_data->begin() + 2 * 4096 + 16));
    CHECK(d.get_opaque().empty());
    auto p4 = d.get_opaque();
    CHECK(std::equal(p4.begin(), p4.end(), s.read_data->begin() + 4 * 4096, s.read_data->begin() + 4 * 4096 + 4001));
    CHECK(d.remaining() == 0);
    CHECK(s.server->stats().write_chunks_used == 2);
    CHECK(s.server->stats().reply_chunk_replies == 1);  // 4048 bytes left: above the inline size
  }
  SECTION("more chunks than payloads: the extra ones come back unused, their memory untouched") {
    auto m = message(62, op_reads, {2, 100, 200});
    rdma::rpc_call call{62, m};
    for (auto& tg : targets) call.read_targets.push_back(tg);
    auto r = do_call(t, c, call);
    REQUIRE_FALSE(r.ec);
    CHECK(r.r.written == std::vector<std::uint32_t>{100, 200, 0, 0, 0});
    CHECK(std::memcmp(targets[0].data(), s.read_data->data(), 100) == 0);
    CHECK(std::memcmp(targets[1].data(), s.read_data->data() + 4096, 200) == 0);
    for (std::size_t i = 2; i < targets.size(); ++i) CHECK(untouched(i));
    CHECK(r.r.record.size() == 16);  // xid, k, two lengths
    CHECK(s.server->stats().write_chunks_used == 2);
  }
  SECTION("a chunk shorter than its payload: ERR_CHUNK, nothing placed, the connection goes on") {
    auto call = call_with(63, 5);
    call.read_targets[1] = std::span(targets[1]).first(4095);
    auto r = do_call(t, c, call);
    CHECK(r.ec == std::errc::bad_message);
    CHECK(s.server->stats().err_chunk_sent == 1);
    for (std::size_t i = 0; i < lengths.size(); ++i) CHECK(untouched(i));
    auto again = do_call(t, c, call_with(64, 5));
    REQUIRE_FALSE(again.ec);
    CHECK(again.r.written == lengths);
  }
}

TEST_CASE("rpc/rdma: a long reply comes through the Reply chunk (RDMA_NOMSG)") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  rdma::rpc_call call{11, message(11, op_big, {50000})};
  call.max_reply = 60000;
  auto r = do_call(t, c, call);
  REQUIRE_FALSE(r.ec);
  REQUIRE(r.r.record.size() == 4 + 50000);
  CHECK(std::memcmp(r.r.record.data() + 4, pattern(50000, 3).data(), 50000) == 0);
  CHECK(s.server->stats().reply_chunk_replies == 1);
  CHECK(c->stats().reply_chunk_replies == 1);
  SECTION("without a Reply chunk the reply does not fit: ERR_CHUNK, connection intact") {
    auto bad = do_call(t, c, {12, message(12, op_big, {50000})});
    CHECK(bad.ec == std::make_error_code(std::errc::bad_message));
    CHECK(s.server->stats().err_chunk_sent == 1);
    auto ok = do_call(t, c, {13, message(13, op_echo)});
    CHECK_FALSE(ok.ec);
  }
  SECTION("a Reply chunk too small for the reply: ERR_CHUNK") {
    rdma::rpc_call small{14, message(14, op_big, {50000})};
    small.max_reply = 40000;
    CHECK(do_call(t, c, small).ec == std::make_error_code(std::errc::bad_message));
  }
}

TEST_CASE("rpc/rdma: WRITE payload is pulled by the server with RDMA Read (Read list)") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  auto payload = pattern(300003, 5);
  auto e = message(15, op_digest, {77});
  e->put_opaque_ref(payload);
  e->put_u32(0xabcdef);
  auto expect = e->flatten();
  auto r = do_call(t, c, {15, e});
  REQUIRE_FALSE(r.ec);
  xdr::decoder d(r.r.record);
  CHECK(d.get_u32() == 15);
  CHECK(d.get_u64() == expect.size());
  CHECK(d.get_u64() == checksum(expect));
  CHECK(c->stats().read_chunk_calls == 1);
  CHECK(c->stats().bytes_offered == 300003);
  CHECK(s.server->stats().bytes_rdma_read == 300003);
  // Only the header and the call without its payload went inline.
  CHECK(c->stats().bytes_sent < 200);
}

TEST_CASE("rpc/rdma: a long call without payloads goes as a position-zero Read chunk (RDMA_NOMSG)") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  auto e = message(16, op_digest);
  for (std::uint32_t i = 0; i < 5000; ++i) e->put_u32(i);  // 20 KB of small items
  auto expect = e->flatten();
  auto r = do_call(t, c, {16, e});
  REQUIRE_FALSE(r.ec);
  xdr::decoder d(r.r.record);
  CHECK(d.get_u32() == 16);
  CHECK(d.get_u64() == expect.size());
  CHECK(d.get_u64() == checksum(expect));
  CHECK(c->stats().nomsg_calls == 1);
  CHECK(s.server->stats().bytes_rdma_read == expect.size());
}

TEST_CASE("rpc/rdma: memory inside a registration the call carries goes through it, with no registration per call") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  std::vector<std::byte> memory(1 << 20, std::byte{0xee});
  std::shared_ptr<const rdma::memory_registration> region =
      cf->register_memory(memory.data(), memory.size(), rdma::remote_access::read_write);
  REQUIRE(cf->registrations().made == 1);
  // READ payloads into four parts of the region: four Write chunks through its registration.
  for (std::uint32_t i = 0; i < 4; ++i) {
    const std::uint32_t xid = 40 + i;
    rdma::rpc_call call{xid, message(xid, op_read, {100001})};
    call.read_targets = {std::span(memory).subspan(i * 200000, 100001)};
    call.registered = {region};
    auto r = do_call(t, c, call);
    REQUIRE_FALSE(r.ec);
    CHECK(r.r.written == std::vector<std::uint32_t>{100001});
    CHECK(std::memcmp(memory.data() + i * 200000, s.read_data->data(), 100001) == 0);
  }
  {
    // A WRITE payload from the region: its Read chunk goes through the registration too.
    auto payload = pattern(100003, 6);
    std::copy(payload.begin(), payload.end(), memory.begin() + 900000);
    auto e = message(50, op_digest, {77});
    e->put_opaque_ref(std::span<const std::byte>(memory).subspan(900000, payload.size()));
    e->put_u32(0xabcdef);
    auto expect = e->flatten();
    rdma::rpc_call w{50, e};
    w.registered = {region};
    auto rw = do_call(t, c, w);
    REQUIRE_FALSE(rw.ec);
    xdr::decoder d(rw.r.record);
    CHECK(d.get_u32() == 50);
    CHECK(d.get_u64() == expect.size());
    CHECK(d.get_u64() == checksum(expect));
  }
  CHECK(c->stats().read_chunk_calls == 1);
  CHECK(c->stats().registered_segments == 5);
  CHECK(c->stats().per_call_registrations == 0);
  CHECK(cf->registrations().made == 1);
  CHECK(cf->registrations().live == 1);

  SECTION("memory outside it, or needing an access it does not grant, is registered for the call alone") {
    std::vector<std::byte> elsewhere(100001);
    rdma::rpc_call outside{51, message(51, op_read, {100001})};
    outside.read_targets = {elsewhere};
    outside.registered = {region};
    auto r = do_call(t, c, outside);
    REQUIRE_FALSE(r.ec);
    CHECK(std::memcmp(elsewhere.data(), s.read_data->data(), 100001) == 0);
    std::shared_ptr<const rdma::memory_registration> read_only =
        cf->register_memory(memory.data(), memory.size(), rdma::remote_access::read);
    rdma::rpc_call wrong_right{52, message(52, op_read, {100001})};
    wrong_right.read_targets = {std::span(memory).first(100001)};
    wrong_right.registered = {read_only};
    REQUIRE_FALSE(do_call(t, c, wrong_right).ec);
    CHECK(c->stats().per_call_registrations == 2);
    CHECK(c->stats().registered_segments == 5);
    CHECK(cf->registrations().made == 4);
    CHECK(cf->registrations().live == 2);  // the region's and read_only: the calls' went with them
  }
  SECTION("a call in flight holds the registration: it outlives the caller's reference until the reply") {
    rdma::rpc_call held{53, message(53, op_hold)};
    held.read_targets = {std::span(memory).first(4096)};
    held.registered = {region};
    auto f = start_call(t, c, held);
    held.registered.clear();
    region.reset();
    REQUIRE(eventually([&] { return s.held_count() == 1; }));
    CHECK(cf->registrations().live == 1);
    s.release();
    CHECK_FALSE(wait_for(f).ec);
    CHECK(cf->registrations().live == 0);
    CHECK(cf->registrations().made == 1);
  }
}

TEST_CASE("rpc/rdma: inline thresholds come from RFC 8797 private data, 1 KiB when the peer says nothing") {
  io_thread t;
  toy_server s(t);
  auto cf = rdma::make_fabric("cma", t.io);
  rdma::rpc_client_options quiet;
  quiet.send_private_data = false;
  auto c = connect(t, *cf, s.server->port(), quiet);
  // The server sent its private data: we may send 4 KiB. It must assume 1 KiB for us.
  CHECK(c->inline_send() == 4096);
  auto fits = do_call(t, c, {20, message(20, op_big, {900})});
  CHECK_FALSE(fits.ec);
  auto too_big = do_call(t, c, {21, message(21, op_big, {2000})});
  CHECK(too_big.ec == std::make_error_code(std::errc::bad_message));
  // With private data announcing 4 KiB, the same reply comes inline.
  auto c2 = connect(t, *cf, s.server->port());
  auto ok = do_call(t, c2, {22, message(22, op_big, {2000})});
  CHECK_FALSE(ok.ec);
  CHECK(ok.r.record.size() == 2004);
}

TEST_CASE("rpc/rdma credits: pipelining up to the grant and no further; grant changes take effect") {
  io_thread t;
  toy_server s(t, {}, 3);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  // Before any reply the client may have one call outstanding.
  std::vector<std::future<call_result>> fs;
  for (std::uint32_t i = 0; i < 5; ++i) fs.push_back(start_call(t, c, {100 + i, message(100 + i, op_hold)}));
  REQUIRE(eventually([&] { return s.held_count() == 1; }));
  CHECK(on_io(t.io, [&] { return c->outstanding(); }) == 1);
  CHECK(on_io(t.io, [&] { return c->waiting(); }) == 4);
  s.release();  // the reply grants 3
  REQUIRE(eventually([&] { return s.held_count() == 3; }));
  CHECK(on_io(t.io, [&] { return c->outstanding(); }) == 3);
  CHECK(on_io(t.io, [&] { return c->waiting(); }) == 1);
  CHECK(on_io(t.io, [&] { return c->granted(); }) == 3);
  s.grants->set(2);  // grant changes take effect with the next reply
  s.release();
  REQUIRE(eventually([&] { return s.held_count() == 1; }));  // the fifth
  s.release();
  for (auto& f : fs) CHECK_FALSE(wait_for(f).ec);
  CHECK(on_io(t.io, [&] { return c->granted(); }) == 2);
  std::vector<std::future<call_result>> more;
  for (std::uint32_t i = 0; i < 4; ++i) more.push_back(start_call(t, c, {200 + i, message(200 + i, op_hold)}));
  REQUIRE(eventually([&] { return s.held_count() == 2; }));
  CHECK(on_io(t.io, [&] { return c->outstanding(); }) == 2);
  CHECK(on_io(t.io, [&] { return c->waiting(); }) == 2);
  s.grants->set(0);  // a grant of 0 counts as 1
  s.release();
  REQUIRE(eventually([&] { return s.held_count() == 1; }));
  CHECK(on_io(t.io, [&] { return c->granted(); }) == 0);
  CHECK(on_io(t.io, [&] { return c->outstanding(); }) == 1);
  s.release();
  REQUIRE(eventually([&] { return s.held_count() == 1; }));
  s.release();
  for (auto& f : more) CHECK_FALSE(wait_for(f).ec);
  CHECK(c->stats().max_outstanding == 3);
  CHECK(s.server->stats().credit_violations == 0);
}

TEST_CASE("rpc/rdma credits: the grant is bounded by the receives posted") {
  io_thread t;
  rdma::rpc_server_options o;
  o.max_credits = 4;
  toy_server s(t, o, 100);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  CHECK_FALSE(do_call(t, c, {1, message(1, op_echo)}).ec);
  CHECK(on_io(t.io, [&] { return c->granted(); }) == 4);
  CHECK(s.server->stats().last_grant == 4);
}

TEST_CASE("rpc/rdma errors: ERR_VERS for another version, ERR_CHUNK for bad chunks, disconnect for garbage") {
  io_thread t;
  toy_server s(t);
  raw_client raw(t, s.server->port());
  raw.send(words({0x1234, 2, 4, 0, 0, 0, 0}));  // version 2
  auto e = raw.next();
  CHECK(e.xid == 0x1234);
  CHECK(e.type == rr::msg_type::rdma_error);
  CHECK(e.error == rr::error_code::err_vers);
  CHECK(e.versions == rr::version_range{1, 1});
  CHECK(e.credits >= 1);

  raw.send(words({0x1235, 1, 4, 9}));  // unknown message type
  e = raw.next();
  CHECK(e.xid == 0x1235);
  CHECK(e.error == rr::error_code::err_chunk);

  rr::header nomsg;  // RDMA_NOMSG without a position-zero chunk
  nomsg.xid = 0x1236;
  nomsg.type = rr::msg_type::rdma_nomsg;
  raw.send(nomsg);
  e = raw.next();
  CHECK(e.xid == 0x1236);
  CHECK(e.error == rr::error_code::err_chunk);

  rr::header beyond;  // a Read chunk positioned beyond the inline data
  beyond.xid = 0x1237;
  beyond.read_list = {{64, {1, 16, 0x1000}}};
  raw.send(beyond, words({0x1237, op_echo}));
  e = raw.next();
  CHECK(e.error == rr::error_code::err_chunk);

  rr::header forged;  // a Read chunk naming memory the client never registered
  forged.xid = 0x1238;
  forged.read_list = {{8, {0xdeadbeef, 16, 0x1000}}};
  raw.send(forged, words({0x1238, op_echo}));
  e = raw.next();
  CHECK(e.xid == 0x1238);
  CHECK(e.error == rr::error_code::err_chunk);
  CHECK(s.server->stats().err_vers_sent == 1);
  CHECK(s.server->stats().err_chunk_sent == 4);
  CHECK(s.server->stats().calls == 0);

  // Another client is unaffected by what follows: a message too short for an xid.
  auto cf = rdma::make_fabric("cma", t.io);
  auto good = connect(t, *cf, s.server->port());
  raw.send(std::vector<std::byte>{std::byte{1}, std::byte{2}});
  REQUIRE(raw.closed_f.wait_for(wait_limit) == std::future_status::ready);
  CHECK(s.server->stats().bad_messages == 1);
  CHECK_FALSE(do_call(t, good, {5, message(5, op_echo)}).ec);
}

TEST_CASE("rpc/rdma credits: a client that exceeds its grant is disconnected, alone") {
  io_thread t;
  toy_server s(t, {}, 2);
  raw_client raw(t, s.server->port());
  rr::header h;
  h.xid = 1;
  h.credits = 2;
  raw.send(h, words({1, op_echo}));
  auto r = raw.next();
  CHECK(r.credits == 2);
  auto cf = rdma::make_fabric("cma", t.io);
  auto good = connect(t, *cf, s.server->port());
  for (std::uint32_t x = 10; x < 13; ++x) {  // three held calls against a grant of two
    h.xid = x;
    raw.send(h, words({x, op_hold}));
  }
  REQUIRE(raw.closed_f.wait_for(wait_limit) == std::future_status::ready);
  CHECK(s.server->stats().credit_violations == 1);
  CHECK(s.held_count() == 2);
  s.release();
  CHECK_FALSE(do_call(t, good, {5, message(5, op_echo)}).ec);
}

TEST_CASE("rpc/rdma credits: a new connection starts again at one credit") {
  io_thread t;
  toy_server s(t, {}, 3);
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  CHECK_FALSE(do_call(t, c, {1, message(1, op_echo)}).ec);
  CHECK(on_io(t.io, [&] { return c->granted(); }) == 3);
  on_io(t.io, [&] {
    c->close();
    return 0;
  });
  auto again = connect(t, *cf, s.server->port());
  CHECK(on_io(t.io, [&] { return again->granted(); }) == 1);
  std::vector<std::future<call_result>> fs;
  for (std::uint32_t i = 0; i < 3; ++i) fs.push_back(start_call(t, again, {10 + i, message(10 + i, op_hold)}));
  REQUIRE(eventually([&] { return s.held_count() == 1; }));
  CHECK(on_io(t.io, [&] { return again->outstanding(); }) == 1);
  s.release();
  REQUIRE(eventually([&] { return s.held_count() == 2; }));
  s.release();
  for (auto& f : fs) CHECK_FALSE(wait_for(f).ec);
}

TEST_CASE("rpc/rdma robustness: random bytes get RDMA_ERROR or a disconnect, never a crash") {
  io_thread t;
  toy_server s(t);
  std::mt19937 rng(12345);
  std::uint64_t expected_vers = 0, expected_chunk = 0;
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    raw_client raw(t, s.server->port());
    std::vector<std::byte> m(4 + rng() % 200);
    for (auto& b : m) b = std::byte(rng());
    if (round % 2 == 0) {  // a valid v1 prefix with a random body: exercises the chunk decoder
      auto p = words({std::uint32_t(round), 1, 1, std::uint32_t(rng() % 2)});
      m.resize(std::max<std::size_t>(m.size(), p.size()));
      std::copy(p.begin(), p.end(), m.begin());
    }
    // Every message carries at least an xid, so RFC 8166 §4.5 asks for an RDMA_ERROR on that
    // xid: ERR_VERS when a whole fixed header names a version other than 1, ERR_CHUNK for
    // everything else (a truncated fixed header, an unknown type, a malformed chunk list).
    xdr::decoder fixed(m);
    const std::uint32_t xid = fixed.get_u32();
    const bool whole_fixed_header = m.size() >= 12;
    const bool wrong_version = whole_fixed_header && fixed.get_u32() != rr::version;
    (wrong_version ? expected_vers : expected_chunk)++;

    raw.send(m);
    REQUIRE(eventually([&] {
      std::lock_guard l(raw.mu);
      return !raw.got.empty() || raw.closed_f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    }));
    std::lock_guard l(raw.mu);
    REQUIRE(raw.got.size() == 1);  // answered, not disconnected
    xdr::decoder d(raw.got[0]);
    auto h = rr::decode_header(d);
    CHECK(h.type == rr::msg_type::rdma_error);
    CHECK(h.xid == xid);
    CHECK(h.error == (wrong_version ? rr::error_code::err_vers : rr::error_code::err_chunk));
    if (wrong_version) {
      CHECK(h.versions.low == rr::version);
      CHECK(h.versions.high == rr::version);
    }
  }
  auto st = s.server->stats();
  CHECK(st.err_vers_sent == expected_vers);
  CHECK(st.err_chunk_sent == expected_chunk);
  CHECK(expected_vers > 0);   // both answers were exercised
  CHECK(expected_chunk > 0);
  CHECK(st.calls == 0);       // no random message reached the RPC layer
  CHECK(st.bad_messages == 0);
  // The server still serves.
  auto cf = rdma::make_fabric("cma", t.io);
  auto c = connect(t, *cf, s.server->port());
  CHECK_FALSE(do_call(t, c, {1, message(1, op_echo)}).ec);
}

TEST_CASE("rpc/rdma bounded memory: oversized Read chunks are refused before anything is allocated; connections are capped") {
  io_thread t;
  rdma::rpc_server_options o;
  o.max_call_size = 1 << 20;
  o.max_connections = 2;
  toy_server s(t, o);
  raw_client raw(t, s.server->port());
  rr::header h;  // a 2 GiB WRITE-like payload against a 1 MiB call limit
  h.xid = 77;
  h.read_list = {{8, {1, 0x7fffffff, 0x10000}}};
  raw.send(h, words({77, op_echo}));
  auto e = raw.next();
  CHECK(e.xid == 77);
  CHECK(e.error == rr::error_code::err_chunk);
  CHECK(s.server->stats().bytes_rdma_read == 0);
  // A second connection is accepted, a third one is closed at once.
  raw_client second(t, s.server->port());
  raw_client third(t, s.server->port());
  REQUIRE(third.closed_f.wait_for(wait_limit) == std::future_status::ready);
  CHECK(s.server->connection_count() == 2);
  CHECK(raw.ep->is_open());
}

TEST_CASE("rpc/rdma hostile peer: chunks beside, beyond or without a registration get ERR_CHUNK; no byte around them changes") {
  io_thread t;
  toy_server s(t);
  raw_client raw(t, s.server->port());
  std::vector<std::byte> mem(8192, std::byte{0x5a});
  const std::vector<std::byte> pristine = mem;
  // The peer's registrations: [1024, 5120) of mem, once for the server to write, once to read.
  auto wr = raw.fab->register_memory(mem.data() + 1024, 4096, rdma::remote_access::write);
  auto rd = raw.fab->register_memory(mem.data() + 1024, 4096, rdma::remote_access::read);
  rr::segment stale;
  {
    auto gone = raw.fab->register_memory(mem.data() + 1024, 4096, rdma::remote_access::read_write);
    stale = gone->segment(0, 100);
  }  // deregistered: its handle is never valid again

  std::uint32_t xid = 100;
  std::uint64_t refused = 0;
  auto expect_refused = [&](std::uint32_t x) {
    auto e = raw.next();
    CHECK(e.xid == x);
    CHECK(e.type == rr::msg_type::rdma_error);
    CHECK(e.error == rr::error_code::err_chunk);
    CHECK(mem == pristine);
    CHECK(raw.ep->is_open());
    ++refused;
  };
  // A READ-like reply of 150 bytes into a Write chunk the peer advertises.
  auto read_into = [&](rr::segment seg) {
    rr::header h;
    h.xid = ++xid;
    h.credits = 4;
    h.write_list = {rr::write_chunk{{seg}}};
    raw.send(h, words({xid, op_read, 150}));
    return xid;
  };
  rr::segment past_end = wr->segment(4000, 96);
  past_end.length = 200;  // 104 bytes beyond the registration
  expect_refused(read_into(past_end));
  rr::segment before = wr->segment(0, 100);
  before.offset -= 16;  // starts 16 bytes before it
  expect_refused(read_into(before));
  rr::segment forged = wr->segment(0, 200);
  forged.handle ^= 0x5a5a5a5a;
  expect_refused(read_into(forged));
  expect_refused(read_into(stale));              // a handle reused after deregistration
  expect_refused(read_into(rd->segment(0, 200)));  // a registration the server may only read

  // A long reply (6000 bytes) into a Reply chunk advertised beyond the registration.
  {
    rr::header h;
    h.xid = ++xid;
    h.credits = 4;
    rr::segment seg = wr->segment(0, 4096);
    seg.length = 7000;
    h.reply_chunk = rr::write_chunk{{seg}};
    raw.send(h, words({xid, op_big, 6000}));
    expect_refused(xid);
  }
  // Read chunks (call data the server pulls) beyond, without, or against the right.
  const std::uint64_t calls_before = s.server->stats().calls;
  auto pull_from = [&](rr::segment seg) {
    rr::header h;
    h.xid = ++xid;
    h.credits = 4;
    h.read_list = {{8, seg}};
    raw.send(h, words({xid, op_digest}));
    return xid;
  };
  rr::segment read_past = rd->segment(4000, 96);
  read_past.length = 200;
  expect_refused(pull_from(read_past));
  expect_refused(pull_from(stale));
  expect_refused(pull_from(wr->segment(0, 100)));  // write-only for the server
  CHECK(s.server->stats().calls == calls_before);   // none of them reached the RPC layer
  CHECK(s.server->stats().bytes_rdma_read == 0);

  // The connection still serves: a Write chunk inside the registration gets exactly the payload.
  std::uint32_t ok = read_into(wr->segment(100, 200));
  auto r = raw.next();
  CHECK(r.xid == ok);
  CHECK(r.type == rr::msg_type::rdma_msg);
  REQUIRE(r.write_list.size() == 1);
  REQUIRE(r.write_list[0].segments.size() == 1);
  CHECK(r.write_list[0].segments[0].length == 150);
  std::vector<std::byte> expected = pristine;
  std::copy_n(s.read_data->begin(), 150, expected.begin() + 1024 + 100);
  CHECK(mem == expected);
  const auto st = s.server->stats();
  CHECK(st.err_chunk_sent == refused);
  CHECK(refused == 9);
  CHECK(st.bytes_rdma_written == 150);
  CHECK(st.credit_violations == 0);
  CHECK(s.server->connection_count() == 1);
  record_reliability(
      "test_transport_rdma_rpc (hostile chunks)",
      "9 calls with chunks outside the peer's registrations (Write chunks past the end, before the start, forged, "
      "reused after deregistration, read-only; a Reply chunk past the end; Read chunks past the end, reused, "
      "write-only), then 1 correct call, on one connection",
      "RDMA_ERROR ERR_CHUNK with the call's xid for each; all 8192 bytes around and inside the registrations "
      "unchanged; the connection up; no refused call reached the RPC layer; the correct payload exactly in place",
      std::to_string(st.err_chunk_sent) + " ERR_CHUNK, " + std::to_string(st.bytes_rdma_read) + " bytes pulled, " +
          std::to_string(st.bytes_rdma_written) + " bytes written (the correct call's), " +
          std::to_string(s.server->connection_count()) + " connection up");
}

TEST_CASE("rpc/rdma hostile peer: a message above the negotiated inline size closes that connection, alone") {
  io_thread t;
  toy_server s(t);  // receives of 4096 bytes, announced in its private data
  auto cf = rdma::make_fabric("cma", t.io);
  auto good = connect(t, *cf, s.server->port());
  hand_peer peer(s.server->port());
  const auto ack = peer.handshake();
  CHECK(ack.kind == 2);
  CHECK(ack.recv_size == rr::preferred_inline_size);
  REQUIRE(eventually([&] { return s.server->connection_count() == 2; }));

  // A call of exactly the negotiated size is answered ...
  auto call_of = [](std::uint32_t xid, std::size_t total) {
    rr::header h;
    h.xid = xid;
    h.credits = 1;
    xdr::encoder e;
    rr::encode_header(e, h);
    auto m = e.flatten();
    auto body = words({xid, op_digest});
    m.insert(m.end(), body.begin(), body.end());
    m.resize(total);  // zeros after the call: part of its record
    return m;
  };
  const auto fits = call_of(7, rr::preferred_inline_size);
  peer.send(hand_peer::packet(3, fits));
  auto reply = peer.receive();
  REQUIRE(reply);
  xdr::decoder d(std::span<const std::byte>(*reply).subspan(16));
  const auto h = rr::decode_header(d);
  CHECK(h.xid == 7);
  CHECK(h.type == rr::msg_type::rdma_msg);
  CHECK(d.get_u32() == 7);
  CHECK(d.get_u64() == rr::preferred_inline_size - 28);  // the record: the message less its 28-byte header
  // ... one byte more closes the connection, without an answer and without a call.
  const std::uint64_t calls = s.server->stats().calls;
  peer.send(hand_peer::packet(3, call_of(8, rr::preferred_inline_size + 1)));
  CHECK_FALSE(peer.receive());  // end of the connection
  REQUIRE(eventually([&] { return s.server->connection_count() == 1; }));
  CHECK(s.server->stats().calls == calls);
  CHECK_FALSE(do_call(t, good, {5, message(5, op_echo)}).ec);
  record_reliability("test_transport_rdma_rpc (inline size)",
                     "a peer speaking the cma packets itself: one call of exactly the negotiated 4096 bytes, one of 4097",
                     "the first answered; the second closes that connection without an answer or a call; another "
                     "client served after",
                     "answered, then closed; " + std::to_string(s.server->connection_count()) + " connection left");
}
