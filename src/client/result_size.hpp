// vnfs client: what a result may weigh — every size the client knows before a reply
// arrives, in one place: the largest transfer one operation asks for (the scalar calls,
// the planner), the encoded sizes of successful results (how much of a reply the TCP
// channel may receive before a READ payload without reading into it), upper estimates of
// results (how the planner packs COMPOUNDs under the session's reply size), and an upper
// bound of a whole reply (the Reply chunk RPC-over-RDMA offers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

// ---- transfers ---------------------------------------------------------------------------

/// Largest READ or WRITE payload one operation asks for (as the kernel's rsize/wsize); a
/// longer scalar request is short (as POSIX allows for pread/pwrite), a longer vio is split.
inline constexpr std::uint32_t max_io = 1u << 20;

// ---- successful results: exact and least sizes -------------------------------------------

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

// ---- results: upper estimates (the planner) ----------------------------------------------

/// Upper estimates of results' encoded sizes (status and fixed parts included), which the
/// planner adds up against the session's ca_maxresponsesize.
inline constexpr std::size_t small_result_estimate = 64;  // status, a stateid or a change_info
inline constexpr std::size_t getattr_result_estimate = 512;  // every attr:: attribute, owners up to 128 bytes each
inline constexpr std::size_t getfh_result_estimate = 8 + nfs4::NFS4_FHSIZE;
inline constexpr std::size_t open_result_estimate = 256;  // stateid, change_info, attrset, a delegation
inline constexpr std::size_t readlink_result_estimate = 8 + 4096;
/// READDIR page size the vectorized calls ask for (maxcount; dircount a quarter of it), and
/// its result.
inline constexpr nfs4::count4 readdir_maxcount = 32768;
inline constexpr std::size_t readdir_result_estimate = readdir_maxcount + 64;
/// READDIR page size the scalar readdir asks for (dircount a quarter of it).
inline constexpr nfs4::count4 scalar_readdir_maxcount = 65536;

// ---- whole replies: an upper bound (RPC-over-RDMA's Reply chunk) -------------------------

/// Used before the session has negotiated ca_maxresponsesize.
inline constexpr std::size_t reply_size_cap = (4u << 20) + 64 * 1024;

/// An upper bound of a COMPOUND reply's size, from its operations: RPC and COMPOUND
/// headers, then per operation: READ and READDIR their count, READLINK a path, everything
/// else 1 KiB (a GETATTR of every attribute vnfs asks for, owner and group names included,
/// stays well below it). RPC-over-RDMA offers a Reply chunk of this size when it exceeds
/// the inline threshold (the Linux client does the same with each procedure's maximum
/// reply size).
inline std::size_t reply_size_bound(const std::vector<nfs4::nfs_argop4>& ops) {
  std::size_t n = 512;
  for (const auto& op : ops) {
    if (auto* r = std::get_if<nfs4::READ4args>(&op)) n += std::size_t(r->count) + 64;
    else if (auto* d = std::get_if<nfs4::READDIR4args>(&op)) n += std::size_t(d->maxcount) + 64;
    else if (std::holds_alternative<nfs4::READLINK4args>(op)) n += 4096 + 64;
    else n += 1024;
  }
  return n;
}

}  // namespace vnfs::detail
