#include "server/inline_calls.hpp"

#include <variant>

#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/message.hpp"

namespace vnfs::server {

namespace {

bool inline_operation(const nfs4::nfs_argop4& op) {
  if (const auto* read = std::get_if<nfs4::READ4args>(&op)) return read->count <= max_inline_read;
  return std::holds_alternative<nfs4::SEQUENCE4args>(op) || std::holds_alternative<nfs4::PUTFH4args>(op) ||
         std::holds_alternative<nfs4::PUTROOTFH4args>(op) || std::holds_alternative<nfs4::GETFH4args>(op) ||
         std::holds_alternative<nfs4::SAVEFH4args>(op) || std::holds_alternative<nfs4::RESTOREFH4args>(op) ||
         std::holds_alternative<nfs4::GETATTR4args>(op) || std::holds_alternative<nfs4::ACCESS4args>(op) ||
         std::holds_alternative<nfs4::LOOKUP4args>(op) || std::holds_alternative<nfs4::LOOKUPP4args>(op);
}

}  // namespace

bool runs_inline(std::span<const std::byte> record) {
  try {
    xdr::decoder d(record);
    rpc::call_header call = rpc::decode_call(d);
    if (call.prog != nfs4::NFS4_PROGRAM || call.vers != nfs4::NFS_V4) return false;
    if (call.proc == nfs4::NFSPROC4_NULL) return true;
    if (call.proc != nfs4::NFSPROC4_COMPOUND) return false;
    nfs4::compound_header hdr;
    xdr::decode(d, hdr);
    if (hdr.numops == 0 || hdr.numops > max_inline_operations) return false;
    for (std::uint32_t i = 0; i < hdr.numops; ++i)
      if (!inline_operation(nfs4::decode_argop(d))) return false;
    return true;
  } catch (const std::exception&) {  // rpc::call_error, xdr::decode_error: the workers answer
    return false;
  }
}

}  // namespace vnfs::server
