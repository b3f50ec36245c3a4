// vnfs client: completion groups — a mutex-protected queue of completions shared by copies.
#include "vnfs/completion_group.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>

#include "client/completion_group_state.hpp"
#include "client/internals.hpp"
#include "vnfs/client.hpp"

namespace vnfs {

completion_group::completion_group() : state_(std::make_shared<detail::group_state>()) {}

std::size_t completion_group::poll(std::span<completion> out) {
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  std::size_t n = 0;
  while (n < out.size() && !s.ready.empty()) {
    out[n++] = s.ready.front();
    s.ready.pop_front();
  }
  s.outstanding -= n;
  return n;
}

std::optional<completion> completion_group::poll() {
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  return s.take_locked();
}

completion completion_group::wait() {
  auto& s = *state_;
  std::unique_lock lock(s.mutex);
  s.cv.wait(lock, [&] { return !s.ready.empty(); });
  return *s.take_locked();
}

std::optional<completion> completion_group::wait_for(std::chrono::nanoseconds timeout) {
  auto& s = *state_;
  std::unique_lock lock(s.mutex);
  if (!s.cv.wait_for(lock, timeout, [&] { return !s.ready.empty(); })) return std::nullopt;
  return s.take_locked();
}

std::size_t completion_group::outstanding() const {
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  return s.outstanding;
}

namespace detail {

std::optional<completion> group_state::take_locked() {
  if (ready.empty()) return std::nullopt;
  completion c = ready.front();
  ready.pop_front();
  --outstanding;
  return c;
}

void group_state::deliver(completion c) {
  {
    std::lock_guard lock(mutex);
    ready.push_back(std::move(c));
  }
  // notify_one is enough: each completion goes to one taker, and a woken taker that finds
  // the queue empty (another thread took it first) simply waits again.
  cv.notify_one();
}

done_fn to_group(completion_group& g, std::uint64_t tag) {
  std::shared_ptr<group_state> s = internals::state_of(g);
  {
    std::lock_guard lock(s->mutex);
    ++s->outstanding;
  }
  // The done_fn owns the state, so the completion lands even if every copy of the group the
  // application held is gone by then.
  return [s = std::move(s), tag](std::error_code ec, std::size_t n) {
    s->deliver(completion{tag, ec, static_cast<std::uint64_t>(n)});
  };
}

}  // namespace detail
}  // namespace vnfs
