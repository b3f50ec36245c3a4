#include <catch2/catch.hpp>

#include "vnfs/xdr/codec.hpp"

using namespace vnfs;

namespace {
struct sample {
  std::uint32_t a{};
  std::uint64_t b{};
  std::string name;
  std::vector<std::uint32_t> list;
  std::optional<std::int32_t> maybe;
  std::array<std::byte, 3> tag{};
  VNFS_XDR_FIELDS(a, b, name, list, maybe, tag)
  bool operator==(const sample&) const = default;
};
std::vector<std::byte> B(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int x : v) out.push_back(std::byte(x));
  return out;
}
}  // namespace

TEST_CASE("struct round trip has the RFC 4506 layout") {
  sample s{7, 0x0102030405060708ULL, "abcde", {1, 2}, 9, {std::byte{1}, std::byte{2}, std::byte{3}}};
  auto bytes = xdr::to_bytes(s);
  CHECK(bytes == B({0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 5, 'a', 'b', 'c', 'd', 'e', 0, 0, 0,
                    0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 9, 1, 2, 3, 0}));
  CHECK(xdr::from_bytes<sample>(bytes) == s);
}

TEST_CASE("referenced opaque is not copied and decodes as a view") {
  std::vector<std::byte> payload(4096, std::byte{0x5a});
  xdr::encoder e;
  e.put_u32(1);
  e.put_opaque_ref(payload);
  e.put_u32(2);
  CHECK(e.referenced_bytes() == 4096);
  auto pieces = e.pieces();
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[1].data() == payload.data());
  auto flat = e.flatten();
  CHECK(flat.size() == 4 + 4 + 4096 + 4);
  xdr::decoder d(flat);
  CHECK(d.get_u32() == 1);
  auto view = d.get_opaque();
  CHECK(view.data() == flat.data() + 8);  // a view into the input, not a copy
  CHECK(view.size() == 4096);
  CHECK(d.get_u32() == 2);
}

TEST_CASE("a payload left in a file: its length and padding encoded, the range in the chain") {
  xdr::encoder e;
  e.put_u32(1);
  e.put_opaque_file({5, 1000, 6});
  const auto m = e.mark();
  e.put_opaque_file({6, 0, 3000});
  CHECK(e.size() == 4 + 4 + 6 + 2 + 4 + 3000);
  CHECK(e.referenced_bytes() == 3006);
  e.truncate(m);
  CHECK(e.size() == 4 + 4 + 6 + 2);
  xdr::encoder whole;
  whole.put_u32(9);
  whole.append(e);
  whole.put_u32(3);
  REQUIRE(whole.has_file_payloads());
  auto chain = whole.chain();
  REQUIRE(chain.size() == 3);
  CHECK(std::vector<std::byte>(chain[0].bytes.begin(), chain[0].bytes.end()) == B({0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 6}));
  CHECK(chain[0].file.fd == -1);
  CHECK(chain[1].payload);
  CHECK(chain[1].bytes.empty());
  CHECK(chain[1].file.fd == 5);
  CHECK(chain[1].file.offset == 1000);
  CHECK(chain[1].file.size == 6);
  CHECK(std::vector<std::byte>(chain[2].bytes.begin(), chain[2].bytes.end()) == B({0, 0, 0, 0, 0, 3}));
  CHECK_THROWS_AS(whole.pieces(), std::logic_error);
  CHECK_THROWS_AS(whole.flatten(), std::logic_error);
  e.truncate({});
  CHECK_FALSE(e.has_file_payloads());
}

TEST_CASE("chain() names every put_opaque_ref payload, copied small ones and empty ones too, in order") {
  std::vector<std::byte> big(100, std::byte{0x11}), small(5, std::byte{0x22});
  xdr::encoder inner;
  inner.put_u32(1);
  inner.put_opaque_ref(big);    // referenced
  inner.put_opaque_ref(small);  // copied (under 64 bytes), 3 bytes of padding
  inner.put_opaque_ref({});     // empty
  inner.put_u32(2);
  xdr::encoder e;  // appended, as vnfsd's dispatcher builds a reply
  e.put_u32(0);
  e.append(inner);
  CHECK(e.referenced_bytes() == 100);
  CHECK(e.pieces().size() == 3);  // owned, referenced, owned: the small payload is among the owned bytes
  auto chain = e.chain();
  std::vector<std::size_t> payload_sizes, owned_sizes;
  std::vector<std::byte> joined;
  for (const auto& p : chain) {
    (p.payload ? payload_sizes : owned_sizes).push_back(p.bytes.size());
    joined.insert(joined.end(), p.bytes.begin(), p.bytes.end());
  }
  CHECK(payload_sizes == std::vector<std::size_t>{100, 5, 0});
  CHECK(chain[1].bytes.data() == big.data());
  CHECK(chain[3].bytes[0] == std::byte{0x22});
  CHECK(joined == e.flatten());
  // Truncating to a mark drops the payloads after it.
  xdr::encoder t;
  t.put_opaque_ref(small);
  auto m = t.mark();
  t.put_opaque_ref(small);
  t.truncate(m);
  std::size_t payloads = 0;
  for (const auto& p : t.chain()) payloads += p.payload;
  CHECK(payloads == 1);
  CHECK(t.size() == 12);
}

TEST_CASE("malformed input throws decode_error") {
  auto truncated = B({0, 0, 0, 9, 'a', 'b'});
  xdr::decoder d1(truncated);
  CHECK_THROWS_AS(d1.get_opaque(), xdr::decode_error);
  auto bad_bool = B({0, 0, 0, 2});
  xdr::decoder d2(bad_bool);
  CHECK_THROWS_AS(d2.get_bool(), xdr::decode_error);
  auto huge_count = B({0xff, 0xff, 0xff, 0xff});
  CHECK_THROWS_AS(xdr::from_bytes<std::vector<std::uint32_t>>(huge_count), xdr::decode_error);
  auto too_long = B({0, 0, 0, 5, 'a', 'b', 'c', 'd', 'e', 0, 0, 0});
  xdr::decoder d3(too_long);
  CHECK_THROWS_AS(d3.get_string(4), xdr::decode_error);
}
