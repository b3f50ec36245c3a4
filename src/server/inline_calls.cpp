#include "server/inline_calls.hpp"

#include <variant>


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

bool runs_inline(const decoded_call& c) {
  if (c.header_error || c.call.prog != nfs4::NFS4_PROGRAM || c.call.vers != nfs4::NFS_V4) return false;
  if (c.call.proc == nfs4::NFSPROC4_NULL) return true;
  if (!c.compound || c.bad_op || c.ops.empty() || c.ops.size() > max_inline_operations) return false;
  for (const auto& op : c.ops)
    if (!inline_operation(op)) return false;
  return true;
}

}  // namespace vnfs::server
