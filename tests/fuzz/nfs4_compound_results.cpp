// Fuzzes the decoding of NFSv4.1 COMPOUND results, every operation's result type included
// (what the client decodes from any server). Property: decoding either succeeds or throws
// xdr::decode_error; what decodes encodes to bytes that decode to the same value.
#include "fuzz_input.hpp"
#include "vnfs/nfs4/nfs4.hpp"
#include "vnfs/xdr/codec.hpp"

using namespace vnfs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xdr::decoder d(fuzz::bytes_of(data, size));
  nfs4::COMPOUND4res res;
  try {
    res = xdr::decode<nfs4::COMPOUND4res>(d);
  } catch (const xdr::decode_error&) {
    return 0;
  }
  xdr::encoder e;
  xdr::encode(e, res);
  const auto again = e.flatten();
  xdr::decoder d2(again);
  fuzz::require(xdr::decode<nfs4::COMPOUND4res>(d2) == res, "COMPOUND4res round trip");
  fuzz::require(d2.remaining() == 0, "COMPOUND4res re-encoding fully consumed");
  return 0;
}
