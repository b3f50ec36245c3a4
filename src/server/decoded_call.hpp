// vnfsd: an RPC call record decoded once, before anyone decides where and how it runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/message.hpp"

namespace vnfs::server {

/// What decode_call() made of a record: the RPC call header and, for a COMPOUND of
/// NFS4_PROGRAM version 4, its header and operations. Operation arguments are views into
/// the record (opaque data is not copied): keep the record alive as long as this.
///
/// Operations are decoded in order up to the first one that does not decode; that one is
/// only named (bad_op), since RFC 8881 §15.2 has the operations before it run first and it
/// fail with NFS4ERR_BADXDR when reached.
struct decoded_call {
  /// Set when the RPC header itself is bad: the reply it is owed (or a drop), nothing else.
  std::optional<rpc::call_error> header_error;
  rpc::call_header call;
  /// A COMPOUND of NFS4_PROGRAM version 4 whose header decoded (false: GARBAGE_ARGS).
  bool compound = false;
  nfs4::compound_header hdr;
  std::vector<nfs4::nfs_argop4> ops;
  /// When fewer than hdr.numops operations decoded: the opnum of the next one, as far as it
  /// can be read (OP_ILLEGAL otherwise).
  std::optional<nfs4::nfs_opnum4> bad_op;
  std::size_t record_size = 0;
};

/// Decodes `record` once. Never throws for malformed input: everything wrong is recorded
/// in the result, for the dispatcher to answer.
decoded_call decode_call(std::span<const std::byte> record);

}  // namespace vnfs::server
