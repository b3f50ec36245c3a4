// vnfs command line: --atomic — running the changes of one command as one transaction
// (vnfs::transaction, docs/transactions.md): they all take effect, or none do.
#pragma once

#include <functional>
#include <string>

#include "vnfs/client.hpp"

namespace vnfs::cli {

/// Begins a transaction on `c`, runs `body` with the client whose vectorized calls run in
/// it, and commits. If `body` throws, the transaction is aborted (nothing it did stays) and
/// the exception goes on. Throws command_error, prefixed with `command` ("tar"), when the
/// server has no transactions (before anything ran), when the transaction was rolled back
/// (nothing changed), or when its outcome is unknown.
void run_atomic(vnfs::client& c, const std::string& command, const std::function<void(vnfs::client&)>& body);

}  // namespace vnfs::cli
