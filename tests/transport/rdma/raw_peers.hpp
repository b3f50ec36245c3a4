// Test helpers: peers of an RPC-over-RDMA responder that speak below the requester, to
// send exactly the messages a test wants — a cma endpoint driven by hand (raw_client), and a
// process speaking the cma provider's packets itself (hand_peer), which can break even the
// provider's rules.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "fabric_fixture.hpp"
#include "transport/rdma/cma/cma_fabric.hpp"
#include "vnfs/rpc/rdma_header.hpp"

namespace vnfs::test {

/// Whether p() holds within 20 s (checked every 5 ms).
template <class Pred>
bool eventually(Pred p) {
  for (int i = 0; i < 4000; ++i) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return p();
}

/// XDR words.
inline std::vector<std::byte> words(std::initializer_list<std::uint32_t> w) {
  xdr::encoder e;
  for (auto x : w) e.put_u32(x);
  return e.flatten();
}

/// A hand-driven client endpoint (cma) that sends raw transport messages and keeps what it
/// receives.
struct raw_client {
  io_thread& t;
  std::unique_ptr<rdma::fabric> fab;
  std::shared_ptr<rdma::endpoint> ep;
  std::mutex mu;
  std::vector<std::vector<std::byte>> got;
  std::promise<std::error_code> closed;
  std::shared_future<std::error_code> closed_f = closed.get_future().share();

  raw_client(io_thread& io, std::uint16_t port, bool private_data = true) : t(io), fab(rdma::make_fabric("cma", io.io)) {
    rdma::endpoint_options o;
    if (private_data) {
      auto b = rpc::rdma::private_data{}.encode();
      o.private_data.assign(b.begin(), b.end());
    }
    std::promise<std::shared_ptr<rdma::endpoint>> p;
    auto f = p.get_future();
    fab->connect("127.0.0.1", port, o, [&](std::error_code, std::shared_ptr<rdma::endpoint> e) { p.set_value(e); });
    ep = wait_for(f);
    REQUIRE(ep);
    ep->post_recv(64);
    ep->start([this](std::span<const std::byte> m) {
      std::lock_guard l(mu);
      got.emplace_back(m.begin(), m.end());
    }, [this](std::error_code ec) { closed.set_value(ec); });
  }
  ~raw_client() {
    // On the io thread, so the close handler has run before this object goes.
    on_io(t.io, [this] {
      ep->close();
      return 0;
    });
  }
  void send(std::vector<std::byte> m) { CHECK_FALSE(sync_send(*ep, {m})); }
  void send(const rpc::rdma::header& h, std::vector<std::byte> body = {}) {
    xdr::encoder e;
    rpc::rdma::encode_header(e, h);
    auto b = e.flatten();
    b.insert(b.end(), body.begin(), body.end());
    send(b);
  }
  /// Whether the connection has ended (the close handler ran).
  bool is_closed() const { return closed_f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  /// The next message received, whole (bounded wait).
  std::vector<std::byte> next_message() {
    REQUIRE(eventually([&] {
      std::lock_guard l(mu);
      return !got.empty();
    }));
    std::lock_guard l(mu);
    auto m = got.front();
    got.erase(got.begin());
    return m;
  }
  /// The header of the next message received (bounded wait).
  rpc::rdma::header next() {
    auto m = next_message();
    xdr::decoder d(m);
    return rpc::rdma::decode_header(d);
  }
};

/// A peer that speaks the cma provider's packets itself, as any process of the same user
/// could: a packet is {kind, status, id} in host order, then its body (cma_fabric.cpp).
struct hand_peer {
  int fd = -1;
  explicit hand_peer(std::uint16_t port) {
    fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    const std::string name = rdma::cma::socket_name("127.0.0.1", port);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path + 1, name.data(), name.size());
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0);
  }
  ~hand_peer() { ::close(fd); }
  static std::vector<std::byte> packet(std::uint32_t kind, std::span<const std::byte> body) {
    std::vector<std::byte> p(16);
    std::memcpy(p.data(), &kind, 4);  // status and id stay 0
    p.insert(p.end(), body.begin(), body.end());
    return p;
  }
  void send(const std::vector<std::byte>& p) { REQUIRE(::send(fd, p.data(), p.size(), MSG_NOSIGNAL) == ssize_t(p.size())); }
  /// The next packet, or nothing when the connection ended (bounded wait).
  std::optional<std::vector<std::byte>> receive() {
    pollfd pfd{fd, POLLIN, 0};
    REQUIRE(::poll(&pfd, 1, 20000) == 1);
    std::vector<std::byte> b(1 << 16);
    const ssize_t n = ::recv(fd, b.data(), b.size(), 0);
    if (n <= 0) return std::nullopt;
    b.resize(std::size_t(n));
    return b;
  }

  /// What the listener answered to our hello.
  struct hello_ack {
    std::uint32_t kind = 0;       ///< 2 for a hello_ack
    std::uint32_t recv_size = 0;  ///< the listener's receive size: the largest message it takes
    std::optional<rpc::rdma::private_data> private_data;
  };
  /// Connects as the provider does: a hello with our receive size and RFC 8797 private
  /// data (default sizes), and the listener's answer.
  hello_ack handshake(std::uint32_t recv_size = 4096) {
    std::vector<std::byte> hello = words({0, 0});
    std::memcpy(hello.data(), &recv_size, 4);
    const auto pd = rpc::rdma::private_data{}.encode();
    hello.insert(hello.end(), pd.begin(), pd.end());
    send(packet(1, hello));
    auto ack = receive();
    REQUIRE(ack);
    REQUIRE(ack->size() >= 24);
    hello_ack a;
    std::memcpy(&a.kind, ack->data(), 4);
    std::memcpy(&a.recv_size, ack->data() + 16, 4);
    a.private_data = rpc::rdma::private_data::decode(std::span<const std::byte>(*ack).subspan(24));
    return a;
  }
};

}  // namespace vnfs::test
