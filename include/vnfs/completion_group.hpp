// vnfs public API: completion groups (DAFS, papers/003 §3.2).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <system_error>

namespace vnfs {

/// What one asynchronous operation reports when it ends.
struct completion {
  std::uint64_t tag = 0;     ///< the caller's tag, given when the operation was started
  std::error_code status;    ///< empty on success
  std::uint64_t bytes = 0;   ///< bytes moved (reads, writes), 0 for other operations
};

namespace detail {
struct group_state;
struct internals;
}

/// A queue of completions that the application polls or waits on. Every asynchronous
/// operation names one group and a tag; its completion is delivered to that group exactly
/// once — also when the connection drops (after the library's retransmissions) or the client
/// closes (status vnfs::errc::closed).
///
/// Any number of groups per client. Copies share one queue. All members are thread-safe:
/// several threads may poll or wait on the same group; each completion goes to one of them.
class completion_group {
 public:
  /// An empty group. Groups made by client::make_group() are the same thing; a group is not
  /// tied to a client and may collect completions of several.
  completion_group();

  /// Takes up to out.size() completions that are ready; never blocks. Returns how many.
  std::size_t poll(std::span<completion> out);
  /// One ready completion, if any; never blocks.
  std::optional<completion> poll();
  /// Blocks until a completion is ready and takes it. With nothing in flight it waits for
  /// an operation that another thread starts.
  completion wait();
  /// As wait(), giving up after `timeout`.
  std::optional<completion> wait_for(std::chrono::nanoseconds timeout);

  /// Operations started on this group whose completions have not been taken yet.
  std::size_t outstanding() const;

 private:
  friend struct detail::internals;  // the library's access (src/client/internals.hpp)
  std::shared_ptr<detail::group_state> state_;
};

}  // namespace vnfs
