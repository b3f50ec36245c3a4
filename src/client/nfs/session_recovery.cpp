// vnfs client, nfs backend: recovery — a lost connection is replaced and what was in
// flight is sent again on the same slots and sequence ids (the reply cache answers what
// already ran); a session the server lost is created anew and its calls queued again; what
// cannot go on fails.
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
  if (closing) return;
  lost_at = clock_type::now();
  last_error = ec;
  reconnect();
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
/// sequenced that was in flight is queued again for new slots.
void session_engine::impl::recover_session() {
  // Not while closing: a call failed by close() (a BIND_CONN_TO_SESSION in flight) must not
  // start a new client ID, whose calls would outlive close() and keep the engine alive.
  if (recovering || closing) return;
  recovering = true;
  have_session = false;
  std::vector<std::uint32_t> requeue;
  for (auto& [xid, c] : inflight)
    if (c->sequenced) requeue.push_back(xid);
  for (auto it = requeue.rbegin(); it != requeue.rend(); ++it) {
    waiting.push_front(std::move(inflight[*it]));
    inflight.erase(*it);
  }
  slots.forget();
  establish_session(nullptr);
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
    c->done(ec, empty);
  }
}

}  // namespace vnfs::detail
