// vnfs client: a thread waiting for a synchronous call runs the call's I/O itself.
//
// At one call in flight, handing each call to a client I/O thread and its completion back
// costs the client two sleeps and a preemption per COMPOUND, where a round trip needs one
// sleep (docs/ARCHITECTURE.md, "Threads"). So detail::wait (the synchronous forms) lets the
// engine its call went to be run by the waiting thread until the call completes, when no
// other thread is running it; the engine's own I/O thread steps aside meanwhile and takes
// over again when the caller leaves work behind or stops calling.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace vnfs::detail {

/// An engine that a waiting application thread may run (the nfs:// session engine).
class drivable {
 public:
  virtual ~drivable() = default;
  /// Runs the engine on the calling thread, completions included, until `done()` holds;
  /// false, having run nothing, when it does not (another thread is running it as a caller,
  /// calls other than the caller's `own_calls` are open, or the engine is closing): then
  /// the caller wakes the engine's own thread with wake() and waits.
  virtual bool drive(const std::function<bool()>& done, std::uint32_t own_calls) = 0;
  /// Makes sure the engine's own thread runs what was submitted, when no caller will.
  virtual void wake() = 0;
  /// From a thread not running the engine: makes a driving caller look at its `done()` now
  /// (part of its call completed elsewhere).
  virtual void interrupt() = 0;
};

/// Set on the calling thread while a synchronous call is being started (detail::wait): an
/// engine that the call submits to notes itself here instead of waking its I/O thread, and
/// the waiter then drives it. A call that submits to two engines drives neither.
class sync_start {
 public:
  sync_start();
  ~sync_start();  // wakes what was noted and not taken
  sync_start(const sync_start&) = delete;
  sync_start& operator=(const sync_start&) = delete;

  /// The scope of the calling thread, or null.
  static sync_start* current();
  /// `engine` received a submission of this call. False: the caller will not drive it (a
  /// second engine), so the engine wakes its own thread.
  bool note(const std::shared_ptr<drivable>& engine);
  /// Ends the scope: the one engine the call submitted to, which the caller is to drive
  /// (and wake if it cannot), or null (none, or several: they were woken).
  std::shared_ptr<drivable> take();
  /// The calls this scope's call submitted to the engine take() returns.
  std::uint32_t submitted() const { return submitted_; }

 private:
  sync_start* outer_;
  std::shared_ptr<drivable> engine_;
  std::uint32_t submitted_ = 0;
  bool several_ = false;
  bool ended_ = false;
};

}  // namespace vnfs::detail
