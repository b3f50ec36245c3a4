// vnfs public API: what a vectorized call reports (papers/000 Table 1: an error code and a
// count of successful operations), with the status of every item.
#pragma once

#include <cstddef>
#include <limits>
#include <system_error>
#include <vector>

namespace vnfs {

struct vresult {
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  /// The first failure in the caller's order (empty when every item succeeded).
  std::error_code error;
  /// Items that succeeded.
  std::size_t ok_count = 0;
  /// Index, in the caller's vector, of the first item that failed; npos if none did.
  std::size_t failed_index = npos;
  /// One status per item, in the caller's order: empty (succeeded), the item's error, or
  /// vnfs::errc::not_executed for an item the call never ran (it stops at the first failure,
  /// as a COMPOUND does). Where COMPOUNDs of one call run concurrently (see client.hpp),
  /// items after the failed one may still have succeeded: their status says so.
  std::vector<std::error_code> status;

  bool ok() const { return !error; }
};

}  // namespace vnfs
