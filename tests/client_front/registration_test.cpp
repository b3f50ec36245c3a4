#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "client/internals.hpp"
#include "client/memory/registration.hpp"
#include "vnfs/error.hpp"
#include "vnfs/memory_region.hpp"

using vnfs::access;
using vnfs::memory_region;
using vnfs::detail::internals;
using vnfs::detail::registration_table;

namespace {

template <class F>
std::error_code code_of(F f) {
  try {
    f();
  } catch (const std::system_error& e) {
    return e.code();
  }
  return {};
}

}  // namespace

TEST_CASE("registration cap: bytes count until the region is destroyed") {
  auto table = registration_table::create(1000);
  std::vector<std::byte> buf(2000);
  {
    memory_region a = internals::make_region(table->add(buf.data(), 600, access::read));
    CHECK(table->registered_bytes() == 600);
    CHECK(a.data() == buf.data());
    CHECK(a.size() == 600);
    CHECK(a.access() == access::read);
    CHECK(code_of([&] { table->add(buf.data() + 600, 401, access::read_write); }) == vnfs::errc::registration_limit);
    CHECK(table->registered_bytes() == 600);  // a refused registration takes nothing
    memory_region b = internals::make_region(table->add(buf.data() + 600, 400, access::write));
    CHECK(table->registered_bytes() == 1000);
    CHECK(table->count() == 2);
    CHECK(internals::registration_of(a.all())->id != internals::registration_of(b.all())->id);
    CHECK(code_of([&] { table->add(buf.data(), 1, access::read); }) == vnfs::errc::registration_limit);
  }
  CHECK(table->registered_bytes() == 0);
  CHECK(table->count() == 0);
  memory_region whole = internals::make_region(table->add(buf.data(), 1000, access::read_write));
  CHECK(table->registered_bytes() == 1000);
}

TEST_CASE("registration refuses null, empty and meaningless ranges") {
  auto table = registration_table::create(1 << 20);
  std::byte b[8];
  CHECK(code_of([&] { table->add(nullptr, 8, access::read); }) == vnfs::errc::bad_argument);
  CHECK(code_of([&] { table->add(b, 0, access::read); }) == vnfs::errc::bad_argument);
  CHECK(code_of([&] { table->add(b, 8, static_cast<vnfs::access>(0)); }) == vnfs::errc::bad_argument);
  CHECK(code_of([&] { table->add(b, 8, static_cast<vnfs::access>(4)); }) == vnfs::errc::bad_argument);
  CHECK(table->registered_bytes() == 0);
}

TEST_CASE("a closed table registers nothing more; its regions still deregister") {
  auto table = registration_table::create(100);
  std::byte b[10];
  auto r = std::make_unique<memory_region>(internals::make_region(table->add(b, 10, access::read)));
  table->close();
  CHECK(table->closed());
  CHECK(code_of([&] { table->add(b, 1, access::read); }) == vnfs::errc::closed);
  r.reset();
  CHECK(table->registered_bytes() == 0);
}

TEST_CASE("slices keep a deregistered registration alive but invalid") {
  auto table = registration_table::create(100);
  std::byte b[64];
  vnfs::memory_slice s;
  {
    memory_region r = internals::make_region(table->add(b, 64, access::read_write));
    s = r.slice(16, 32);
    REQUIRE(internals::registration_of(s));
    CHECK(internals::registration_of(s)->valid());
    CHECK(internals::registration_of(s)->allows(access::read));
    CHECK(internals::registration_of(s)->allows(access::write));
  }
  CHECK(table->registered_bytes() == 0);
  REQUIRE(internals::registration_of(s));
  CHECK_FALSE(internals::registration_of(s)->valid());
  CHECK(s.data() == b + 16);
  CHECK(s.size() == 32);
}

TEST_CASE("access of a registration") {
  auto table = registration_table::create(100);
  std::byte b[8];
  memory_region r = internals::make_region(table->add(b, 8, access::read));
  CHECK(internals::registration_of(r.all())->allows(access::read));
  CHECK_FALSE(internals::registration_of(r.all())->allows(access::write));
  CHECK_FALSE(internals::registration_of(r.all())->allows(access::read_write));
  memory_region w = internals::make_region(table->add(b, 8, access::write));
  CHECK_FALSE(internals::registration_of(w.all())->allows(access::read));
  CHECK(internals::registration_of(w.all())->allows(access::write));
}

TEST_CASE("moving regions: one deregistration; assigning over a region deregisters it") {
  auto table = registration_table::create(100);
  std::byte b[30];
  memory_region a = internals::make_region(table->add(b, 10, access::read));
  memory_region moved(std::move(a));
  CHECK_FALSE(a);
  CHECK(a.size() == 0);
  CHECK(a.data() == nullptr);
  CHECK(moved.size() == 10);
  CHECK(table->registered_bytes() == 10);

  auto kept = moved.all();
  moved = internals::make_region(table->add(b + 10, 20, access::read));  // deregisters the first one
  CHECK(table->registered_bytes() == 20);                      // as its destruction would
  CHECK_FALSE(internals::registration_of(kept)->valid());                    // its slices are dead
  kept = {};
  CHECK(table->registered_bytes() == 20);
}

TEST_CASE("slice and sub bounds") {
  auto table = registration_table::create(100);
  std::byte b[100];
  memory_region r = internals::make_region(table->add(b, 100, access::read_write));
  CHECK(r.slice(0, 100).size() == 100);
  CHECK(r.slice(100, 0).size() == 0);
  CHECK(r.slice(100, 0).data() == b + 100);
  CHECK(r.all().data() == b);
  CHECK_THROWS_AS(r.slice(0, 101), std::out_of_range);
  CHECK_THROWS_AS(r.slice(101, 0), std::out_of_range);
  CHECK_THROWS_AS(r.slice(1, SIZE_MAX), std::out_of_range);  // offset + length wraps
  CHECK_THROWS_AS(r.slice(SIZE_MAX, 2), std::out_of_range);

  auto s = r.slice(10, 50);
  auto t = s.sub(5, 45);
  CHECK(t.data() == b + 15);
  CHECK(t.size() == 45);
  CHECK(internals::registration_of(t) == internals::registration_of(s));
  CHECK(s.sub(50, 0).size() == 0);
  CHECK_THROWS_AS(s.sub(5, 46), std::out_of_range);
  CHECK_THROWS_AS(s.sub(51, 0), std::out_of_range);
  CHECK_THROWS_AS(s.sub(1, SIZE_MAX), std::out_of_range);

  memory_region empty;
  CHECK_FALSE(empty);
  CHECK(empty.size() == 0);
  CHECK_THROWS_AS(empty.slice(0, 1), std::out_of_range);
}

TEST_CASE("concurrent registration and deregistration balance out") {
  constexpr std::size_t cap = 64 * 1024;
  auto table = registration_table::create(cap);
  std::vector<std::byte> buf(cap);
  std::atomic<int> refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::size_t len = 1 + static_cast<std::size_t>((t * 7919 + i * 104729) % 16384);
        try {
          memory_region r = internals::make_region(table->add(buf.data(), len, access::read_write));
          if (table->registered_bytes() > cap) ++other;
        } catch (const std::system_error& e) {
          if (e.code() == vnfs::errc::registration_limit)
            ++refused;
          else
            ++other;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(other.load() == 0);
  CHECK(table->registered_bytes() == 0);
  CHECK(table->count() == 0);
}

TEST_CASE("a region outliving its table deregisters harmlessly") {
  auto table = registration_table::create(100);
  std::byte b[8];
  memory_region r = internals::make_region(table->add(b, 8, access::read));
  table.reset();
  CHECK(r.size() == 8);
}  // ~memory_region with the table gone: nothing to release into (ASan run)
