// vnfs client: bookkeeping shared by every implementation of the vectorized calls — one
// status per item, the count of successes, the first failure in the caller's order.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>

#include "vnfs/client.hpp"
#include "vnfs/error.hpp"
#include "vnfs/vresult.hpp"

namespace vnfs::detail {

/// Starts a result for `n` items: every status errc::not_executed until set.
inline void reset_result(vresult& r, std::size_t n) {
  r = vresult{};
  r.status.assign(n, make_error_code(errc::not_executed));
}

/// Derives error, failed_index and ok_count from the statuses.
inline void finish_result(vresult& r) {
  r.ok_count = 0;
  r.error.clear();
  r.failed_index = vresult::npos;
  for (std::size_t i = 0; i < r.status.size(); ++i) {
    if (!r.status[i]) {
      ++r.ok_count;
    } else if (r.failed_index == vresult::npos && r.status[i] != errc::not_executed &&
               r.status[i] != errc::rolled_back) {
      r.failed_index = i;
      r.error = r.status[i];
    }
  }
}

/// Runs `step(i, done)` for i = 0 .. n-1, each after the previous completed, stopping at
/// the first failure (later items stay not_executed); then finishes *out and calls `done`
/// with out->ok_count.
using item_step = std::function<void(std::size_t, done_fn)>;
void run_in_order(std::size_t n, item_step step, vresult* out, done_fn done);

}  // namespace vnfs::detail
