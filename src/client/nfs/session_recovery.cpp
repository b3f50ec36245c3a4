// vnfs client, nfs backend: recovery — a lost connection is replaced and what was in
// flight is sent again on the same slots and sequence ids (the reply cache answers what
// already ran); a session the server lost is created anew and its calls queued again,
// except those that end a transaction and may have run, whose outcome is asked instead
// (TXN_STATUS); what cannot go on fails.
#include "client/nfs/session_engine_impl.hpp"

#include <algorithm>

#include "vnfs/error.hpp"

namespace vnfs::detail {

using nfs4::nfsstat4;

void session_engine::impl::connection_lost(std::error_code ec) {
  if (!connected) return;
  connected = false;
  to_write.clear();
  channel->close();
  // A BIND_CONN_TO_SESSION in flight was binding the connection just lost: it goes with it
  // (the next connection sends its own), or every loss would leave one behind.
  std::erase_if(inflight, [](const auto& e) {
    const auto& ops = e.second->ops;
    return !e.second->sequenced && !ops.empty() && std::holds_alternative<nfs4::BIND_CONN_TO_SESSION4args>(ops[0]);
  });
  if (closing) return;
  last_error = ec;
  // The outage runs from the loss of the last connection that answered (or of the first):
  // one that the server, or something in front of it, accepts and drops unanswered is no
  // recovery, so reconnect_for still bounds the attempts, and the next one waits as after
  // a refused connection.
  const bool replied = replied_since_connect;
  replied_since_connect = false;
  if (replied || lost_at == clock_type::time_point{}) lost_at = clock_type::now();
  if (replied) return reconnect();
  retry_reconnect();
}

void session_engine::impl::reconnect() {
  if (clock_type::now() - lost_at > cfg.reconnect_for) return fail_all(last_error);
  channel->connect([self = shared_from_this()](std::error_code ec) {
    if (self->closing) return;
    if (ec) return self->retry_reconnect();
    self->connected = true;
    self->n_reconnects++;
    self->rebind();
  });
}

void session_engine::impl::retry_reconnect() {
  reconnect_timer.expires_after(std::chrono::milliseconds(100));
  reconnect_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->closing) self->reconnect();
  });
}

/// A new connection: bind it to the session, then retransmit what was in flight on the
/// same slots and sequence ids, so the reply cache answers what already ran.
void session_engine::impl::rebind() {
  if (!have_session) return establish_session(nullptr);
  nfs4::BIND_CONN_TO_SESSION4args b{sessionid, nfs4::channel_dir_from_client4::CDFC4_FORE, false};
  // Only the calls that were in flight before this BIND are retransmissions.
  std::vector<std::uint32_t> resend;
  for (auto& [xid, c] : inflight) resend.push_back(xid);
  send_sessionless({b}, [self = shared_from_this(), resend](std::error_code ec, compound_reply& r) {
    if (!ec && r.res.status == nfsstat4::NFS4_OK) {
      for (auto xid : resend) {
        if (!self->inflight.count(xid)) continue;
        self->n_retrans++;
        self->n_compounds++;
        self->to_write.push_back(xid);
      }
      self->write_next();
      return self->pump();
    }
    self->recover_session();
  });
}

/// The server lost the session (restarted): a new client ID and session; everything
/// sequenced that was in flight is queued again for new slots, or asked about (requeue).
void session_engine::impl::recover_session() {
  // Not while closing: a call failed by close() (a BIND_CONN_TO_SESSION in flight) must not
  // start a new client ID, whose calls would outlive close() and keep the engine alive.
  if (recovering || closing) return;
  recovering = true;
  have_session = false;
  std::vector<std::uint32_t> lost;
  for (auto& [xid, c] : inflight)
    if (c->sequenced) lost.push_back(xid);
  for (auto it = lost.rbegin(); it != lost.rend(); ++it) {
    std::unique_ptr<session_call> c = std::move(inflight[*it]);
    inflight.erase(*it);
    const bool may_have_run = c->sent > 0;
    requeue(std::move(c), may_have_run);
  }
  slots.forget();
  establish_session(nullptr);
}

void session_engine::impl::requeue(std::unique_ptr<session_call> c, bool may_have_run) {
  const std::optional<std::uint64_t> txnid = ended_transaction(c->ops);
  if (txnid && may_have_run)
    return ask_outcome(std::shared_ptr<session_call>(std::move(c)), *txnid, clock_type::now(), std::chrono::milliseconds(0));
  c->sent = 0;
  waiting.push_front(std::move(c));
}

void session_engine::impl::ask_outcome(std::shared_ptr<session_call> c, std::uint64_t txnid,
                                       clock_type::time_point since, std::chrono::milliseconds after) {
  using nfs4::txn_outcome4;
  auto ask = std::make_unique<session_call>();
  ask->ops = {nfs4::nfs_argop4{},
              nfs4::VNFS_TXN4args{static_cast<std::uint32_t>(nfs4::txn_action4::TXN_STATUS), txnid, 0}};
  ask->done = [self = shared_from_this(), c, txnid, since, after](std::error_code ec, compound_reply& r) {
    compound_reply none;
    const auto& res = r.res.resarray;
    const bool answered = !ec && res.size() == 2 && nfs4::status_of(res[0]) == nfsstat4::NFS4_OK;
    const auto* t = answered ? std::get_if<nfs4::VNFS_TXN4res>(&res[1]) : nullptr;
    const nfsstat4 s = answered ? nfs4::status_of(res[1]) : nfsstat4::NFS4_OK;
    if (answered && (t == nullptr || s == nfsstat4::NFS4ERR_OP_ILLEGAL || s == nfsstat4::NFS4ERR_NOTSUPP))
      return c->done(make_error_code(errc::transactions_unsupported), none);  // it ran nothing there
    if (t == nullptr || s != nfsstat4::NFS4_OK) return c->done(make_error_code(errc::outcome_unknown), none);
    switch (static_cast<txn_outcome4>(t->outcome)) {
      case txn_outcome4::TXN_COMMITTED:
        r.results_lost = true;
        return c->done({}, r);
      case txn_outcome4::TXN_OPEN:
        if (clock_type::now() - since > max_outcome_wait) return c->done(make_error_code(errc::outcome_unknown), none);
        return self->ask_outcome(c, txnid, since,
                                 std::clamp<std::chrono::milliseconds>(2 * after, std::chrono::milliseconds(10),
                                                                       std::chrono::seconds(1)));
      case txn_outcome4::TXN_ABORTED:  // rolled back
        return c->done(make_error_code(errc::transaction_aborted), none);
      default:  // never begun on this server, or forgotten: which one, the time tells
        return c->done(unknown_outcome(clock_type::now() - c->first_sent), none);
    }
  };
  if (after.count() == 0) return waiting.push_front(std::move(ask));
  park(std::move(ask), after, false);
}

/// Completes everything queued and in flight with `ec`.
void session_engine::impl::fail_all(std::error_code ec) {
  // A call in flight may be having its READ payload received into the caller's memory,
  // which is the caller's again once the call completes: the connection goes first.
  const bool receiving =
      std::any_of(inflight.begin(), inflight.end(), [](const auto& e) { return e.second->reads != nullptr; });
  if (connected && receiving) {
    connected = false;
    channel->close();
  }
  auto queued = std::move(waiting);
  auto running = std::move(inflight);
  waiting.clear();
  inflight.clear();
  for (auto& c : in_grace) queued.push_back(std::move(c));
  in_grace.clear();
  for (auto& c : length_refused) queued.push_back(std::move(c));
  length_refused.clear();
  slots.release_all();
  for (auto& c : queued) {
    compound_reply empty;
    c->done(ec, empty);
  }
  for (auto& [xid, c] : running) {
    compound_reply empty;
    // It may have run: that it has failed says nothing of its transaction's outcome.
    const bool unknown = c->sent > 0 && ended_transaction(c->ops);
    c->done(unknown ? make_error_code(errc::outcome_unknown) : ec, empty);
  }
}

}  // namespace vnfs::detail
