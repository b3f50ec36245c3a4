#include "server/decoded_call.hpp"

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
  // numops comes from the peer: the vector grows only with operations that really decode.
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
