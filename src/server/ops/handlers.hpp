// vnfsd: one handler per NFSv4.1 operation.
//
// Contract for every handler:
// - runs on a worker thread acting as ctx.who, may block on the file system;
// - reads and updates the COMPOUND state in ctx (current/saved filehandle, current stateid);
// - returns its result with `status` set; on failure the dispatcher stops the COMPOUND;
// - throws nothing for protocol-level errors (a std::exception escaping a handler becomes
//   NFS4ERR_SERVERFAULT for that operation).
// SEQUENCE is not here: the dispatcher executes it, since it decides about replays.
#pragma once

#include "server/compound_context.hpp"
#include "vnfs/nfs4/compound.hpp"

namespace vnfs::server {

#define VNFS_SERVER_DECLARE_HANDLER(N) nfs4::N##4res handle(compound_context&, const nfs4::N##4args&);
VNFS_NFS4_SUPPORTED_OPS(VNFS_SERVER_DECLARE_HANDLER)
#undef VNFS_SERVER_DECLARE_HANDLER

/// Truncates the file an OPEN left its truncation pending for (compound_context::truncation),
/// if one did, and clears it. NFS4_OK when none was pending.
nfs4::nfsstat4 finish_truncation(compound_context& ctx);

}  // namespace vnfs::server
