// vnfs client: what the calls inside one open multi-COMPOUND transaction share with it
// (vnfs::transaction, docs/transactions.md): the transaction's id, which every COMPOUND of
// those calls carries in VNFS_TXN (TXN_JOIN), and whether it is still open.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <system_error>

namespace vnfs::detail {

/// backend::txn_control's *outcome when the server's answer to VNFS_TXN did not arrive (the
/// connection or session was lost): whatever was asked may or may not have happened.
inline constexpr std::uint32_t txn_outcome_unanswered = 0xffffffffu;

struct txn_link {
  enum state : int { open, aborted, ended };
  explicit txn_link(std::uint64_t id) : txnid(id) {}
  const std::uint64_t txnid;
  /// `aborted` once a COMPOUND of a call inside failed (the server rolled the transaction
  /// back) or the server refused to join it; `ended` after commit or abort. Calls started
  /// after it left `open` run nothing.
  std::atomic<int> st{open};

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

}  // namespace vnfs::detail
