// vnfs public API: errors of the client library itself.
//
// Every operation reports a std::error_code: NFS4ERR_* statuses in vnfs::nfs4::nfs4_category()
// (compare with vnfs::nfs4::nfsstat4 values or with std::errc), transport failures as system
// errors, and the library's own conditions below in vnfs::category().
#pragma once

#include <system_error>
#include <type_traits>

namespace vnfs {

enum class errc {
  closed = 1,          ///< the client was closed (or is closing) before the operation ran
  registration_limit,  ///< registering would exceed client_options::max_registered_bytes
  bad_url,             ///< not a valid nfs://, nfs+rdma:// or file:// URL
  unsupported_url,     ///< a valid URL this build cannot serve (e.g. a scheme not built in)
  bad_argument,        ///< an argument the operation cannot accept (a slice out of range, ...)
  protocol_error,      ///< the server answered something the protocol does not allow
  session_lost,        ///< the server forgot the session and client ID (it restarted)
  not_executed,        ///< an item of a vectorized call that did not run (an earlier item failed)
  /// client_options::atomic_vectors: the server does not execute transactional COMPOUNDs
  /// (docs/transactions.md); nothing of the call ran.
  transactions_unsupported,
  /// client_options::atomic_vectors: an item that ran, and was undone with its transaction
  /// because a later item failed.
  rolled_back,
  /// client_options::atomic_vectors: the call needs more than one COMPOUND (operations,
  /// request or reply size), which single-COMPOUND transactions cannot span (a
  /// vnfs::transaction can); nothing was sent.
  transaction_too_large,
  /// vnfs::transaction: it was rolled back (an item of an earlier call inside it failed,
  /// abort(), or the server ended it: its client's lease expired, it grew too old, or the
  /// server restarted); the call ran nothing, or commit() committed nothing.
  /// client_options::atomic_vectors: the server restarted (or lost the session) while the
  /// call's transaction ran, and it never committed: nothing of the call remains.
  transaction_aborted,
  /// vnfs::transaction::commit, client_options::atomic_vectors: the connection died while
  /// the commit (the call) was in flight and the server could not be asked since: all of it
  /// took effect, or none. transaction::resolve() asks again.
  outcome_unknown,
};

const std::error_category& category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), category()};
}

}  // namespace vnfs

template <>
struct std::is_error_code_enum<vnfs::errc> : std::true_type {};
