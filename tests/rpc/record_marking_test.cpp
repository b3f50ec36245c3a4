#include <catch2/catch.hpp>

#include <numeric>

#include "vnfs/rpc/record_marking.hpp"

using namespace vnfs;

namespace {
std::vector<std::byte> pattern(std::size_t n, unsigned seed = 1) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  return v;
}
std::vector<std::byte> flatten(const rpc::framed_record& r) {
  std::vector<std::byte> out;
  for (auto b : r.buffers) out.insert(out.end(), b.begin(), b.end());
  return out;
}
std::vector<std::byte> frame(const std::vector<std::byte>& msg, std::size_t max_fragment = rpc::max_fragment_length) {
  std::span<const std::byte> one[1] = {msg};
  return flatten(rpc::frame_record(one, max_fragment));
}
std::uint32_t be32(const std::vector<std::byte>& v, std::size_t at) {
  return (std::uint32_t(v[at]) << 24) | (std::uint32_t(v[at + 1]) << 16) | (std::uint32_t(v[at + 2]) << 8) |
         std::uint32_t(v[at + 3]);
}
}  // namespace

TEST_CASE("fragment header has the last bit and a 31-bit length") {
  auto h = rpc::make_fragment_header(0x1234, true);
  CHECK(h == std::array<std::byte, 4>{std::byte{0x80}, std::byte{0}, std::byte{0x12}, std::byte{0x34}});
  auto g = rpc::make_fragment_header(0x7fffffff, false);
  CHECK(g == std::array<std::byte, 4>{std::byte{0x7f}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}});
}

TEST_CASE("read_fragment_header reads what make_fragment_header writes") {
  for (bool last : {true, false}) {
    for (std::size_t len : {std::size_t{0}, std::size_t{4}, std::size_t{0x1234}, rpc::max_fragment_length}) {
      auto f = rpc::read_fragment_header(rpc::make_fragment_header(len, last));
      CHECK(f.length == len);
      CHECK(f.last == last);
    }
  }
}

TEST_CASE("frame_record: single fragment by default, pieces referenced not copied") {
  auto a = pattern(10), b = pattern(30, 2);
  std::span<const std::byte> pieces[2] = {a, b};
  rpc::framed_record r = rpc::frame_record(pieces);
  REQUIRE(r.buffers.size() == 3);
  CHECK(r.size == 44);
  CHECK(r.buffers[1].data() == a.data());
  CHECK(r.buffers[2].data() == b.data());
  auto flat = flatten(r);
  CHECK(be32(flat, 0) == (0x80000000u | 40));
}

TEST_CASE("frame_record: splits pieces across fragments of the given size") {
  auto a = pattern(10), b = pattern(15, 2);
  std::span<const std::byte> pieces[2] = {a, b};
  rpc::framed_record r = rpc::frame_record(pieces, 8);
  CHECK(r.headers.size() == 4);  // 8 + 8 + 8 + 1
  CHECK(r.size == 25 + 16);
  auto flat = flatten(r);
  REQUIRE(flat.size() == 41);
  CHECK(be32(flat, 0) == 8);
  CHECK(be32(flat, 12) == 8);
  CHECK(be32(flat, 24) == 8);
  CHECK(be32(flat, 36) == (0x80000000u | 1));
  std::vector<std::byte> body;
  for (std::size_t f = 0; f < 4; ++f) {
    std::size_t at = f * 12 + 4;
    std::size_t n = f < 3 ? 8 : 1;
    body.insert(body.end(), flat.begin() + at, flat.begin() + at + n);
  }
  std::vector<std::byte> expect = a;
  expect.insert(expect.end(), b.begin(), b.end());
  CHECK(body == expect);
}

TEST_CASE("frame_record: empty message is one empty last fragment; bad sizes rejected") {
  rpc::framed_record r = rpc::frame_record({});
  CHECK(flatten(r) == std::vector<std::byte>{std::byte{0x80}, std::byte{0}, std::byte{0}, std::byte{0}});
  auto a = pattern(4);
  std::span<const std::byte> one[1] = {a};
  CHECK_THROWS_AS(rpc::frame_record(one, 0), std::invalid_argument);
}

TEST_CASE("record_assembler: byte-by-byte feeding yields whole records in order") {
  auto m1 = pattern(1), m2 = pattern(100, 3), m3 = pattern(0), m4 = pattern(77, 4);
  std::vector<std::byte> stream;
  for (auto* m : {&m1, &m2, &m3, &m4}) {
    auto f = frame(*m, 13);  // several fragments for m2 and m4
    stream.insert(stream.end(), f.begin(), f.end());
  }
  rpc::record_assembler a(1000);
  std::vector<std::vector<std::byte>> got;
  for (std::byte b : stream) {
    a.feed(std::span<const std::byte>(&b, 1));
    while (auto r = a.next_record()) got.push_back(std::move(*r));
  }
  REQUIRE(got.size() == 4);
  CHECK(got[0] == m1);
  CHECK(got[1] == m2);
  CHECK(got[2] == m3);
  CHECK(got[3] == m4);
  CHECK(a.at_record_boundary());
}

TEST_CASE("record_assembler: any split of a multi-fragment stream gives the same records") {
  auto m1 = pattern(5000, 5), m2 = pattern(3, 6);
  std::vector<std::byte> stream = frame(m1, 999);
  auto f2 = frame(m2);
  stream.insert(stream.end(), f2.begin(), f2.end());
  for (std::size_t chunk : {2u, 3u, 5u, 7u, 1000u, 4096u}) {
    rpc::record_assembler a(10000);
    std::vector<std::vector<std::byte>> got;
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      std::size_t n = std::min(chunk, stream.size() - at);
      a.feed(std::span<const std::byte>(stream).subspan(at, n));
      while (auto r = a.next_record()) got.push_back(std::move(*r));
    }
    REQUIRE(got.size() == 2);
    CHECK(got[0] == m1);
    CHECK(got[1] == m2);
  }
}

TEST_CASE("record_assembler: a partial record is not yielded") {
  auto m = pattern(50);
  auto f = frame(m, 20);
  rpc::record_assembler a(1000);
  a.feed(std::span<const std::byte>(f).first(f.size() - 1));
  CHECK(a.ready_count() == 0);
  CHECK_FALSE(a.next_record());
  CHECK_FALSE(a.at_record_boundary());
  a.feed(std::span<const std::byte>(f).last(1));
  auto r = a.next_record();
  REQUIRE(r);
  CHECK(*r == m);
}

TEST_CASE("record_assembler: prepare/commit receives large bodies in place") {
  auto big = pattern(200000, 9), small = pattern(10, 10);
  std::vector<std::byte> stream = frame(big, 70000);
  auto f2 = frame(small);
  stream.insert(stream.end(), f2.begin(), f2.end());

  rpc::record_assembler a(1 << 20, 4096);
  std::size_t at = 0;
  bool saw_direct = false;
  std::vector<std::vector<std::byte>> got;
  while (at < stream.size()) {
    std::span<std::byte> buf = a.prepare();
    REQUIRE(!buf.empty());
    if (buf.size() > 4096) saw_direct = true;  // larger than staging: the record's own storage
    std::size_t n = std::min({buf.size(), stream.size() - at, std::size_t{5000}});
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at), n, buf.begin());
    a.commit(n);
    at += n;
    while (auto r = a.next_record()) got.push_back(std::move(*r));
  }
  CHECK(saw_direct);
  REQUIRE(got.size() == 2);
  CHECK(got[0] == big);
  CHECK(got[1] == small);
}

TEST_CASE("record_assembler: oversize record is an error, not a crash, and is sticky") {
  SECTION("single fragment over the maximum") {
    rpc::record_assembler a(100);
    auto f = frame(pattern(101));
    CHECK_THROWS_AS(a.feed(f), rpc::record_error);
    CHECK(a.failed());
    CHECK_THROWS_AS(a.feed(frame(pattern(1))), rpc::record_error);
    CHECK_THROWS_AS(a.prepare(), rpc::record_error);
  }
  SECTION("fragments that add up to more than the maximum") {
    rpc::record_assembler a(100);
    auto f = frame(pattern(120), 60);  // each fragment fits, the record does not
    CHECK_THROWS_AS(a.feed(f), rpc::record_error);
    CHECK_FALSE(a.next_record());
  }
  SECTION("a hostile 2 GiB header allocates nothing") {
    rpc::record_assembler a(1 << 20);
    std::vector<std::byte> h = {std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}};
    CHECK_THROWS_AS(a.feed(h), rpc::record_error);
  }
  SECTION("exactly the maximum is accepted") {
    rpc::record_assembler a(100);
    auto m = pattern(100);
    a.feed(frame(m, 30));
    auto r = a.next_record();
    REQUIRE(r);
    CHECK(*r == m);
  }
}
