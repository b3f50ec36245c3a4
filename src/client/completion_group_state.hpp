// vnfs client: the shared state behind a completion_group.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

#include "vnfs/completion_group.hpp"

namespace vnfs::detail {

/// Invariant (under `mutex`): outstanding >= ready.size(); `outstanding` counts operations
/// started with to_group() whose completion has not been taken by poll/wait yet.
struct group_state {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<completion> ready;
  std::size_t outstanding = 0;

  /// Pops the oldest ready completion; `mutex` must be held.
  std::optional<completion> take_locked();
  /// Queues a completion and wakes one waiter.
  void deliver(completion c);
};

}  // namespace vnfs::detail
