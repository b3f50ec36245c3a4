#include <catch2/catch.hpp>

#include "vnfs/rpc/rdma_header.hpp"

using namespace vnfs;
namespace rr = vnfs::rpc::rdma;

namespace {
std::vector<std::byte> W(std::initializer_list<std::uint32_t> words) {
  std::vector<std::byte> out;
  for (std::uint32_t w : words)
    for (int s = 24; s >= 0; s -= 8) out.push_back(std::byte(w >> s));
  return out;
}
std::vector<std::byte> enc(const rr::header& h) {
  xdr::encoder e;
  rr::encode_header(e, h);
  return e.flatten();
}
rr::header dec(const std::vector<std::byte>& b) {
  xdr::decoder d(b);
  auto h = rr::decode_header(d);
  REQUIRE(d.remaining() == 0);
  return h;
}
rr::header_error dec_error(const std::vector<std::byte>& b) {
  xdr::decoder d(b);
  try {
    (void)rr::decode_header(d);
  } catch (const rr::header_error& e) {
    return e;
  }
  FAIL("decode_header accepted the header");
  throw std::logic_error("unreachable");
}
}  // namespace

TEST_CASE("rpc-over-rdma: RDMA_MSG with no chunks is 7 words") {
  rr::header h;
  h.xid = 0x11223344;
  h.credits = 32;
  CHECK(enc(h) == W({0x11223344, 1, 32, 0, 0, 0, 0}));
  CHECK(dec(enc(h)) == h);
}

TEST_CASE("rpc-over-rdma: read list, write list and reply chunk on the wire") {
  rr::header h;
  h.xid = 7;
  h.credits = 5;
  h.type = rr::msg_type::rdma_nomsg;
  h.read_list = {{0, {0xa, 100, 0x1000}}, {0, {0xb, 200, 0x2000}}};
  h.write_list = {rr::write_chunk{{{0xc, 4096, 0x0000000100000000ull}}}};
  h.reply_chunk = rr::write_chunk{{{0xd, 8192, 0x30}, {0xe, 16, 0x40}}};
  auto b = enc(h);
  CHECK(b == W({7, 1, 5, 1,
                1, 0, 0xa, 100, 0, 0x1000,
                1, 0, 0xb, 200, 0, 0x2000,
                0,
                1, 1, 0xc, 4096, 1, 0,
                0,
                1, 2, 0xd, 8192, 0, 0x30, 0xe, 16, 0, 0x40}));
  CHECK(dec(b) == h);
  CHECK(h.reply_chunk->total_length() == 8208);
}

TEST_CASE("rpc-over-rdma: RDMA_ERROR ERR_VERS and ERR_CHUNK round trip") {
  auto v = rr::make_error(9, rr::error_code::err_vers, 3);
  v.versions = {1, 1};
  CHECK(enc(v) == W({9, 1, 3, 4, 1, 1, 1}));
  CHECK(dec(enc(v)) == v);
  auto c = rr::make_error(10, rr::error_code::err_chunk, 0);
  CHECK(enc(c) == W({10, 1, 0, 4, 2}));
  CHECK(dec(enc(c)) == c);
}

TEST_CASE("rpc-over-rdma: a header of another version is refused with ERR_VERS before its body") {
  auto e = dec_error(W({42, 2, 8, 0xdead}));
  CHECK(e.xid == 42);
  CHECK(e.code == rr::error_code::err_vers);
}

TEST_CASE("rpc-over-rdma: malformed headers are ERR_CHUNK") {
  CHECK(dec_error(W({1, 1, 1, 2})).code == rr::error_code::err_chunk);         // RDMA_MSGP
  CHECK(dec_error(W({1, 1, 1, 3})).code == rr::error_code::err_chunk);         // RDMA_DONE
  CHECK(dec_error(W({1, 1, 1, 77})).code == rr::error_code::err_chunk);        // unknown type
  CHECK(dec_error(W({1, 1, 1, 0, 1, 0, 5})).code == rr::error_code::err_chunk);  // truncated segment
  CHECK(dec_error(W({1, 1, 1, 0, 2})).code == rr::error_code::err_chunk);      // bool 2
  CHECK(dec_error(W({1, 1, 1, 0, 0, 1, 0xffffffff})).code == rr::error_code::err_chunk);  // huge count
  CHECK(dec_error(W({1, 1, 1, 4, 9})).code == rr::error_code::err_chunk);      // unknown error code
  // More Read list entries than max_list_entries.
  std::vector<std::uint32_t> many = {1, 1, 1, 0};
  for (std::uint32_t i = 0; i <= rr::max_list_entries; ++i) many.insert(many.end(), {1, 0, 1, 8, 0, 0});
  many.insert(many.end(), {0, 0, 0});
  std::vector<std::byte> b;
  for (auto w : many)
    for (int s = 24; s >= 0; s -= 8) b.push_back(std::byte(w >> s));
  CHECK(dec_error(b).code == rr::error_code::err_chunk);
  xdr::decoder short_input(W({}));
  CHECK_THROWS_AS(rr::decode_header(short_input), xdr::decode_error);
}

TEST_CASE("rpc-over-rdma: the inline RPC message follows the header") {
  rr::header h;
  h.xid = 3;
  xdr::encoder e;
  rr::encode_header(e, h);
  e.put_u32(0xabcdef01);
  auto b = e.flatten();
  xdr::decoder d(b);
  CHECK(rr::decode_header(d) == h);
  CHECK(d.remaining() == 4);
  CHECK(d.get_u32() == 0xabcdef01);
}

TEST_CASE("rfc 8797 private data: layout, units, defaults") {
  rr::private_data p;
  p.flags = rr::private_data::flag_remote_invalidation;
  p.inline_send = 4096;
  p.inline_recv = 64 * 1024;
  auto b = p.encode();
  CHECK(b == std::array<std::byte, 8>{std::byte{0xf6}, std::byte{0xab}, std::byte{0x0e}, std::byte{0x18},
                                      std::byte{1}, std::byte{1}, std::byte{3}, std::byte{63}});
  auto back = rr::private_data::decode(b);
  REQUIRE(back);
  CHECK(*back == p);
  // Clamped to 1 KiB .. 256 KiB; rounded down to whole KiB.
  rr::private_data q;
  q.inline_send = 100;
  q.inline_recv = 1u << 30;
  auto qb = q.encode();
  CHECK(qb[6] == std::byte{0});
  CHECK(qb[7] == std::byte{255});
  CHECK(rr::private_data::decode(qb)->inline_send == 1024);
  CHECK(rr::private_data::decode(qb)->inline_recv == 256 * 1024);
  // Trailing padding is ignored; anything else means "the peer said nothing".
  std::vector<std::byte> padded(b.begin(), b.end());
  padded.resize(56);
  CHECK(rr::private_data::decode(padded) == p);
  CHECK_FALSE(rr::private_data::decode(std::span(b).first(7)));
  auto bad_magic = b;
  bad_magic[0] = std::byte{0};
  CHECK_FALSE(rr::private_data::decode(bad_magic));
  auto bad_version = b;
  bad_version[4] = std::byte{2};
  CHECK_FALSE(rr::private_data::decode(bad_version));
  CHECK(rr::default_inline_size == 1024);
}
