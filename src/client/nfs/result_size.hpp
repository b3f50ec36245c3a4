// vnfs client, nfs backend: encoded sizes of successful COMPOUND results, known before the
// reply arrives — what the TCP channel can receive before a READ payload without reading
// into it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

/// The encoded size of a successful result of operation `op` (opnum and status included)
/// when it is fixed, else 0.
constexpr std::size_t fixed_ok_result_size(nfs4::nfs_opnum4 op) {
  using nfs4::nfs_opnum4;
  switch (op) {
    case nfs_opnum4::OP_SEQUENCE: return 8 + 16 + 5 * 4;  // sessionid, 5 counters
    case nfs_opnum4::OP_CLOSE: return 8 + 16;              // stateid
    case nfs_opnum4::OP_PUTFH:
    case nfs_opnum4::OP_PUTROOTFH:
    case nfs_opnum4::OP_LOOKUP:
    case nfs_opnum4::OP_LOOKUPP:
    case nfs_opnum4::OP_SAVEFH:
    case nfs_opnum4::OP_RESTOREFH: return 8;
    default: return 0;
  }
}

/// A lower bound of the encoded size of a successful result of `op`.
constexpr std::size_t least_ok_result_size(nfs4::nfs_opnum4 op) {
  using nfs4::nfs_opnum4;
  if (std::size_t n = fixed_ok_result_size(op)) return n;
  switch (op) {
    case nfs_opnum4::OP_READ: return 16;     // eof, length; then the payload
    case nfs_opnum4::OP_OPEN: return 56;     // stateid, cinfo, rflags, empty bitmap, no delegation
    case nfs_opnum4::OP_WRITE: return 24;    // count, committed, verifier
    case nfs_opnum4::OP_GETATTR: return 16;  // empty bitmap and attributes
    case nfs_opnum4::OP_GETFH: return 12;    // empty handle
    default: return 8;
  }
}

}  // namespace vnfs::detail
