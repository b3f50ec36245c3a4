#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "vnfs/client.hpp"

using vnfs::completion;
using vnfs::completion_group;
using vnfs::detail::to_group;

TEST_CASE("to_group counts the operation outstanding at once; taking it uncounts it") {
  completion_group g;
  CHECK(g.outstanding() == 0);
  CHECK_FALSE(g.poll().has_value());

  auto d1 = to_group(g, 11);
  auto d2 = to_group(g, 22);
  CHECK(g.outstanding() == 2);
  CHECK_FALSE(g.poll().has_value());  // started, not completed

  d2(make_error_code(std::errc::io_error), 0);
  d1({}, 4096);
  CHECK(g.outstanding() == 2);  // completed but not taken

  auto c = g.poll();
  REQUIRE(c);
  CHECK(c->tag == 22);
  CHECK(c->status == std::errc::io_error);
  CHECK(c->bytes == 0);
  CHECK(g.outstanding() == 1);

  c = g.wait_for(std::chrono::seconds(5));
  REQUIRE(c);
  CHECK(c->tag == 11);
  CHECK_FALSE(c->status);
  CHECK(c->bytes == 4096);
  CHECK(g.outstanding() == 0);
  CHECK_FALSE(g.poll().has_value());
}

TEST_CASE("poll(span) takes up to the span's size, oldest first") {
  completion_group g;
  for (std::uint64_t t = 0; t < 5; ++t) to_group(g, t)({}, t * 10);
  completion out[3];
  CHECK(g.poll(out) == 3);
  CHECK(out[0].tag == 0);
  CHECK(out[1].tag == 1);
  CHECK(out[2].tag == 2);
  CHECK(out[2].bytes == 20);
  CHECK(g.outstanding() == 2);
  CHECK(g.poll(out) == 2);
  CHECK(out[0].tag == 3);
  CHECK(out[1].tag == 4);
  CHECK(g.poll(out) == 0);
  CHECK(g.poll(std::span<completion>()) == 0);
  CHECK(g.outstanding() == 0);
}

TEST_CASE("wait_for gives up when nothing completes") {
  completion_group g;
  CHECK_FALSE(g.wait_for(std::chrono::milliseconds(20)).has_value());
  auto d = to_group(g, 1);  // in flight, never completed within the wait
  CHECK_FALSE(g.wait_for(std::chrono::milliseconds(20)).has_value());
  CHECK(g.outstanding() == 1);
  d({}, 0);
  CHECK(g.wait_for(std::chrono::milliseconds(0)).has_value());
}

TEST_CASE("copies share one queue; a done_fn outlives every copy of its group") {
  completion_group a;
  completion_group b = a;
  to_group(a, 7)({}, 1);
  CHECK(b.outstanding() == 1);
  REQUIRE(b.poll());
  CHECK(a.outstanding() == 0);

  vnfs::detail::done_fn late;
  {
    completion_group gone;
    late = to_group(gone, 9);
  }
  late({}, 3);  // must not touch freed memory (ASan run)
}

TEST_CASE("wait blocks until another thread completes an operation") {
  completion_group g;
  auto d = to_group(g, 5);
  std::atomic<std::uint64_t> tag{0};
  std::thread waiter([&] { tag = g.wait().tag; });
  d({}, 0);
  waiter.join();
  CHECK(tag.load() == 5);
  CHECK(g.outstanding() == 0);
}

TEST_CASE("many producers and consumers: every completion is taken exactly once") {
  constexpr int producers = 6, per_producer = 2000, consumers = 4;
  constexpr int total = producers * per_producer;
  completion_group g;
  std::vector<std::atomic<int>> seen(total);
  std::atomic<int> taken{0}, bad{0};

  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&, c] {
      completion buf[7];
      // Bounded: gives up after 100 waits in a row (5 s) in which nothing completed.
      int idle = 0;
      for (int i = 0; taken.load() < total && idle < 100; ++i) {
        std::size_t n = 0;
        switch ((c + i) % 3) {
          case 0: n = g.poll(buf); break;
          case 1: if (auto x = g.wait_for(std::chrono::milliseconds(50))) buf[0] = *x, n = 1; break;
          case 2: if (auto x = g.poll()) buf[0] = *x, n = 1; break;
        }
        if (n == 0 && (c + i) % 3 != 1) {
          if (auto x = g.wait_for(std::chrono::milliseconds(50))) buf[0] = *x, n = 1;
        }
        idle = n == 0 ? idle + 1 : 0;
        for (std::size_t k = 0; k < n; ++k) {
          seen[buf[k].tag]++;
          if (buf[k].bytes != buf[k].tag + 1 || buf[k].status) ++bad;  // Catch2 asserts on one thread only
        }
        taken += static_cast<int>(n);
      }
    });
  }
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      std::vector<std::pair<std::uint64_t, vnfs::detail::done_fn>> pending;
      for (int i = 0; i < per_producer; ++i) {
        const auto tag = static_cast<std::uint64_t>(p * per_producer + i);
        pending.emplace_back(tag, to_group(g, tag));
        // Complete in bursts, newest first: out of start order.
        if (pending.size() == 8 || i + 1 == per_producer) {
          while (!pending.empty()) {
            auto& [t, done] = pending.back();
            done({}, t + 1);
            pending.pop_back();
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(taken.load() == total);
  CHECK(bad.load() == 0);
  int wrong = 0;
  for (auto& s : seen) wrong += s.load() != 1;
  CHECK(wrong == 0);
  CHECK(g.outstanding() == 0);
  CHECK_FALSE(g.poll().has_value());
}
