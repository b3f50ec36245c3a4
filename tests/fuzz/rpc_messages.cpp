// Fuzzes ONC RPC (RFC 5531): call headers with their credentials (what vnfsd reads first),
// reply headers (what the client reads first), and record-marking reassembly fed in
// arbitrary pieces through both of record_assembler's ways in.
// Properties: decode_call throws only call_error and decode_reply only xdr::decode_error;
// what decodes round-trips; the assembler yields exactly the records (or the failure) that
// a plain walk over the whole stream finds, however the stream is cut.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "fuzz_input.hpp"
#include "vnfs/rpc/message.hpp"
#include "vnfs/rpc/record_marking.hpp"

using namespace vnfs;

namespace {

constexpr std::size_t max_record = 1 << 16;

void check_headers(std::span<const std::byte> in) {
  {
    xdr::decoder d(in);
    std::optional<rpc::call_header> h;
    try {
      h = rpc::decode_call(d);
    } catch (const rpc::call_error&) {
    }
    if (h) {
      xdr::encoder e;
      rpc::encode_call(e, *h);
      const auto again = e.flatten();
      xdr::decoder d2(again);
      fuzz::require(rpc::decode_call(d2) == *h, "call header round trip");
    }
  }
  {
    xdr::decoder d(in);
    std::optional<rpc::reply_header> h;
    try {
      h = rpc::decode_reply(d);
    } catch (const xdr::decode_error&) {
    }
    if (h) {
      xdr::encoder e;
      rpc::encode_reply(e, *h);
      const auto again = e.flatten();
      xdr::decoder d2(again);
      fuzz::require(rpc::decode_reply(d2) == *h, "reply header round trip");
    }
  }
}

/// The records of a whole stream by a direct walk over its fragments; `failed` when a
/// record would exceed max_record.
struct walked_stream {
  std::vector<std::vector<std::byte>> records;
  bool failed = false;
};

walked_stream walk(std::span<const std::byte> s) {
  walked_stream out;
  std::vector<std::byte> rec;
  std::size_t at = 0;
  while (s.size() - at >= 4) {
    std::uint32_t v = (std::uint32_t(s[at]) << 24) | (std::uint32_t(s[at + 1]) << 16) |
                      (std::uint32_t(s[at + 2]) << 8) | std::uint32_t(s[at + 3]);
    at += 4;
    std::size_t len = v & ~rpc::last_fragment_bit;
    if (rec.size() + len > max_record) {
      out.failed = true;
      return out;
    }
    std::size_t have = std::min(len, s.size() - at);
    rec.insert(rec.end(), s.begin() + at, s.begin() + at + have);
    at += have;
    if (have < len) return out;  // the stream ends inside a fragment
    if (v & rpc::last_fragment_bit) out.records.push_back(std::exchange(rec, {}));
  }
  return out;
}

void check_reassembly(std::span<const std::byte> in) {
  if (in.empty()) return;
  // The first byte seeds the cuts; the rest is the stream.
  std::uint32_t seed = std::to_integer<std::uint32_t>(in[0]) * 2654435761u + 1;
  std::span<const std::byte> stream = in.subspan(1);
  const walked_stream expected = walk(stream);

  rpc::record_assembler a(max_record, 64);  // a small staging buffer: many prepare() rounds
  std::vector<std::vector<std::byte>> got;
  bool failed = false;
  std::size_t at = 0;
  while (at < stream.size() && !failed) {
    seed = seed * 1103515245u + 12345u;
    try {
      if (seed & 0x10000) {  // copied in, a piece of 1..97 bytes
        std::size_t n = std::min<std::size_t>(1 + (seed >> 20) % 97, stream.size() - at);
        a.feed(stream.subspan(at, n));
        at += n;
      } else {  // read in place, as a socket read would
        std::span<std::byte> to = a.prepare();
        std::size_t n = std::min({to.size(), std::size_t(1 + (seed >> 20) % 4099), stream.size() - at});
        std::copy_n(stream.begin() + at, n, to.begin());
        a.commit(n);
        at += n;
      }
    } catch (const rpc::record_error&) {
      failed = true;
    }
    while (auto r = a.next_record()) got.push_back(std::move(*r));
  }
  fuzz::require(failed == expected.failed, "assembler fails exactly when a record is oversized");
  if (failed) {
    // Every record before the oversized one came out, in order, and nothing else.
    fuzz::require(got == expected.records, "the records before the failure");
    return;
  }
  fuzz::require(got == expected.records, "assembled records equal the walked ones");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = fuzz::bytes_of(data, size);
  check_headers(in);
  check_reassembly(in);
  return 0;
}
