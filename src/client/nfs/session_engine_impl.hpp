// vnfs client, nfs backend: the state of one session_engine and the steps that change it,
// shared by the files that each hold one concern:
//   session_engine.cpp     the front (submit, close, stats) and a call's path: a slot, the
//                          channel, the reply, the slot again
//   session_call.*         a call and its encoding
//   slot_table.hpp         the slot table
//   session_lifecycle.cpp  EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE, lease renewal,
//                          DESTROY_SESSION and DESTROY_CLIENTID
//   session_recovery.cpp   connection loss, reconnection with retransmission on the same
//                          slots, a session the server lost, failing what cannot go on
//   operation_limit.cpp    the operations per COMPOUND the server really takes
// Everything but the counters, the limits, `submitted` and the drive state is touched only
// by the thread running `io`: the I/O thread, or a caller driving it (caller_drive.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "transport/rpc_channel.hpp"
#include "client/caller_drive.hpp"
#include "client/nfs/io_handoff.hpp"
#include "client/nfs/session_call.hpp"
#include "client/nfs/session_engine.hpp"
#include "client/nfs/slot_table.hpp"

namespace vnfs::detail {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

struct session_engine::impl : drivable, std::enable_shared_from_this<impl> {
  explicit impl(settings s)
      : cfg(std::move(s)), work(io.get_executor()), credential(authsys_credential(cfg.uid, cfg.gid, cfg.gids)) {}

  settings cfg;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::thread thread;
  std::shared_ptr<transport::rpc_channel> channel;  // TCP or RPC-over-RDMA (settings::rdma_provider)
  asio::steady_timer renew_timer{io};
  asio::steady_timer reconnect_timer{io};

  // Session state: touched only on the I/O thread once it runs.
  nfs4::clientid4 clientid = 0;
  nfs4::sequenceid4 create_seq = 0;
  nfs4::sessionid4 sessionid{};
  bool have_session = false;
  slot_table slots;
  std::deque<std::unique_ptr<session_call>> waiting;
  std::map<std::uint32_t, std::unique_ptr<session_call>> inflight;
  std::deque<std::uint32_t> to_write;  // xids
  bool connected = false;
  bool recovering = false;
  bool closing = false;
  std::uint32_t next_xid = 1;
  clock_type::time_point last_send = clock_type::now();
  clock_type::time_point lost_at{};   // when the outage began (see connection_lost)
  bool replied_since_connect = false;  // a reply arrived on the current connection
  std::chrono::seconds lease{90};
  std::string owner;
  rpc::opaque_auth credential;      // AUTH_SYS, of cfg's uid, gid and groups
  std::uint64_t boot_verifier = 0;  // EXCHANGE_ID's co_verifier: this client instance
  nfs4::channel_attrs4 fore{};      // as CREATE_SESSION granted (written under limits_mu)
  mutable std::mutex limits_mu;     // fore is read by other threads (limits())
  std::uint32_t ops_cap = UINT32_MAX;  // operations per COMPOUND the server really takes (limits_mu)
  std::uint32_t ops_accepted = 0;  // the most operations of a COMPOUND whose SEQUENCE the server ran
  // The search for the real limit after a COMPOUND was refused for its length
  // (operation_limit.cpp): the limit is at least probe_lo and below probe_hi.
  bool probing = false;
  std::uint32_t probe_lo = 0, probe_hi = 0;
  std::vector<std::unique_ptr<session_call>> length_refused;  // refused for their length, waiting for the limit
  std::error_code last_error;       // of the lost connection, for what fails after retries
  bool reclaiming = false;  // reclaims or RECLAIM_COMPLETE of a new client ID in flight: others wait
  bool reclaim_complete_due = false;  // a new client ID's RECLAIM_COMPLETE rides on the next COMPOUND
  bool lease_due = false;  // the lease time is asked for on the next COMPOUND (settings::lease_from_first_call)
  bool state_lost = false;  // the last EXCHANGE_ID made a new client record: reclaim the opens
  open_reclaims opens;
  std::list<std::unique_ptr<session_call>> in_grace;  // waiting out a server's grace period or delay (retry_later), or a running transaction (ask_outcome)

  /// Calls submitted on other threads, on their way to `waiting` (accept). Closed when the
  /// I/O thread has ended: submit() then fails the call itself.
  io_handoff<std::unique_ptr<session_call>> submitted{io, [this](std::vector<std::unique_ptr<session_call>>& calls) {
    for (auto& c : calls) accept(std::move(c));
  }};

  // Who runs `io` (session_engine.cpp, "who runs the engine"): one thread at a time, the
  // I/O thread or a caller waiting for a synchronous call. All guarded by drive_mu.
  enum class runner { io_thread, nobody, caller };
  std::mutex drive_mu;
  std::condition_variable drive_cv;  // the I/O thread's, and a caller's waiting for it to step aside
  runner running = runner::nobody;  // the I/O thread takes over as it starts
  bool taking = false;             // a caller has stopped the I/O thread and waits to run `io`
  bool io_thread_wanted = true;    // work nobody runs: the I/O thread takes over at once
  bool closing_requested = false;  // close() began: callers drive no more
  bool ended = false;             // the I/O thread is to return
  std::uint64_t drives = 0;       // callers' drives so far: the I/O thread takes over after a pause
  bool caller_runs = false;  // not guarded: set and read only by the caller running `io`
  /// How often the I/O thread, stepped aside, looks whether callers still drive.
  static constexpr std::chrono::milliseconds idle_check{2};
  void run_io_thread();
  bool drive(const std::function<bool()>& done, std::uint32_t own_calls) override;
  /// Calls submitted and not completed yet (their `done` has not run), of every thread.
  std::atomic<std::uint32_t> calls_open{0};
  void wake() override;
  void interrupt() override;
  /// Under drive_mu, by the runner that stops: whether what it leaves needs the I/O thread
  /// now (calls queued, in flight or waiting to go again, a connection to mend).
  bool needs_io_thread();

  // Counters, read from any thread.
  std::atomic<bool> txn_known{false};  ///< transactions_known()
  std::atomic<std::uint64_t> n_compounds{0}, n_ops{0}, n_sent{0}, n_received{0}, n_copied{0},
      n_direct{0}, n_reconnects{0}, n_retrans{0}, n_caller_replies{0};

  // ---- a call's path (session_engine.cpp) ------------------------------------------------
  void accept(std::unique_ptr<session_call> c);
  void encode(session_call& c);
  void count_write_payload(const session_call& c);
  void send(std::unique_ptr<session_call> c);
  void write_next();
  void pump();
  bool pump_front();
  void send_sessionless(std::vector<nfs4::nfs_argop4> ops, compound_done done);
  transport::channel_events events();
  void on_call_failed(std::uint32_t xid, std::error_code ec);
  void on_record(std::uint32_t xid, std::vector<std::byte> record);
  void finish_sequenced(std::unique_ptr<session_call> c, std::error_code ec, compound_reply& reply);
  /// A COMPOUND that a server in its grace period refused with NFS4ERR_GRACE (RFC 8881
  /// §8.4.2.1) before any operation with an effect ran is sent again later: after 100 ms,
  /// doubling up to 1 s, for at most two leases; after that its caller gets NFS4ERR_GRACE.
  /// Takes `c` when it does.
  /// Also a call refused with NFS4ERR_DELAY at its first operation after SEQUENCE (nothing
  /// ran: another client's transaction is open) goes again after 2 ms, doubling up to
  /// 64 ms, for at most max_delayed; after that its caller gets NFS4ERR_DELAY.
  bool retry_later(std::unique_ptr<session_call>& c, const compound_reply& r);
  /// Keeps `c` in in_grace for `delay`, then queues it (fail_all completes it meanwhile);
  /// counted as a retransmission then if `again`.
  void park(std::unique_ptr<session_call> c, std::chrono::milliseconds delay, bool again);
  static constexpr std::chrono::seconds max_delayed{300};

  // ---- the session's life cycle (session_lifecycle.cpp) ----------------------------------
  void establish_session(std::promise<void>* ready);
  void create_session(std::promise<void>* ready);
  /// The server lost this client's state (a new client record: it restarted, or the lease
  /// ran out): the files still open are reclaimed one by one, OPEN with CLAIM_PREVIOUS
  /// (RFC 8881 §8.4.2.1), then RECLAIM_COMPLETE. An open the server does not give back
  /// (NFS4ERR_NO_GRACE without a grace period, NFS4ERR_RECLAIM_BAD, ...) stays lost: I/O
  /// through it answers as before (NFS4ERR_STALE_STATEID and kin).
  void reclaim_opens(std::vector<open_reclaims::open> todo, std::size_t i, std::promise<void>* ready);
  void reclaim_complete(std::promise<void>* ready);
  /// Puts the due set-up riders into `c` after its SEQUENCE (session_call::riders): the
  /// RECLAIM_COMPLETE of a new client ID, then PUTROOTFH and GETATTR of the lease time, as
  /// far as the operation limit leaves room (what does not fit stays due). Not into a
  /// transaction's COMPOUND, whose VNFS_TXN must follow SEQUENCE. Later calls wait for the
  /// reply of one that carries RECLAIM_COMPLETE. False when RECLAIM_COMPLETE is due and
  /// cannot ride on `c`: the caller sends it alone first.
  bool attach_riders(session_call& c);
  /// For a call that carried riders and whose SEQUENCE succeeded: takes their results out of
  /// `reply` (and learns the lease time). False when one failed (the caller's operations did
  /// not run): the call is then sent again without them.
  bool detach_riders(session_call& c, compound_reply& reply);
  /// Takes the riders out of a call that did not run them; they are due again.
  void take_back_riders(session_call& c);
  void session_failed(std::error_code ec, std::promise<void>* ready);
  void schedule_renewal();
  /// DESTROY_SESSION then DESTROY_CLIENTID (at close), then `finished`.
  void destroy(std::function<void()> finished);

  // ---- the real operation limit (operation_limit.cpp) -----------------------------------
  std::uint32_t operation_limit() const;  // fore.ca_maxoperations lowered to ops_cap
  /// Takes `c` when the server refused it whole for its length (longer than any COMPOUND
  /// it ran): the search for the limit starts unless it is under way or already lower,
  /// and `c` completes with NFS4ERR_TOO_MANY_OPS once the limit is known.
  bool take_length_refusal(std::unique_ptr<session_call>& c, const compound_reply& reply);
  void probe_next();  // one probe of the bisection, or its end
  void complete_length_refusals();

  // ---- recovery (session_recovery.cpp) ---------------------------------------------------
  void connection_lost(std::error_code ec);
  void reconnect();
  void retry_reconnect();
  void rebind();
  void recover_session();
  /// The one place that decides what becomes of a sequenced call whose session the server
  /// lost (recover_session, or NFS4ERR_BADSESSION): it is sent again on the new session,
  /// unless it ends a transaction (ended_transaction()) and `may_have_run` — then running it
  /// again would run its operations a second time, as a new transaction. Such a call is
  /// not sent again: TXN_STATUS of its txnid is asked on the new session (ask_outcome).
  void requeue(std::unique_ptr<session_call> c, bool may_have_run);
  /// Asks TXN_STATUS(txnid) on the session (once there is one; after `after`) and completes `c` with the
  /// answer: committed, a reply with compound_reply::results_lost; rolled back or unknown
  /// to the server (it never committed: a server that restarted rolled back whatever had
  /// not, and a transaction that is not running now cannot commit any more),
  /// errc::transaction_aborted; still running (TXN_OPEN), asked again later (10 ms,
  /// doubling up to 1 s) for at most max_outcome_wait since `since`; a server without the
  /// extension (it ran nothing), errc::transactions_unsupported; no answer,
  /// errc::outcome_unknown.
  void ask_outcome(std::shared_ptr<session_call> c, std::uint64_t txnid, clock_type::time_point since,
                   std::chrono::milliseconds after);
  static constexpr std::chrono::seconds max_outcome_wait{300};
  /// Completes everything queued and in flight with `ec`; a call in flight that ends a
  /// transaction and may have run, with errc::outcome_unknown.
  void fail_all(std::error_code ec);
};

}  // namespace vnfs::detail
