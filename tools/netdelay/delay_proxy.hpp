// vnfs-netdelay: a TCP proxy that delays every byte by a fixed time in each direction.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "delay_link.hpp"

namespace vnfs::netdelay {

/// Accepts TCP connections on one address and connects each to one target; bytes in
/// each direction are forwarded `delay` after they arrive (two delay_links per
/// connection), so a request/response pair through the proxy gains 2 × delay. A
/// half-close is forwarded (delayed like data); a connection is closed once both
/// directions have ended, and reset on both sides if either side fails. Connection
/// setup is not delayed: the upstream connection is opened when a client is accepted,
/// and a client whose upstream connection fails is reset.
///
/// Everything runs on the io_context given; run it on one thread.
class delay_proxy {
 public:
  struct options {
    boost::asio::ip::tcp::endpoint listen;
    boost::asio::ip::tcp::endpoint target;
    std::chrono::steady_clock::duration delay{};
    link_limits limits;
  };

  /// Binds and listens (SO_REUSEADDR). Throws boost::system::system_error on failure.
  delay_proxy(boost::asio::io_context& io, options opts);
  ~delay_proxy();
  delay_proxy(const delay_proxy&) = delete;
  delay_proxy& operator=(const delay_proxy&) = delete;

  /// The bound address (with the port the kernel chose if the listen port was 0).
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  /// Starts accepting. Call once.
  void start();

  /// Stops accepting and closes every connection at once (queued bytes are dropped).
  void stop();

  std::uint64_t accepted() const noexcept { return accepted_; }
  std::size_t open_connections() const noexcept { return connections_.size(); }

 private:
  class connection;
  friend class connection;

  void accept_next();
  void forget(connection* c) noexcept;

  boost::asio::io_context& io_;
  options opts_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;
  std::shared_ptr<wake_lateness> lateness_ = std::make_shared<wake_lateness>();  // one loop, one estimate
  std::unordered_map<connection*, std::shared_ptr<connection>> connections_;  // open ones
  std::uint64_t accepted_ = 0;
  bool stopped_ = false;
};

}  // namespace vnfs::netdelay
