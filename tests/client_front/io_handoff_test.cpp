#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "client/nfs/io_handoff.hpp"

namespace asio = boost::asio;
using vnfs::detail::io_handoff;

namespace {

/// An io_context run by a thread of its own, as the session engine's; stopped and joined
/// by stop() (or at the end of the scope).
struct io_thread {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
  std::atomic<std::thread::id> id{};

  void start() {
    thread = std::thread([this] {
      id = std::this_thread::get_id();
      io.run();
    });
  }
  void stop() {
    if (!thread.joinable()) return;
    work.reset();
    io.stop();
    thread.join();
  }
  ~io_thread() { stop(); }
};

}  // namespace

TEST_CASE("io_handoff: items pushed from several threads are all taken, once, on the I/O thread, each thread's in order") {
  constexpr int threads = 4, per_thread = 20000;
  io_thread t;
  std::vector<std::vector<int>> seen(threads);  // by the I/O thread only
  std::atomic<int> taken{0}, off_thread{0};
  io_handoff<int> h(t.io, [&](std::vector<int>& batch) {
    if (std::this_thread::get_id() != t.id.load()) ++off_thread;
    for (int v : batch) seen[v / per_thread].push_back(v % per_thread);
    taken += static_cast<int>(batch.size());
  });
  h.start();
  t.start();

  std::atomic<int> refused{0};  // (Catch2 assertions are for the test's own thread)
  std::vector<std::thread> pushers;
  for (int p = 0; p < threads; ++p)
    pushers.emplace_back([&h, &refused, p] {
      for (int i = 0; i < per_thread; ++i) {
        int v = p * per_thread + i;
        if (!h.push(v)) ++refused;
      }
    });
  for (auto& th : pushers) th.join();
  CHECK(refused.load() == 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (taken.load() < threads * per_thread && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  t.stop();

  CHECK(taken.load() == threads * per_thread);
  CHECK(off_thread.load() == 0);
  for (int p = 0; p < threads; ++p) {
    REQUIRE(seen[p].size() == per_thread);
    bool in_order = true;
    for (int i = 0; i < per_thread; ++i) in_order = in_order && seen[p][i] == i;
    CHECK(in_order);
  }
  CHECK(h.close().empty());
}

TEST_CASE("io_handoff: one item in flight at a time, each pushed after the last was taken, is never left waiting") {
  // As one call in flight: the application pushes, the I/O thread takes the item, and a
  // later handler "replies" (look_soon, as on_record does, then the pusher sees the reply),
  // and the pusher pushes the next. A look_soon that promised a look and did not make it
  // would leave the next push unrung and untaken: the wait below would run out.
  io_thread t;
  std::atomic<int> taken{0};
  std::vector<int> order;  // by the I/O thread only
  io_handoff<int>* hp = nullptr;
  io_handoff<int> h(t.io, [&](std::vector<int>& batch) {
    for (int v : batch) order.push_back(v);
    const int n = static_cast<int>(batch.size());
    asio::post(t.io, [&, n] {  // the reply, after the handlers queued so far
      hp->look_soon();
      taken += n;
    });
  });
  hp = &h;
  h.start();
  t.start();
  constexpr int rounds = 2000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int pushed = 0;
  for (; pushed < rounds && std::chrono::steady_clock::now() < deadline; ++pushed) {
    int v = pushed;
    REQUIRE(h.push(v));
    while (taken.load() <= pushed && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  }
  t.stop();
  CHECK(taken.load() == rounds);
  REQUIRE(order.size() == static_cast<std::size_t>(taken.load()));
  bool in_order = true;
  for (std::size_t i = 0; i < order.size(); ++i) in_order = in_order && order[i] == static_cast<int>(i);
  CHECK(in_order);
}

TEST_CASE("io_handoff: after close() a push fails and leaves the item; close() returns what was not taken") {
  asio::io_context io;  // never run: nothing is taken
  std::vector<int> got;
  io_handoff<std::unique_ptr<int>> h(io, [&](std::vector<std::unique_ptr<int>>& batch) {
    for (auto& p : batch) got.push_back(*p);
  });
  h.start();
  auto a = std::make_unique<int>(1), b = std::make_unique<int>(2);
  REQUIRE(h.push(a));
  REQUIRE(h.push(b));
  CHECK_FALSE(a);  // moved into the hand-off
  std::vector<std::unique_ptr<int>> left = h.close();
  REQUIRE(left.size() == 2);
  CHECK(*left[0] == 1);
  CHECK(*left[1] == 2);

  auto c = std::make_unique<int>(3);
  CHECK_FALSE(h.push(c));
  REQUIRE(c);  // still the caller's
  CHECK(*c == 3);
  io.poll();  // the bell rang: its handler finds nothing left
  CHECK(got.empty());
}
