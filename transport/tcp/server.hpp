// vnfs TCP transport: accepts connections and delivers their RPC records.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "transport/tcp/connection.hpp"

namespace vnfs::transport::tcp {

/// Listens on one endpoint and runs a connection per client.
///
/// on_record runs on the io thread (the connection's strand) for every complete record and
/// must not block long: post slow work to a pool and reply with connection::send (a quick
/// call may be answered from on_record itself, without a hand-off). A connection
/// that sends an oversize record, or fails, is closed alone; the others carry on.
class server {
 public:
  struct options {
    std::size_t max_record_size = default_max_record_size;
    bool no_delay = true;
    bool reuse_address = true;
    int backlog = asio::socket_base::max_listen_connections;
    /// Limits against misbehaving peers, 0 for none. A connection accepted while
    /// max_connections are open is closed at once (on_refused is told); idle_timeout and
    /// max_in_flight apply to every connection (connection::options).
    std::size_t max_connections = 0;
    std::chrono::milliseconds idle_timeout{0};
    std::size_t max_in_flight = 0;
    /// Called (on the io thread) with the peer of each connection refused by max_connections.
    std::function<void(const asio::ip::tcp::endpoint&)> on_refused;
    /// Where each accepted connection runs (its socket, strand and handlers), asked once per
    /// connection, e.g. round robin over several io_contexts each run by its own thread.
    /// Empty: the listener's io_context.
    std::function<asio::any_io_executor()> connection_executor;
  };
  using record_handler = connection::record_handler;
  using close_handler = connection::close_handler;

  /// Binds and listens at once (throws boost::system::system_error on failure); accepting
  /// happens when `io` runs. on_close, if given, is told of every connection that closes.
  server(asio::io_context& io, const asio::ip::tcp::endpoint& listen, const options& opts,
         record_handler on_record, close_handler on_close = {});
  ~server();  // stop()
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The bound address: the picked port when listening on port 0.
  asio::ip::tcp::endpoint local_endpoint() const;

  /// Closes the acceptor and every connection. Thread-safe, idempotent.
  void stop();

  std::size_t connection_count() const;
  /// Snapshot of the open connections (tests, statistics).
  std::vector<std::shared_ptr<connection>> connections() const;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace vnfs::transport::tcp
