#include "transport/tcp/server.hpp"

#include <chrono>
#include <mutex>
#include <unordered_set>
#include <utility>

namespace vnfs::transport::tcp {

// Shared with the pending accept and with every connection's close handler, so the server
// object may be destroyed while operations are still queued on the io_context.
struct server::impl : std::enable_shared_from_this<impl> {
  impl(asio::io_context& io, const options& o, record_handler r, close_handler c)
      : acceptor(io), retry(io), opts(o), on_record(std::move(r)), on_close(std::move(c)) {}

  // Every acceptor operation happens under mu: stop() may come from any thread.
  void accept_next() {
    auto ex = opts.connection_executor ? opts.connection_executor() : acceptor.get_executor();
    acceptor.async_accept(ex, [self = shared_from_this()](const boost::system::error_code& ec,
                                                          asio::ip::tcp::socket socket) { self->on_accept(ec, std::move(socket)); });
  }

  void on_accept(const boost::system::error_code& ec, asio::ip::tcp::socket socket) {
    std::unique_lock lock(mu);
    if (stopped) return;
    if (!ec && opts.max_connections != 0 && conns.size() >= opts.max_connections) {
      boost::system::error_code ignored;
      auto peer = socket.remote_endpoint(ignored);
      socket.close(ignored);
      accept_next();
      lock.unlock();
      if (opts.on_refused) opts.on_refused(peer);
      return;
    }
    if (!ec) {
      std::weak_ptr<impl> weak = weak_from_this();
      connection::options co{opts.max_record_size, opts.no_delay, opts.idle_timeout, opts.max_in_flight};
      auto conn = connection::create(
          std::move(socket), co, on_record,
          [weak](const std::shared_ptr<connection>& c, std::error_code why) {
            auto self = weak.lock();
            if (!self) return;
            {
              std::lock_guard l(self->mu);
              self->conns.erase(c);
            }
            if (self->on_close) self->on_close(c, why);
          });
      conns.insert(conn);
      lock.unlock();
      conn->start();
      lock.lock();
      if (stopped) return;
      accept_next();
      return;
    }
    // Accept errors (EMFILE, ENOBUFS, ECONNABORTED) are transient: keep listening, after a
    // pause so that a persistent one does not spin the io thread.
    retry.expires_after(std::chrono::milliseconds(50));
    retry.async_wait([self = shared_from_this()](const boost::system::error_code&) {
      std::lock_guard l(self->mu);
      if (!self->stopped) self->accept_next();
    });
  }

  void stop() {
    std::unordered_set<std::shared_ptr<connection>> to_close;
    {
      std::lock_guard lock(mu);
      if (stopped) return;
      stopped = true;
      boost::system::error_code ignored;
      acceptor.close(ignored);
      retry.cancel();
      to_close.swap(conns);
    }
    for (const auto& c : to_close) c->close();
  }

  asio::ip::tcp::acceptor acceptor;
  asio::steady_timer retry;
  options opts;
  record_handler on_record;
  close_handler on_close;
  asio::ip::tcp::endpoint local;
  mutable std::mutex mu;
  bool stopped = false;
  std::unordered_set<std::shared_ptr<connection>> conns;
};

server::server(asio::io_context& io, const asio::ip::tcp::endpoint& listen, const options& opts,
               record_handler on_record, close_handler on_close)
    : impl_(std::make_shared<impl>(io, opts, std::move(on_record), std::move(on_close))) {
  auto& a = impl_->acceptor;
  a.open(listen.protocol());
  if (opts.reuse_address) a.set_option(asio::socket_base::reuse_address(true));
  a.bind(listen);
  a.listen(opts.backlog);
  impl_->local = a.local_endpoint();
  std::lock_guard lock(impl_->mu);
  impl_->accept_next();
}

server::~server() { stop(); }

asio::ip::tcp::endpoint server::local_endpoint() const { return impl_->local; }

void server::stop() { impl_->stop(); }

std::size_t server::connection_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->conns.size();
}

std::vector<std::shared_ptr<connection>> server::connections() const {
  std::lock_guard lock(impl_->mu);
  return {impl_->conns.begin(), impl_->conns.end()};
}

}  // namespace vnfs::transport::tcp
