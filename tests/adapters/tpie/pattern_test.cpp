// TPIE's access pattern on vnfsd, over TCP and over RPC-over-RDMA (cma): a stream file of a
// 96-byte header and 8 blocks of 2 MiB (TPIE_BLOCK_SIZE) written as file_stream writes it
// (header, blocks, the header again at close), then read by a sequential scan and by random
// block access. Exact bytes; exact COMPOUND counts with read-ahead and write-behind on and
// off; every payload byte moved between the socket (or the RDMA NIC) and the engine's
// registered slots, none through a library buffer.
//
// The COMPOUND model (client/nfs/nfs_backend.cpp, cold cache, a file at the export root):
// open = 2 (the root's GETATTR, then OPEN), close = 1 (COMMIT with CLOSE after writes),
// the size = 1 GETATTR when first needed, and one READ or WRITE per request (1 MiB).
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "tpie_fixture.hpp"
#include "vnfs/tpie/raw_file_accessor.hpp"

using namespace vnfs::tpie;
using vnfs::tpie::test::mounted_server;
using vnfs::tpie::test::pattern_bytes;
using vnfs::tpie::test::transport;

namespace {

constexpr std::uint64_t header = 96;
constexpr std::uint64_t block = 2 << 20;
constexpr std::uint64_t blocks = 8;
constexpr std::uint64_t file_bytes = header + blocks * block;  // 16 MiB + 96
constexpr std::uint64_t mib = 1 << 20;

std::uint64_t block_offset(std::uint64_t k) { return header + k * block; }

/// The cost of one phase, as the client and the engine counted it.
struct cost {
  std::uint64_t compounds, direct, copied;
  transfer_stats engine;
};

template <class Phase>
cost measure(mounted_server& s, raw_file_accessor& a, Phase phase) {
  const vnfs::client_stats before = s.stats();
  const transfer_stats engine_before = a.stats();
  phase();
  const vnfs::client_stats after = s.stats();
  const transfer_stats e = a.stats();
  return {after.compounds - before.compounds,
          after.payload_bytes_direct - before.payload_bytes_direct,
          after.payload_bytes_copied - before.payload_bytes_copied,
          {e.read_requests - engine_before.read_requests, e.write_requests - engine_before.write_requests,
           e.bytes_read_ahead - engine_before.bytes_read_ahead, e.bytes_discarded - engine_before.bytes_discarded,
           e.waits - engine_before.waits}};
}

/// As tpie::file_stream writes a stream: header, blocks in order, the header again at close.
void write_stream(raw_file_accessor& a, const std::string& path) {
  a.set_cache_hint(cache_hint::sequential);
  a.open_wo(path);
  auto head = pattern_bytes(0, header);
  a.write_i(head.data(), head.size());
  for (std::uint64_t k = 0; k < blocks; ++k) {
    auto b = pattern_bytes(block_offset(k), block);
    a.write_i(b.data(), b.size());
  }
  a.seek_i(0);
  a.write_i(head.data(), head.size());
  a.close_i();
}

/// Reads the header, then the blocks in `order`, each at its offset; counts wrong bytes.
std::uint64_t read_stream(raw_file_accessor& a, const std::string& path, cache_hint hint,
                          const std::vector<std::uint64_t>& order) {
  std::uint64_t wrong = 0;
  a.set_cache_hint(hint);
  a.open_ro(path);
  std::vector<char> buf(block);
  a.seek_i(0);
  a.read_i(buf.data(), header);
  if (std::memcmp(buf.data(), pattern_bytes(0, header).data(), header) != 0) ++wrong;
  for (std::uint64_t k : order) {
    a.seek_i(block_offset(k));
    a.read_i(buf.data(), block);
    if (buf != pattern_bytes(block_offset(k), block)) ++wrong;
  }
  if (a.file_size_i() != file_bytes) ++wrong;
  a.close_i();
  return wrong;
}

}  // namespace

TEST_CASE("TPIE's access pattern: 2 MiB blocks plus a header, exact bytes and COMPOUNDs, no copies") {
  const transport t = GENERATE(transport::tcp, transport::cma);
  const bool engine_on = GENERATE(true, false);
  INFO(name(t) << (engine_on ? ", read-ahead and write-behind" : ", synchronous (no read-ahead, no write-behind)"));
  mounted_server s(t);
  engine_options o;  // 1 MiB requests, 4 MiB read-ahead, 4 MiB write-behind
  o.read_ahead = o.write_behind = engine_on;
  raw_file_accessor a;
  a.set_engine_options(o);
  // Connect (and its session set-up) before counting.
  a.open_wo(s.remote("warm-up"));
  a.close_i();

  SECTION("write, sequential scan, random block access") {
    const cost w = measure(s, a, [&] { write_stream(a, s.remote("stream")); });
    CHECK(s.server_bytes("stream") == pattern_bytes(0, file_bytes));
    // 17 WRITEs for the header and blocks (16 full requests from offset 0 with write-behind
    // packing them; the header alone, then 2 per block without), and the header again.
    CHECK(w.engine.write_requests == 18);
    CHECK(w.compounds == 2 + 18 + 1);
    CHECK(w.direct == file_bytes + header);
    CHECK(w.copied == 0);

    // Sequential scan. With read-ahead the window runs from offset 0 in 1 MiB requests
    // (17); without, the header is one READ and every block two (17 as well). Read-ahead
    // fetched every byte beyond the first request before read_i asked for it, and wasted
    // none.
    const cost r = measure(s, a, [&] {
      CHECK(read_stream(a, s.remote("stream"), cache_hint::sequential, {0, 1, 2, 3, 4, 5, 6, 7}) == 0);
    });
    CHECK(r.engine.read_requests == 17);
    CHECK(r.compounds == 2 + 1 + 17 + 1);
    CHECK(r.engine.bytes_read_ahead == (engine_on ? file_bytes - mib : 0));
    CHECK(r.engine.bytes_discarded == 0);
    CHECK(r.direct == file_bytes);
    CHECK(r.copied == 0);

    // Random block access: no block follows the previous one, so with cache_hint::normal
    // (and with random) nothing is read ahead: one READ for the header, two per block.
    for (cache_hint h : {cache_hint::normal, cache_hint::random}) {
      const cost x = measure(s, a, [&] {
        CHECK(read_stream(a, s.remote("stream"), h, {5, 2, 7, 0, 3, 6, 1, 4}) == 0);
      });
      CHECK(x.engine.read_requests == 1 + 2 * blocks);
      CHECK(x.compounds == 2 + 1 + 17 + 1);
      CHECK(x.engine.bytes_read_ahead == 0);
      CHECK(x.engine.bytes_discarded == 0);
      CHECK(x.direct == file_bytes);
      CHECK(x.copied == 0);
    }
  }
}

// TPIE rewrites a stream's header at offset 0 when it closes, while WRITEs of the same bytes
// may still be in flight behind the application. The server applies concurrent WRITEs in any
// order, so the engine must send an overwrite only after what it overwrites: the bytes on
// the server are the last ones written, every time.
TEST_CASE("an overwrite of bytes whose WRITE is still in flight lands last") {
  mounted_server s;
  vnfs::tpie::engine_options o;
  o.request_bytes = 4096;
  o.write_behind = true;
  o.write_behind_bytes = 64 << 10;
  const std::vector<char> first(4096, 'A'), second(4096, 'B');
  for (int round = 0; round < 100; ++round) {
    raw_file_accessor a;
    a.set_engine_options(o);
    a.open_wo(s.remote("header"));
    a.write_i(first.data(), first.size());  // a full request: sent at once, behind the application
    a.seek_i(0);
    a.write_i(second.data(), second.size());  // the same bytes again, at once
    a.close_i();
    REQUIRE(s.server_bytes("header") == second);
  }
}
