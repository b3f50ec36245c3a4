// vnfs-netdelay — a user-space TCP proxy that adds a fixed one-way delay in each
// direction, to emulate network latency on loopback (this kernel has no netem).
#include <sys/prctl.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/program_options.hpp>

#include "delay_proxy.hpp"
#include "vnfs/host_port.hpp"

namespace asio = boost::asio;
namespace po = boost::program_options;
using asio::ip::tcp;

namespace {

constexpr const char* usage_head =
    "Usage: vnfs-netdelay --listen HOST:PORT --to HOST:PORT --delay-ms D [options]\n"
    "\n"
    "Accepts TCP connections on --listen and forwards each to --to. Every byte is held\n"
    "D milliseconds (fractional values allowed, e.g. 0.1) after it arrives before it is\n"
    "sent on, in each direction, so a request/response exchange gains 2 x D of round-trip\n"
    "time. Byte order is kept; bandwidth is not limited, except that at most\n"
    "--max-queue-mib per direction and connection may wait for its release time (enough\n"
    "for B x D at bandwidth B). A half-close (shutdown) is forwarded after D like data;\n"
    "a reset or error on either side resets both. Connection setup is not delayed.\n"
    "Release times are met on average: timers are set early by the host's recent timer\n"
    "wake-up lateness (at most 0.2 ms). Bytes pass through kernel pipes (splice), never\n"
    "through user space. One thread serves every connection.\n"
    "\n"
    "Once listening it prints one line, 'netdelay listening on HOST:PORT' (with the port\n"
    "chosen if PORT was 0), and runs until SIGINT or SIGTERM, then resets the connections\n"
    "still open and exits 0. Argument errors exit 2, other failures 1.\n"
    "\n"
    "Options";

/// Resolves an option's HOST:PORT to its first endpoint; throws po::error naming it.
tcp::endpoint endpoint_of(asio::io_context& io, const std::string& option, const std::string& value) {
  const std::optional<vnfs::host_port> at = vnfs::parse_host_port(value);
  if (!at) throw po::error(option + " wants HOST:PORT, e.g. 127.0.0.1:2049, not '" + value + "'");
  const std::string& host = at->host;
  const std::uint16_t port = at->port;
  boost::system::error_code ec;
  asio::ip::address a = asio::ip::make_address(host, ec);
  if (!ec) return {a, port};
  tcp::resolver r(io);
  auto results = r.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) throw po::error(option + ": cannot resolve '" + host + "'");
  return results.begin()->endpoint();
}

std::string format(const tcp::endpoint& e) {
  std::string a = e.address().to_string();
  if (e.address().is_v6()) a = "[" + a + "]";
  return a + ":" + std::to_string(e.port());
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen, to, delay_text = "0";
  unsigned max_queue_mib = 64;
  po::options_description desc(usage_head);
  desc.add_options()
      ("help,h", "print this help and exit")
      ("listen", po::value(&listen)->value_name("HOST:PORT"),
       "address to accept connections on (required); PORT 0 picks a free port")
      ("to", po::value(&to)->value_name("HOST:PORT"), "address to forward connections to (required)")
      ("delay-ms", po::value(&delay_text)->value_name("D")->default_value(delay_text),
       "one-way delay in milliseconds, 0 to 60000, fractional allowed")
      ("max-queue-mib", po::value(&max_queue_mib)->value_name("N")->default_value(max_queue_mib),
       "bytes (MiB) that may wait per direction and connection, 1 to 4096");
  asio::io_context io(1);
  vnfs::netdelay::delay_proxy::options opts;
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    if (listen.empty() || to.empty()) throw po::error("--listen and --to are required");
    char* end = nullptr;
    errno = 0;
    double delay_ms = std::strtod(delay_text.c_str(), &end);
    if (delay_text.empty() || *end != '\0' || errno != 0 || !std::isfinite(delay_ms) || delay_ms < 0 ||
        delay_ms > 60000)
      throw po::error("--delay-ms wants milliseconds from 0 to 60000, not '" + delay_text + "'");
    if (max_queue_mib < 1 || max_queue_mib > 4096) throw po::error("--max-queue-mib must be 1..4096");
    opts.listen = endpoint_of(io, "--listen", listen);
    opts.target = endpoint_of(io, "--to", to);
    opts.delay = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::milli>(delay_ms));
    opts.limits.max_queued = std::size_t{max_queue_mib} * 1024 * 1024;
  } catch (const po::error& e) {
    std::cerr << "vnfs-netdelay: " << e.what() << "\nTry 'vnfs-netdelay --help'.\n";
    return 2;
  }
  // Release times are met to the microsecond only without the kernel's default 50 us
  // timer slack; and each connection holds a few pipes, so allow as many descriptors as
  // the hard limit does. Neither is required: failures leave the defaults.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (rlimit r{}; ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  try {
    vnfs::netdelay::delay_proxy proxy(io, opts);
    // Signals are caught before the ready line: a client may signal right after it.
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      proxy.stop();
      io.stop();
    });
    proxy.start();
    std::cout << "netdelay listening on " << format(proxy.local_endpoint()) << std::endl;  // flushes
    io.run();
  } catch (const std::exception& e) {
    std::cerr << "vnfs-netdelay: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
