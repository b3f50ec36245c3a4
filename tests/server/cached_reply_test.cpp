// A slot's cached reply (src/server/state/cached_reply.hpp): a replay is encoded exactly as
// the original was — the same bytes, and the same pieces, payloads where they were.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "server/state/cached_reply.hpp"

using namespace vnfs;

namespace {

/// The chain of `e` as (payload?, bytes) pairs, to compare structures.
std::vector<std::pair<bool, std::vector<std::byte>>> structure(const xdr::encoder& e) {
  std::vector<std::pair<bool, std::vector<std::byte>>> out;
  for (const auto& p : e.chain()) out.push_back({p.payload, {p.bytes.begin(), p.bytes.end()}});
  return out;
}

}  // namespace

TEST_CASE("cached_reply: a replay has the original's bytes and its payload pieces in place") {
  std::vector<std::byte> big(5001), small(5), other(4096);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = std::byte(i * 13 + 1);
  for (std::size_t i = 0; i < small.size(); ++i) small[i] = std::byte(0x40 + i);
  for (std::size_t i = 0; i < other.size(); ++i) other[i] = std::byte(i >> 4);
  xdr::encoder original;
  original.put_u32(0);   // a status
  original.put_string("tag");
  original.put_opaque_ref(big);    // referenced, 3 bytes of padding
  original.put_u32(7);
  original.put_opaque_ref(small);  // copied by the encoder, still a payload
  original.put_opaque_ref({});     // empty
  original.put_opaque_ref(other);  // referenced, last, no padding
  original.put_bool(true);

  server::cached_reply cached(original);
  CHECK(cached.size() == original.size());
  big.assign(big.size(), std::byte{0});  // the cache holds its own copy
  xdr::encoder replay;
  cached.encode(replay);
  xdr::encoder expect;  // what the original encoded, from the original values
  expect.put_u32(0);
  expect.put_string("tag");
  std::vector<std::byte> big_then(5001);
  for (std::size_t i = 0; i < big_then.size(); ++i) big_then[i] = std::byte(i * 13 + 1);
  expect.put_opaque_ref(big_then);
  expect.put_u32(7);
  expect.put_opaque_ref(small);
  expect.put_opaque_ref({});
  expect.put_opaque_ref(other);
  expect.put_bool(true);
  CHECK(replay.flatten() == expect.flatten());
  CHECK(structure(replay) == structure(expect));
  CHECK(replay.referenced_bytes() == 5001 + 4096);
  // Appended after an RPC header, as the dispatcher does.
  xdr::encoder msg;
  msg.put_u32(0x1234);
  msg.append(replay);
  auto pieces = msg.chain();
  std::size_t payloads = 0;
  for (const auto& p : pieces) payloads += p.payload;
  CHECK(payloads == 4);
}

TEST_CASE("cached_reply: a reply without payloads, and one with a payload left in a file") {
  xdr::encoder plain;
  plain.put_u32(1);
  plain.put_u32(2);
  server::cached_reply cached(plain);
  xdr::encoder replay;
  cached.encode(replay);
  CHECK(replay.flatten() == plain.flatten());
  CHECK(replay.chain().size() == 1);

  xdr::encoder with_file;
  with_file.put_opaque_file({0, 0, 100});
  CHECK_THROWS_AS(server::cached_reply(with_file), std::logic_error);
}
