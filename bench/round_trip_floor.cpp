// bench/round_trip_floor: what one request and its reply between two processes cost the
// requester's CPU on this machine, with nothing else in the way (no RPC, no NFS, no vnfs).
// It is the floor under bench/rdma_io's per-COMPOUND client cost ("a" in its fit) at one call
// in flight: a client cannot spend less on a COMPOUND than on the round trip that carries it.
//
// Two processes (fork) exchange a 200-byte request and a 300-byte reply, one at a time, over
// a Unix SOCK_SEQPACKET socket pair (the cma provider's messages) and over TCP on loopback,
// with the responder in three ways:
//   blocking  it sleeps in recv until the request comes (a server thread gone idle), on
//             whichever CPU the scheduler picks;
//   polling   it spins on a non-blocking recv, so the requester never has to wake it (a
//             server that polls, or an RDMA NIC);
//   one_cpu   it sleeps in recv, and both processes are pinned to one CPU.
// The requester always sleeps in recv for the reply. Client CPU is getrusage of the
// requester (one thread): user + system seconds per round trip.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "bench_util.hpp"

namespace po = boost::program_options;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::size_t request_bytes = 200, reply_bytes = 300;

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

/// Two connected sockets: [0] the requester's, [1] the responder's.
struct socket_pair {
  int fd[2] = {-1, -1};
  ~socket_pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

void make_unix(socket_pair& p) {
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p.fd) != 0) fail("socketpair");
}

void make_tcp(socket_pair& p) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) fail("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    fail("listen on 127.0.0.1");
  p.fd[0] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p.fd[0] < 0 || ::connect(p.fd[0], reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail("connect");
  p.fd[1] = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(listener);
  if (p.fd[1] < 0) fail("accept");
  const int one = 1;
  for (int f : p.fd) ::setsockopt(f, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/// Receives one whole message of `n` bytes (TCP may split it); false at EOF, an error or
/// `deadline`. A polling receiver never sleeps.
bool receive(int fd, char* buf, std::size_t n, bool poll, clock_type::time_point deadline) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd, buf + got, n - got, poll ? MSG_DONTWAIT : 0);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    if (errno != EAGAIN || clock_type::now() > deadline) return false;
  }
  return true;
}

/// The responder: answers each request until the requester closes or `deadline` passes.
[[noreturn]] void respond(int fd, bool poll, clock_type::time_point deadline) {
  char buf[reply_bytes] = {};
  while (receive(fd, buf, request_bytes, poll, deadline))
    if (::send(fd, buf, reply_bytes, MSG_NOSIGNAL) != static_cast<ssize_t>(reply_bytes)) break;
  ::_exit(0);
}

struct result {
  std::string transport, peer;
  std::uint64_t round_trips = 0;
  double wall_us = 0, cpu_us = 0, voluntary_switches = 0;
};

result run(const std::string& transport, const std::string& peer, std::uint64_t max_round_trips, double seconds) {
  socket_pair p;
  if (transport == "unix") make_unix(p);
  else make_tcp(p);

  cpu_set_t before;
  if (::sched_getaffinity(0, sizeof before, &before) != 0) fail("sched_getaffinity");
  if (peer == "one_cpu") {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(::sched_getcpu(), &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) fail("sched_setaffinity");  // the child inherits it
  }
  const auto limit = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  const pid_t child = ::fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    ::close(p.fd[0]);
    respond(p.fd[1], peer == "polling", clock_type::now() + limit + std::chrono::seconds(5));
  }
  ::close(p.fd[1]);
  p.fd[1] = -1;

  char req[request_bytes] = {}, rep[reply_bytes];
  // A few round trips first: both processes running, the connection warm.
  const auto warm_deadline = clock_type::now() + std::chrono::seconds(5);
  for (int i = 0; i < 100; ++i) {
    if (::send(p.fd[0], req, request_bytes, MSG_NOSIGNAL) != static_cast<ssize_t>(request_bytes) ||
        !receive(p.fd[0], rep, reply_bytes, false, warm_deadline))
      throw std::runtime_error("round_trip_floor: the responder stopped answering");
  }
  result r{transport, peer};
  const vnfs::bench::process_usage u0 = vnfs::bench::usage_now();
  const auto t0 = clock_type::now(), deadline = t0 + limit;
  while (r.round_trips < max_round_trips && clock_type::now() < deadline) {
    if (::send(p.fd[0], req, request_bytes, MSG_NOSIGNAL) != static_cast<ssize_t>(request_bytes) ||
        !receive(p.fd[0], rep, reply_bytes, false, deadline + std::chrono::seconds(5)))
      throw std::runtime_error("round_trip_floor: the responder stopped answering");
    ++r.round_trips;
  }
  const auto t1 = clock_type::now();
  const vnfs::bench::process_usage u1 = vnfs::bench::usage_now();
  ::close(p.fd[0]);  // the responder sees EOF and exits
  p.fd[0] = -1;
  int status = 0;
  ::waitpid(child, &status, 0);
  if (::sched_setaffinity(0, sizeof before, &before) != 0) fail("sched_setaffinity");

  const double n = static_cast<double>(r.round_trips);
  r.wall_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
  r.cpu_us = (u1.cpu_seconds - u0.cpu_seconds) * 1e6 / n;
  r.voluntary_switches = static_cast<double>(u1.voluntary_switches - u0.voluntary_switches) / n;
  return r;
}

/// Microseconds of one getppid(2): what entering and leaving the kernel costs here.
double syscall_us() {
  constexpr int n = 1'000'000;
  const auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i) ::syscall(SYS_getppid);
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string transports = "unix,tcp", peers = "blocking,polling,one_cpu";
  std::uint64_t round_trips = 50'000;
  double seconds = 2;
  std::string out = "bench/results/round_trip_floor.json";
  po::options_description desc(
      "Usage: round_trip_floor [options]\n\n"
      "What one request (200 bytes) and its reply (300 bytes) between two processes on this\n"
      "machine cost the requester's CPU, one at a time, over a Unix SOCK_SEQPACKET socket pair\n"
      "and over TCP on loopback, the responder sleeping in recv (blocking), spinning on a\n"
      "non-blocking recv (polling), or sleeping with both processes pinned to one CPU\n"
      "(one_cpu): the floor under a client's CPU per COMPOUND at one call in flight\n"
      "(bench/rdma_io). Each case runs for --round-trips or --seconds, whichever ends first.\n"
      "Writes the results as JSON.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("transports", po::value(&transports)->default_value(transports), "comma-separated: unix, tcp")
      ("peers", po::value(&peers)->default_value(peers), "comma-separated: blocking, polling, one_cpu")
      ("round-trips", po::value(&round_trips)->default_value(round_trips), "upper bound of round trips per case")
      ("seconds", po::value(&seconds)->default_value(seconds), "upper bound of each case's duration")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  if (seconds <= 0 || seconds > 60) throw std::runtime_error("--seconds must be in (0, 60]");
  if (round_trips == 0) throw std::runtime_error("--round-trips must be positive");
  const auto transport_list = vnfs::bench::split_list(transports), peer_list = vnfs::bench::split_list(peers);
  for (const auto& t : transport_list)
    if (t != "unix" && t != "tcp") throw std::runtime_error("unknown transport '" + t + "' (unix, tcp)");
  for (const auto& p : peer_list)
    if (p != "blocking" && p != "polling" && p != "one_cpu")
      throw std::runtime_error("unknown peer '" + p + "' (blocking, polling, one_cpu)");

  const double sc = syscall_us();
  std::cout << "round_trip_floor: getppid " << sc << " us\n";
  std::vector<result> results;
  for (const auto& t : transport_list)
    for (const auto& p : peer_list) {
      results.push_back(run(t, p, round_trips, seconds));
      const result& r = results.back();
      std::cout << "round_trip_floor: " << t << " " << p << ": " << r.round_trips << " round trips, "
                << r.wall_us << " us each, requester CPU " << r.cpu_us << " us, "
                << r.voluntary_switches << " voluntary switches\n";
    }

  std::ofstream f = vnfs::bench::open_results(out, "round_trip_floor");
  f << "  \"parameters\": {\"request_bytes\": " << request_bytes << ", \"reply_bytes\": " << reply_bytes
    << ", \"max_round_trips\": " << round_trips << ", \"seconds\": " << seconds << "},\n";
  f << "  \"syscall_us\": " << sc << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const result& r = results[i];
    f << "    {\"transport\": \"" << r.transport << "\", \"peer\": \"" << r.peer << "\", \"round_trips\": " << r.round_trips
      << ", \"wall_us_per_round_trip\": " << r.wall_us << ", \"cpu_us_per_round_trip\": " << r.cpu_us
      << ", \"voluntary_switches_per_round_trip\": " << r.voluntary_switches << "}"
      << (i + 1 < results.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  std::cout << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "round_trip_floor: " << e.what() << "\n";
  return 1;
}
