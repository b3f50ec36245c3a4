#include "delay_proxy.hpp"

#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/socket_base.hpp>

namespace vnfs::netdelay {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

/// One accepted client, its upstream connection and the two delayed directions. Owned
/// by the proxy's table while open; close() removes it (and breaks the ownership cycle
/// between it and its links' callbacks).
class delay_proxy::connection : public std::enable_shared_from_this<connection> {
 public:
  connection(delay_proxy& proxy, tcp::socket client)
      : proxy_(proxy),
        client_(std::make_shared<tcp::socket>(std::move(client))),
        server_(std::make_shared<tcp::socket>(proxy.io_)) {}

  void start() {
    error_code ignored;
    client_->set_option(tcp::no_delay(true), ignored);  // the proxy itself must not batch
    server_->async_connect(proxy_.opts_.target, [self = shared_from_this()](error_code ec) {
      if (self->closed_) return;
      if (ec) {
        self->close(/*reset=*/true);
        return;
      }
      error_code ignored2;
      self->server_->set_option(tcp::no_delay(true), ignored2);
      self->start_links();
    });
  }

  /// Closes both sockets; with `reset`, so that the peers see a reset rather than an
  /// orderly end. Idempotent.
  void close(bool reset) noexcept {
    if (closed_) return;
    closed_ = true;
    for (auto& l : {up_, down_})
      if (l) l->close();
    for (auto& s : {client_, server_}) {
      error_code ignored;
      if (reset && s->is_open()) s->set_option(asio::socket_base::linger(true, 0), ignored);
      s->close(ignored);
    }
    proxy_.forget(this);  // may destroy *this: nothing after it
  }

 private:
  void start_links() {
    auto done = [self = shared_from_this()] {
      if (++self->links_done_ == 2) self->close(/*reset=*/false);
    };
    auto failed = [self = shared_from_this()] { self->close(/*reset=*/true); };
    const auto& o = proxy_.opts_;
    up_ = std::make_shared<delay_link>(client_, server_, o.delay, o.limits, proxy_.lateness_, done, failed);
    down_ = std::make_shared<delay_link>(server_, client_, o.delay, o.limits, proxy_.lateness_, done, failed);
    up_->start();
    down_->start();
  }

  delay_proxy& proxy_;
  std::shared_ptr<tcp::socket> client_, server_;
  std::shared_ptr<delay_link> up_, down_;  // client → server, server → client
  int links_done_ = 0;
  bool closed_ = false;
};

delay_proxy::delay_proxy(asio::io_context& io, options opts)
    : io_(io), opts_(std::move(opts)), acceptor_(io), accept_retry_(io) {
  acceptor_.open(opts_.listen.protocol());
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(opts_.listen);
  acceptor_.listen(asio::socket_base::max_listen_connections);
}

delay_proxy::~delay_proxy() { stop(); }

tcp::endpoint delay_proxy::local_endpoint() const { return acceptor_.local_endpoint(); }

void delay_proxy::start() { accept_next(); }

void delay_proxy::stop() {
  stopped_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  // close() removes each connection from the table, so take them out first.
  auto open = std::move(connections_);
  connections_.clear();
  for (auto& [raw, c] : open) c->close(/*reset=*/true);
}

void delay_proxy::forget(connection* c) noexcept { connections_.erase(c); }

void delay_proxy::accept_next() {
  if (stopped_) return;
  acceptor_.async_accept([this](error_code ec, tcp::socket s) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors or a connection that died in the backlog: try again shortly
      // rather than spinning or giving up on every later client.
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      accept_retry_.async_wait([this](error_code wait_ec) {
        if (!wait_ec) accept_next();
      });
      return;
    }
    ++accepted_;
    auto c = std::make_shared<connection>(*this, std::move(s));
    connections_.emplace(c.get(), c);
    c->start();
    accept_next();
  });
}

}  // namespace vnfs::netdelay
