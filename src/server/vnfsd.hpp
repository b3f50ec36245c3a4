// vnfsd: one running server — listener, worker pool, lease reaper.
#pragma once

#include <memory>
#include <string>

#include "server/server_options.hpp"
#include "transport/rdma/rpc_server.hpp"

namespace vnfs::server {

/// An NFSv4.1 server over TCP, and optionally RPC-over-RDMA, for one export.
///
/// Threading: run() drives the network on the calling thread (accepts, reads, writes, RDMA
/// transfers) and on `options.network_threads - 1` more that it starts and joins: each TCP
/// connection runs on one of them. A network thread also executes the TCP calls that cannot
/// block long (small read-only COMPOUNDs, inline_calls.hpp) and writes their replies at
/// once; every other COMPOUND executes on `options.threads` worker threads, so slow disk
/// work never stalls other connections. A network thread polls for `options.network_poll`
/// after its last piece of work before it sleeps. stop() may be called from any thread or a signal
/// handler's io callback.
class vnfsd {
 public:
  /// Opens the export and binds the listening socket (port 0 picks one). Throws
  /// std::system_error / std::runtime_error with a readable message on failure.
  explicit vnfsd(server_options options);
  ~vnfsd();
  vnfsd(const vnfsd&) = delete;
  vnfsd& operator=(const vnfsd&) = delete;

  /// "tcp://HOST:PORT" of the bound socket.
  std::string url() const;
  /// The bound socket's numeric address (HOST above) and port.
  std::string address() const;
  std::uint16_t port() const;
  /// "rdma+PROVIDER://HOST:PORT" of the RDMA listener, empty without one.
  std::string rdma_url() const;
  std::uint16_t rdma_port() const;
  /// The RDMA listener's counters (all zero without one).
  transport::rdma::rpc_server_stats rdma_stats() const;

  /// From now on SIGINT and SIGTERM stop the server (delivered once run() runs; a signal
  /// that arrives before is kept until then). Call before announcing readiness.
  void stop_on_signals();
  /// Serves until stop().
  void run();
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace vnfs::server
