// vnfsd under attack, as a separate process on loopback with tight limits: a hostile peer
// sends mutated COMPOUNDs, truncated records, oversized record marks, half-sent records that
// stall or trickle (slow-loris), pipelined calls whose replies it never reads, and a flood of
// connections beyond --max-connections, while a well-behaved vnfs client writes files and
// reads every byte back. Checked: the good client's work is all correct, each limit closes
// exactly the connections that break it (and says so on stderr), vnfsd still answers a
// fresh connection and is alive at the end, and its peak RSS stays below a stated bound.
//
// Every phase is bounded in count and in time; nothing here measures speed.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "vnfs/client.hpp"
#include "vnfs/test/child_process.hpp"
#include "vnfs/test/reliability.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace std::chrono_literals;
using vnfs::test::child_process;
using vnfs::test::temp_dir;
using vnfs::test::vnfsd_process;
using bytes = std::vector<std::byte>;
namespace fs = std::filesystem;

namespace {

// The limits vnfsd runs with here.
constexpr std::size_t max_connections = 48;
constexpr std::size_t max_record = 256 * 1024;
constexpr int idle_timeout_s = 2;
constexpr std::size_t max_in_flight = 32;

// Peak RSS vnfsd may reach (VmHWM). Its baseline is a few MiB (tens under ASan); the bound
// leaves room for max_connections record buffers of max_record each, the in-flight limit and
// the good client's traffic, and fails if per-connection memory were unbounded.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t rss_bound_kib = 768 * 1024;
#else
constexpr std::size_t rss_bound_kib = 96 * 1024;
#endif

/// A raw TCP connection to vnfsd, owned.
class raw_conn {
 public:
  explicit raw_conn(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~raw_conn() { close(); }
  raw_conn(raw_conn&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  raw_conn& operator=(raw_conn&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  raw_conn(const raw_conn&) = delete;
  raw_conn& operator=(const raw_conn&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

  /// Sends everything, blocking; false once the server has closed the connection.
  bool send_all(const bytes& b) {
    std::size_t at = 0;
    while (at < b.size()) {
      ssize_t n = ::send(fd_, b.data() + at, b.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<std::size_t>(n);
    }
    return true;
  }

  /// Reads whatever is there without waiting; false once the server has closed.
  bool drain() {
    std::byte buf[65536];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      return false;
    }
  }

  /// Waits up to `limit` for the server to close, discarding what it sends.
  bool closed_within(std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (!drain()) return true;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) return false;
      pollfd p{fd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 200)));
    }
  }

  /// Reads one whole reply record (single fragment) within `limit`; empty on close/timeout.
  bytes read_record(std::chrono::milliseconds limit) {
    bytes got;
    auto deadline = std::chrono::steady_clock::now() + limit;
    auto want = [&]() -> std::size_t {
      if (got.size() < 4) return 4;
      std::uint32_t mark = (std::uint32_t(got[0]) << 24) | (std::uint32_t(got[1]) << 16) |
                           (std::uint32_t(got[2]) << 8) | std::uint32_t(got[3]);
      return 4 + (mark & 0x7fffffffu);
    };
    while (got.size() < want()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) return {};
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      std::byte buf[4096];
      ssize_t n = ::recv(fd_, buf, std::min(sizeof buf, want() - got.size()), 0);
      if (n <= 0) return {};
      got.insert(got.end(), buf, buf + n);
    }
    return got;
  }

 private:
  int fd_ = -1;
};

bytes mark(std::uint32_t length, bool last = true) {
  std::uint32_t v = length | (last ? 0x80000000u : 0u);
  return {std::byte(v >> 24), std::byte(v >> 16), std::byte(v >> 8), std::byte(v)};
}

bytes framed(const bytes& body) {
  bytes r = mark(static_cast<std::uint32_t>(body.size()));
  r.insert(r.end(), body.begin(), body.end());
  return r;
}

/// The whole RPC records among the fuzz seeds of vnfsd's request path (recorded traffic:
/// those whose selector byte is even; see tests/fuzz/server_requests.cpp).
std::vector<bytes> recorded_calls() {
  std::vector<bytes> out;
  for (const auto& e : fs::directory_iterator(VNFS_SERVER_SEEDS)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(in)), {});
    if (s.size() < 2 || (static_cast<unsigned char>(s[0]) & 1) != 0) continue;
    bytes b(s.size() - 1);
    std::memcpy(b.data(), s.data() + 1, b.size());
    out.push_back(std::move(b));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A recorded call with a few of its bytes, words or its length changed.
bytes mutate(bytes b, std::mt19937& rng) {
  int edits = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < edits && !b.empty(); ++i) {
    std::size_t at = rng() % b.size();
    switch (rng() % 5) {
      case 0: b[at] = std::byte(rng()); break;
      case 1:  // an XDR length or count at its largest
      case 2: {
        static const std::uint32_t words[] = {0xffffffffu, 0x7fffffffu, 0x00010000u, 0};
        std::uint32_t w = words[rng() % 4];
        at &= ~std::size_t(3);
        for (std::size_t k = 0; k < 4 && at + k < b.size(); ++k) b[at + k] = std::byte(w >> (24 - 8 * k));
        break;
      }
      case 3: b.resize(at); break;
      default: b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), std::byte(rng())); break;
    }
  }
  return b;
}

/// VmHWM (peak resident set) of a process, in KiB.
std::size_t peak_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6));
  FAIL("no VmHWM in /proc/" << pid << "/status");
  return 0;
}

bytes pattern(std::size_t n, std::uint32_t seed) {
  bytes b(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& c : b) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = std::byte(x);
  }
  return b;
}

/// The well-behaved client's loop: each round writes a few files of different sizes under
/// good/ and reads them back, comparing every byte. Returns rounds done; counts mismatches
/// and failed calls into `errors` with the first message in `first_error`.
struct good_client {
  vnfs::client c;
  std::size_t rounds = 0, errors = 0, bytes_checked = 0;
  std::string first_error;

  explicit good_client(const std::string& url) : c(vnfs::client::connect(url)) {}

  void note(const std::string& what) {
    if (errors++ == 0) first_error = what;
  }

  void round() {
    static const std::size_t sizes[] = {1, 4096, 70000, 300000};
    std::vector<bytes> data;
    std::vector<vnfs::vio> w;
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      data.push_back(pattern(sizes[i], static_cast<std::uint32_t>(rounds * 31 + i)));
      std::string path = "good/f" + std::to_string(i);
      w.emplace_back(vnfs::vfile(path), 0, std::span<const std::byte>(data.back()),
                     vnfs::vio_flags::create | vnfs::vio_flags::truncate);
    }
    vnfs::vresult r = c.vwrite(w);
    if (!r.ok()) return note("vwrite: " + r.error.message());
    std::vector<bytes> back;
    std::vector<vnfs::vio> rd;
    for (std::size_t i = 0; i < std::size(sizes); ++i) back.emplace_back(sizes[i] + 1);
    for (std::size_t i = 0; i < std::size(sizes); ++i)
      rd.emplace_back(vnfs::vfile("good/f" + std::to_string(i)), 0, std::span<std::byte>(back[i]));
    r = c.vread(rd);
    if (!r.ok()) return note("vread: " + r.error.message());
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      if (rd[i].bytes != sizes[i] || !std::equal(data[i].begin(), data[i].end(), back[i].begin()))
        return note("round " + std::to_string(rounds) + ": f" + std::to_string(i) + " read back wrong");
      bytes_checked += sizes[i];
    }
    ++rounds;
  }
};

/// Every line vnfsd printed (stdout and stderr merged) until `limit` passes without one.
std::string drain_lines(child_process& p, std::chrono::milliseconds limit) {
  std::string out;
  try {
    for (;;) out += p.read_line(limit) + "\n";
  } catch (const vnfs::test::process_error&) {
  }
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("vnfsd keeps serving a good client through hostile peers, within its limits and a memory bound") {
  temp_dir dir;
  fs::create_directory(dir.path() / "good");
  vnfs::test::spawn_options so;
  so.merge_stderr = true;
  child_process server(vnfsd_process::binary(),
                       {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--threads", "4", "--lease", "4",
                        "--max-connections", std::to_string(max_connections), "--max-record",
                        std::to_string(max_record), "--idle-timeout", std::to_string(idle_timeout_s),
                        "--max-requests-in-flight", std::to_string(max_in_flight)},
                       so);
  std::smatch m;
  std::string ready = server.read_line(10s);
  REQUIRE(std::regex_match(ready, m, std::regex(R"(vnfsd listening on tcp://127\.0\.0\.1:([0-9]+))")));
  const auto port = static_cast<std::uint16_t>(std::stoul(m[1]));
  const std::string url = "nfs://127.0.0.1:" + std::to_string(port) + "/";

  const std::vector<bytes> calls = recorded_calls();
  REQUIRE(calls.size() >= 8);

  good_client good(url);
  std::atomic<bool> hostile_done{false};
  std::thread good_thread([&] {
    // Works until the hostile peer is through, at least 10 rounds, at most 5000.
    while ((!hostile_done.load() || good.rounds < 10) && good.rounds + good.errors < 5000 && good.errors < 5)
      good.round();
  });

  std::size_t oversized_closed = 0, loris_closed = 0, pipelined_closed = 0, flood_kept = 0, flood_refused = 0;
  std::size_t mutated_sent = 0;
  const std::size_t loris = 16, oversized = 12, flood = max_connections + 24;
  {
    // Mutated COMPOUNDs over four connections, replies drained; a connection the server
    // closes (not an RPC call at all) is replaced.
    std::mt19937 rng(17);
    std::vector<raw_conn> conns;
    for (int i = 0; i < 4; ++i) conns.emplace_back(port);
    for (std::size_t i = 0; i < 3000; ++i) {
      raw_conn& c = conns[i % conns.size()];
      if (!c.send_all(framed(mutate(calls[rng() % calls.size()], rng))) || !c.drain()) c = raw_conn(port);
      ++mutated_sent;
    }

    // Records cut short: a mark, half of what it announces, then the connection closes.
    for (std::size_t i = 0; i < 50; ++i) {
      raw_conn c(port);
      const bytes& call = calls[i % calls.size()];
      bytes half = mark(static_cast<std::uint32_t>(call.size()));
      half.insert(half.end(), call.begin(), call.begin() + static_cast<std::ptrdiff_t>(call.size() / 2));
      c.send_all(half);
    }

    // Record marks beyond --max-record (last fragment, a first fragment, the largest):
    // each connection is closed by the server.
    for (std::size_t i = 0; i < oversized; ++i) {
      raw_conn c(port);
      static const std::uint32_t lengths[] = {max_record + 1, 0x7fffffffu, 64u << 20};
      c.send_all(mark(lengths[i % 3], i % 2 == 0));
      if (c.closed_within(5s)) ++oversized_closed;
    }

    // Slow-loris: half a record, then half the connections stall and the others trickle a
    // byte every 300 ms. The idle timeout closes them all.
    std::vector<raw_conn> slow;
    std::vector<bool> closed(loris, false);
    for (std::size_t i = 0; i < loris; ++i) {
      slow.emplace_back(port);
      bytes half = mark(4000);
      half.resize(4 + 100, std::byte{0});
      slow.back().send_all(half);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4 * idle_timeout_s + 5);
    while (loris_closed < loris && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(300ms);
      for (std::size_t i = 0; i < loris; ++i) {
        if (closed[i]) continue;
        bool gone = !slow[i].drain() || (i % 2 == 1 && !slow[i].send_all(bytes{std::byte{0}}));
        if (gone) {
          closed[i] = true;
          ++loris_closed;
        }
      }
    }

    // Pipelined calls whose replies are never read: the server stops reading at
    // --max-requests-in-flight and, once its replies stop leaving, the idle timeout closes it.
    {
      raw_conn c(port);
      int flags = ::fcntl(c.fd(), F_GETFL);
      ::fcntl(c.fd(), F_SETFL, flags | O_NONBLOCK);
      bytes one = framed(calls.front());
      for (int i = 0; i < 20000; ++i) {
        ssize_t n = ::send(c.fd(), one.data(), one.size(), MSG_NOSIGNAL);
        if (n != static_cast<ssize_t>(one.size())) break;  // the server stopped reading
      }
      ::fcntl(c.fd(), F_SETFL, flags);
      // Nothing is read until the server has given up on it; its FIN then waits behind the
      // replies still in the socket buffers, so reading them is what shows the close.
      std::this_thread::sleep_for(std::chrono::seconds(idle_timeout_s) + 1500ms);
      if (c.closed_within(std::chrono::seconds(2 * idle_timeout_s + 5))) ++pipelined_closed;
    }

    // A flood of connections beyond --max-connections, all at once and kept open.
    std::vector<raw_conn> many;
    for (std::size_t i = 0; i < flood; ++i) many.emplace_back(port);
    std::this_thread::sleep_for(500ms);  // lets vnfsd accept (and refuse) them all
    for (auto& c : many) {
      pollfd p{c.fd(), POLLIN | POLLRDHUP, 0};
      ::poll(&p, 1, 0);
      bool refused = (p.revents & (POLLRDHUP | POLLHUP)) != 0 || ((p.revents & POLLIN) != 0 && !c.drain());
      ++(refused ? flood_refused : flood_kept);
    }
  }
  hostile_done = true;
  good_thread.join();

  // A fresh connection is served: every recorded call, unchanged, gets a reply.
  std::size_t answered = 0;
  {
    raw_conn c(port);
    for (const bytes& call : calls)
      if (c.send_all(framed(call)) && !c.read_record(10s).empty()) ++answered;
  }

  INFO("good client: " << good.rounds << " rounds, " << good.bytes_checked << " bytes checked; first error: "
                       << good.first_error);
  INFO("flood: " << flood_kept << " kept, " << flood_refused << " refused");
  CHECK(good.errors == 0);
  CHECK(good.rounds >= 10);
  CHECK(mutated_sent == 3000);
  CHECK(oversized_closed == oversized);
  CHECK(loris_closed == loris);
  CHECK(pipelined_closed == 1);
  // The good client holds one connection throughout: at most max_connections - 1 of the
  // flood get in, the rest are closed at once.
  CHECK(flood_kept + flood_refused == flood);
  CHECK(flood_kept <= max_connections - 1);
  CHECK(flood_refused >= flood - (max_connections - 1));
  CHECK(answered == calls.size());
  REQUIRE(server.running());
  const std::size_t peak = peak_rss_kib(server.pid());
  INFO("vnfsd peak RSS " << peak << " KiB, bound " << rss_bound_kib << " KiB");
  CHECK(peak < rss_bound_kib);
  auto n = [](std::size_t v) { return std::to_string(v); };
  vnfs::test::record_reliability(
      "test_server_hostile_load",
      n(mutated_sent) + " mutated COMPOUNDs, 50 cut records, " + n(oversized) + " oversized marks, " + n(loris) +
          " slow-loris, 1 unread pipeline, a flood of " + n(flood) + " connections; a good client throughout",
      "vnfsd alive; the good client's bytes read back; each attack closed by its limit; at most " +
          n(max_connections - 1) + " of the flood admitted; every recorded call answered after; peak RSS",
      "good client " + n(good.rounds) + " rounds, " + n(good.errors) + " errors; oversized closed " +
          n(oversized_closed) + "/" + n(oversized) + ", slow-loris closed " + n(loris_closed) + "/" + n(loris) +
          ", flood " + n(flood_kept) + " admitted / " + n(flood_refused) + " refused; " + n(answered) + "/" +
          n(calls.size()) + " answered; peak RSS " + n(peak / 1024) + " MiB (bound " + n(rss_bound_kib / 1024) + ")");

  server.send_signal(SIGTERM);
  auto st = server.wait_for(10s);
  REQUIRE(st.has_value());
  CHECK(st->success());
  const std::string log = drain_lines(server, 1s);
  INFO(log);
  CHECK(count(log, "--max-record)") >= oversized);
  CHECK(count(log, "(--idle-timeout)") >= loris + 1);
  CHECK(count(log, "(--max-connections)") >= 1);
}
