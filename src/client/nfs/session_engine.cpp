// vnfs client, nfs backend: session_engine's front (submit, close, stats) and the path of a
// call: a free slot and its SEQUENCE, the encoded call to the channel, the reply back and
// what its SEQUENCE result says of the slot. The other concerns: session_engine_impl.hpp.
#include "client/nfs/session_engine_impl.hpp"

#include <algorithm>

#include "client/result_size.hpp"
#include "vnfs/error.hpp"

namespace vnfs::detail {

using nfs4::nfsstat4;

void session_engine::impl::encode(session_call& c) {
  const std::uint32_t xid = next_xid++;
  if (next_xid == 0) next_xid = 1;
  encode_call(c, xid, credential);
}

/// WRITE payload leaves by reference (scatter-gather) except tiny pieces the encoder
/// copies; the counters say which.
void session_engine::impl::count_write_payload(const session_call& c) {
  const std::size_t payload = write_payload_bytes(c.ops);
  n_direct += c.request->referenced_bytes();
  n_copied += payload - c.request->referenced_bytes();
}

void session_engine::impl::accept(std::unique_ptr<session_call> c) {
  if (closing) {
    compound_reply empty;
    c->done(make_error_code(errc::closed), empty);
    return;
  }
  waiting.push_back(std::move(c));
  pump();
}

void session_engine::impl::send(std::unique_ptr<session_call> c) {
  std::uint32_t xid = c->xid;
  n_compounds++;
  n_ops += c->ops.size();
  inflight[xid] = std::move(c);
  if (connected) to_write.push_back(xid);
  last_send = clock_type::now();
  write_next();
}

void session_engine::impl::write_next() {
  while (connected && !to_write.empty()) {
    auto it = inflight.find(to_write.front());
    to_write.pop_front();
    if (it == inflight.end()) continue;  // answered or failed meanwhile
    session_call& c = *it->second;
    std::size_t limit = have_session ? fore.ca_maxresponsesize : reply_size_cap;
    // A new decoder for each transmission: one a lost connection left half-way is not reused.
    c.decoder = c.reads ? std::make_shared<reply_decoder>(c.reads) : nullptr;
    if (c.sent++ == 0 && c.first_sent == std::chrono::steady_clock::time_point{})
      c.first_sent = std::chrono::steady_clock::now();
    channel->send(c.xid, c.request, c.decoder, c.registered,
                  std::min(reply_size_bound(c.ops), limit));
  }
}

/// Assigns free slots to waiting calls.
void session_engine::impl::pump() {
  if (!have_session || recovering || closing || reclaiming) return;
  while (!waiting.empty() && !reclaiming && pump_front()) {
  }
}

/// Sends the first waiting call on a free slot; false if none is free.
bool session_engine::impl::pump_front() {
  const std::optional<std::uint32_t> s = slots.acquire();
  if (!s) return false;
  auto c = std::move(waiting.front());
  waiting.pop_front();
  if (c->riders == 0 && !c->length_probe && (reclaim_complete_due || lease_due) && !attach_riders(*c)) {
    // RECLAIM_COMPLETE cannot ride on c (no room, or c is a transaction's): it goes alone, first.
    slots.release(*s);
    waiting.push_front(std::move(c));
    reclaim_complete(nullptr);
    return false;
  }
  c->slot = *s;
  // Replies to non-idempotent calls may be needed for a retransmission; the others are
  // sent again as new requests (NFS4ERR_RETRY_UNCACHED_REP in finish_sequenced).
  c->ops[0] = slots.sequence(*s, sessionid, c->cachethis);
  opens.translate(c->ops);  // the stateids of opens reclaimed after a server restart
  encode(*c);
  count_write_payload(*c);
  send(std::move(c));
  return true;
}

void session_engine::impl::send_sessionless(std::vector<nfs4::nfs_argop4> ops, compound_done done) {
  auto c = std::make_unique<session_call>();
  c->ops = std::move(ops);
  c->done = std::move(done);
  c->sequenced = false;
  encode(*c);
  send(std::move(c));
}

transport::channel_events session_engine::impl::events() {
  transport::channel_events ev;
  std::weak_ptr<impl> weak = weak_from_this();
  ev.on_reply = [weak](std::uint32_t xid, std::vector<std::byte> record) {
    if (auto self = weak.lock()) self->on_record(xid, std::move(record));
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
void session_engine::impl::on_call_failed(std::uint32_t xid, std::error_code ec) {
  auto it = inflight.find(xid);
  if (it == inflight.end()) return;
  std::unique_ptr<session_call> c = std::move(it->second);
  inflight.erase(it);
  compound_reply empty;
  if (!c->sequenced) return c->done(ec, empty);
  finish_sequenced(std::move(c), ec, empty);
}

/// A whole reply: `record` less the READ payloads the channel placed, which the call's
/// decoder (the channel's guide) knows of, having decoded the results before them.
void session_engine::impl::on_record(std::uint32_t xid, std::vector<std::byte> record) {
  replied_since_connect = true;
  if (caller_runs) n_caller_replies++;
  submitted.look_soon();  // its caller may submit the next call at once
  auto it = inflight.find(xid);
  if (it == inflight.end()) return;  // a reply to a call already failed (closing): drop it
  std::unique_ptr<session_call> c = std::move(it->second);
  inflight.erase(it);
  compound_reply reply;
  reply_decoder unguided;  // a call without read targets: the record holds the whole reply
  reply_decoder& decoder = c->decoder ? *c->decoder : unguided;
  const std::error_code ec = decoder.finish(std::move(record), reply);
  if (!c->sequenced) {
    c->done(ec, reply);
    return;
  }
  finish_sequenced(std::move(c), ec, reply);
}

void session_engine::impl::finish_sequenced(std::unique_ptr<session_call> c, std::error_code ec, compound_reply& reply) {
  if (!ec && take_length_refusal(c, reply)) return pump();
  const nfs4::SEQUENCE4res* seq =
      reply.res.resarray.empty() ? nullptr : std::get_if<nfs4::SEQUENCE4res>(&reply.res.resarray[0]);
  // A COMPOUND refused whole, before its SEQUENCE ran (the slot is unchanged): its status.
  if (!ec && seq == nullptr)
    ec = reply.res.status != nfsstat4::NFS4_OK ? std::error_code(reply.res.status) : make_error_code(errc::protocol_error);
  if (!ec && seq->status == nfsstat4::NFS4ERR_DELAY) {
    // The server is still working on this slot: the same request again, a bit later.
    auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(20));
    auto held = std::shared_ptr<session_call>(std::move(c));
    timer->async_wait([self = shared_from_this(), timer, held](boost::system::error_code) {
      auto again = std::make_unique<session_call>(std::move(*held));
      self->encode(*again);
      self->n_retrans++;
      self->send(std::move(again));
    });
    return;
  }
  if (!ec && seq->status == nfsstat4::NFS4ERR_RETRY_UNCACHED_REP && !c->cachethis) {
    // A retransmission of a call that ran but was not cached: the slot has moved on to
    // this sequence id; run the call again as the slot's next request.
    slots.moved_on(c->slot, std::get<nfs4::SEQUENCE4args>(c->ops[0]).sa_sequenceid);
    slots.release(c->slot);
    n_retrans++;
    waiting.push_front(std::move(c));
    return pump();
  }
  if (!ec && (seq->status == nfsstat4::NFS4ERR_BADSESSION || seq->status == nfsstat4::NFS4ERR_DEADSESSION)) {
    slots.release(c->slot);
    take_back_riders(*c);  // the new session's set-up decides what rides again
    // This transmission did not run; an earlier one (before a reconnection) may have.
    const bool may_have_run = c->sent > 1;
    requeue(std::move(c), may_have_run);
    return recover_session();
  }
  if (!ec && seq->status == nfsstat4::NFS4_OK) {
    slots.completed(c->slot, seq->resok4.sr_sequenceid, seq->resok4.sr_target_highest_slotid);
    ops_accepted = std::max(ops_accepted, static_cast<std::uint32_t>(c->ops.size()));
    if (c->riders != 0 && !detach_riders(*c, reply)) {
      slots.release(c->slot);
      waiting.push_front(std::move(c));
      return pump();
    }
    const std::uint32_t slot = c->slot;
    if (retry_later(c, reply)) {
      slots.release(slot);
      return pump();
    }
  }
  slots.release(c->slot);
  if (c->riders != 0) take_back_riders(*c);  // they did not run: the next call carries them
  c->done(ec, reply);
  pump();
}

bool session_engine::impl::retry_later(std::unique_ptr<session_call>& c, const compound_reply& r) {
  using std::chrono::milliseconds;
  // NFS4ERR_DELAY at the operation after SEQUENCE: nothing ran (vnfsd while another client's
  // transaction is open, docs/transactions.md).
  const bool delayed = r.res.status == nfsstat4::NFS4ERR_DELAY && r.res.resarray.size() == 2 && c->ops.size() >= 2;
  if (!delayed && (r.res.status != nfsstat4::NFS4ERR_GRACE || r.res.resarray.size() > c->ops.size())) return false;
  const std::size_t failed = r.res.resarray.size() - 1;  // its index in ops too (SEQUENCE is 0)
  // Everything before the refused operation changed nothing. A VNFS_TXN that joins an open
  // transaction or makes a single-COMPOUND one counts as such: a COMPOUND that fails having
  // changed nothing leaves the joined transaction as it was and rolls a single one back
  // whole (docs/transactions.md), so sent again it runs as the first time.
  const auto nothing_changed = [](const nfs4::nfs_argop4& op) {
    const auto* t = std::get_if<nfs4::VNFS_TXN4args>(&op);
    if (t == nullptr) return repeatable(op);
    const auto action = static_cast<nfs4::txn_action4>(t->action);
    return action == nfs4::txn_action4::TXN_JOIN || action == nfs4::txn_action4::TXN_ONE_COMPOUND;
  };
  // A TXN_BEGIN that ran opened the transaction, which the refusal left open and empty: sent
  // again, the COMPOUND joins it.
  auto* begin = failed >= 2 ? std::get_if<nfs4::VNFS_TXN4args>(&c->ops[1]) : nullptr;
  const bool begun = begin != nullptr && begin->action == static_cast<std::uint32_t>(nfs4::txn_action4::TXN_BEGIN) &&
                     nfs4::status_of(r.res.resarray[1]) == nfsstat4::NFS4_OK;
  if (failed < 1 ||
      !std::all_of(c->ops.begin() + (begun ? 2 : 1), c->ops.begin() + static_cast<std::ptrdiff_t>(failed), nothing_changed))
    return false;
  if (begun) *begin = nfs4::VNFS_TXN4args{static_cast<std::uint32_t>(nfs4::txn_action4::TXN_JOIN), begin->txnid, 0, 0};
  const auto now = clock_type::now();
  if (c->grace_wait.count() == 0) c->grace_since = now;
  if (now - c->grace_since > (delayed ? std::chrono::duration_cast<clock_type::duration>(max_delayed) : 2 * lease))
    return false;
  c->grace_wait = delayed ? std::min<milliseconds>(c->grace_wait.count() == 0 ? milliseconds(2) : 2 * c->grace_wait, milliseconds(64))
                          : std::min<milliseconds>(c->grace_wait.count() == 0 ? milliseconds(100) : 2 * c->grace_wait,
                                                   std::chrono::seconds(1));
  const milliseconds delay = c->grace_wait;
  park(std::move(c), delay, true);
  return true;
}

void session_engine::impl::park(std::unique_ptr<session_call> c, std::chrono::milliseconds delay, bool again) {
  auto timer = std::make_shared<asio::steady_timer>(io, delay);
  session_call* parked = c.get();
  in_grace.push_back(std::move(c));
  timer->async_wait([self = shared_from_this(), timer, parked, again](boost::system::error_code) {
    auto it = std::find_if(self->in_grace.begin(), self->in_grace.end(),
                           [parked](const auto& p) { return p.get() == parked; });
    if (it == self->in_grace.end()) return;  // failed meanwhile (closing)
    self->waiting.push_back(std::move(*it));
    self->in_grace.erase(it);
    if (again) self->n_retrans++;
    self->pump();
  });
}

// ---- who runs the engine --------------------------------------------------------------
//
// One thread at a time runs `io`, and with it the whole engine: the I/O thread, or an
// application thread waiting for a synchronous call (caller_drive.hpp), which then sends,
// receives and completes on its own thread and sleeps once per round trip. A caller takes
// over by stopping the I/O thread's run (one wake-up of it, at the first of a series of
// calls); when it has its completion it leaves `io` to nobody, and the I/O thread, which
// looks every idle_check, takes over again once no caller has driven for that long, or at
// once when the caller left work that must not wait (needs_io_thread) or another thread
// submitted meanwhile (wake). While a caller drives, it also runs the timers (lease renewal)
// and whatever other threads submit: their completions may then run on the caller's thread.

void session_engine::impl::run_io_thread() {
  std::unique_lock lock(drive_mu);
  std::uint64_t seen = drives;
  for (;;) {
    if (ended) return;
    if (running == runner::nobody && !taking && (io_thread_wanted || drives == seen)) {
      running = runner::io_thread;
      io_thread_wanted = false;
      io.restart();  // under the lock: a caller's stop() cannot come before it
      lock.unlock();
      io.run();  // until a caller stops it, or close() ends it
      lock.lock();
      running = runner::nobody;
      drive_cv.notify_all();  // the caller waiting to take over
    }
    seen = drives;
    drive_cv.wait_for(lock, idle_check);
  }
}

bool session_engine::impl::drive(const std::function<bool()>& done, std::uint32_t own_calls) {
  {
    std::unique_lock lock(drive_mu);
    if (closing_requested || ended || taking || running == runner::caller) return false;
    // Other threads' calls are open: the I/O thread serves them all, as it did before callers
    // drove (else the runner would change hands, waking the I/O thread, at every call).
    if (calls_open.load(std::memory_order_relaxed) > own_calls) return false;
    ++drives;
    if (running == runner::io_thread) {
      taking = true;
      io.stop();
      drive_cv.wait(lock, [this] { return running != runner::io_thread; });
      taking = false;
      if (closing_requested || ended) return false;  // the caller wakes the I/O thread
    }
    running = runner::caller;
    io.restart();
  }
  caller_runs = true;
  // `done` may also come true on another thread (part of the call completed off the
  // engine): interrupt() then wakes this loop; the bounded wait is the safety net.
  while (!done() && !io.stopped()) io.run_one_for(std::chrono::milliseconds(10));
  if (!io.stopped()) io.poll();  // what the last handlers queued (a next COMPOUND, a look at the hand-off)
  caller_runs = false;
  bool wanted;
  {
    std::lock_guard lock(drive_mu);
    running = runner::nobody;
    wanted = closing_requested || ended || needs_io_thread();
    io_thread_wanted = io_thread_wanted || wanted;
  }
  if (wanted) drive_cv.notify_all();
  return true;
}

void session_engine::impl::wake() {
  {
    std::lock_guard lock(drive_mu);
    if (running != runner::nobody) return;  // a runner sees the hand-off's bell
    io_thread_wanted = true;
  }
  drive_cv.notify_all();
}

void session_engine::impl::interrupt() {
  if (!io.get_executor().running_in_this_thread()) asio::post(io, [] {});
}

bool session_engine::impl::needs_io_thread() {
  return !waiting.empty() || !inflight.empty() || !in_grace.empty() || !length_refused.empty() || !connected ||
         recovering || reclaiming || probing || submitted.pending();
}

// ---- the front ------------------------------------------------------------------------

session_engine::session_engine(settings s) : impl_(std::make_shared<impl>(std::move(s))) {
  auto& m = *impl_;
  m.owner = "vnfs-client-" + std::to_string(::getpid()) + "-" +
            std::to_string(reinterpret_cast<std::uintptr_t>(impl_.get()));
  m.boot_verifier = static_cast<std::uint64_t>(clock_type::now().time_since_epoch().count());
  transport::wire_counters wc{m.n_sent, m.n_received, m.n_direct, m.n_copied};
  m.channel = m.cfg.rdma_provider.empty()
                  ? transport::make_tcp_channel(m.io, m.cfg.host, m.cfg.port, m.events(), wc)
                  : transport::make_rdma_channel(m.io, m.cfg.rdma_provider, m.cfg.host, m.cfg.port, m.events(), wc);
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
  m.submitted.start();

  m.lease_due = m.cfg.lease_from_first_call;
  std::promise<void> ready;
  auto fut = ready.get_future();
  m.thread = std::thread([this] { impl_->run_io_thread(); });
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
                            registered_regions registered) {
  auto c = std::make_unique<session_call>();
  c->ops.reserve(ops.size() + 1);
  c->ops.emplace_back();  // SEQUENCE, filled when a slot is assigned
  for (auto& op : ops) {
    // PUTFH of the empty filehandle names the server's root (see submit's contract).
    const auto* put = std::get_if<nfs4::PUTFH4args>(&op);
    if (put != nullptr && put->object.empty()) c->ops.emplace_back(nfs4::PUTROOTFH4args{});
    else c->ops.push_back(std::move(op));
  }
  // Counted open until `done` has run (drive: a caller drives only its own calls).
  impl_->calls_open.fetch_add(1, std::memory_order_relaxed);
  c->done = [m = impl_.get(), done = std::move(done)](std::error_code ec, compound_reply& r) {
    m->calls_open.fetch_sub(1, std::memory_order_relaxed);
    done(ec, r);
  };
  c->read_targets = std::move(read_targets);
  c->cachethis = cachethis.value_or(!idempotent(c->ops));
  c->registered = std::move(registered);
  if (impl_->io.get_executor().running_in_this_thread()) {
    // A completion submitting more: after the handler that runs it, as every other call.
    asio::post(impl_->io, [self = impl_, c = std::shared_ptr<session_call>(std::move(c))]() mutable {
      self->accept(std::make_unique<session_call>(std::move(*c)));
    });
    return;
  }
  if (!impl_->submitted.push(c)) {  // the I/O thread is gone: complete here, exactly once
    compound_reply empty;
    c->done(make_error_code(errc::closed), empty);
    return;
  }
  // A synchronous call's waiter runs the engine itself if it can; anything else needs a runner.
  sync_start* sync = sync_start::current();
  if (sync == nullptr || !sync->note(impl_)) impl_->wake();
}

void session_engine::close() {
  auto& m = *impl_;
  if (!m.thread.joinable()) return;
  {
    // From now on only the I/O thread runs the engine: it takes over as soon as a caller
    // that is driving now has its completion (which the posts below bring about).
    std::lock_guard lock(m.drive_mu);
    m.closing_requested = true;
    m.io_thread_wanted = true;
  }
  m.drive_cv.notify_all();
  std::promise<void> finished;
  auto fut = finished.get_future();
  asio::post(m.io, [&m, &finished] {
    m.closing = true;
    m.renew_timer.cancel();
    m.reconnect_timer.cancel();
    m.fail_all(make_error_code(errc::closed));
    if (!m.have_session || !m.connected) return finished.set_value();
    m.destroy([&finished] { finished.set_value(); });
  });
  if (fut.wait_for(m.cfg.connect_timeout) != std::future_status::ready) {
    // The server did not answer in time; the session will expire with its lease.
  }
  asio::post(m.io, [&m] {
    m.connected = false;
    m.channel->close();
    m.work.reset();
    {
      std::lock_guard lock(m.drive_mu);
      m.ended = true;
    }
    m.io.stop();
  });
  m.thread.join();
  {
    // A caller that ran the last handlers is still letting go of `io`.
    std::unique_lock lock(m.drive_mu);
    m.drive_cv.wait(lock, [&m] { return m.running == impl::runner::nobody; });
  }
  // Submissions that raced with close(): from now on submit() completes them itself; those
  // already handed over fail here, and those posted run below and fail with errc::closed.
  for (auto& c : m.submitted.close()) m.accept(std::move(c));
  m.io.restart();
  m.io.poll();
  // A completion run above may have queued one more call (a reconnection's sessionless
  // call, a DESTROY after the connection was lost); its callback holds the engine, so it
  // fails here too, or the engine would never be freed.
  for (int round = 0;
       round < 8 && !(m.waiting.empty() && m.inflight.empty() && m.in_grace.empty() && m.length_refused.empty());
       ++round)
    m.fail_all(make_error_code(errc::closed));
}

bool session_engine::transactions_known() const { return impl_->txn_known.load(std::memory_order_relaxed); }
void session_engine::note_transactions() { impl_->txn_known.store(true, std::memory_order_relaxed); }

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
  s.replies_to_waiting_callers = m.n_caller_replies;
  return s;
}

nfs4::clientid4 session_engine::client_id() const { return impl_->clientid; }

nfs4::channel_attrs4 session_engine::limits() const {
  nfs4::channel_attrs4 l;
  {
    std::lock_guard lock(impl_->limits_mu);
    l = impl_->fore;
  }
  l.ca_maxoperations = impl_->operation_limit();
  return l;
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
