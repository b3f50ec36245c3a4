#include "server/decoded_call.hpp"

#include <algorithm>

namespace vnfs::server {

decoded_call decode_call(std::span<const std::byte> record) {
  decoded_call c;
  c.record_size = record.size();
  xdr::decoder d(record);
  try {
    c.call = rpc::decode_call(d);
  } catch (const rpc::call_error& e) {
    c.header_error = e;
    return c;
  }
  if (c.call.prog != nfs4::NFS4_PROGRAM || c.call.vers != nfs4::NFS_V4 || c.call.proc != nfs4::NFSPROC4_COMPOUND)
    return c;
  try {
    xdr::decode(d, c.hdr);
  } catch (const xdr::decode_error&) {
    return c;
  }
  c.compound = true;
  // numops comes from the peer: room is made up front only for as many operations as the
  // rest of the record could hold (4 bytes each at least) and vnfsd's default limit allows,
  // and beyond that the vector grows only with operations that really decode. (Grown one
  // by one, a COMPOUND of a thousand moved its 328-byte operations about twice over.)
  constexpr std::size_t reserved_at_most = 1024;
  c.ops.reserve(std::min<std::size_t>({c.hdr.numops, d.remaining() / 4, reserved_at_most}));
  while (c.ops.size() < c.hdr.numops) {
    auto rest = d.rest();
    try {
      c.ops.push_back(nfs4::decode_argop(d));
    } catch (const xdr::decode_error&) {
      c.bad_op = rest.size() >= 4 ? static_cast<nfs4::nfs_opnum4>(xdr::decoder(rest).get_u32())
                                  : nfs4::nfs_opnum4::OP_ILLEGAL;
      break;
    }
  }
  return c;
}

}  // namespace vnfs::server
