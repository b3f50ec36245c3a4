// vnfs: transactions that span COMPOUNDs (docs/transactions.md) — begin, any number of
// vectorized calls, commit or abort; all of their changes take effect, or none do.
//
//   vnfs::transaction t = vnfs::transaction::begin(c);
//   t.view().vmkdir(dirs);      // every vectorized call of t.view() runs inside t
//   t.view().vwrite(files);     // reads inside see t's own writes
//   std::error_code ec = t.commit();
//
// Isolation: while t is open, nobody else's COMPOUNDs run on the server (vnfsd delays them
// until t ends; the client retries them by itself), so nothing outside sees t's effects
// before its commit. Keep transactions short: the server rolls back one that stays open
// longer than its limit (vnfsd --txn-max-age, 120 s by default) or whose client's lease
// expires.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <system_error>

#include "vnfs/client.hpp"

namespace vnfs {

namespace detail {
struct txn_link;
}

/// Where a transaction stands.
enum class txn_state {
  none,       ///< a default-constructed or moved-from transaction
  open,
  committed,
  aborted,    ///< rolled back: nothing of it took effect
  unknown,    ///< commit() or abort() lost the connection and the server could not be asked since (resolve())
};

class transaction {
 public:
  /// Begins a transaction on `c`'s server: one round trip (TXN_BEGIN alone) the first time
  /// on `c`; once the server is known to have the extension, none — the first COMPOUND a
  /// call inside sends carries TXN_BEGIN, and a transaction with no call commits or aborts
  /// without a word to the server. Throws std::system_error:
  /// errc::transactions_unsupported for file://, without client_options::compound_vectors,
  /// or against a server without the extension (NFS-Ganesha) — nothing ran there;
  /// errc::closed; or the server's reason. `c` must outlive the transaction.
  static transaction begin(client& c);
  /// The asynchronous forms: *out is the transaction once `done` reports success.
  static void begin(client& c, transaction* out, detail::done_fn done);
  static void async_begin(client& c, transaction* out, completion_group& g, std::uint64_t tag) {
    begin(c, out, detail::to_group(g, tag));
  }
  template <class Token>
  static auto async_begin(client& c, Token&& token) {
    return detail::initiate_value<transaction>(std::forward<Token>(token), c.executor_,
                                               [&c](transaction* out, detail::done_fn d) { begin(c, out, std::move(d)); });
  }

  /// Begins a transaction that runs again the work of `retried`, which began on `c` and
  /// which the server rolled back because an older transaction needed what it held (a call
  /// inside failed with an item error NFS4ERR_DEADLOCK, or the transaction was wounded while
  /// idle: errc::transaction_aborted). The new transaction keeps `retried`'s age, its
  /// priority when transactions conflict (docs/transactions.md, "No deadlock"): a transfer
  /// tried again this way becomes the oldest in the end and commits, instead of starving as
  /// the youngest. The server keeps an age for its --txn-max-age (120 s) from the first
  /// begin; later, or if `retried` ended otherwise (or is still open), the new transaction
  /// begins as any other. Throws as begin(c).
  static transaction begin(client& c, const transaction& retried);
  static void begin(client& c, const transaction& retried, transaction* out, detail::done_fn done);
  static void async_begin(client& c, const transaction& retried, transaction* out, completion_group& g,
                          std::uint64_t tag) {
    begin(c, retried, out, detail::to_group(g, tag));
  }
  template <class Token>
  static auto async_begin(client& c, const transaction& retried, Token&& token) {
    return detail::initiate_value<transaction>(
        std::forward<Token>(token), c.executor_,
        [&c, &retried](transaction* out, detail::done_fn d) { begin(c, retried, out, std::move(d)); });
  }

  transaction() = default;
  transaction(transaction&&) noexcept = default;
  transaction& operator=(transaction&&) noexcept;
  /// Aborts an open transaction (blocking, errors ignored).
  ~transaction();

  /// The client whose vectorized calls (vopen .. vscopy, vcopy, ensure_directory,
  /// remove_tree, in every form) run inside this transaction; memory registered with the
  /// client it began from works in it. Its scalar calls (open, read, mkdir, ...) fail with
  /// errc::bad_argument. When an item of a call inside fails after its COMPOUND changed
  /// something, the server rolls the whole transaction back: that call's vresult names the
  /// item and its error (the call's items that ran are errc::rolled_back), state() is
  /// aborted, and every later call fails with errc::transaction_aborted without running. A
  /// failure that changed nothing (a lookup of a missing name) leaves the transaction open.
  /// Throws std::logic_error if not begun.
  client& view();

  /// The client for the transaction's last call: its vectorized calls run as view()'s do,
  /// and the last COMPOUND of the call carries the commit (sent once every other COMPOUND of
  /// the call has its reply), so that the commit costs no round trip of its own:
  ///
  ///   t.view().vmkdir(dirs);
  ///   vresult r = t.committing().vwrite(files);   // r.ok(): committed
  ///
  /// One call, with no other call of the transaction in flight. Its result: ok(), the
  /// transaction committed; an item's error after its COMPOUND changed something, or the
  /// commit's reason (items errc::rolled_back), rolled back (state() aborted); a failure
  /// that changed nothing (say a lookup of a missing name), the transaction is still open:
  /// commit() or abort() it; errc::outcome_unknown, the connection died during the commit
  /// and the server could not be asked (state() unknown: resolve()). A transaction that has
  /// not reached the server yet is that call's COMPOUND alone, if it has one
  /// (TXN_ONE_COMPOUND). commit() afterwards returns what the call ended it with. The
  /// composed calls (vlistdir, vcopy, vscopy, ensure_directory, remove_tree), which make
  /// several calls, are refused here with errc::bad_argument. Throws std::logic_error if
  /// not begun.
  client& committing();

  /// Ends the transaction. commit(): {} when committed (every change on stable storage);
  /// errc::transaction_aborted when it had been rolled back already (failed() tells by
  /// which item); the server's reason when the commit failed (rolled back); or, if the
  /// connection died during the commit and the server could not be asked afterwards,
  /// errc::outcome_unknown (state() unknown: resolve() asks again). When the connection
  /// died but the server could be asked again (it answers TXN_STATUS from its outcome log,
  /// across restarts), the result is exact.
  std::error_code commit();
  void commit(detail::done_fn done);
  void async_commit(completion_group& g, std::uint64_t tag) { commit(detail::to_group(g, tag)); }
  template <class Token>
  auto async_commit(Token&& token) {
    return detail::initiate_status(std::forward<Token>(token), executor(), [this](detail::done_fn d) { commit(std::move(d)); });
  }
  /// abort(): rolls back; {} once rolled back (also when it had been already).
  std::error_code abort();
  void abort(detail::done_fn done);
  void async_abort(completion_group& g, std::uint64_t tag) { abort(detail::to_group(g, tag)); }
  template <class Token>
  auto async_abort(Token&& token) {
    return detail::initiate_status(std::forward<Token>(token), executor(), [this](detail::done_fn d) { abort(std::move(d)); });
  }
  /// After an unknown outcome: asks the server how the transaction ended (finishing the
  /// commit or abort that was meant if it is still open). Returns as commit() / abort() would.
  std::error_code resolve();
  void resolve(detail::done_fn done);

  txn_state state() const noexcept;
  /// The item whose failure rolled the transaction back: its index in the call it belonged
  /// to (vresult::npos if it was rolled back otherwise) and its error.
  std::size_t failed_index() const noexcept;
  std::error_code failed_error() const noexcept;
  /// The transaction's id on the server (random, 64 bits).
  std::uint64_t id() const noexcept;

 private:
  /// Where token handlers without an executor of their own run: the client's
  /// client_options::executor (none before begin).
  const boost::asio::any_io_executor& executor() const noexcept;
  /// begin(), with TXN_RETRY of `retries` if given.
  static void start(client& c, std::optional<std::uint64_t> retries, transaction* out, detail::done_fn done);

  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace vnfs
