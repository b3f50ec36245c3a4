// vnfsd: which RPC calls the network thread may execute itself, without a worker hand-off.
#pragma once

#include <cstddef>

#include "server/decoded_call.hpp"

namespace vnfs::server {

/// The most operations an inline COMPOUND may hold, so that one cannot occupy the network
/// thread for long.
inline constexpr std::size_t max_inline_operations = 16;
/// The largest READ an inline COMPOUND may ask for.
inline constexpr std::size_t max_inline_read = 64 * 1024;

/// True when `call` is an RPC call that the thread which received it may execute at once
/// (a vnfsd network thread: TCP's, or the RDMA listener's): the NULL procedure, or a COMPOUND of at most
/// max_inline_operations operations that only read in-memory state or file-system metadata
/// the kernel usually has cached (SEQUENCE, PUTFH, PUTROOTFH, GETFH, SAVEFH, RESTOREFH,
/// GETATTR, ACCESS, LOOKUP, LOOKUPP) or READ at most max_inline_read bytes. Such a call
/// writes nothing and waits for no other request, with one exception: while a transactional
/// COMPOUND is executing, the transaction manager may hold the call until that COMPOUND
/// ends (docs/transactions.md, "Isolation: per-object locks"). A cold cache can still make
/// it wait for the disk once.
///
/// False for everything else, including records that do not decode: the workers execute
/// those, and the dispatcher gives them their proper replies.
bool runs_inline(const decoded_call& call);

}  // namespace vnfs::server
