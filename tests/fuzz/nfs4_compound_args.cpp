// Fuzzes the decoding of NFSv4.1 COMPOUND arguments, every operation's argument type
// included (what vnfsd decodes from any client). Property: decoding either succeeds or
// throws xdr::decode_error (anything else escapes and is a crash); what decodes encodes to
// bytes that decode to the same value.
#include "fuzz_input.hpp"
#include "vnfs/nfs4/nfs4.hpp"
#include "vnfs/xdr/codec.hpp"

using namespace vnfs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xdr::decoder d(fuzz::bytes_of(data, size));
  nfs4::COMPOUND4args args;
  try {
    args = xdr::decode<nfs4::COMPOUND4args>(d);
  } catch (const xdr::decode_error&) {
    return 0;
  }
  xdr::encoder e;
  xdr::encode(e, args);
  const auto again = e.flatten();
  xdr::decoder d2(again);
  fuzz::require(xdr::decode<nfs4::COMPOUND4args>(d2) == args, "COMPOUND4args round trip");
  fuzz::require(d2.remaining() == 0, "COMPOUND4args re-encoding fully consumed");
  return 0;
}
