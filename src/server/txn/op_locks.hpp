// vnfsd transactions: which objects one operation of a COMPOUND touches, and how — the
// locks a transaction takes before it runs the operation, the pins of a plain COMPOUND
// (docs/transactions.md, "Isolation: per-object locks").
#pragma once

#include <vector>

#include "server/compound_context.hpp"
#include "server/txn/lock_table.hpp"
#include "vnfs/nfs4/compound.hpp"

namespace vnfs::server::txn {

/// Which objects found by a name op_locks() includes (each found by a lookup).
enum class named_objects {
  none,       ///< none (a transaction's planner took them already)
  truncated,  ///< the file an OPEN truncates (a plain COMPOUND: it changes that file's data)
  all,        ///< also those REMOVE and RENAME unlink or replace and that OPEN with create
              ///< may truncate (transactions: what they remove stays theirs until the end)
};

/// The requests `op` needs before it runs in `ctx`, appended to `out`: shared on an object
/// it reads (attributes, data, a directory's names), exclusive on one it changes (data,
/// attributes, a directory whose names change), and exclusive on the existing objects its
/// names find as `named` says. Objects that do not resolve are left out: the operation then
/// fails by itself, or makes a new object nobody else can reach before its directory's lock
/// is released.
void op_locks(const nfs4::nfs_argop4& op, const compound_context& ctx, named_objects named,
              std::vector<lock_request>& out);

/// Whether `op` changes nothing a later retransmission of its COMPOUND could notice (the
/// filehandle operations and the reads): a plain COMPOUND that ran only such operations
/// may still be answered as if refused whole.
bool changes_nothing(const nfs4::nfs_argop4& op);

}  // namespace vnfs::server::txn
