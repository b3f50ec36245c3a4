// vnfs client, nfs backend: an upper bound of a COMPOUND reply's size, from its operations.
// RPC-over-RDMA offers a Reply chunk of this size when it exceeds the inline threshold
// (the Linux client does the same with each procedure's maximum reply size).
#pragma once

#include <cstddef>
#include <variant>
#include <vector>

#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

/// Used before the session has negotiated ca_maxresponsesize.
inline constexpr std::size_t reply_size_cap = (4u << 20) + 64 * 1024;

/// RPC and COMPOUND headers, then per operation: READ and READDIR their count, READLINK a
/// path, everything else 1 KiB (a GETATTR of every attribute vnfs asks for, owner and
/// group names included, stays well below it).
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
