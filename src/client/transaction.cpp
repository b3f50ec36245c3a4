// vnfs client: vnfs::transaction (include/vnfs/transaction.hpp) over the backend's
// transaction hooks (backend::txn_control, backend::txn_view).
#include "vnfs/transaction.hpp"

#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>

#include "client/backend.hpp"
#include "client/memory/registration.hpp"
#include "client/txn_link.hpp"
#include "vnfs/nfs4/txn_ops.hpp"

namespace vnfs {

using detail::done_fn;
using nfs4::txn_action4;
using nfs4::txn_outcome4;

struct transaction::impl : std::enable_shared_from_this<impl> {
  detail::backend* base = nullptr;
  std::shared_ptr<detail::txn_link> link;
  std::optional<client> view;
  std::optional<client> committing;  ///< transaction::committing(), made on first use
  std::mutex mu;  // guards what follows
  txn_state st = txn_state::open;
  txn_action4 wanted = txn_action4::TXN_COMMIT;  ///< what the last end() meant
  bool ending = false;                            ///< commit or abort in flight

  void set(txn_state s) {
    std::lock_guard g(mu);
    st = s;
  }

  /// What a call of committing() ended the transaction with, into st (under mu).
  void absorb_link() {
    if (st != txn_state::open) return;
    const int ls = link->st.load();
    if (ls == detail::txn_link::committed) st = txn_state::committed;
    else if (ls == detail::txn_link::unknown) st = txn_state::unknown;
  }

  /// Sends `action` (TXN_COMMIT or TXN_ABORT) and reports the exact outcome if the server
  /// can be asked; after a lost connection, asks with TXN_STATUS once.
  void end(txn_action4 action, done_fn done) {
    {
      std::lock_guard g(mu);
      absorb_link();
      if (ending) return done(make_error_code(errc::bad_argument), 0);  // one end at a time
      if (st == txn_state::committed) return done(action == txn_action4::TXN_COMMIT ? std::error_code() : make_error_code(errc::bad_argument), 0);
      if (st == txn_state::aborted)
        return done(action == txn_action4::TXN_ABORT ? std::error_code() : make_error_code(errc::transaction_aborted), 0);
      if (st == txn_state::unknown) return done(make_error_code(errc::outcome_unknown), 0);  // resolve() asks
      ending = true;
      wanted = action;
    }
    // The server rolled it back already (an item inside failed): nothing to send.
    int expected = detail::txn_link::open;
    if (!link->st.compare_exchange_strong(expected, detail::txn_link::ended)) {
      return finish(txn_state::aborted, done);
    }
    // Begun lazily and no call inside sent anything: the server never heard of it, and an
    // empty transaction commits (or aborts) by itself.
    if (link->end_unbegun())
      return finish(action == txn_action4::TXN_COMMIT ? txn_state::committed : txn_state::aborted, done);
    send(action, std::move(done), true);
  }

  void send(txn_action4 action, done_fn done, bool may_ask) {
    auto outcome = std::make_shared<std::uint32_t>(0);
    auto self = shared_from_this();
    base->txn_control(static_cast<std::uint32_t>(action), link->txnid, std::nullopt, outcome.get(),
                      [self, action, outcome, done = std::move(done), may_ask](std::error_code ec, std::size_t) mutable {
                        if (*outcome != detail::txn_outcome_unanswered) {  // the server answered VNFS_TXN
                          if (!ec) return self->finish(action == txn_action4::TXN_COMMIT ? txn_state::committed : txn_state::aborted, done);
                          if (ec == nfs4::nfsstat4::NFS4ERR_EXPIRED) return self->ask(done);  // not open: how did it end?
                          // The commit failed and was rolled back (or the abort failed: ask).
                          if (action == txn_action4::TXN_COMMIT) return self->finish(txn_state::aborted, done, ec);
                          return self->ask(done);
                        }
                        if (may_ask) return self->ask(done);  // the connection died: ask once
                        self->finish(txn_state::unknown, done);
                      });
  }

  /// TXN_STATUS, then the answer it implies.
  void ask(done_fn done) {
    auto outcome = std::make_shared<std::uint32_t>(0);
    auto self = shared_from_this();
    base->txn_control(static_cast<std::uint32_t>(txn_action4::TXN_STATUS), link->txnid, std::nullopt, outcome.get(),
                      [self, outcome, done = std::move(done)](std::error_code ec, std::size_t) mutable {
                        if (ec) return self->finish(txn_state::unknown, done);
                        switch (static_cast<txn_outcome4>(*outcome)) {
                          case txn_outcome4::TXN_COMMITTED: return self->finish(txn_state::committed, done);
                          case txn_outcome4::TXN_ABORTED: return self->finish(txn_state::aborted, done);
                          case txn_outcome4::TXN_OPEN: return self->send(self->wanted, std::move(done), false);
                          default: return self->finish(txn_state::unknown, done);
                        }
                      });
  }

  /// Records the state and completes `done` with what it means for the call that was meant.
  void finish(txn_state s, done_fn& done, std::error_code why = {}) {
    txn_action4 meant;
    {
      std::lock_guard g(mu);
      st = s;
      ending = false;
      meant = wanted;
    }
    if (s == txn_state::unknown) return done(make_error_code(errc::outcome_unknown), 0);
    if (s == txn_state::committed) return done(meant == txn_action4::TXN_COMMIT ? std::error_code() : make_error_code(errc::protocol_error), 0);
    if (meant == txn_action4::TXN_ABORT) return done({}, 0);
    done(why ? why : make_error_code(errc::transaction_aborted), 0);
  }
};

namespace {

/// Waits for a callback-form call; its status.
std::error_code wait(const std::function<void(done_fn)>& start) { return detail::wait(start).first; }

std::uint64_t random_txnid() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) | rd();
}

}  // namespace

void transaction::begin(client& c, transaction* out, done_fn done) { start(c, std::nullopt, out, std::move(done)); }

void transaction::begin(client& c, const transaction& retried, transaction* out, done_fn done) {
  start(c, retried.impl_ ? std::optional<std::uint64_t>(retried.id()) : std::nullopt, out, std::move(done));
}

void transaction::start(client& c, std::optional<std::uint64_t> retries, transaction* out, done_fn done) {
  if (!c.backend_ || c.backend_->registrations().closed()) return done(make_error_code(errc::closed), 0);
  auto link = std::make_shared<detail::txn_link>(random_txnid());
  std::unique_ptr<detail::backend> v = c.backend_->txn_view(link, false);
  if (!v) return done(make_error_code(errc::transactions_unsupported), 0);
  auto im = std::make_shared<impl>();
  im->base = c.backend_.get();
  im->link = link;
  im->view.emplace(client(std::move(v), c.executor_));
  if (im->base->transactions_known() && !retries) {
    // The server has the extension: no COMPOUND of its own, the first call inside carries
    // TXN_BEGIN (txn_link::pending). (A transaction that runs another's work again sends
    // TXN_BEGIN with TXN_RETRY alone, which keeps that one's age whatever follows.)
    link->begin = detail::txn_link::pending;
    out->impl_ = im;
    return done({}, 0);
  }
  auto outcome = std::make_shared<std::uint32_t>(0);
  im->base->txn_control(static_cast<std::uint32_t>(txn_action4::TXN_BEGIN), link->txnid, retries, outcome.get(),
                        [im, out, outcome, done = std::move(done)](std::error_code ec, std::size_t) {
                          if (ec) {
                            im->link->st = detail::txn_link::ended;
                            im->st = txn_state::aborted;
                            return done(ec, 0);
                          }
                          out->impl_ = im;
                          done({}, 0);
                        });
}

transaction transaction::begin(client& c) {
  transaction t;
  if (std::error_code ec = wait([&](done_fn d) { begin(c, &t, std::move(d)); }))
    throw std::system_error(ec, "vnfs: transaction::begin");
  return t;
}

transaction transaction::begin(client& c, const transaction& retried) {
  transaction t;
  if (std::error_code ec = wait([&](done_fn d) { begin(c, retried, &t, std::move(d)); }))
    throw std::system_error(ec, "vnfs: transaction::begin");
  return t;
}

transaction& transaction::operator=(transaction&& o) noexcept {
  if (this != &o) {
    if (impl_ && state() == txn_state::open) abort();
    impl_ = std::move(o.impl_);
  }
  return *this;
}

transaction::~transaction() {
  if (impl_ && state() == txn_state::open) abort();  // best effort: the server also rolls it back at lease expiry
}

const boost::asio::any_io_executor& transaction::executor() const noexcept {
  static const boost::asio::any_io_executor none;
  return impl_ ? impl_->view->executor_ : none;
}

client& transaction::view() {
  if (!impl_) throw std::logic_error("vnfs: transaction::view of a transaction not begun");
  return *impl_->view;
}

client& transaction::committing() {
  if (!impl_) throw std::logic_error("vnfs: transaction::committing of a transaction not begun");
  std::lock_guard g(impl_->mu);
  if (!impl_->committing) impl_->committing.emplace(client(impl_->base->txn_view(impl_->link, true), impl_->view->executor_));
  return *impl_->committing;
}

void transaction::commit(done_fn done) {
  if (!impl_) return done(make_error_code(errc::bad_argument), 0);
  impl_->end(txn_action4::TXN_COMMIT, std::move(done));
}
std::error_code transaction::commit() {
  return wait([this](done_fn d) { commit(std::move(d)); });
}

void transaction::abort(done_fn done) {
  if (!impl_) return done(make_error_code(errc::bad_argument), 0);
  impl_->end(txn_action4::TXN_ABORT, std::move(done));
}
std::error_code transaction::abort() {
  return wait([this](done_fn d) { abort(std::move(d)); });
}

void transaction::resolve(done_fn done) {
  if (!impl_) return done(make_error_code(errc::bad_argument), 0);
  {
    std::lock_guard g(impl_->mu);
    impl_->absorb_link();
    if (impl_->st != txn_state::unknown || impl_->ending) return done(make_error_code(errc::bad_argument), 0);
    impl_->ending = true;
  }
  impl_->ask(std::move(done));
}
std::error_code transaction::resolve() {
  return wait([this](done_fn d) { resolve(std::move(d)); });
}

txn_state transaction::state() const noexcept {
  if (!impl_) return txn_state::none;
  std::lock_guard g(impl_->mu);
  impl_->absorb_link();
  // An item inside failed: the server rolled the transaction back already.
  if (impl_->st == txn_state::open && impl_->link->st == detail::txn_link::aborted) return txn_state::aborted;
  return impl_->st;
}

std::size_t transaction::failed_index() const noexcept {
  if (!impl_) return vresult::npos;
  std::lock_guard g(impl_->link->mu);
  return impl_->link->failed_error ? impl_->link->failed_index : vresult::npos;
}

std::error_code transaction::failed_error() const noexcept {
  if (!impl_) return {};
  std::lock_guard g(impl_->link->mu);
  return impl_->link->failed_error;
}

std::uint64_t transaction::id() const noexcept { return impl_ ? impl_->link->txnid : 0; }

}  // namespace vnfs
