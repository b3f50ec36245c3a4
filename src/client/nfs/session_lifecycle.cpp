// vnfs client, nfs backend: a session's life cycle — EXCHANGE_ID and CREATE_SESSION (at
// construction and after the server lost the session), RECLAIM_COMPLETE of a new client ID,
// lease renewal, and DESTROY_SESSION with DESTROY_CLIENTID at close.
#include "client/nfs/session_engine_impl.hpp"

#include "client/nfs/operation_limit.hpp"

#include <algorithm>

#include "vnfs/error.hpp"
#include "vnfs/nfs4/attributes.hpp"

namespace vnfs::detail {

using nfs4::nfsstat4;

void session_engine::impl::establish_session(std::promise<void>* ready) {
  nfs4::EXCHANGE_ID4args ex;
  auto b = reinterpret_cast<const std::byte*>(owner.data());
  ex.eia_clientowner.co_ownerid.assign(b, b + owner.size());
  for (std::size_t i = 0; i < 8; ++i) ex.eia_clientowner.co_verifier[i] = std::byte(boot_verifier >> (8 * i));
  ex.eia_flags = nfs4::EXCHGID4_FLAG_USE_NON_PNFS;
  send_sessionless({ex}, [self = shared_from_this(), ready](std::error_code ec, compound_reply& r) {
    auto* res = r.res.resarray.empty() ? nullptr : std::get_if<nfs4::EXCHANGE_ID4res>(&r.res.resarray[0]);
    if (!ec && (res == nullptr || res->status != nfsstat4::NFS4_OK))
      ec = res ? std::error_code(res->status) : make_error_code(errc::protocol_error);
    if (ec) return self->session_failed(ec, ready);
    self->clientid = res->resok4.eir_clientid;
    if (const auto known = known_operation_limit(res->resok4.eir_server_scope); known && self->cfg.known_server_limits) {
      std::lock_guard lock(self->limits_mu);
      self->ops_cap = std::min(self->ops_cap, *known);
    }
    self->create_seq = res->resok4.eir_sequenceid;
    self->state_lost = (res->resok4.eir_flags & nfs4::EXCHGID4_FLAG_CONFIRMED_R) == 0;
    self->create_session(ready);
  });
}

void session_engine::impl::create_session(std::promise<void>* ready) {
  nfs4::CREATE_SESSION4args cs;
  cs.csa_clientid = clientid;
  cs.csa_sequence = create_seq;
  cs.csa_fore_chan_attrs = {0, 4u << 20 | 64u << 10, 4u << 20 | 64u << 10, 1u << 20, cfg.max_operations, cfg.slots,
                            std::nullopt};
  cs.csa_back_chan_attrs = {0, 4096, 4096, 0, 2, 1, std::nullopt};
  cs.csa_cb_program = 0x40000000;
  nfs4::callback_sec_parms4 none;
  none.cb_secflavor = nfs4::AUTH_NONE;
  cs.csa_sec_parms.push_back(none);
  send_sessionless({cs}, [self = shared_from_this(), ready](std::error_code ec, compound_reply& r) {
    auto* res = r.res.resarray.empty() ? nullptr : std::get_if<nfs4::CREATE_SESSION4res>(&r.res.resarray[0]);
    if (!ec && (res == nullptr || res->status != nfsstat4::NFS4_OK))
      ec = res ? std::error_code(res->status) : make_error_code(errc::protocol_error);
    if (ec) return self->session_failed(ec, ready);
    self->sessionid = res->resok4.csr_sessionid;
    {
      std::lock_guard lock(self->limits_mu);
      self->fore = res->resok4.csr_fore_chan_attrs;
    }
    self->slots.reset(self->fore.ca_maxrequests);
    self->have_session = true;
    self->recovering = false;
    self->reclaim_opens(self->state_lost ? self->opens.all() : std::vector<open_reclaims::open>{}, 0, ready);
  });
}

void session_engine::impl::reclaim_opens(std::vector<open_reclaims::open> todo, std::size_t i,
                                         std::promise<void>* ready) {
  if (i == todo.size()) return reclaim_complete(ready);
  nfs4::OPEN4args o;
  o.share_access = todo[i].access;
  o.share_deny = nfs4::OPEN4_SHARE_DENY_NONE;
  o.owner = {clientid, todo[i].owner};
  o.openhow.opentype = nfs4::opentype4::OPEN4_NOCREATE;
  o.claim.claim = nfs4::open_claim_type4::CLAIM_PREVIOUS;
  o.claim.delegate_type = nfs4::open_delegation_type4::OPEN_DELEGATE_NONE;
  auto c = std::make_unique<session_call>();
  c->ops = {nfs4::nfs_argop4{}, nfs4::PUTFH4args{todo[i].fh}, o};
  c->cachethis = true;
  c->done = [self = shared_from_this(), todo = std::move(todo), i, ready](std::error_code ec,
                                                                       compound_reply& r) mutable {
    const auto* open = r.res.resarray.size() == 3 ? std::get_if<nfs4::OPEN4res>(&r.res.resarray[2]) : nullptr;
    if (!ec && open != nullptr && open->status == nfsstat4::NFS4_OK)
      self->opens.reclaimed(todo[i].first, open->resok4.stateid);
    else
      self->opens.lost(todo[i].first);
    self->reclaim_opens(std::move(todo), i + 1, ready);
  };
  reclaiming = true;
  waiting.push_front(std::move(c));
  pump_front();
}

/// A new client ID has nothing to reclaim: RECLAIM_COMPLETE before anything else, or a
/// server in its grace period refuses non-reclaim OPENs with NFS4ERR_GRACE (RFC 8881
/// §18.51.3). Other calls wait until its reply; its status does not matter
/// (NFS4ERR_COMPLETE_ALREADY after a session-only recovery).
///
/// At session set-up (`ready` given) it costs no round trip of its own: the session is ready
/// at once, and RECLAIM_COMPLETE rides on the first COMPOUND sent (attach_riders).
void session_engine::impl::reclaim_complete(std::promise<void>* ready) {
  if (ready) {
    reclaim_complete_due = true;
    ready->set_value();
    return pump();
  }
  reclaim_complete_due = false;  // it goes now, alone
  auto c = std::make_unique<session_call>();
  c->ops = {nfs4::nfs_argop4{}, nfs4::RECLAIM_COMPLETE4args{false}};
  c->done = [self = shared_from_this(), ready](std::error_code, compound_reply&) {
    self->reclaiming = false;
    if (ready) ready->set_value();
  };
  reclaiming = true;
  waiting.push_front(std::move(c));
  pump_front();
}

namespace {

nfs4::bitmap4 lease_time_bitmap() {
  nfs4::bitmap4 b;
  b.set(nfs4::FATTR4_LEASE_TIME);
  return b;
}

}  // namespace

bool session_engine::impl::attach_riders(session_call& c) {
  if (c.ops.size() > 1 && std::holds_alternative<nfs4::VNFS_TXN4args>(c.ops[1])) return !reclaim_complete_due;
  const std::size_t limit = operation_limit();
  std::vector<nfs4::nfs_argop4> riders;
  if (reclaim_complete_due) {
    if (c.ops.size() + 1 > limit) return false;
    riders.push_back(nfs4::RECLAIM_COMPLETE4args{false});
    reclaim_complete_due = false;
    reclaiming = true;
  }
  if (lease_due && c.ops.size() + riders.size() + 2 <= limit) {
    riders.push_back(nfs4::PUTROOTFH4args{});
    riders.push_back(nfs4::GETATTR4args{lease_time_bitmap()});
    lease_due = false;
  }
  c.ops.insert(c.ops.begin() + 1, riders.begin(), riders.end());
  c.riders = static_cast<std::uint32_t>(riders.size());
  return true;
}

void session_engine::impl::take_back_riders(session_call& c) {
  const auto first = c.ops.begin() + 1, end = first + c.riders;
  for (auto it = first; it != end; ++it) {
    if (std::holds_alternative<nfs4::RECLAIM_COMPLETE4args>(*it)) {
      reclaim_complete_due = true;
      reclaiming = false;
    }
    if (std::holds_alternative<nfs4::GETATTR4args>(*it)) lease_due = true;
  }
  c.ops.erase(first, end);
  c.riders = 0;
}

bool session_engine::impl::detach_riders(session_call& c, compound_reply& reply) {
  const std::uint32_t n = c.riders;
  auto& results = reply.res.resarray;
  bool ok = results.size() > n;  // every rider has a result
  for (std::uint32_t i = 1; i <= n; ++i) {
    if (std::holds_alternative<nfs4::RECLAIM_COMPLETE4args>(c.ops[i])) reclaiming = false;
    if (!ok) continue;
    ok = nfs4::status_of(results[i]) == nfsstat4::NFS4_OK;
    if (const auto* g = ok ? std::get_if<nfs4::GETATTR4res>(&results[i]) : nullptr) {
      nfs4::attributes a;
      try {
        a = nfs4::decode_attributes(g->resok4.obj_attributes);
      } catch (const std::exception&) {  // malformed: the lease stays what it was
      }
      if (a.lease_time && *a.lease_time > 0) {
        lease = std::chrono::seconds(*a.lease_time);
        schedule_renewal();
      }
    }
  }
  // A rider that failed is not sent again: it ran once.
  c.ops.erase(c.ops.begin() + 1, c.ops.begin() + 1 + n);
  c.riders = 0;
  if (!ok) return false;
  results.erase(results.begin() + 1, results.begin() + 1 + n);
  if (reply.placed.size() > n) reply.placed.erase(reply.placed.begin() + 1, reply.placed.begin() + 1 + n);
  return true;
}

void session_engine::impl::session_failed(std::error_code ec, std::promise<void>* ready) {
  recovering = false;
  if (ready) return ready->set_exception(std::make_exception_ptr(std::system_error(ec, "vnfs: session set-up")));
  fail_all(ec);
}

void session_engine::impl::schedule_renewal() {
  renew_timer.expires_after(std::max<std::chrono::seconds>(std::chrono::seconds(1), lease / 3));
  renew_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closing) return;
    if (clock_type::now() - self->last_send >= self->lease / 3 && self->have_session && self->waiting.empty()) {
      auto c = std::make_unique<session_call>();
      c->ops.resize(1);
      c->done = [](std::error_code, compound_reply&) {};
      self->waiting.push_back(std::move(c));
      self->pump();
    }
    self->schedule_renewal();
  });
}

void session_engine::impl::destroy(std::function<void()> finished) {
  nfs4::DESTROY_SESSION4args ds{sessionid};
  send_sessionless({ds}, [self = shared_from_this(), finished](std::error_code, compound_reply&) {
    nfs4::DESTROY_CLIENTID4args dc{self->clientid};
    self->send_sessionless({dc}, [finished](std::error_code, compound_reply&) { finished(); });
  });
}

}  // namespace vnfs::detail
