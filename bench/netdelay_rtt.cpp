// bench/netdelay_rtt — what the latency emulator, vnfs-netdelay, really adds:
//   rtt:        ping-pong of small messages over one connection, directly to an echo
//               server on loopback and through the proxy at each --delays D; the proxy
//               should add 2 × D (0.2, 1.2, 5.2 ms for D = 0.1, 0.6, 2.6).
//   throughput: one connection streaming --bytes to a sink, directly and through the
//               proxy at each --throughput-delays D (the proxy must not be the bottleneck:
//               well over 1 GB/s at D = 0).
// The servers run on threads of this program; the proxy is the vnfs-netdelay binary,
// started per point and stopped by pid. Every loop is bounded in count and in time.
// Results go to a JSON file; bench/plot_netdelay_rtt.py draws them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"
#include "vnfs/bench/netdelay_process.hpp"

namespace po = boost::program_options;
using clock_type = std::chrono::steady_clock;

namespace {

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

struct socket_fd {
  int fd = -1;
  explicit socket_fd(int f) : fd(f) {}
  socket_fd(socket_fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  ~socket_fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// No Nagle (small messages go out at once) and a bound on every blocking call, so a
/// stuck peer fails the benchmark instead of hanging it.
void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

socket_fd connect_loopback(std::uint16_t port) {
  socket_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) fail_errno("socket");
  tune(s.fd);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail_errno("connect");
  return s;
}

void send_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) fail_errno("send");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void recv_exact(int fd, char* p, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r == 0) throw std::runtime_error("recv: unexpected end of stream");
    if (r < 0) fail_errno("recv");
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

/// A TCP server on 127.0.0.1:0 running `serve(fd)` on a thread per connection. The
/// destructor stops accepting and joins every thread (each ends when its peer closes or
/// its 30 s socket timeouts fire).
class loopback_server {
 public:
  explicit loopback_server(std::function<void(int)> serve) : serve_(std::move(serve)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener_, 64) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      fail_errno("loopback_server");
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] {
      while (!stop_) {
        pollfd p{listener_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        tune(fd);
        workers_.emplace_back([this, fd] {
          socket_fd owner(fd);
          try {
            serve_(fd);
          } catch (const std::exception&) {  // the client side reports failures
          }
        });
      }
    });
  }
  ~loopback_server() {
    stop_ = true;
    acceptor_.join();
    ::close(listener_);
    for (auto& t : workers_) t.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  std::function<void(int)> serve_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::list<std::thread> workers_;
};

/// Echoes whatever arrives until the peer closes.
void echo(int fd) {
  std::vector<char> buf(64 * 1024);
  for (;;) {
    ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
    if (r <= 0) return;
    send_all(fd, buf.data(), static_cast<std::size_t>(r));
  }
}

/// Reads to the end of the stream, then answers with the byte count (8 bytes).
void sink(int fd) {
  std::vector<char> buf(1 << 20);
  std::uint64_t total = 0;
  for (;;) {
    ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
    if (r < 0) return;
    if (r == 0) break;
    total += static_cast<std::uint64_t>(r);
  }
  send_all(fd, reinterpret_cast<const char*>(&total), sizeof total);
}

struct rtt_point {
  std::string path;  // "direct" or "netdelay"
  double delay_ms = 0;
  std::vector<double> samples_ms;
  double quantile(double q) const {
    std::vector<double> s = samples_ms;
    std::sort(s.begin(), s.end());
    return s[static_cast<std::size_t>(q * static_cast<double>(s.size() - 1) + 0.5)];
  }
};

rtt_point measure_rtt(std::uint16_t port, std::size_t message, unsigned pings, double seconds) {
  socket_fd c = connect_loopback(port);
  std::vector<char> out(message, 'p'), in(message);
  for (int i = 0; i < 20; ++i) {  // warm-up: connection set up, caches and timers primed
    send_all(c.fd, out.data(), out.size());
    recv_exact(c.fd, in.data(), in.size());
  }
  rtt_point p;
  auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  for (unsigned i = 0; i < pings && clock_type::now() < deadline; ++i) {
    auto t0 = clock_type::now();
    send_all(c.fd, out.data(), out.size());
    recv_exact(c.fd, in.data(), in.size());
    p.samples_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  return p;
}

struct throughput_point {
  std::string path;
  double delay_ms = 0;
  std::vector<double> gb_per_s;   // one per run, 1 GB = 1e9 bytes
  std::vector<std::uint64_t> bytes;
};

/// Streams up to `bytes` (fewer if `seconds` pass first) and returns {bytes, GB/s}, the time
/// running until the sink has confirmed the count.
std::pair<std::uint64_t, double> stream_once(std::uint16_t port, std::uint64_t bytes, double seconds) {
  socket_fd c = connect_loopback(port);
  std::vector<char> block(1 << 20, 's');
  auto t0 = clock_type::now();
  auto deadline = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  std::uint64_t sent = 0;
  while (sent < bytes && clock_type::now() < deadline) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), bytes - sent));
    send_all(c.fd, block.data(), n);
    sent += n;
  }
  ::shutdown(c.fd, SHUT_WR);
  std::uint64_t confirmed = 0;
  recv_exact(c.fd, reinterpret_cast<char*>(&confirmed), sizeof confirmed);
  double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (confirmed != sent)
    throw std::runtime_error("sink received " + std::to_string(confirmed) + " of " + std::to_string(sent) + " bytes");
  return {sent, static_cast<double>(sent) / elapsed / 1e9};
}

}  // namespace

int main(int argc, char** argv) try {
  std::string delays = "0,0.1,0.6,2.6", throughput_delays = "0";
  std::string out = "bench/results/netdelay_rtt.json";
  unsigned pings = 1000, runs = 3;
  std::size_t message = 64;
  double seconds = 3;
  std::uint64_t bytes = 4ull << 30;
  po::options_description desc(
      "Usage: netdelay_rtt [options]\n\n"
      "Measures the round-trip time vnfs-netdelay adds at several one-way delays D (it\n"
      "should add 2 x D) and its throughput on one connection, against servers on\n"
      "127.0.0.1 run by this program, and writes the results as JSON.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("delays", po::value(&delays)->default_value(delays), "comma-separated one-way delays (ms) for the RTT runs")
      ("pings", po::value(&pings)->default_value(pings), "round trips per RTT point (at most)")
      ("message", po::value(&message)->default_value(message), "bytes per ping")
      ("throughput-delays", po::value(&throughput_delays)->default_value(throughput_delays),
       "comma-separated one-way delays (ms) for the throughput runs")
      ("bytes", po::value(&bytes)->default_value(bytes), "bytes per throughput run (at most)")
      ("runs", po::value(&runs)->default_value(runs), "throughput runs per point")
      ("seconds", po::value(&seconds)->default_value(seconds), "time bound of each RTT point and throughput run")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  if (seconds <= 0 || seconds > 600) throw std::runtime_error("--seconds must be in (0, 600]");
  if (pings == 0 || message == 0 || message > (1 << 20) || runs == 0 || runs > 100)
    throw std::runtime_error("--pings, --runs and --message must be positive (--message <= 1 MiB, --runs <= 100)");

  loopback_server echo_server(echo);
  loopback_server sink_server(sink);

  std::vector<rtt_point> rtts;
  auto run_rtt = [&](const std::string& path, double d, std::uint16_t port) {
    rtt_point p = measure_rtt(port, message, pings, seconds);
    p.path = path;
    p.delay_ms = d;
    std::fprintf(stderr, "rtt  %-8s D=%-5g ms: median %.3f ms (p10 %.3f, p90 %.3f) over %zu\n", path.c_str(), d,
                 p.quantile(0.5), p.quantile(0.1), p.quantile(0.9), p.samples_ms.size());
    rtts.push_back(std::move(p));
  };
  run_rtt("direct", 0, echo_server.port());
  for (const auto& d : vnfs::bench::split_list(delays)) {
    vnfs::bench::netdelay_process proxy("127.0.0.1", echo_server.port(), d);
    run_rtt("netdelay", std::stod(d), proxy.port());
    if (!proxy.stop().success()) throw std::runtime_error("vnfs-netdelay did not exit cleanly");
  }

  std::vector<throughput_point> tps;
  auto run_tp = [&](const std::string& path, double d, std::uint16_t port) {
    throughput_point t;
    t.path = path;
    t.delay_ms = d;
    for (unsigned r = 0; r < runs; ++r) {
      auto [n, gbs] = stream_once(port, bytes, seconds);
      t.bytes.push_back(n);
      t.gb_per_s.push_back(gbs);
    }
    std::fprintf(stderr, "tput %-8s D=%-5g ms: median %.2f GB/s over %u runs\n", path.c_str(), d,
                 vnfs::bench::median(t.gb_per_s), runs);
    tps.push_back(std::move(t));
  };
  run_tp("direct", 0, sink_server.port());
  for (const auto& d : vnfs::bench::split_list(throughput_delays)) {
    vnfs::bench::netdelay_process proxy("127.0.0.1", sink_server.port(), d);
    run_tp("netdelay", std::stod(d), proxy.port());
    if (!proxy.stop().success()) throw std::runtime_error("vnfs-netdelay did not exit cleanly");
  }

  double direct_rtt = rtts.front().quantile(0.5);
  std::ofstream f = vnfs::bench::open_results(out, "netdelay_rtt");
  f << std::setprecision(6);
  f << "  \"parameters\": {\"pings\": " << pings << ", \"message_bytes\": " << message << ", \"seconds\": " << seconds
    << ", \"throughput_bytes\": " << bytes << ", \"throughput_runs\": " << runs << "},\n";
  f << "  \"rtt\": [\n";
  for (std::size_t i = 0; i < rtts.size(); ++i) {
    const auto& p = rtts[i];
    f << "    {\"path\": \"" << p.path << "\", \"delay_ms\": " << p.delay_ms
      << ", \"expected_added_ms\": " << (p.path == "direct" ? 0.0 : 2 * p.delay_ms)
      << ", \"samples\": " << p.samples_ms.size() << ", \"median_ms\": " << p.quantile(0.5)
      << ", \"p10_ms\": " << p.quantile(0.1) << ", \"p90_ms\": " << p.quantile(0.9)
      << ", \"min_ms\": " << p.quantile(0) << ", \"max_ms\": " << p.quantile(1)
      << ", \"added_median_ms\": " << p.quantile(0.5) - direct_rtt << ", \"samples_ms\": [";
    for (std::size_t s = 0; s < p.samples_ms.size(); ++s) f << (s ? "," : "") << p.samples_ms[s];
    f << "]}" << (i + 1 < rtts.size() ? "," : "") << "\n";
  }
  f << "  ],\n  \"throughput\": [\n";
  for (std::size_t i = 0; i < tps.size(); ++i) {
    const auto& t = tps[i];
    f << "    {\"path\": \"" << t.path << "\", \"delay_ms\": " << t.delay_ms << ", \"bytes\": [";
    for (std::size_t r = 0; r < t.bytes.size(); ++r) f << (r ? "," : "") << t.bytes[r];
    f << "], \"gb_per_s\": [";
    for (std::size_t r = 0; r < t.gb_per_s.size(); ++r) f << (r ? "," : "") << t.gb_per_s[r];
    f << "], \"median_gb_per_s\": " << vnfs::bench::median(t.gb_per_s) << "}" << (i + 1 < tps.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  std::cerr << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "netdelay_rtt: " << e.what() << "\n";
  return 1;
}
