// vnfs client, nfs backend: the two pieces of a transaction spanning COMPOUNDs
// (vnfs::transaction, docs/transactions.md) — its control COMPOUNDs (begin, commit, abort,
// status) and the backend whose vectorized calls run inside it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "client/backend.hpp"
#include "client/nfs/session_engine.hpp"
#include "client/txn_link.hpp"

namespace vnfs::detail {

/// Sends SEQUENCE + VNFS_TXN(action, txnid; TXN_RETRY of `retries` if given), cached by the server (a retransmission after
/// a reconnect gets the first answer). `done(ec, 0)`: NFS4_OK, the server's status,
/// errc::transactions_unsupported for a server without the extension, or a transport or
/// session error (the outcome of a commit is then unknown). *outcome gets
/// VNFS_TXN4res::outcome, or, if the server's answer to VNFS_TXN did not arrive,
/// txn_outcome_unanswered (txn_link.hpp). A TXN_COMMIT whose reply was lost with the
/// session is answered by the engine's TXN_STATUS (session_engine_impl.hpp, requeue):
/// committed as if the reply had come, or errc::transaction_aborted with *outcome
/// TXN_ABORTED.
void send_txn_control(session_engine& engine, std::uint32_t action, std::uint64_t txnid,
                      std::optional<std::uint64_t> retries, std::uint32_t* outcome, done_fn done);

/// A backend over `engine`'s session whose vectorized calls join `link` (see
/// backend::txn_view). Memory registered with the client it belongs to works in it too.
/// With `commits` (transaction::committing()), a call's last COMPOUND commits the
/// transaction (run_planned's commit_last); vscopy is refused there (errc::bad_argument).
std::unique_ptr<backend> make_txn_view(session_engine& engine, const nfs4::nfs_fh4& root,
                                       std::function<nfs4::open_owner4()> next_owner, std::size_t window_bytes,
                                       std::size_t max_registered_bytes, std::shared_ptr<txn_link> link,
                                       bool commits = false);

}  // namespace vnfs::detail
