// byte_ranges (src/server/txn/byte_ranges.hpp): the bytes of a file that a transaction's
// undo records already restore, so that a later change backs up only the rest.
#include <catch2/catch.hpp>

#include <cstdint>

#include "server/txn/byte_ranges.hpp"

using vnfs::server::txn::byte_ranges;
using range = byte_ranges::range;
using ranges = std::vector<range>;

TEST_CASE("byte_ranges: gaps of an empty set, after adds, merges of touching and overlapping ranges", "[txn]") {
  byte_ranges b;
  CHECK(b.gaps(0, 100) == ranges{{0, 100}});
  CHECK(b.gaps(5, 5).empty());
  b.add(10, 20);
  b.add(7, 7);  // empty: nothing
  CHECK(b.gaps(0, 100) == ranges{{0, 10}, {20, 100}});
  CHECK(b.gaps(12, 18).empty());
  CHECK(b.gaps(15, 25) == ranges{{20, 25}});
  CHECK(b.gaps(5, 15) == ranges{{5, 10}});
  b.add(30, 40);
  CHECK(b.gaps(0, 50) == ranges{{0, 10}, {20, 30}, {40, 50}});
  b.add(20, 30);  // touches both: one range [10, 40)
  CHECK(b.gaps(0, 50) == ranges{{0, 10}, {40, 50}});
  b.add(5, 12);  // overlaps the start
  CHECK(b.gaps(0, 50) == ranges{{0, 5}, {40, 50}});
  b.add(60, UINT64_MAX);  // a truncation: everything past 60
  CHECK(b.gaps(0, UINT64_MAX) == ranges{{0, 5}, {40, 60}});
  b.add(0, 100);  // swallows all but the open end, which merges
  CHECK(b.gaps(0, UINT64_MAX).empty());
}
