#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <condition_variable>
#include <future>
#include <map>
#include <optional>
#include <thread>

#include "vnfs/rpc/message.hpp"
#include "vnfs/test/blocking_channel.hpp"
#include "transport/tcp/send_file.hpp"
#include "transport/tcp/server.hpp"
#include "vnfs/xdr/decoder.hpp"
#include "../server/test_pattern.hpp"

using namespace vnfs;
namespace tcp = vnfs::transport::tcp;
namespace asio = boost::asio;
using vnfs::test::pattern;

namespace {

constexpr auto wait_limit = std::chrono::seconds(20);  // only a hang guard, never asserted

/// Waits (bounded) for a condition that the io thread makes true after the client has seen
/// the data, e.g. counters updated by a write's completion handler.
template <class Pred>
bool eventually(Pred p) {
  auto deadline = std::chrono::steady_clock::now() + wait_limit;
  while (!p()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// A server on 127.0.0.1:<picked port> whose records go to `handler`, with an io thread and
/// a 2-thread pool for the work, as vnfsd will run it.
struct fixture {
  using handler = std::function<void(const std::shared_ptr<tcp::connection>&, std::vector<std::byte>)>;

  explicit fixture(std::size_t max_record, handler h = {}) {
    if (!h) h = echo_in_pool();
    srv.emplace(io, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0),
                tcp::server::options{max_record}, std::move(h),
                [this](const std::shared_ptr<tcp::connection>&, std::error_code why) {
                  std::lock_guard lock(mu);
                  closes.push_back(why);
                  cv.notify_all();
                });
    io_thread = std::thread([this] { io.run(); });
  }
  ~fixture() {
    srv->stop();
    for (auto& t : workers) t.join();
    pool.join();
    guard.reset();
    io_thread.join();
  }

  /// Replies to each record with opaque<record>, the payload referenced (zero-copy) and
  /// kept alive by the keepalive until written; done on the pool.
  handler echo_in_pool() {
    return [this](const std::shared_ptr<tcp::connection>& c, std::vector<std::byte> rec) {
      asio::post(pool, [c, rec = std::move(rec)]() mutable {
        auto hold = std::make_shared<const std::vector<std::byte>>(std::move(rec));
        xdr::encoder e;
        e.put_opaque_ref(*hold);
        c->send(std::move(e), hold);
      });
    };
  }

  test::blocking_channel connect() {
    return test::blocking_channel::connect("127.0.0.1", srv->local_endpoint().port(), std::chrono::seconds(20));
  }

  std::vector<std::error_code> wait_closes(std::size_t n) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, wait_limit, [&] { return closes.size() >= n; });
    return closes;
  }

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(io);
  asio::thread_pool pool{2};
  std::optional<tcp::server> srv;
  std::thread io_thread;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::error_code> closes;
};

std::vector<std::byte> echo(test::blocking_channel& ch, const std::vector<std::byte>& msg,
                            std::size_t max_fragment = rpc::max_fragment_length) {
  ch.send_record(msg, max_fragment);
  auto reply = ch.receive_record();
  xdr::decoder d(reply);
  auto body = d.get_opaque();
  REQUIRE(d.remaining() == 0);
  return {body.begin(), body.end()};
}

}  // namespace

TEST_CASE("tcp: the server picks a port and echoes many records") {
  fixture f(1 << 20);
  CHECK(f.srv->local_endpoint().port() != 0);
  auto ch = f.connect();
  for (std::uint32_t i = 0; i < 300; ++i) {
    auto msg = pattern(i * 37 % 5000, i);
    REQUIRE(echo(ch, msg) == msg);
  }
  REQUIRE(f.srv->connection_count() == 1);
  auto conn = f.srv->connections()[0];
  CHECK(eventually([&] { return conn->stats().records_out == 300; }));
  auto st = conn->stats();
  CHECK(st.records_in == 300);
  CHECK(st.records_out == 300);
}

TEST_CASE("tcp: pipelined records all come back whole") {
  fixture f(1 << 20);
  auto ch = f.connect();
  constexpr std::uint32_t n = 500;
  for (std::uint32_t i = 0; i < n; ++i) {
    xdr::encoder e;
    e.put_u32(i);
    e.put_opaque(pattern(i % 300, i));
    ch.send_record(e);
  }
  std::map<std::uint32_t, int> seen;  // the pool may reorder replies; each must be intact
  for (std::uint32_t k = 0; k < n; ++k) {
    auto reply = ch.receive_record();
    xdr::decoder outer(reply);
    auto rec = outer.get_opaque();
    REQUIRE(outer.remaining() == 0);
    xdr::decoder d(rec);
    std::uint32_t i = d.get_u32();
    auto body = d.get_opaque();
    REQUIRE(d.remaining() == 0);
    REQUIRE(i < n);
    auto expect = pattern(i % 300, i);
    REQUIRE(std::equal(body.begin(), body.end(), expect.begin(), expect.end()));
    ++seen[i];
  }
  CHECK(seen.size() == n);
}

TEST_CASE("tcp: multi-fragment record is reassembled") {
  fixture f(1 << 20);
  auto ch = f.connect();
  auto msg = pattern(100000, 3);
  CHECK(echo(ch, msg, 4096) == msg);  // 25 fragments
  CHECK(echo(ch, msg, 1) == std::vector<std::byte>(msg.begin(), msg.end()));  // absurd but legal
}

TEST_CASE("tcp: a 4 MiB record in both directions") {
  fixture f(8 << 20);
  auto ch = f.connect();
  auto msg = pattern(4 << 20, 4);
  CHECK(echo(ch, msg) == msg);
  auto conn = f.srv->connections()[0];
  CHECK(eventually([&] { return conn->stats().records_out == 1; }));
  auto st = conn->stats();
  CHECK(st.records_in == 1);
  CHECK(st.bytes_in == (4u << 20) + 4);
  CHECK(st.bytes_out == (4u << 20) + 8);  // record mark + opaque length
}

// A reply made by a worker starts to leave from the worker itself (as much as the socket
// takes without waiting); the strand writes the rest. Here the client reads nothing until
// send() has returned, so a 16 MiB reply cannot have left whole from the worker (the
// socket buffers hold a few MiB at most).
TEST_CASE("tcp: a worker's reply larger than the socket takes at once arrives whole, counted once") {
  constexpr std::size_t size = 16u << 20;
  std::promise<bool> sent;  // send()'s answer, given once it has returned
  fixture* self = nullptr;
  fixture f(1 << 20, [&self, &sent](const std::shared_ptr<tcp::connection>& c, std::vector<std::byte>) {
    asio::post(self->pool, [c, &sent] {
      auto payload = std::make_shared<const std::vector<std::byte>>(pattern(size, 21));
      xdr::encoder e;
      e.put_opaque_ref(*payload);
      sent.set_value(c->send(std::move(e), payload));
    });
  });
  self = &f;
  auto ch = f.connect();
  ch.send_record(pattern(4, 0));
  auto answer = sent.get_future();
  REQUIRE(answer.wait_for(wait_limit) == std::future_status::ready);
  CHECK(answer.get());
  auto reply = ch.receive_record();
  xdr::decoder d(reply);
  auto body = d.get_opaque();
  REQUIRE(d.remaining() == 0);
  auto expect = pattern(size, 21);
  CHECK(std::equal(body.begin(), body.end(), expect.begin(), expect.end()));
  auto conn = f.srv->connections()[0];
  CHECK(eventually([&] { return conn->stats().records_out == 1; }));
  CHECK(conn->stats().bytes_out == size + 8);  // record mark + opaque length, each byte once
}

// More pieces than one sendmsg may gather (IOV_MAX, 1024 on Linux): the worker's write stops
// at that many, and the strand sends the rest in order.
TEST_CASE("tcp: a worker's reply of 3,000 referenced pieces arrives whole and in order") {
  constexpr std::uint32_t pieces = 3000, piece = 100;
  fixture* self = nullptr;
  fixture f(1 << 20, [&self](const std::shared_ptr<tcp::connection>& c, std::vector<std::byte>) {
    asio::post(self->pool, [c] {
      auto payload = std::make_shared<const std::vector<std::byte>>(pattern(pieces * piece, 22));
      xdr::encoder e;
      for (std::uint32_t i = 0; i < pieces; ++i)
        e.put_opaque_ref(std::span<const std::byte>(payload->data() + i * piece, piece));
      c->send(std::move(e), payload);
    });
  });
  self = &f;
  auto ch = f.connect();
  ch.send_record(pattern(4, 0));
  auto reply = ch.receive_record();
  CHECK(reply.size() == pieces * (4 + piece));
  xdr::decoder d(reply);
  auto expect = pattern(pieces * piece, 22);
  for (std::uint32_t i = 0; i < pieces; ++i) {
    auto body = d.get_opaque();
    REQUIRE(std::equal(body.begin(), body.end(), expect.begin() + i * piece, expect.begin() + (i + 1) * piece));
  }
  CHECK(d.remaining() == 0);
}

namespace {

/// An unlinked temporary file holding `data`, open for reading and writing.
struct temp_file {
  explicit temp_file(const std::vector<std::byte>& data) : f(std::tmpfile()) {
    REQUIRE(f != nullptr);
    REQUIRE(::pwrite(fd(), data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()));
  }
  ~temp_file() { std::fclose(f); }
  int fd() const { return ::fileno(f); }
  std::FILE* f;
};

}  // namespace

namespace {
std::atomic<int> sigpipes{0};
}

// A READ's payload goes out by sendfile, which has no MSG_NOSIGNAL: a client gone at the
// wrong moment once killed vnfsd with SIGPIPE. With SIGPIPE counted instead of fatal here,
// a plain sendfile to a socket whose peer has closed raises it; tcp::send_file does not,
// fails with EPIPE, and leaves the thread's signal mask as it was.
TEST_CASE("tcp: send_file to a socket whose peer has gone fails with EPIPE and raises no SIGPIPE") {
  struct sigaction counting {}, before {};
  counting.sa_handler = [](int) { sigpipes++; };
  sigemptyset(&counting.sa_mask);
  REQUIRE(::sigaction(SIGPIPE, &counting, &before) == 0);
  temp_file file(pattern(1u << 16, 5));
  auto gone_peer = [] {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    ::close(sv[1]);
    return sv[0];
  };

  const int plain = gone_peer();
  off_t off = 0;
  sigpipes = 0;
  CHECK(::sendfile(plain, file.fd(), &off, 4096) == -1);
  CHECK(errno == EPIPE);
  CHECK(sigpipes == 1);  // what vnfsd died of
  ::close(plain);

  const int sock = gone_peer();
  off = 0;
  sigpipes = 0;
  errno = 0;
  CHECK(tcp::send_file(sock, file.fd(), &off, 4096) == -1);
  CHECK(errno == EPIPE);
  CHECK(sigpipes == 0);
  sigset_t mask, pending;
  REQUIRE(::pthread_sigmask(SIG_SETMASK, nullptr, &mask) == 0);
  CHECK(sigismember(&mask, SIGPIPE) == 0);
  REQUIRE(::sigpending(&pending) == 0);
  CHECK(sigismember(&pending, SIGPIPE) == 0);
  // To a live peer it sends as sendfile does.
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  off = 100;
  CHECK(tcp::send_file(sv[0], file.fd(), &off, 1000) == 1000);
  CHECK(off == 1100);
  std::vector<std::byte> got(1000);
  CHECK(::read(sv[1], got.data(), got.size()) == 1000);
  const auto want = pattern(1u << 16, 5);
  CHECK(std::equal(got.begin(), got.end(), want.begin() + 100));
  ::close(sv[0]);
  ::close(sv[1]);
  ::close(sock);
  REQUIRE(::sigaction(SIGPIPE, &before, nullptr) == 0);
}

// What killed vnfsd in a CI run: sendfile sends a large count in pieces, and a peer that
// goes after some were sent makes it return their count while the piece that failed
// raised SIGPIPE. Here the sender blocks inside the call on a full socket; the peer sends
// FIN (the sender's side is then in CLOSE_WAIT, where a reset sets the socket's error to
// EPIPE) and closes with bytes unread (a reset).
TEST_CASE("tcp: send_file whose peer goes in the middle of the call returns the count sent and raises no SIGPIPE") {
  struct sigaction counting {}, before {};
  counting.sa_handler = [](int) { sigpipes++; };
  sigemptyset(&counting.sa_mask);
  REQUIRE(::sigaction(SIGPIPE, &counting, &before) == 0);
  constexpr std::size_t size = 4u << 20;
  temp_file file(pattern(size, 6));

  // A loopback connection whose buffers hold far less than `size`.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int sender = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int small = 64 * 1024;
  REQUIRE(::setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
  REQUIRE(::connect(sender, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  REQUIRE(peer >= 0);
  REQUIRE(::setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) == 0);
  ::close(listener);

  sigpipes = 0;
  struct outcome {
    ssize_t n;
    int error;
    bool masked, pending;
  };
  off_t off = 0;
  auto call = std::async(std::launch::async, [&] {
    outcome o{};
    o.n = tcp::send_file(sender, file.fd(), &off, size);
    o.error = errno;
    sigset_t mask, pending;
    ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    ::sigpending(&pending);
    o.masked = sigismember(&mask, SIGPIPE) == 1;
    o.pending = sigismember(&pending, SIGPIPE) == 1;
    return o;
  });
  // Bytes have arrived: the call has begun, and it cannot end before the peer goes.
  int queued = 0;
  for (auto until = std::chrono::steady_clock::now() + wait_limit;
       queued == 0 && std::chrono::steady_clock::now() < until;)
    if (::ioctl(peer, FIONREAD, &queued) != 0 || queued == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool in_call = queued > 0 && call.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout;
  ::shutdown(peer, SHUT_WR);  // before any REQUIRE: the future's destructor waits for the call
  ::close(peer);
  REQUIRE(in_call);
  REQUIRE(call.wait_for(wait_limit) == std::future_status::ready);
  const outcome o = call.get();
  INFO("send_file returned " << o.n << " (errno " << o.error << ")");
  CHECK(o.n > 0);
  CHECK(static_cast<std::size_t>(o.n) < size);
  CHECK(off == o.n);
  CHECK(sigpipes == 0);  // the old send_file let this one through
  CHECK(!o.masked);
  CHECK(!o.pending);
  // The next call fails at once, again without the signal.
  errno = 0;
  CHECK(tcp::send_file(sender, file.fd(), &off, size) == -1);
  CHECK((errno == EPIPE || errno == ECONNRESET));
  CHECK(sigpipes == 0);
  ::close(sender);
  REQUIRE(::sigaction(SIGPIPE, &before, nullptr) == 0);
}

// Payloads left in a file go out by sendfile between the bytes around them, in order: from
// the strand (a reply made by the record handler) and from a worker (which writes what the
// socket takes, then the strand the rest).
TEST_CASE("tcp: a reply with payloads left in a file arrives whole and in order") {
  const bool from_worker = GENERATE(false, true);
  INFO((from_worker ? "from a worker" : "from the strand"));
  constexpr std::size_t size = 6u << 20;
  const auto content = pattern(size, 31);
  temp_file file(content);
  const auto memory = std::make_shared<const std::vector<std::byte>>(pattern(1000, 32));
  // Ranges: 3 MiB (more than the socket takes at once), an odd one, 150 of 4097 bytes.
  std::vector<std::pair<std::uint64_t, std::size_t>> ranges = {{0, 3u << 20}, {(3u << 20) + 1, 100001}};
  for (std::uint64_t i = 0; i < 150; ++i) ranges.push_back({(4u << 20) + i * 5000, 4097});
  auto reply_to = [&](const std::shared_ptr<tcp::connection>& c) {
    xdr::encoder e;
    e.put_u32(7);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      e.put_opaque_file({file.fd(), ranges[i].first, ranges[i].second});
      if (i % 2 == 0) e.put_opaque_ref(*memory);
    }
    e.put_u32(9);
    c->send(std::move(e), memory);
  };
  fixture* self = nullptr;
  fixture f(1 << 20, [&](const std::shared_ptr<tcp::connection>& c, std::vector<std::byte>) {
    if (from_worker)
      asio::post(self->pool, [c, &reply_to] { reply_to(c); });
    else
      reply_to(c);
  });
  self = &f;
  auto ch = f.connect();
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    ch.send_record(pattern(4, 0));
    auto reply = ch.receive_record();
    xdr::decoder d(reply);
    CHECK(d.get_u32() == 7);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      auto body = d.get_opaque();
      const auto at = content.begin() + static_cast<std::ptrdiff_t>(ranges[i].first);
      REQUIRE(std::equal(body.begin(), body.end(), at, at + static_cast<std::ptrdiff_t>(ranges[i].second)));
      if (i % 2 == 0) {
        auto m = d.get_opaque();
        REQUIRE(std::equal(m.begin(), m.end(), memory->begin(), memory->end()));
      }
    }
    CHECK(d.get_u32() == 9);
    CHECK(d.remaining() == 0);
  }
  auto conn = f.srv->connections()[0];
  CHECK(eventually([&] { return conn->stats().records_out == 3; }));
}

// The length of a payload left in a file is written before its bytes are read: a file cut
// short meanwhile gives zeros for what is missing, and the stream goes on whole.
TEST_CASE("tcp: a file that shrank before its range was sent gives zeros for the bytes cut off") {
  constexpr std::size_t size = 1u << 20, kept = 300001;
  const auto content = pattern(size, 33);
  temp_file file(content);
  std::atomic<int> records{0};
  fixture f(1 << 20, [&](const std::shared_ptr<tcp::connection>& c, std::vector<std::byte>) {
    xdr::encoder e;
    e.put_opaque_file({file.fd(), 0, size});
    e.put_u32(5);
    if (records++ == 0) REQUIRE(::ftruncate(file.fd(), kept) == 0);
    c->send(std::move(e));
  });
  auto ch = f.connect();
  ch.send_record(pattern(4, 0));
  auto reply = ch.receive_record();
  xdr::decoder d(reply);
  auto body = d.get_opaque();
  REQUIRE(body.size() == size);
  CHECK(std::equal(body.begin(), body.begin() + kept, content.begin()));
  CHECK(std::all_of(body.begin() + kept, body.end(), [](std::byte b) { return b == std::byte{0}; }));
  CHECK(d.get_u32() == 5);
  CHECK(d.remaining() == 0);
  // The next reply on the same connection: the file is now `kept` bytes long.
  ch.send_record(pattern(4, 0));
  auto next = ch.receive_record();
  xdr::decoder d2(next);
  auto body2 = d2.get_opaque();
  REQUIRE(body2.size() == size);
  CHECK(std::equal(body2.begin(), body2.begin() + kept, content.begin()));
  CHECK(std::all_of(body2.begin() + kept, body2.end(), [](std::byte b) { return b == std::byte{0}; }));
  CHECK(d2.get_u32() == 5);
}

TEST_CASE("tcp: an oversize record closes that connection only") {
  fixture f(64 * 1024);
  auto good = f.connect();
  auto bad = f.connect();
  auto m = pattern(100, 1);
  REQUIRE(echo(good, m) == m);
  REQUIRE(echo(bad, m) == m);

  SECTION("one fragment header announcing too much") {
    auto h = rpc::make_fragment_header(64 * 1024 + 1, true);
    bad.send_raw(h);
  }
  SECTION("fragments adding up to too much") {
    auto big = pattern(64 * 1024 + 8, 2);
    bad.send_record(big, 16 * 1024);
  }
  CHECK_THROWS_AS(bad.receive_record(), std::system_error);
  auto closes = f.wait_closes(1);
  REQUIRE(closes.size() == 1);
  CHECK(closes[0] == std::errc::message_size);

  auto m2 = pattern(60 * 1024, 5);
  CHECK(echo(good, m2) == m2);
  CHECK(f.srv->connection_count() == 1);
}

TEST_CASE("tcp: concurrent sends from several threads arrive whole and in per-thread order") {
  constexpr std::uint32_t threads = 4, per_thread = 200;
  fixture* self = nullptr;
  fixture f(1 << 20, [&self](const std::shared_ptr<tcp::connection>& c, std::vector<std::byte>) {
    for (std::uint32_t t = 0; t < threads; ++t) {
      self->workers.emplace_back([c, t] {
        for (std::uint32_t s = 0; s < per_thread; ++s) {
          auto payload = std::make_shared<const std::vector<std::byte>>(pattern((s * 97 + t) % 3000, t * 1000 + s));
          xdr::encoder e;
          e.put_u32(t);
          e.put_u32(s);
          e.put_opaque_ref(*payload);  // referenced when >= 64 bytes, copied below
          c->send(std::move(e), payload);
        }
      });
    }
  });
  self = &f;
  auto ch = f.connect();
  ch.send_record(pattern(4, 0));  // the trigger
  std::vector<std::uint32_t> next(threads, 0);
  for (std::uint32_t k = 0; k < threads * per_thread; ++k) {
    auto rec = ch.receive_record();
    xdr::decoder d(rec);
    std::uint32_t t = d.get_u32(), s = d.get_u32();
    auto body = d.get_opaque();
    REQUIRE(d.remaining() == 0);
    REQUIRE(t < threads);
    REQUIRE(s == next[t]);
    ++next[t];
    auto expect = pattern((s * 97 + t) % 3000, t * 1000 + s);
    REQUIRE(std::equal(body.begin(), body.end(), expect.begin(), expect.end()));
  }
  CHECK(next == std::vector<std::uint32_t>(threads, per_thread));
}

TEST_CASE("tcp: several clients at once") {
  fixture f(1 << 20);
  constexpr int clients = 6;
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c) {
    ts.emplace_back([&, c] {
      try {
        auto ch = f.connect();
        for (std::uint32_t i = 0; i < 100; ++i) {
          ch.send_record(pattern(i * 13 + 5, c * 1000 + i));
          auto reply = ch.receive_record();
          xdr::decoder d(reply);
          auto body = d.get_opaque();
          auto expect = pattern(i * 13 + 5, c * 1000 + i);
          if (d.remaining() == 0 && std::equal(body.begin(), body.end(), expect.begin(), expect.end())) ++ok;
          else ++failed;
        }
      } catch (...) {
        ++failed;
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK(failed == 0);
  CHECK(ok == clients * 100);
}

TEST_CASE("tcp: keepalive is released once the record is written") {
  std::promise<std::weak_ptr<const void>> sent;
  fixture f(1 << 20, [&sent](const std::shared_ptr<tcp::connection>& c, std::vector<std::byte>) {
    auto payload = std::make_shared<const std::vector<std::byte>>(pattern(10000, 8));
    xdr::encoder e;
    e.put_opaque_ref(*payload);
    REQUIRE(e.referenced_bytes() == 10000);
    sent.set_value(payload);
    c->send(std::move(e), std::move(payload));
  });
  auto ch = f.connect();
  ch.send_record(pattern(4, 0));
  auto reply = ch.receive_record();
  CHECK(reply.size() == 10004);
  auto weak = sent.get_future().get();
  // The write has completed (we read the reply); its completion handler, which drops the
  // keepalive, runs on the io thread soon after. Wait for it, bounded.
  CHECK(eventually([&] { return weak.expired(); }));
}

TEST_CASE("tcp: stop() closes the connections and refuses new ones") {
  auto f = std::make_unique<fixture>(1 << 20);
  auto ch = f->connect();
  auto m = pattern(10, 1);
  REQUIRE(echo(ch, m) == m);
  auto port = f->srv->local_endpoint().port();
  f->srv->stop();
  CHECK_THROWS_AS(ch.receive_record(), std::system_error);
  CHECK(f->srv->connection_count() == 0);
  CHECK_THROWS_AS(test::blocking_channel::connect("127.0.0.1", port), std::system_error);
}

TEST_CASE("tcp: blocking_channel receive times out instead of hanging") {
  fixture f(1 << 20, [](const std::shared_ptr<tcp::connection>&, std::vector<std::byte>) {});
  auto ch = f.connect();
  ch.set_receive_timeout(std::chrono::milliseconds(50));
  ch.send_record(pattern(4, 0));
  try {
    (void)ch.receive_record();
    FAIL("no timeout");
  } catch (const std::system_error& e) {
    CHECK(e.code() == std::errc::timed_out);
  }
}

namespace {
// A tiny RPC program 400100 v1: proc 0 returns arg+1; proc 2 needs AUTH_SYS and returns
// the uid; anything else is PROC_UNAVAIL. Malformed calls get the reply decode_call owes.
void rpc_service(const std::shared_ptr<tcp::connection>& c, std::vector<std::byte> rec) {
  xdr::decoder d(rec);
  xdr::encoder out;
  try {
    rpc::call_header h = rpc::decode_call(d);
    if (h.prog != 400100) {
      rpc::encode_accepted_reply(out, h.xid, rpc::accept_stat::prog_unavail);
    } else if (h.vers != 1) {
      rpc::encode_accepted_reply(out, h.xid, rpc::accept_stat::prog_mismatch, {}, {1, 1});
    } else if (h.proc == 0) {
      std::uint32_t x = 0;
      try {
        x = d.get_u32();
      } catch (const xdr::decode_error&) {
        rpc::encode_accepted_reply(out, h.xid, rpc::accept_stat::garbage_args);
        c->send(std::move(out));
        return;
      }
      rpc::encode_accepted_reply(out, h.xid, rpc::accept_stat::success);
      out.put_u32(x + 1);
    } else if (h.proc == 2) {
      if (h.cred.flavor != rpc::auth_flavor::sys) {
        rpc::encode_denied_reply(out, h.xid, rpc::auth_stat::tooweak);
      } else {
        rpc::encode_accepted_reply(out, h.xid, rpc::accept_stat::success);
        out.put_u32(rpc::parse_authsys(h.cred).uid);
      }
    } else {
      rpc::encode_accepted_reply(out, h.xid, rpc::accept_stat::proc_unavail);
    }
  } catch (const rpc::call_error& e) {
    if (!e.encode_reply(out)) return;
  }
  c->send(std::move(out));
}
}  // namespace

TEST_CASE("tcp: rpc_call end to end") {
  fixture f(1 << 20, rpc_service);
  auto ch = f.connect();
  auto body = test::rpc_call(ch, 400100, 1, 0, [](xdr::encoder& e) { e.put_u32(41); });
  CHECK(body == std::vector<std::byte>{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{42}});

  auto cred = rpc::make_authsys({1, "tester", 1234, 5, {}});
  body = test::rpc_call(ch, 400100, 1, 2, {}, cred);
  CHECK(xdr::from_bytes<std::uint32_t>(body) == 1234);

  auto expect_error = [&](std::uint32_t prog, std::uint32_t vers, std::uint32_t proc, auto check) {
    try {
      test::rpc_call(ch, prog, vers, proc, {});
      FAIL("rpc_call did not throw");
    } catch (const rpc::reply_error& e) {
      check(e.header());
    }
  };
  expect_error(400100, 1, 2, [](const rpc::reply_header& h) {
    CHECK(h.stat == rpc::reply_stat::msg_denied);
    CHECK(h.auth == rpc::auth_stat::tooweak);
  });
  expect_error(400100, 1, 9, [](const rpc::reply_header& h) { CHECK(h.accepted == rpc::accept_stat::proc_unavail); });
  expect_error(400100, 3, 0, [](const rpc::reply_header& h) {
    CHECK(h.accepted == rpc::accept_stat::prog_mismatch);
    CHECK(h.mismatch == rpc::mismatch_info{1, 1});
  });
  expect_error(400100, 1, 0, [](const rpc::reply_header& h) { CHECK(h.accepted == rpc::accept_stat::garbage_args); });
  expect_error(7, 1, 0, [](const rpc::reply_header& h) { CHECK(h.accepted == rpc::accept_stat::prog_unavail); });

  SECTION("rpcvers 3 is answered RPC_MISMATCH 2..2") {
    xdr::encoder e;
    for (std::uint32_t w : {77u, 0u, 3u, 400100u, 1u, 0u, 0u, 0u, 0u, 0u}) e.put_u32(w);
    ch.send_record(e);
    auto reply = ch.receive_record();
    xdr::decoder d(reply);
    auto h = rpc::decode_reply(d);
    CHECK(h.xid == 77);
    CHECK(h.rejected == rpc::reject_stat::rpc_mismatch);
    CHECK(h.mismatch == rpc::mismatch_info{2, 2});
  }
  SECTION("a reply with the wrong xid is an error") {
    rpc::call_header h{5, 400100, 1, 0, {}, {}};
    xdr::encoder e;
    rpc::encode_call(e, {6, 400100, 1, 0, {}, {}});
    e.put_u32(1);
    ch.send_record(e);  // an extra call whose reply arrives first
    CHECK_THROWS_WITH(test::rpc_call(ch, h, [](xdr::encoder& a) { a.put_u32(1); }),
                      Catch::Contains("does not match"));
  }
}
