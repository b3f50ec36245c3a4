#include "atomic_run.hpp"

#include "diagnostics.hpp"
#include "vnfs/transaction.hpp"

namespace vnfs::cli {

void run_atomic(vnfs::client& c, const std::string& command, const std::function<void(vnfs::client&)>& body) {
  vnfs::transaction t;
  try {
    t = vnfs::transaction::begin(c);
  } catch (const std::system_error& e) {
    if (e.code() == errc::transactions_unsupported)
      throw command_error(command + ": --atomic: the server does not support vnfs transactions; nothing was changed");
    throw command_error(command + ": --atomic: cannot begin a transaction: " + reason(e.code()) + "; nothing was changed");
  }
  try {
    body(t.view());
  } catch (...) {
    t.abort();  // also when the server rolled it back already
    throw;
  }
  const std::error_code ec = t.commit();
  if (!ec) return;
  if (ec == errc::outcome_unknown)
    throw command_error(command + ": --atomic: the connection was lost during the commit: the changes were made "
                                  "whole or not at all, and which is unknown");
  throw command_error(command + ": --atomic: the transaction was rolled back (" + reason(ec) + "); nothing was changed");
}

}  // namespace vnfs::cli
