#include "server/vnfsd.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "server/dispatcher.hpp"
#include "server/inline_calls.hpp"
#include "server/server_state.hpp"
#include "transport/rdma/fabric.hpp"
#include "transport/rdma/rpc_server.hpp"
#include "transport/tcp/server.hpp"

namespace vnfs::server {

namespace asio = boost::asio;
using transport::tcp::connection;

struct vnfsd::impl {
  explicit impl(server_options opts)
      : state(std::move(opts)),
        disp(state),
        pool(std::max(1u, state.options.threads)),
        reaper(io),
        handle_sweeper(io),
        signals(io) {
    const auto& o = state.options;
    for (unsigned i = 1; i < o.network_threads; ++i) {
      net_io.push_back(std::make_unique<asio::io_context>(1));
      net_work.push_back(asio::make_work_guard(*net_io.back()));
    }
    try {
      // Names (localhost) resolve to their first address; numeric addresses stay as given.
      asio::ip::tcp::resolver resolver(io);
      auto where = *resolver.resolve(o.listen_host, std::to_string(o.listen_port),
                                     asio::ip::resolver_base::numeric_service).begin();
      listener.emplace(
          io, where.endpoint(), listener_options(o),
          [this](std::shared_ptr<connection> c, std::vector<std::byte> record) { dispatch(std::move(c), std::move(record)); },
          [this](const std::shared_ptr<connection>& c, std::error_code why) { log_close(*c, why); });
    } catch (const boost::system::system_error& e) {
      throw std::runtime_error("cannot listen on " + o.listen_host + ":" +
                               std::to_string(o.listen_port) + ": " + e.code().message());
    }
    if (!o.rdma_provider.empty()) start_rdma(o);
  }

  /// The RPC-over-RDMA listener: same dispatcher and workers, replies placed by RDMA.
  void start_rdma(const server_options& o) {
    try {
      fabric = transport::rdma::make_fabric(o.rdma_provider, io);
      transport::rdma::rpc_server_options ro;
      ro.max_call_size = std::size_t(o.max_request_size) + 64 * 1024;
      ro.max_connections = o.rdma_max_connections;
      ro.max_credits = o.rdma_max_credits;
      ro.inline_size = o.rdma_inline_size;
      ro.idle_timeout = o.rdma_idle_timeout;
      ro.on_limit = [this](const std::string& peer, transport::rdma::rpc_server_limit why) { log_rdma_limit(peer, why); };
      rdma_listener.emplace(*fabric, o.rdma_host, o.rdma_port, ro,
                            [this](std::vector<std::byte> record,
                                   std::shared_ptr<transport::rdma::rpc_server::responder> r) {
                              dispatch_rdma(std::move(record), std::move(r));
                            });
    } catch (const std::system_error& e) {
      throw std::runtime_error("cannot listen on rdma+" + o.rdma_provider + "://" + o.rdma_host + ":" +
                               std::to_string(o.rdma_port) + ": " + e.what());
    }
  }

  // Replies carry every byte in memory: the responder places READ payloads by RDMA Write.
  void dispatch_rdma(std::vector<std::byte> record, std::shared_ptr<transport::rdma::rpc_server::responder> r) {
    dispatch_call(std::move(record), [this, r = std::move(r)](const decoded_call& call) {
      std::optional<rpc_reply> reply = disp.handle(call, reply_payloads::memory);
      if (!reply) return r->drop();  // not an RPC call: the responder closes the connection
      r->reply(std::move(reply->msg), std::move(reply->keepalive));
    });
  }

  transport::tcp::server::options listener_options(const server_options& o) {
    transport::tcp::server::options t;
    // Records above the session limit still get a clean NFS4ERR_REQ_TOO_BIG; only records
    // beyond any grant (plus room for RPC and COMPOUND headers) close the connection.
    t.max_record_size = record_limit(o);
    t.max_connections = o.max_connections;
    t.idle_timeout = o.idle_timeout;
    t.max_in_flight = o.max_requests_in_flight;
    t.on_refused = [this](const asio::ip::tcp::endpoint& peer) { log_refused(peer); };
    t.connection_executor = [this]() -> asio::any_io_executor {  // called by one accept at a time
      const std::size_t i = next_net++ % (net_io.size() + 1);
      return i == 0 ? io.get_executor() : net_io[i - 1]->get_executor();
    };
    return t;
  }

  // One stderr line per connection closed by a limit, so that an operator sees which limit
  // a client ran into. Ordinary ends (EOF, resets, close by the server) are not logged.
  void log_close(const connection& c, std::error_code why) {
    const auto& o = state.options;
    std::string reason;
    if (why == std::errc::message_size)
      reason = "it sent a record mark beyond the largest record accepted (" +
               std::to_string(record_limit(o)) + " bytes, --max-record)";
    else if (why == std::errc::timed_out)
      reason = "nothing complete arrived or left for " + std::to_string(o.idle_timeout.count()) +
               " ms: idle, or a record left half-sent (--idle-timeout)";
    else if (why == std::errc::protocol_error)
      reason = "a request could not be handled";
    else
      return;
    std::fprintf(stderr, "vnfsd: closed the connection from %s: %s\n", describe(c.remote_endpoint()).c_str(),
                 reason.c_str());
  }

  // The same for the RDMA listener (on the io thread, as the fabric's callbacks run there).
  void log_rdma_limit(const std::string& peer, transport::rdma::rpc_server_limit why) {
    using limit = transport::rdma::rpc_server_limit;
    const auto& o = state.options;
    std::string reason;
    switch (why) {
      case limit::max_connections:
        return rdma_refusals.log("RDMA connection(s)", peer, o.rdma_max_connections, "--rdma-max-connections");
      case limit::idle_timeout:
        reason = "nothing arrived or left for " + std::to_string(o.rdma_idle_timeout.count()) +
                 " ms while no call was executing (--rdma-idle-timeout)";
        break;
      case limit::credits:
        reason = "it had more calls outstanding than the " + std::to_string(o.rdma_max_credits) +
                 " credits it may be granted (--rdma-max-credits)";
        break;
      case limit::inline_size:
        reason = "it sent a message larger than the inline size, " + std::to_string(o.rdma_inline_size) +
                 " bytes (--rdma-inline-size)";
        break;
      case limit::bad_message:
        reason = "a message too short for an RPC-over-RDMA header";
        break;
    }
    std::fprintf(stderr, "vnfsd: closed the RDMA connection from %s: %s\n", peer.c_str(), reason.c_str());
  }

  // Refusals come in floods: the first is logged, then at most one line a second with a count.
  struct refusal_log {
    std::optional<std::chrono::steady_clock::time_point> logged_at;
    std::uint64_t unlogged = 0;
    void log(const char* what, const std::string& peer, std::size_t limit, const char* option) {
      ++unlogged;
      auto now = std::chrono::steady_clock::now();
      if (logged_at && now - *logged_at < std::chrono::seconds(1)) return;
      logged_at = now;
      std::fprintf(stderr, "vnfsd: refused %llu %s, the last from %s: %zu open already (%s)\n",
                   static_cast<unsigned long long>(unlogged), what, peer.c_str(), limit, option);
      unlogged = 0;
    }
  };
  void log_refused(const asio::ip::tcp::endpoint& peer) {
    tcp_refusals.log("connection(s)", describe(peer), state.options.max_connections, "--max-connections");
  }

  static std::size_t record_limit(const server_options& o) {
    return o.max_record != 0 ? o.max_record : std::size_t(o.max_request_size) + 64 * 1024;
  }

  static std::string describe(const asio::ip::tcp::endpoint& e) {
    return e.address().to_string() + ":" + std::to_string(e.port());
  }

  // Where every call runs, whichever transport brought it: the record is decoded once, here.
  // A call that cannot block long (inline_calls.hpp) runs on the network thread that
  // received it (a TCP connection's, or the RDMA listener's io thread), which sends its
  // reply too: no hand-off to a worker and back. Everything else goes to the workers, with
  // what was decoded (views into the record, whose bytes stay where they are when it is
  // moved). `run(call)` executes the call and sends or drops its reply.
  template <class Run>
  void dispatch_call(std::vector<std::byte> record, Run run) {
    decoded_call call = decode_call(record);
    if (runs_inline(call)) return run(call);
    asio::post(pool, [this, record = std::move(record), call = std::move(call), run = std::move(run)]() mutable {
      run(call);
      worker_replied.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    });
  }

  void dispatch(std::shared_ptr<connection> c, std::vector<std::byte> record) {
    dispatch_call(std::move(record), [this, c = std::move(c)](const decoded_call& call) { execute(*c, call); });
  }

  void execute(connection& c, const decoded_call& call) {
    std::optional<rpc_reply> r = disp.handle(call, reply_payloads::files);
    if (!r) {
      c.close();  // not an RPC call: nothing sensible can follow on this stream
      return;
    }
    c.send(std::move(r->msg), std::move(r->keepalive));
  }

  // A quarter of the lease, or of the transactions' age limit where that is shorter, and at
  // least a second: an idle client's record, or an open transaction past its age, goes at
  // most that long after its limit.
  void schedule_reaper() {
    const auto period = std::max<std::chrono::seconds>(
        std::chrono::seconds(1), std::min(state.options.lease, state.options.txn_max_age) / 4);
    reaper.expires_after(period);
    reaper.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      state.clients.expire_idle(std::chrono::steady_clock::now());
      // An open transaction whose client went or that is too old: rolled back on a worker
      // (file-system work never runs on this thread).
      asio::post(pool, [this] { state.txns.reap(); });
      schedule_reaper();
    });
  }

  // Every second the export lets go of the objects of handles not used lately, so that a
  // removed file's space is freed within two seconds of its handle's last use.
  void schedule_handle_sweep() {
    handle_sweeper.expires_after(std::chrono::seconds(1));
    handle_sweeper.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      state.exp.sweep_handles();
      schedule_handle_sweep();
    });
  }

  server_state state;
  dispatcher disp;
  // When a worker last answered a call (steady_clock ticks): the network threads poll on
  // for server_options::network_poll after it, as after their own work, so that the
  // client's next call, which follows the reply, finds them awake.
  std::atomic<std::chrono::steady_clock::rep> worker_replied{0};
  // The other network threads' io_contexts (server_options::network_threads), each run by
  // one thread from run(); declared before `io` and the listener, so they outlive both: a
  // pending accept in `io` holds a socket of one of them.
  std::vector<std::unique_ptr<asio::io_context>> net_io;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> net_work;
  std::vector<std::thread> net_threads;
  std::size_t next_net = 0;  // round robin over io and net_io
  asio::io_context io;
  asio::thread_pool pool;
  asio::steady_timer reaper;
  asio::steady_timer handle_sweeper;
  asio::signal_set signals;
  std::optional<transport::tcp::server> listener;  // set by the constructor
  refusal_log tcp_refusals, rdma_refusals;  // io thread only
  std::unique_ptr<transport::rdma::fabric> fabric;  // with --rdma
  std::optional<transport::rdma::rpc_server> rdma_listener;
};

vnfsd::vnfsd(server_options options) : impl_(std::make_unique<impl>(std::move(options))) {}

vnfsd::~vnfsd() {
  stop();
  impl_->pool.join();
}

std::string vnfsd::url() const { return "tcp://" + address() + ":" + std::to_string(port()); }

std::string vnfsd::address() const { return impl_->listener->local_endpoint().address().to_string(); }

std::uint16_t vnfsd::port() const { return impl_->listener->local_endpoint().port(); }

std::uint16_t vnfsd::rdma_port() const { return impl_->rdma_listener ? impl_->rdma_listener->port() : 0; }

transport::rdma::rpc_server_stats vnfsd::rdma_stats() const {
  return impl_->rdma_listener ? impl_->rdma_listener->stats() : transport::rdma::rpc_server_stats{};
}

std::string vnfsd::rdma_url() const {
  if (!impl_->rdma_listener) return {};
  return "rdma+" + impl_->state.options.rdma_provider + "://" + impl_->state.options.rdma_host + ":" +
         std::to_string(impl_->rdma_listener->port());
}

void vnfsd::stop_on_signals() {
  impl_->signals.add(SIGINT);
  impl_->signals.add(SIGTERM);
  impl_->signals.async_wait([this](const boost::system::error_code& ec, int) {
    if (!ec) stop();
  });
}

namespace {

/// Runs `ctx` until it is stopped or out of work. With `poll` > 0, after each piece of work
/// it keeps polling (non-blocking) for up to `poll` before it blocks for the next one,
/// yielding the core between polls to any other thread that is ready to run (the clients
/// of a loaded machine), so polling only takes time nothing else wants. A worker's reply
/// (`worker_replied`, steady_clock ticks) counts as a piece of work too: it is what the
/// client's next call follows.
void run_polling(asio::io_context& ctx, std::chrono::microseconds poll,
                 const std::atomic<std::chrono::steady_clock::rep>& worker_replied) {
  if (poll.count() <= 0) {
    ctx.run();
    return;
  }
  using clock = std::chrono::steady_clock;
  for (;;) {
    const auto worked = clock::now();
    bool found = false;
    while (!found && !ctx.stopped()) {
      const clock::time_point replied{clock::duration(worker_replied.load(std::memory_order_relaxed))};
      if (clock::now() >= std::max(worked, replied) + poll) break;
      found = ctx.poll() > 0;
      if (!found) std::this_thread::yield();
    }
    if (ctx.stopped()) return;
    if (!found && ctx.run_one() == 0) return;
  }
}

}  // namespace

void vnfsd::run() {
  auto& m = *impl_;
  m.schedule_reaper();
  m.schedule_handle_sweep();
  const auto poll = m.state.options.network_poll;
  for (auto& n : m.net_io)
    m.net_threads.emplace_back([n = n.get(), poll, &m] { run_polling(*n, poll, m.worker_replied); });
  run_polling(m.io, poll, m.worker_replied);
  for (auto& t : m.net_threads) t.join();  // stop() stopped their io_contexts too
  m.net_threads.clear();
}

void vnfsd::stop() {
  impl_->listener->stop();
  if (impl_->rdma_listener) impl_->rdma_listener->stop();
  impl_->io.stop();
  for (auto& n : impl_->net_io) n->stop();
}

}  // namespace vnfs::server
