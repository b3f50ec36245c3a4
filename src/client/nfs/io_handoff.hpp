// vnfs client, nfs backend: how work made on an application thread reaches the session's
// I/O thread. asio::post would do, but it wakes the I/O thread (an eventfd write) while
// holding the io_context's mutex, which the woken thread takes first thing: at one call in
// flight, every submission then cost the I/O thread a second sleep and wake-up on that
// mutex (about one context switch per COMPOUND, seen with perf sched in bench/rdma_io). Here
// the application thread rings an eventfd of its own after letting go of every lock, and
// only when the I/O thread is not already about to look: after taking a batch, the I/O
// thread looks again once the handlers queued before that look have run, until a look finds
// nothing. So while calls keep coming (many in flight), they are taken without a ring.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <functional>
#include <mutex>
#include <system_error>
#include <vector>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

namespace vnfs::detail {

template <class T>
class io_handoff {
 public:
  /// `take` runs on the thread running `io`, with the items pushed since it last ran, in
  /// the order they were pushed.
  io_handoff(boost::asio::io_context& io, std::function<void(std::vector<T>&)> take)
      : io_(io), bell_(io, make_eventfd()), take_(std::move(take)) {}
  io_handoff(const io_handoff&) = delete;
  io_handoff& operator=(const io_handoff&) = delete;

  /// Starts listening for the bell; call before the I/O thread runs.
  void start() { listen(); }

  /// From any thread. False once close() ran: `item` is left to the caller.
  bool push(T& item) {
    bool ring = false;
    {
      std::lock_guard lock(mu_);
      if (closed_) return false;
      items_.push_back(std::move(item));
      ring = !rung_;
      rung_ = true;
    }
    if (ring) {
      const std::uint64_t one = 1;
      // Cannot fail: the counter is read before the bell rings again, so it never nears
      // overflow, and the eventfd lives as long as the engine that pushes.
      [[maybe_unused]] const ssize_t n = ::write(bell_.native_handle(), &one, sizeof one);
    }
    return true;
  }

  /// On the I/O thread, when it is about to complete something that may make the
  /// application push (a reply): it looks again after its queued handlers, so that pushes
  /// until then need not ring.
  void look_soon() {
    {
      std::lock_guard lock(mu_);
      if (rung_ || closed_) return;
      rung_ = true;
    }
    boost::asio::post(io_, [this] { take_pending(); });
  }

  /// Whether items wait to be taken.
  bool pending() {
    std::lock_guard lock(mu_);
    return !items_.empty();
  }

  /// After the I/O thread has stopped: later pushes fail; returns the items not taken.
  std::vector<T> close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    return std::move(items_);
  }

 private:
  static int make_eventfd() {
    const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "vnfs: eventfd");
    return fd;
  }

  void listen() {
    bell_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
      if (ec) return;  // the descriptor is closing
      std::uint64_t count;
      [[maybe_unused]] const ssize_t n = ::read(bell_.native_handle(), &count, sizeof count);
      listen();
      take_pending();
    });
  }

  /// On the I/O thread. Takes what was pushed; if anything, looks again later (rung_ stays
  /// set, so pushes meanwhile do not ring); if nothing, the next push rings.
  void take_pending() {
    std::vector<T> batch;
    {
      std::lock_guard lock(mu_);
      batch.swap(items_);
      if (batch.empty()) rung_ = false;
    }
    if (batch.empty()) return;
    boost::asio::post(io_, [this] { take_pending(); });
    take_(batch);
  }

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor bell_;  // an eventfd
  std::function<void(std::vector<T>&)> take_;
  std::mutex mu_;
  std::vector<T> items_;  // guarded by mu_
  bool rung_ = false;     // guarded by mu_: the I/O thread will look without a ring
  bool closed_ = false;   // guarded by mu_
};

}  // namespace vnfs::detail
