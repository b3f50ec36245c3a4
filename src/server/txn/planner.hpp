// vnfsd transactions: the look-ahead over a transactional COMPOUND that makes the undo
// records of all its changes durable together, with one barrier, before the first of them
// runs (docs/transactions.md, "Durability: the order of things").
#pragma once

#include <cstddef>
#include <span>

#include "server/compound_context.hpp"
#include "vnfs/nfs4/compound.hpp"

namespace vnfs::server::txn {

class transaction;

/// Called after VNFS_TXN, before the operations `ops` (the rest of the COMPOUND) run in
/// `t`, with `ctx` as they will start (no current filehandle). Follows the current and
/// saved filehandles through PUTFH, PUTROOTFH, LOOKUP, SAVEFH, RESTOREFH and the objects
/// that OPEN and CREATE make, and for each WRITE, SETATTR, OPEN (create, truncate), CREATE,
/// REMOVE and RENAME takes the locks the operation will take and protects its change
/// (t.protect_* while planning): nothing for objects the transaction made. It stops at the
/// first operation whose objects it cannot tell without running the operations before it
/// (a name changed earlier in the COMPOUND, LINK, COPY, a lookup that fails, a lock the
/// transaction must die for): that operation and the rest protect themselves as they run,
/// each with its own barrier. Then one barrier makes everything planned durable. Planning
/// changes nothing in the export.
///
/// Redo: if it planned the whole COMPOUND of a single-COMPOUND transaction with no REMOVE,
/// RENAME or READDIR in it, the writes and truncations of a regular file the transaction
/// did not create are deferred to the commit (t.use_redo), unless an operation of the
/// COMPOUND reads that file (GETATTR, VERIFY, NVERIFY, READ, COMMIT), sets its attributes
/// or appends to it: such a file needs no backup.
///
/// A barrier that fails is left to the first operation's
/// own protect_* (which fails, and the transaction rolls back).
///
/// Returns how many of `ops`, from the first, it planned: their locks are held, those of
/// the objects their names find (op_locks' `named`) included, so that when they run they
/// need ask only for the locks of the objects they start from.
std::size_t plan(transaction& t, const compound_context& ctx, std::span<const nfs4::nfs_argop4> ops);

}  // namespace vnfs::server::txn
