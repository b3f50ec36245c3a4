// vnfsd transactions: fail-stop. A step whose failure would leave the export between two
// states the journal can tell apart (an undo, an outcome record, applying a redo, a
// checkpoint) does not report an error: vnfsd exits, and recovery at the next start
// finishes the transaction from its journal.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <system_error>

namespace vnfs::server::txn {

/// Exits the process (code 87) after saying which step of a transaction failed and why.
[[noreturn]] inline void stop_server(const char* what, const std::error_code& ec) {
  std::fprintf(stderr, "vnfsd: transaction %s failed (%s); exiting so that recovery at start-up finishes it from its journal\n",
               what, ec.message().c_str());
  ::_exit(87);
}

}  // namespace vnfs::server::txn
