// vnfsd's READ payload buffers (server/payload_buffers.hpp): reused, within a bound on what
// is kept, and safe to outlive their pool (no server started).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>

#include "server/payload_buffers.hpp"

using vnfs::server::payload_buffers;

namespace {
constexpr std::size_t KiB = 1024;
}

TEST_CASE("small payloads come from the allocator and are not kept") {
  payload_buffers pool(512 * KiB);
  { auto small = pool.get(4 * KiB); }
  CHECK(pool.retained() == 0);
}

TEST_CASE("a buffer comes back when its last holder lets go, and goes out again") {
  payload_buffers pool(512 * KiB);
  std::byte* first = nullptr;
  std::byte* second = nullptr;
  {
    auto b = pool.get(200 * KiB);  // from the 256 KiB class
    first = b.get();
    std::fill_n(first, 256 * KiB, std::byte{0x5a});  // all of the class's size is usable
    auto c = pool.get(256 * KiB);
    second = c.get();
    CHECK(second != first);  // two live buffers are two buffers
    auto held = b;            // a second holder keeps it out
    b.reset();
    CHECK(pool.retained() == 0);
    // Leaving the scope: `held` lets `first` go, then `c` lets `second` go.
  }
  CHECK(pool.retained() == 512 * KiB);  // both came back
  auto again = pool.get(129 * KiB);      // the same class: the last one back first
  CHECK(again.get() == second);
  CHECK(pool.retained() == 256 * KiB);
}

TEST_CASE("what comes back beyond the bound is freed") {
  payload_buffers pool(512 * KiB);
  {
    auto a = pool.get(256 * KiB);
    auto b = pool.get(256 * KiB);
    auto c = pool.get(64 * KiB);  // destroyed first: kept
  }
  // c (64 KiB) and b (256 KiB) are kept; a would make 576 KiB and is freed.
  CHECK(pool.retained() == 320 * KiB);
}

TEST_CASE("a buffer may outlive its pool") {
  std::shared_ptr<std::byte[]> late;
  {
    payload_buffers gone(1024 * KiB);
    late = gone.get(1024 * KiB);
  }
  late[1024 * KiB - 1] = std::byte{1};  // still valid (ASan: no use after free)
  late.reset();                          // freed then (ASan: no leak)
}
