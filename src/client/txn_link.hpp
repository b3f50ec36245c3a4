// vnfs client: what the calls inside one open multi-COMPOUND transaction share with it
// (vnfs::transaction, docs/transactions.md): the transaction's id, which every COMPOUND of
// those calls carries in VNFS_TXN (TXN_JOIN), whether it is still open, and whether its
// TXN_BEGIN is still to be sent with the first of them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <vector>

#include "vnfs/nfs4/txn_ops.hpp"

namespace vnfs::detail {

/// backend::txn_control's *outcome when the server's answer to VNFS_TXN did not arrive (the
/// connection or session was lost): whatever was asked may or may not have happened.
inline constexpr std::uint32_t txn_outcome_unanswered = 0xffffffffu;

struct txn_link {
  enum state : int { open, aborted, ended, committed, unknown };
  explicit txn_link(std::uint64_t id) : txnid(id) {}
  const std::uint64_t txnid;
  /// `aborted` once a COMPOUND of a call inside failed (the server rolled the transaction
  /// back) or the server refused to join it; `ended` after commit or abort; `committed` or
  /// `unknown` when a call of transaction::committing() carried the commit (`unknown`: its
  /// reply was lost and the server could not be asked). Calls started after it left `open`
  /// run nothing.
  std::atomic<int> st{open};

  /// Where TXN_BEGIN stands. `sent`: begin() sent it alone and it succeeded. `pending`:
  /// begin() sent nothing (the server is known to have the extension); the first COMPOUND a
  /// call inside sends carries VNFS_TXN(TXN_BEGIN) in place of TXN_JOIN. `in_flight`: that
  /// COMPOUND awaits its reply, and the others wait for it (deferred), for a TXN_JOIN must
  /// not reach the server before the TXN_BEGIN ran.
  enum begin_state : int { sent, pending, in_flight };

  /// For the COMPOUND about to be sent: TXN_BEGIN if the begin is pending (it is in flight
  /// from now on), else TXN_JOIN; for the one that
  /// `commits` (transaction::committing()), TXN_COMMIT, or TXN_ONE_COMPOUND if the begin is
  /// pending (the transaction is that COMPOUND). Returns nullopt after keeping `resend` to
  /// run once the TXN_BEGIN's reply came (begin_done).
  std::optional<std::uint32_t> action_for_next(std::function<void()> resend, bool commits);
  /// The COMPOUND carrying TXN_BEGIN got its reply: `ran` if the server ran VNFS_TXN (the
  /// transaction began, or failed to), else the begin is pending again (nothing ran: the
  /// next COMPOUND carries it). Then runs the deferred sends.
  void begin_done(bool ran);
  /// commit() or abort() with the begin still pending: nothing was ever sent, so there is
  /// nothing on the server to end. True (and no COMPOUND is sent from now on) if so.
  bool end_unbegun();

  std::mutex gate;  ///< guards begin and deferred
  int begin = sent;
  std::vector<std::function<void()>> deferred;

  /// The item whose failure rolled the transaction back: its index in its call and its error.
  void note_failure(std::size_t index, std::error_code error) {
    std::lock_guard g(mu);
    if (failed_error) return;  // the first one
    failed_index = index;
    failed_error = error;
  }
  std::mutex mu;
  std::size_t failed_index = static_cast<std::size_t>(-1);
  std::error_code failed_error;
};

inline std::optional<std::uint32_t> txn_link::action_for_next(std::function<void()> resend, bool commits) {
  using nfs4::txn_action4;
  std::lock_guard g(gate);
  if (begin == in_flight) {
    deferred.push_back(std::move(resend));
    return std::nullopt;
  }
  if (begin == sent) return static_cast<std::uint32_t>(commits ? txn_action4::TXN_COMMIT : txn_action4::TXN_JOIN);
  if (commits) {  // the whole transaction in one COMPOUND: nothing follows it
    begin = sent;
    return static_cast<std::uint32_t>(txn_action4::TXN_ONE_COMPOUND);
  }
  begin = in_flight;
  return static_cast<std::uint32_t>(txn_action4::TXN_BEGIN);
}

inline void txn_link::begin_done(bool ran) {
  std::vector<std::function<void()>> go;
  {
    std::lock_guard g(gate);
    begin = ran ? sent : pending;
    go.swap(deferred);
  }
  for (auto& f : go) f();
}

inline bool txn_link::end_unbegun() {
  std::lock_guard g(gate);
  if (begin != pending) return false;
  begin = sent;  // calls started later find the transaction ended and send nothing
  return true;
}

}  // namespace vnfs::detail
