// vnfs-netdelay: how late this host's timers fire, learned as the proxy runs.
#pragma once

#include <algorithm>
#include <chrono>

namespace vnfs::netdelay {

/// A running estimate of how long after its expiry time a timer's handler runs (the
/// kernel's wake-up and the event loop's dispatch; tens of microseconds on a virtual
/// machine, more after long sleeps). A delay_link sets its timer that much before a
/// release time, so that releases land on the release time on average instead of always
/// after it. The estimate is an exponential moving average (weight 1/16 per sample) of
/// observed lateness, each sample clamped to [0, max_lateness], so one descheduled
/// wake-up cannot move it far. Not thread-safe: one per event-loop thread.
class wake_lateness {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr clock::duration max_lateness = std::chrono::microseconds(200);

  /// When to set a timer for something due at `due`.
  clock::time_point timer_for(clock::time_point due) const noexcept { return due - estimate_; }

  /// Reports that a timer set for `expiry` ran its handler at `now`.
  void observe(clock::time_point expiry, clock::time_point now) noexcept {
    clock::duration late = std::clamp<clock::duration>(now - expiry, clock::duration::zero(), max_lateness);
    estimate_ += (late - estimate_) / 16;
  }

  clock::duration estimate() const noexcept { return estimate_; }

 private:
  clock::duration estimate_{};
};

}  // namespace vnfs::netdelay
