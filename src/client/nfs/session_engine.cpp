#include "client/nfs/session_engine.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "client/nfs/reply_bound.hpp"
#include "client/nfs/result_size.hpp"
#include "client/nfs/rpc_channel.hpp"
#include "vnfs/error.hpp"
#include "vnfs/rpc/message.hpp"

namespace vnfs::detail {

namespace asio = boost::asio;
using nfs4::nfsstat4;
using clock_type = std::chrono::steady_clock;

namespace {

struct call {
  std::vector<nfs4::nfs_argop4> ops;  // ops[0] is SEQUENCE when `sequenced`
  compound_done done;
  std::vector<std::span<std::byte>> read_targets;  // see session_engine::submit
  /// Where this transmission's READ payloads may be placed (null without read targets): a
  /// new plan for each xid (encode()), which the channel holds weakly, so a reply to an xid
  /// given up on finds no plan to place into.
  std::shared_ptr<const read_plan> reads;
  std::vector<std::shared_ptr<registration>> registered;  // regions the payloads lie in
  bool cachethis = false;  // ask the server to cache the reply (calls that must not run twice)
  bool sequenced = true;
  std::chrono::milliseconds grace_wait{0};  // the last back-off after NFS4ERR_GRACE (none yet: 0)
  clock_type::time_point grace_since{};     // the first NFS4ERR_GRACE
  std::uint32_t slot = 0;
  std::uint32_t xid = 0;
  std::shared_ptr<xdr::encoder> request;  // RPC call; references WRITE data (zero-copy)
};

/// The read plan of a COMPOUND whose ops[0] is (or will be) SEQUENCE.
read_plan plan_reads(const std::vector<nfs4::nfs_argop4>& ops, std::vector<std::span<std::byte>> targets) {
  read_plan p;
  p.targets = std::move(targets);
  // xid, reply header with an empty verifier (20), COMPOUND status, empty tag, count (12),
  // SEQUENCE4resok (44).
  std::size_t at = 4 + 20 + 12 + 44;
  for (std::size_t i = 1; i < ops.size(); ++i) {
    at += least_ok_result_size(nfs4::opnum_of(ops[i]));
    if (std::holds_alternative<nfs4::READ4args>(ops[i])) p.earliest.push_back(at);
  }
  return p;
}

/// Whether running the operation twice has the effect of running it once.
bool repeatable(const nfs4::nfs_argop4& op) {
  return std::holds_alternative<nfs4::PUTFH4args>(op) || std::holds_alternative<nfs4::PUTROOTFH4args>(op) ||
         std::holds_alternative<nfs4::LOOKUP4args>(op) || std::holds_alternative<nfs4::GETFH4args>(op) ||
         std::holds_alternative<nfs4::GETATTR4args>(op) || std::holds_alternative<nfs4::READ4args>(op) ||
         std::holds_alternative<nfs4::READLINK4args>(op) || std::holds_alternative<nfs4::READDIR4args>(op);
}

/// Whether running the COMPOUND twice has the effect of running it once. Only the replies
/// of the others need the server's reply cache: a READ of 1 MiB does not fit in it (the
/// server answers NFS4ERR_REP_TOO_BIG_TO_CACHE when asked to cache it).
bool idempotent(const std::vector<nfs4::nfs_argop4>& ops) {
  return std::all_of(ops.begin() + 1, ops.end(), repeatable);
}

struct slot_state {
  nfs4::sequenceid4 seqid = 0;
  bool busy = false;
};

}  // namespace

struct session_engine::impl : std::enable_shared_from_this<impl> {
  explicit impl(settings s) : cfg(std::move(s)), work(io.get_executor()) {}

  settings cfg;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::thread thread;
  std::shared_ptr<rpc_channel> channel;  // TCP or RPC-over-RDMA (settings::rdma_provider)
  asio::steady_timer renew_timer{io};
  asio::steady_timer reconnect_timer{io};

  // Session state: touched only on the I/O thread once it runs.
  nfs4::clientid4 clientid = 0;
  nfs4::sequenceid4 create_seq = 0;
  nfs4::sessionid4 sessionid{};
  bool have_session = false;
  std::vector<slot_state> slots;
  std::uint32_t usable_slots = 0;
  std::deque<std::unique_ptr<call>> waiting;
  std::map<std::uint32_t, std::unique_ptr<call>> inflight;
  std::deque<std::uint32_t> to_write;  // xids
  bool connected = false;
  bool recovering = false;
  bool closing = false;
  std::uint32_t next_xid = 1;
  clock_type::time_point last_send = clock_type::now();
  clock_type::time_point lost_at{};
  std::chrono::seconds lease{90};
  std::string owner;
  std::uint64_t boot_verifier = 0;  // EXCHANGE_ID's co_verifier: this client instance
  nfs4::channel_attrs4 fore{};      // as CREATE_SESSION granted (written under limits_mu)
  mutable std::mutex limits_mu;     // fore is read by other threads (limits())
  std::uint32_t ops_cap = UINT32_MAX;  // operations per COMPOUND the server really takes (limits_mu)
  std::error_code last_error;       // of the lost connection, for what fails after retries
  bool reclaiming = false;  // reclaims or RECLAIM_COMPLETE of a new client ID in flight: others wait
  bool state_lost = false;  // the last EXCHANGE_ID made a new client record: reclaim the opens
  open_reclaims opens;
  std::list<std::unique_ptr<call>> in_grace;  // waiting out a server's grace period (retry_in_grace)

  std::mutex submit_mu;  // orders submit() against the end of the I/O thread
  bool stopped = false;  // guarded by submit_mu

  // Counters, read from any thread.
  std::atomic<std::uint64_t> n_compounds{0}, n_ops{0}, n_sent{0}, n_received{0}, n_copied{0},
      n_direct{0}, n_reconnects{0}, n_retrans{0};

  // ---- sending -------------------------------------------------------------------------

  rpc::opaque_auth credential() const {
    rpc::authsys_parms p;
    p.machinename = "vnfs";
    p.uid = cfg.uid;
    p.gid = cfg.gid;
    p.gids = cfg.gids;
    return rpc::make_authsys(p);
  }

  void encode(call& c) {
    c.xid = next_xid++;
    if (next_xid == 0) next_xid = 1;
    c.request = std::make_shared<xdr::encoder>();  // a new one: the channel may still hold the old
    xdr::encoder& e = *c.request;
    rpc::call_header h{c.xid, nfs4::NFS4_PROGRAM, nfs4::NFS_V4, nfs4::NFSPROC4_COMPOUND, credential(), {}};
    rpc::encode_call(e, h);
    xdr::encode(e, std::string());  // tag
    // Minor version 1, or 2 for a COMPOUND that needs an NFSv4.2 operation (COPY).
    const bool v42 = std::any_of(c.ops.begin(), c.ops.end(),
                                 [](const nfs4::nfs_argop4& op) { return std::holds_alternative<nfs4::COPY4args>(op); });
    e.put_u32(v42 ? 2 : 1);
    e.put_u32(static_cast<std::uint32_t>(c.ops.size()));
    for (const auto& op : c.ops) nfs4::encode_argop(e, op);
    c.reads = c.read_targets.empty() ? nullptr : std::make_shared<const read_plan>(plan_reads(c.ops, c.read_targets));
  }

  /// WRITE payload leaves by reference (scatter-gather) except tiny pieces the encoder
  /// copies; the counters say which.
  void count_write_payload(const call& c) {
    std::size_t payload = 0;
    for (const auto& op : c.ops)
      if (auto* w = std::get_if<nfs4::WRITE4args>(&op)) payload += w->data.size();
    n_direct += c.request->referenced_bytes();
    n_copied += payload - c.request->referenced_bytes();
  }

  void send(std::unique_ptr<call> c) {
    std::uint32_t xid = c->xid;
    n_compounds++;
    n_ops += c->ops.size();
    inflight[xid] = std::move(c);
    if (connected) to_write.push_back(xid);
    last_send = clock_type::now();
    write_next();
  }

  void write_next() {
    while (connected && !to_write.empty()) {
      auto it = inflight.find(to_write.front());
      to_write.pop_front();
      if (it == inflight.end()) continue;  // answered or failed meanwhile
      const call& c = *it->second;
      std::size_t limit = have_session ? fore.ca_maxresponsesize : reply_size_cap;
      channel->send(c.xid, c.request, c.reads, c.registered,
                    std::min(reply_size_bound(c.ops), limit));
    }
  }

  /// Assigns free slots to waiting calls.
  void pump() {
    if (!have_session || recovering || closing || reclaiming) return;
    while (!waiting.empty() && pump_front()) {
    }
  }

  /// Sends the first waiting call on a free slot; false if none is free.
  bool pump_front() {
    {
      std::uint32_t s = 0;
      while (s < usable_slots && slots[s].busy) ++s;
      if (s == usable_slots) return false;
      auto c = std::move(waiting.front());
      waiting.pop_front();
      slots[s].busy = true;
      c->slot = s;
      nfs4::SEQUENCE4args seq;
      seq.sa_sessionid = sessionid;
      seq.sa_sequenceid = slots[s].seqid + 1;
      seq.sa_slotid = s;
      seq.sa_highest_slotid = usable_slots - 1;
      // Replies to non-idempotent calls may be needed for a retransmission; the others are
      // sent again as new requests (NFS4ERR_RETRY_UNCACHED_REP below).
      seq.sa_cachethis = c->cachethis;
      c->ops[0] = seq;
      opens.translate(c->ops);  // the stateids of opens reclaimed after a server restart
      encode(*c);
      count_write_payload(*c);
      send(std::move(c));
    }
    return true;
  }

  void send_sessionless(std::vector<nfs4::nfs_argop4> ops, compound_done done) {
    auto c = std::make_unique<call>();
    c->ops = std::move(ops);
    c->done = std::move(done);
    c->sequenced = false;
    encode(*c);
    send(std::move(c));
  }

  // ---- receiving -----------------------------------------------------------------------

  channel_events events() {
    channel_events ev;
    std::weak_ptr<impl> weak = weak_from_this();
    ev.on_reply = [weak](std::uint32_t xid, std::vector<std::byte> record, std::vector<direct_piece> direct) {
      if (auto self = weak.lock()) self->on_record(xid, std::move(record), direct);
    };
    ev.on_call_failed = [weak](std::uint32_t xid, std::error_code ec) {
      if (auto self = weak.lock()) self->on_call_failed(xid, ec);
    };
    ev.on_lost = [weak](std::error_code ec) {
      if (auto self = weak.lock()) self->connection_lost(ec);
    };
    return ev;
  }

  /// The transport refused a call (RPC-over-RDMA's RDMA_ERROR): it fails alone.
  void on_call_failed(std::uint32_t xid, std::error_code ec) {
    auto it = inflight.find(xid);
    if (it == inflight.end()) return;
    std::unique_ptr<call> c = std::move(it->second);
    inflight.erase(it);
    compound_reply empty;
    if (!c->sequenced) return c->done(ec, empty);
    finish_sequenced(std::move(c), ec, empty);
  }

  /// A whole reply: `record` less the READ payloads `direct` lists (in record order), which
  /// are in the call's read targets.
  void on_record(std::uint32_t xid, std::vector<std::byte> record, const std::vector<direct_piece>& direct) {
    auto it = inflight.find(xid);
    if (it == inflight.end()) return;  // a reply to a call already failed (closing): drop it
    std::unique_ptr<call> c = std::move(it->second);
    inflight.erase(it);
    compound_reply reply;
    reply.buffer = std::move(record);
    std::error_code ec;
    try {
      xdr::decoder d(reply.buffer);
      auto h = rpc::decode_reply(d);
      if (!h.is_success()) throw rpc::reply_error(h);
      reply.res.status = static_cast<nfsstat4>(d.get_u32());
      reply.res.tag = d.get_string(nfs4::NFS4_OPAQUE_LIMIT);
      std::uint32_t n = d.get_count(1024, 4);
      auto piece = direct.begin();
      std::size_t reads = 0;  // READ results decoded so far
      for (std::uint32_t i = 0; i < n; ++i) {
        // A READ result is opnum, status, eof and length (16 bytes), then the payload.
        bool placed_here = false;
        if (piece != direct.end() && piece->at != direct_piece::anywhere) {
          placed_here = d.position() + 16 == piece->at;
        } else if (piece != direct.end()) {
          xdr::decoder peek = d;
          placed_here = reads == piece->read_index && peek.remaining() >= 4 &&
                        peek.get_u32() == static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_READ);
        }
        if (placed_here) {
          nfs4::READ4res r;
          if (d.get_u32() != static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_READ) || reads != piece->read_index ||
              !c->reads || piece->read_index >= c->reads->targets.size())
            throw xdr::decode_error("misplaced READ payload");
          r.status = static_cast<nfsstat4>(d.get_u32());
          r.resok4.eof = d.get_bool();
          if (r.status != nfsstat4::NFS4_OK || d.get_u32() != piece->len ||
              piece->len > c->reads->targets[piece->read_index].size())
            throw xdr::decode_error("misplaced READ payload");
          r.resok4.data = c->reads->targets[piece->read_index].first(piece->len);
          d.skip(piece->skip);
          reply.res.resarray.push_back(std::move(r));
          reply.placed.push_back(true);
          ++piece;
        } else {
          reply.res.resarray.push_back(nfs4::decode_resop(d));
          reply.placed.push_back(false);
        }
        if (std::holds_alternative<nfs4::READ4res>(reply.res.resarray.back())) ++reads;
      }
      if (piece != direct.end()) throw xdr::decode_error("READ payload without its result");
    } catch (const rpc::reply_error&) {
      ec = make_error_code(errc::protocol_error);
    } catch (const xdr::decode_error&) {
      ec = make_error_code(errc::protocol_error);
    }
    if (!c->sequenced) {
      c->done(ec, reply);
      return;
    }
    finish_sequenced(std::move(c), ec, reply);
  }

  void finish_sequenced(std::unique_ptr<call> c, std::error_code ec, compound_reply& reply) {
    slot_state& sl = slots[c->slot];
    const nfs4::SEQUENCE4res* seq =
        reply.res.resarray.empty() ? nullptr : std::get_if<nfs4::SEQUENCE4res>(&reply.res.resarray[0]);
    // A COMPOUND refused whole, before its SEQUENCE ran (the slot is unchanged): its status.
    if (!ec && seq == nullptr)
      ec = reply.res.status != nfsstat4::NFS4_OK ? std::error_code(reply.res.status) : make_error_code(errc::protocol_error);
    if (!ec && seq->status == nfsstat4::NFS4ERR_DELAY) {
      // The server is still working on this slot: the same request again, a bit later.
      auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(20));
      auto held = std::shared_ptr<call>(std::move(c));
      timer->async_wait([self = shared_from_this(), timer, held](boost::system::error_code) {
        auto again = std::make_unique<call>(std::move(*held));
        self->encode(*again);
        self->n_retrans++;
        self->send(std::move(again));
      });
      return;
    }
    if (!ec && seq->status == nfsstat4::NFS4ERR_RETRY_UNCACHED_REP && !c->cachethis) {
      // A retransmission of a call that ran but was not cached: the slot has moved on to
      // this sequence id; run the call again as the slot's next request.
      sl.seqid = std::get<nfs4::SEQUENCE4args>(c->ops[0]).sa_sequenceid;
      sl.busy = false;
      n_retrans++;
      waiting.push_front(std::move(c));
      return pump();
    }
    if (!ec && (seq->status == nfsstat4::NFS4ERR_BADSESSION || seq->status == nfsstat4::NFS4ERR_DEADSESSION)) {
      sl.busy = false;
      waiting.push_front(std::move(c));
      return recover_session();
    }
    if (!ec && seq->status == nfsstat4::NFS4_OK) {
      sl.seqid = seq->resok4.sr_sequenceid;
      std::uint32_t target = seq->resok4.sr_target_highest_slotid + 1;
      usable_slots = std::clamp<std::uint32_t>(target, 1, static_cast<std::uint32_t>(slots.size()));
      if (retry_in_grace(c, reply)) {
        sl.busy = false;
        return pump();
      }
    }
    sl.busy = false;
    c->done(ec, reply);
    pump();
  }

  // ---- connection loss, reconnection, session recovery ---------------------------------

  void connection_lost(std::error_code ec) {
    if (!connected) return;
    connected = false;
    to_write.clear();
    channel->close();
    if (closing) return;
    lost_at = clock_type::now();
    last_error = ec;
    reconnect();
  }

  void reconnect() {
    if (clock_type::now() - lost_at > cfg.reconnect_for) return fail_all(last_error);
    channel->connect([self = shared_from_this()](std::error_code ec) {
      if (self->closing) return;
      if (ec) return self->retry_reconnect();
      self->connected = true;
      self->n_reconnects++;
      self->rebind();
    });
  }

  void retry_reconnect() {
    reconnect_timer.expires_after(std::chrono::milliseconds(100));
    reconnect_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->closing) self->reconnect();
    });
  }

  /// A new connection: bind it to the session, then retransmit what was in flight on the
  /// same slots and sequence ids, so the reply cache answers what already ran.
  void rebind() {
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
  void recover_session() {
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
    for (auto& s : slots) s = slot_state{};
    establish_session(nullptr);
  }

  void establish_session(std::promise<void>* ready) {
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
      self->create_seq = res->resok4.eir_sequenceid;
      self->state_lost = (res->resok4.eir_flags & nfs4::EXCHGID4_FLAG_CONFIRMED_R) == 0;
      self->create_session(ready);
    });
  }

  /// A COMPOUND that a server in its grace period refused with NFS4ERR_GRACE (RFC 8881
  /// §8.4.2.1) before any operation with an effect ran is sent again later: after 100 ms,
  /// doubling up to 1 s, for at most two leases; after that its caller gets NFS4ERR_GRACE.
  /// Takes `c` when it does.
  bool retry_in_grace(std::unique_ptr<call>& c, const compound_reply& r) {
    if (r.res.status != nfsstat4::NFS4ERR_GRACE || r.res.resarray.size() > c->ops.size()) return false;
    const std::size_t failed = r.res.resarray.size() - 1;  // its index in ops too (SEQUENCE is 0)
    if (failed < 1 || !std::all_of(c->ops.begin() + 1, c->ops.begin() + failed, repeatable)) return false;
    const auto now = clock_type::now();
    if (c->grace_wait.count() == 0) c->grace_since = now;
    if (now - c->grace_since > 2 * lease) return false;
    c->grace_wait = std::min<std::chrono::milliseconds>(
        c->grace_wait.count() == 0 ? std::chrono::milliseconds(100) : 2 * c->grace_wait, std::chrono::seconds(1));
    auto timer = std::make_shared<asio::steady_timer>(io, c->grace_wait);
    call* parked = c.get();
    in_grace.push_back(std::move(c));
    timer->async_wait([self = shared_from_this(), timer, parked](boost::system::error_code) {
      auto it = std::find_if(self->in_grace.begin(), self->in_grace.end(),
                             [parked](const auto& p) { return p.get() == parked; });
      if (it == self->in_grace.end()) return;  // failed meanwhile (closing)
      self->waiting.push_back(std::move(*it));
      self->in_grace.erase(it);
      self->n_retrans++;
      self->pump();
    });
    return true;
  }

  void create_session(std::promise<void>* ready) {
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
      self->slots.assign(std::max<std::uint32_t>(1, self->fore.ca_maxrequests), slot_state{});
      self->usable_slots = static_cast<std::uint32_t>(self->slots.size());
      self->have_session = true;
      self->recovering = false;
      self->reclaim_opens(self->state_lost ? self->opens.all() : std::vector<open_reclaims::open>{}, 0, ready);
    });
  }

  /// The server lost this client's state (a new client record: it restarted, or the lease
  /// ran out): the files still open are reclaimed one by one, OPEN with CLAIM_PREVIOUS
  /// (RFC 8881 §8.4.2.1), then RECLAIM_COMPLETE. An open the server does not give back
  /// (NFS4ERR_NO_GRACE without a grace period, NFS4ERR_RECLAIM_BAD, ...) stays lost: I/O
  /// through it answers as before (NFS4ERR_STALE_STATEID and kin).
  void reclaim_opens(std::vector<open_reclaims::open> todo, std::size_t i, std::promise<void>* ready) {
    if (i == todo.size()) return reclaim_complete(ready);
    nfs4::OPEN4args o;
    o.share_access = todo[i].access;
    o.share_deny = nfs4::OPEN4_SHARE_DENY_NONE;
    o.owner = {clientid, todo[i].owner};
    o.openhow.opentype = nfs4::opentype4::OPEN4_NOCREATE;
    o.claim.claim = nfs4::open_claim_type4::CLAIM_PREVIOUS;
    o.claim.delegate_type = nfs4::open_delegation_type4::OPEN_DELEGATE_NONE;
    auto c = std::make_unique<call>();
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
  void reclaim_complete(std::promise<void>* ready) {
    auto c = std::make_unique<call>();
    c->ops = {nfs4::nfs_argop4{}, nfs4::RECLAIM_COMPLETE4args{false}};
    c->done = [self = shared_from_this(), ready](std::error_code, compound_reply&) {
      self->reclaiming = false;
      if (ready) ready->set_value();
    };
    reclaiming = true;
    waiting.push_front(std::move(c));
    pump_front();
  }

  void session_failed(std::error_code ec, std::promise<void>* ready) {
    recovering = false;
    if (ready) return ready->set_exception(std::make_exception_ptr(std::system_error(ec, "vnfs: session set-up")));
    fail_all(ec);
  }

  /// Completes everything queued and in flight with `ec`.
  void fail_all(std::error_code ec) {
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
    for (auto& s : slots) s.busy = false;
    for (auto& c : queued) {
      compound_reply empty;
      c->done(ec, empty);
    }
    for (auto& [xid, c] : running) {
      compound_reply empty;
      c->done(ec, empty);
    }
  }

  // ---- lease renewal -------------------------------------------------------------------

  void schedule_renewal() {
    renew_timer.expires_after(std::max<std::chrono::seconds>(std::chrono::seconds(1), lease / 3));
    renew_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closing) return;
      if (clock_type::now() - self->last_send >= self->lease / 3 && self->have_session && self->waiting.empty()) {
        auto c = std::make_unique<call>();
        c->ops.resize(1);
        c->done = [](std::error_code, compound_reply&) {};
        self->waiting.push_back(std::move(c));
        self->pump();
      }
      self->schedule_renewal();
    });
  }
};

session_engine::session_engine(settings s) : impl_(std::make_shared<impl>(std::move(s))) {
  auto& m = *impl_;
  m.owner = "vnfs-client-" + std::to_string(::getpid()) + "-" +
            std::to_string(reinterpret_cast<std::uintptr_t>(impl_.get()));
  m.boot_verifier = static_cast<std::uint64_t>(clock_type::now().time_since_epoch().count());
  wire_counters wc{m.n_sent, m.n_received, m.n_direct, m.n_copied};
  m.channel = m.cfg.rdma_provider.empty()
                  ? make_tcp_channel(m.io, m.cfg.host, m.cfg.port, m.events(), wc)
                  : make_rdma_channel(m.io, m.cfg.rdma_provider, m.cfg.host, m.cfg.port, m.events(), wc);
  // Connect on this thread (the I/O thread does not run yet), bounded by connect_timeout.
  std::error_code ec;
  bool done = false;
  m.channel->connect([&](std::error_code e) {
    ec = e;
    done = true;
  });
  // run_one_until, not run_for: the work guard keeps the context busy until the deadline.
  const auto deadline = clock_type::now() + m.cfg.connect_timeout;
  while (!done && m.io.run_one_until(deadline) != 0) {
  }
  if (!done) {
    m.channel->close();
    throw std::system_error(make_error_code(std::errc::timed_out), "vnfs: connect to " + m.cfg.host);
  }
  if (ec) throw std::system_error(ec, "vnfs: connect to " + m.cfg.host + ":" + std::to_string(m.cfg.port));
  m.io.restart();
  m.connected = true;

  std::promise<void> ready;
  auto fut = ready.get_future();
  m.thread = std::thread([this] { impl_->io.run(); });
  asio::post(m.io, [&m, &ready] {
    m.establish_session(&ready);
    m.schedule_renewal();
  });
  if (fut.wait_for(m.cfg.connect_timeout) != std::future_status::ready) {
    close();
    throw std::system_error(make_error_code(std::errc::timed_out), "vnfs: session set-up");
  }
  try {
    fut.get();
  } catch (...) {
    close();
    throw;
  }
}

session_engine::~session_engine() { close(); }

void session_engine::submit(std::vector<nfs4::nfs_argop4> ops, compound_done done,
                            std::vector<std::span<std::byte>> read_targets, std::optional<bool> cachethis,
                            std::vector<std::shared_ptr<registration>> registered) {
  std::unique_lock lock(impl_->submit_mu);
  if (impl_->stopped) {  // the I/O thread is gone: complete here, exactly once
    lock.unlock();
    compound_reply empty;
    done(make_error_code(errc::closed), empty);
    return;
  }
  auto c = std::make_unique<call>();
  c->ops.reserve(ops.size() + 1);
  c->ops.emplace_back();  // SEQUENCE, filled when a slot is assigned
  for (auto& op : ops) c->ops.push_back(std::move(op));
  c->done = std::move(done);
  c->read_targets = std::move(read_targets);
  c->cachethis = cachethis.value_or(!idempotent(c->ops));
  c->registered = std::move(registered);
  asio::post(impl_->io, [self = impl_, c = std::shared_ptr<call>(std::move(c))]() mutable {
    auto owned = std::make_unique<call>(std::move(*c));
    if (self->closing) {
      compound_reply empty;
      owned->done(make_error_code(errc::closed), empty);
      return;
    }
    self->waiting.push_back(std::move(owned));
    self->pump();
  });
}

void session_engine::close() {
  auto& m = *impl_;
  if (!m.thread.joinable()) return;
  std::promise<void> finished;
  auto fut = finished.get_future();
  asio::post(m.io, [&m, &finished] {
    m.closing = true;
    m.renew_timer.cancel();
    m.reconnect_timer.cancel();
    m.fail_all(make_error_code(errc::closed));
    if (!m.have_session || !m.connected) return finished.set_value();
    nfs4::DESTROY_SESSION4args ds{m.sessionid};
    m.send_sessionless({ds}, [&m, &finished](std::error_code, compound_reply&) {
      nfs4::DESTROY_CLIENTID4args dc{m.clientid};
      m.send_sessionless({dc}, [&finished](std::error_code, compound_reply&) { finished.set_value(); });
    });
  });
  if (fut.wait_for(m.cfg.connect_timeout) != std::future_status::ready) {
    // The server did not answer in time; the session will expire with its lease.
  }
  asio::post(m.io, [&m] {
    m.connected = false;
    m.channel->close();
    m.work.reset();
    m.io.stop();
  });
  m.thread.join();
  // Submissions that raced with close(): from now on submit() completes them itself; those
  // already posted run here and fail with errc::closed.
  {
    std::lock_guard lock(m.submit_mu);
    m.stopped = true;
  }
  m.io.restart();
  m.io.poll();
}

client_stats session_engine::stats() const {
  const auto& m = *impl_;
  client_stats s;
  s.compounds = m.n_compounds;
  s.operations = m.n_ops;
  s.bytes_sent = m.n_sent;
  s.bytes_received = m.n_received;
  s.payload_bytes_copied = m.n_copied;
  s.payload_bytes_direct = m.n_direct;
  s.reconnects = m.n_reconnects;
  s.retransmissions = m.n_retrans;
  return s;
}

nfs4::clientid4 session_engine::client_id() const { return impl_->clientid; }

nfs4::channel_attrs4 session_engine::limits() const {
  std::lock_guard lock(impl_->limits_mu);
  nfs4::channel_attrs4 l = impl_->fore;
  l.ca_maxoperations = std::min(l.ca_maxoperations, impl_->ops_cap);
  return l;
}

void session_engine::limit_operations(std::uint32_t n) {
  std::lock_guard lock(impl_->limits_mu);
  impl_->ops_cap = std::min(impl_->ops_cap, std::max<std::uint32_t>(n, 2));
}

void session_engine::note_copied(std::size_t n) { impl_->n_copied += n; }

open_reclaims& session_engine::reclaims() { return impl_->opens; }

void session_engine::set_lease(std::chrono::seconds lease) {
  // Re-arms the renewal timer: its first wait was for the default lease.
  asio::post(impl_->io, [self = impl_, lease] {
    self->lease = lease;
    self->schedule_renewal();
  });
}

}  // namespace vnfs::detail
