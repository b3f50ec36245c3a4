// vnfs-netdelay: the command line (help, argument errors, ready line, signals) and what
// it carries — every byte, in order, both ways, on many connections at once, and the
// end of each direction. How close the delay comes to the one asked for is measured by
// bench/netdelay_rtt; here only its lower bound is checked: a round trip through the proxy
// can never take less than twice the one-way delay.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <random>
#include <regex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "vnfs/test/child_process.hpp"
#include "vnfs/test/free_port.hpp"
#include "vnfs/test/netdelay_process.hpp"

using namespace vnfs::test;
using namespace std::chrono_literals;

namespace {

// ---- the command line ----

/// All output (stdout and stderr) of a short-lived run, and how it ended.
std::pair<std::string, exit_status> run_to_end(std::vector<std::string> args) {
  spawn_options o;
  o.merge_stderr = true;
  child_process p(netdelay_process::binary(), std::move(args), o);
  std::string out;
  try {
    for (int i = 0; i < 1000; ++i) out += p.read_line(10s) + "\n";
  } catch (const process_error&) {  // end of output
  }
  return {out, p.wait()};
}

// ---- blocking sockets with bounded waits ----

struct fd_owner {
  int fd = -1;
  explicit fd_owner(int f) : fd(f) {}
  fd_owner(fd_owner&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  ~fd_owner() {
    if (fd >= 0) ::close(fd);
  }
};

/// Every blocking send/recv in these tests gives up after this long (then the test fails).
void bound_waits(int fd) {
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

fd_owner connect_to(std::uint16_t port) {
  fd_owner s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  bound_waits(s.fd);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::system_error(errno, std::generic_category(), "connect");
  return s;
}

/// Sends everything; false on an error or timeout.
bool send_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

/// Reads exactly n bytes (fewer if the stream ends or fails first).
std::string recv_exact(int fd, std::size_t n) {
  std::string out(n, '\0');
  std::size_t off = 0;
  while (off < n) {
    ssize_t r = ::recv(fd, out.data() + off, n - off, 0);
    if (r <= 0) break;
    off += static_cast<std::size_t>(r);
  }
  out.resize(off);
  return out;
}

/// How a read-to-the-end finished.
enum class stream_end { eof, reset, error };

/// Reads until EOF or an error (a timeout counts as an error), at most `limit` bytes.
std::pair<std::string, stream_end> recv_to_end(int fd, std::size_t limit = 256u << 20) {
  std::string out;
  std::vector<char> buf(1 << 16);
  while (out.size() < limit) {
    ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
    if (r == 0) return {out, stream_end::eof};
    if (r < 0) return {out, errno == ECONNRESET ? stream_end::reset : stream_end::error};
    out.append(buf.data(), static_cast<std::size_t>(r));
  }
  return {out, stream_end::error};
}

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<std::size_t>(8, n - i));
  }
  return s;
}

/// A TCP server on 127.0.0.1 that runs `handler(fd)` on its own thread for every
/// connection (the fd is closed after the handler returns). The destructor stops
/// accepting and joins every thread; handlers must end on their own (bounded waits).
class peer_server {
 public:
  explicit peer_server(std::function<void(int)> handler) : handler_(std::move(handler)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener_, 256) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::system_error(errno, std::generic_category(), "peer_server");
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~peer_server() {
    stop_ = true;
    acceptor_.join();
    ::close(listener_);
    for (auto& t : workers_) t.join();
  }
  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      bound_waits(fd);
      ++accepted_;
      workers_.emplace_back([this, fd] {
        fd_owner owner(fd);
        handler_(fd);
      });
    }
  }

  std::function<void(int)> handler_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::list<std::thread> workers_;  // touched by the accept thread only, until it is joined
};

}  // namespace

TEST_CASE("vnfs-netdelay --help describes the command line and exits 0") {
  auto [out, st] = run_to_end({"--help"});
  CHECK(st.success());
  CHECK(out.find("Usage: vnfs-netdelay --listen HOST:PORT --to HOST:PORT --delay-ms D") != std::string::npos);
  CHECK(out.find("netdelay listening on HOST:PORT") != std::string::npos);
  for (const char* opt : {"--listen", "--to", "--delay-ms", "--max-queue-mib", "--help"})
    CHECK(out.find(opt) != std::string::npos);
}

TEST_CASE("vnfs-netdelay refuses bad arguments with a message and exit code 2") {
  const std::string to = "127.0.0.1:1";
  std::vector<std::vector<std::string>> bad = {
      {},
      {"--listen", "127.0.0.1:0"},
      {"--to", to},
      {"--listen", "127.0.0.1", "--to", to},
      {"--listen", "127.0.0.1:70000", "--to", to},
      {"--listen", ":80", "--to", to},
      {"--listen", "127.0.0.1:0", "--to", "127.0.0.1:x"},
      {"--listen", "127.0.0.1:0", "--to", to, "--delay-ms", "-1"},
      {"--listen", "127.0.0.1:0", "--to", to, "--delay-ms", "abc"},
      {"--listen", "127.0.0.1:0", "--to", to, "--delay-ms", "1ms"},
      {"--listen", "127.0.0.1:0", "--to", to, "--delay-ms", "nan"},
      {"--listen", "127.0.0.1:0", "--to", to, "--delay-ms", "inf"},
      {"--listen", "127.0.0.1:0", "--to", to, "--delay-ms", "60001"},
      {"--listen", "127.0.0.1:0", "--to", to, "--delay-ms", ""},
      {"--listen", "127.0.0.1:0", "--to", to, "--max-queue-mib", "0"},
      {"--listen", "127.0.0.1:0", "--to", to, "--max-queue-mib", "4097"},
      {"--frobnicate"},
  };
  for (const auto& args : bad) {
    auto [out, st] = run_to_end(args);
    INFO(out);
    CHECK(st.exited());
    CHECK(st.code() == 2);
    CHECK(out.rfind("vnfs-netdelay: ", 0) == 0);
    CHECK(out.find("Try 'vnfs-netdelay --help'.") != std::string::npos);
  }
}

TEST_CASE("vnfs-netdelay reports a listen address in use with exit code 1") {
  netdelay_process first("127.0.0.1", 1, "0");
  auto [out, st] = run_to_end({"--listen", "127.0.0.1:" + std::to_string(first.port()), "--to", "127.0.0.1:1"});
  CHECK(st.exited());
  CHECK(st.code() == 1);
  CHECK(out.rfind("vnfs-netdelay: ", 0) == 0);
}

TEST_CASE("vnfs-netdelay prints exactly its ready line and exits 0 on SIGTERM and SIGINT") {
  peer_server server([](int fd) { recv_to_end(fd); });
  for (int sig : {SIGTERM, SIGINT}) {
    child_process p(netdelay_process::binary(),
                    {"--listen", "127.0.0.1:0", "--to", "127.0.0.1:" + std::to_string(server.port()),
                     "--delay-ms", "0.6"});
    std::string line = p.read_line(10s);
    std::smatch m;
    REQUIRE(std::regex_match(line, m, std::regex(R"(netdelay listening on 127\.0\.0\.1:([1-9][0-9]*))")));
    // An open connection with bytes in flight does not keep it from stopping.
    fd_owner c = connect_to(static_cast<std::uint16_t>(std::stoul(m[1])));
    CHECK(send_all(c.fd, std::string(1000, 'x')));
    p.send_signal(sig);
    auto st = p.wait_for(10s);
    REQUIRE(st.has_value());
    CHECK(st->success());
    CHECK_THROWS_AS(p.read_line(1s), process_error);  // nothing printed after the ready line
  }
}

TEST_CASE("vnfs-netdelay carries every byte in order, both ways at once, on several connections") {
  constexpr int connections = 8;
  constexpr std::size_t size = 4u << 20;
  std::vector<std::string> up, down, got_up(connections);
  for (int i = 0; i < connections; ++i) {
    up.push_back(random_bytes(size + static_cast<std::size_t>(i) * 4099, 2 * i + 1));
    down.push_back(random_bytes(size + static_cast<std::size_t>(i) * 7919, 2 * i + 2));
  }
  std::mutex mu;
  std::vector<stream_end> server_end(connections, stream_end::error);
  // The server learns which connection it serves from a one-byte header, then sends its
  // payload while it reads the client's, and half-closes when done sending.
  peer_server server([&](int fd) {
    std::string id = recv_exact(fd, 1);
    if (id.size() != 1) return;
    int i = id[0];
    std::thread writer([&] {
      send_all(fd, down[i]);
      ::shutdown(fd, SHUT_WR);
    });
    auto [data, end] = recv_to_end(fd);
    writer.join();
    std::lock_guard lock(mu);
    got_up[i] = std::move(data);
    server_end[i] = end;
  });

  for (const char* delay : {"0", "0.5"}) {
    SECTION(std::string("delay ") + delay) {
      netdelay_process proxy("127.0.0.1", server.port(), delay);
      std::vector<std::string> got_down(connections);
      std::vector<stream_end> client_end(connections, stream_end::error);
      std::vector<std::thread> clients;
      for (int i = 0; i < connections; ++i) {
        clients.emplace_back([&, i] {
          fd_owner c = connect_to(proxy.port());
          std::thread writer([&] {
            send_all(c.fd, std::string(1, static_cast<char>(i)) + up[i]);
            ::shutdown(c.fd, SHUT_WR);
          });
          auto [data, end] = recv_to_end(c.fd);
          writer.join();
          got_down[i] = std::move(data);
          client_end[i] = end;
        });
      }
      for (auto& t : clients) t.join();
      // Both server handlers and clients are done once every client saw the end.
      for (int i = 0; i < connections; ++i) {
        INFO("connection " << i);
        CHECK(client_end[i] == stream_end::eof);
        CHECK(got_down[i].size() == down[i].size());
        CHECK(got_down[i] == down[i]);
      }
      // The server side finishes reading before it returns; wait for all handlers.
      for (int spin = 0; spin < 1000; ++spin) {
        {
          std::lock_guard lock(mu);
          bool all = true;
          for (int i = 0; i < connections; ++i) all = all && got_up[i].size() == up[i].size();
          if (all) break;
        }
        std::this_thread::sleep_for(10ms);
      }
      std::lock_guard lock(mu);
      for (int i = 0; i < connections; ++i) {
        INFO("connection " << i);
        CHECK(server_end[i] == stream_end::eof);
        CHECK(got_up[i] == up[i]);
      }
      CHECK(proxy.stop().success());
    }
  }
}

TEST_CASE("vnfs-netdelay delays each direction: a round trip takes at least twice --delay-ms") {
  // An echo peer: every byte comes back at once.
  peer_server server([](int fd) {
    char b;
    while (::recv(fd, &b, 1, 0) == 1)
      if (::send(fd, &b, 1, MSG_NOSIGNAL) != 1) return;
  });
  netdelay_process proxy("127.0.0.1", server.port(), "40");
  fd_owner c = connect_to(proxy.port());
  int one = 1;
  ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  for (int round = 0; round < 5; ++round) {
    CAPTURE(round);
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(send_all(c.fd, "x"));
    REQUIRE(recv_exact(c.fd, 1) == "x");
    CHECK(std::chrono::steady_clock::now() - start >= 80ms);
  }
}

TEST_CASE("vnfs-netdelay forwards a half-close and keeps the other direction open") {
  // The server answers only after the client's end of stream, then closes.
  peer_server server([](int fd) {
    auto [request, end] = recv_to_end(fd);
    if (end != stream_end::eof) return;
    send_all(fd, "got " + std::to_string(request.size()) + " bytes");
    std::this_thread::sleep_for(20ms);  // the reply travels alone, then the end
    send_all(fd, " and that is all");
  });
  for (const char* delay : {"0", "1"}) {
    netdelay_process proxy("127.0.0.1", server.port(), delay);
    fd_owner c = connect_to(proxy.port());
    REQUIRE(send_all(c.fd, std::string(100000, 'r')));
    REQUIRE(::shutdown(c.fd, SHUT_WR) == 0);
    auto [reply, end] = recv_to_end(c.fd);
    CHECK(reply == "got 100000 bytes and that is all");
    CHECK(end == stream_end::eof);
  }
}

TEST_CASE("vnfs-netdelay ends the client's stream when the server closes first") {
  peer_server server([](int fd) { send_all(fd, "bye"); });  // closes right after
  netdelay_process proxy("127.0.0.1", server.port(), "0.1");
  fd_owner c = connect_to(proxy.port());
  auto [data, end] = recv_to_end(c.fd);
  CHECK(data == "bye");
  CHECK(end == stream_end::eof);
}

TEST_CASE("vnfs-netdelay drops a client whose upstream refuses the connection") {
  std::uint16_t closed_port = free_port();  // nothing listens there
  netdelay_process proxy("127.0.0.1", closed_port, "0");
  fd_owner c = connect_to(proxy.port());
  auto [data, end] = recv_to_end(c.fd);
  CHECK(data.empty());
  // Reset (or end of stream) right away, not a 30 s timeout.
  CHECK(end == stream_end::reset);
  CHECK(proxy.running());  // and it keeps serving
}

TEST_CASE("vnfs-netdelay serves many connections at once") {
  constexpr int connections = 200;
  peer_server server([](int fd) {
    std::string req = recv_exact(fd, 16);
    send_all(fd, "echo:" + req);
  });
  netdelay_process proxy("127.0.0.1", server.port(), "0.1");
  // All connections are opened and sent on before any reply is read.
  std::vector<fd_owner> open;
  for (int i = 0; i < connections; ++i) {
    open.push_back(connect_to(proxy.port()));
    char msg[17];
    std::snprintf(msg, sizeof msg, "request %08d", i);
    REQUIRE(send_all(open.back().fd, std::string(msg, 16)));
  }
  for (int i = 0; i < connections; ++i) {
    char msg[17];
    std::snprintf(msg, sizeof msg, "request %08d", i);
    auto [reply, end] = recv_to_end(open[static_cast<std::size_t>(i)].fd);
    CHECK(reply == "echo:" + std::string(msg, 16));
    CHECK(end == stream_end::eof);
  }
  CHECK(server.accepted() == connections);
}

TEST_CASE("vnfs-netdelay keeps many small writes in order while they wait") {
  // Thousands of tiny segments in flight: each takes a pipe slot of its own, so the proxy
  // has to chain several pipes per direction.
  std::mutex mu;
  std::string received;
  stream_end how = stream_end::error;
  peer_server server([&](int fd) {
    auto [data, end] = recv_to_end(fd);
    std::lock_guard lock(mu);
    received = std::move(data);
    how = end;
  });
  netdelay_process proxy("127.0.0.1", server.port(), "5");
  std::string sent;
  {
    fd_owner c = connect_to(proxy.port());
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bool sent_all = true;
    for (int i = 0; i < 20000 && sent_all; ++i) {
      char msg[16];
      int n = std::snprintf(msg, sizeof msg, "<%d>", i);
      std::string m(msg, static_cast<std::size_t>(n));
      sent_all = send_all(c.fd, m);
      sent += m;
    }
    REQUIRE(sent_all);
    ::shutdown(c.fd, SHUT_WR);
    char b;
    CHECK(::recv(c.fd, &b, 1, 0) == 0);  // the server's close reaches the client
  }
  std::lock_guard lock(mu);
  CHECK(how == stream_end::eof);
  CHECK(received.size() == sent.size());
  CHECK(received == sent);
}

TEST_CASE("vnfs-netdelay stops reading at --max-queue-mib and loses nothing") {
  std::mutex mu;
  std::string received;
  peer_server server([&](int fd) {
    auto [data, end] = recv_to_end(fd);
    std::lock_guard lock(mu);
    received = std::move(data);
  });
  // 1 MiB may wait per direction; 24 MiB pass, so reading pauses and resumes many times.
  netdelay_process proxy("127.0.0.1", server.port(), "1", {"--max-queue-mib", "1"});
  std::string payload = random_bytes(24u << 20, 99);
  {
    fd_owner c = connect_to(proxy.port());
    REQUIRE(send_all(c.fd, payload));
    ::shutdown(c.fd, SHUT_WR);
    char b;
    CHECK(::recv(c.fd, &b, 1, 0) == 0);
  }
  std::lock_guard lock(mu);
  CHECK(received.size() == payload.size());
  CHECK(received == payload);
}
