// Fuzzes the RPC-over-RDMA v1 header (RFC 8166 §4): the chunk lists that steer one-sided
// RDMA on both sides, and the RFC 8797 connection private data. Properties: decode_header
// throws only header_error once it has an xid, and xdr::decode_error only before; what
// decodes round-trips; private data decodes to sizes of 1..256 KiB that encode back to the
// same eight bytes.
#include <algorithm>

#include "fuzz_input.hpp"
#include "vnfs/rpc/rdma_header.hpp"

using namespace vnfs;
namespace rr = vnfs::rpc::rdma;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = fuzz::bytes_of(data, size);
  if (auto p = rr::private_data::decode(in)) {
    fuzz::require(p->inline_send >= 1024 && p->inline_send <= 256 * 1024, "inline_send in range");
    fuzz::require(p->inline_recv >= 1024 && p->inline_recv <= 256 * 1024, "inline_recv in range");
    auto b = p->encode();
    fuzz::require(std::equal(b.begin(), b.end(), in.begin()), "private data round trip");
  }
  xdr::decoder d(in);
  rr::header h;
  try {
    h = rr::decode_header(d);
  } catch (const rr::header_error&) {
    fuzz::require(size >= 4, "header_error only once an xid was read");
    return 0;
  } catch (const xdr::decode_error&) {
    fuzz::require(size < 4, "decode_error only without an xid");
    return 0;
  }
  xdr::encoder e;
  rr::encode_header(e, h);
  const auto again = e.flatten();
  xdr::decoder d2(again);
  fuzz::require(rr::decode_header(d2) == h, "RPC-over-RDMA header round trip");
  fuzz::require(d2.remaining() == 0, "re-encoded header fully consumed");
  return 0;
}
