#include "delay_link.hpp"

#include <algorithm>
#include <cerrno>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

namespace vnfs::netdelay {

namespace asio = boost::asio;
using boost::system::error_code;
using asio::ip::tcp;

namespace {
// Splices per readiness notification or per write_more() call before yielding to other
// connections (fairness; the rest is picked up by the next turn of the event loop).
constexpr int max_splices_per_turn = 16;
}  // namespace

delay_link::delay_link(socket_ptr from, socket_ptr to, clock::duration delay, link_limits limits,
                       std::shared_ptr<wake_lateness> lateness, std::function<void()> on_done,
                       std::function<void()> on_failure)
    : from_(std::move(from)),
      to_(std::move(to)),
      delay_(delay),
      limits_(limits),
      lateness_(std::move(lateness)),
      on_done_(std::move(on_done)),
      on_failure_(std::move(on_failure)),
      timer_(from_->get_executor()),
      pipes_(limits.pipe_size, limits.max_queued) {}

void delay_link::start() {
  error_code ec;
  from_->native_non_blocking(true, ec);
  if (!ec) to_->native_non_blocking(true, ec);
  if (ec) {
    fail();
    return;
  }
  read_more();
}

void delay_link::close() noexcept {
  finished_ = true;
  on_done_ = nullptr;
  on_failure_ = nullptr;
  timer_.cancel();
}

void delay_link::read_more() {
  if (finished_ || eof_ || read_waiting_ || read_paused_) return;
  read_waiting_ = true;
  from_->async_wait(tcp::socket::wait_read, [self = shared_from_this()](error_code ec) {
    self->read_waiting_ = false;
    if (self->finished_) return;
    if (ec) {
      self->fail();
      return;
    }
    self->on_readable();
  });
}

void delay_link::on_readable() {
  // Everything read in this turn arrived "now": one release time for all of it.
  clock::time_point due = clock::now() + delay_;
  for (int i = 0; i < max_splices_per_turn; ++i) {
    std::size_t added = 0;
    switch (pipes_.fill(from_->native_handle(), added)) {
      case pipe_buffer::fill_result::data:
        if (!segments_.empty() && segments_.back().due == due)
          segments_.back().size += added;
        else
          segments_.push_back(segment{added, due});
        continue;
      case pipe_buffer::fill_result::eof:
        eof_ = true;
        eof_due_ = due;
        break;
      case pipe_buffer::fill_result::would_block:
        break;
      case pipe_buffer::fill_result::full:
        read_paused_ = true;  // write_more() resumes reading once bytes have left
        break;
      case pipe_buffer::fill_result::error:
        fail();
        return;
    }
    break;
  }
  write_more();
  read_more();
}

void delay_link::write_more() {
  if (finished_ || write_waiting_) return;
  bool drained = false;
  for (int turn = 0; turn < max_splices_per_turn; ++turn) {
    if (segments_.empty()) {
      if (eof_) forward_eof();
      break;
    }
    // Released: what is due within the lateness estimate (a timer set for it would fire
    // at once).
    clock::time_point release_by = clock::now() + lateness_->estimate();
    if (segments_.front().due > release_by) {
      wait_until(segments_.front().due);
      break;
    }
    std::size_t due_bytes = 0;
    for (const segment& s : segments_) {
      if (s.due > release_by) break;
      due_bytes += s.size;
    }
    ssize_t m = pipes_.drain(to_->native_handle(), due_bytes);
    if (m < 0 && errno == EAGAIN) {
      write_waiting_ = true;
      to_->async_wait(tcp::socket::wait_write, [self = shared_from_this()](error_code ec) {
        self->write_waiting_ = false;
        if (self->finished_) return;
        if (ec) {
          self->fail();
          return;
        }
        self->write_more();
      });
      break;
    }
    if (m <= 0) {  // an error; 0 cannot happen with bytes held and due
      fail();
      return;
    }
    drained = true;
    forwarded_ += static_cast<std::uint64_t>(m);
    for (std::size_t left = static_cast<std::size_t>(m); left > 0;) {
      std::size_t take = std::min(left, segments_.front().size);
      segments_.front().size -= take;
      left -= take;
      if (segments_.front().size == 0) segments_.pop_front();
    }
    if (turn + 1 == max_splices_per_turn && !finished_ && !segments_.empty()) {
      // Yield to other connections; continue on the next turn of the loop.
      write_waiting_ = true;
      asio::post(timer_.get_executor(), [self = shared_from_this()] {
        self->write_waiting_ = false;
        self->write_more();
      });
    }
  }
  if (drained && read_paused_ && !finished_) {
    read_paused_ = false;
    read_more();
  }
}

void delay_link::forward_eof() {
  if (eof_due_ > clock::now() + lateness_->estimate()) {
    wait_until(eof_due_);
    return;
  }
  finished_ = true;
  error_code ignored;
  to_->shutdown(tcp::socket::shutdown_send, ignored);
  auto done = std::move(on_done_);  // the callback may close() this link
  on_failure_ = nullptr;
  if (done) done();
}

void delay_link::wait_until(clock::time_point due) {
  write_waiting_ = true;
  clock::time_point expiry = lateness_->timer_for(due);
  timer_.expires_at(expiry);
  timer_.async_wait([self = shared_from_this(), expiry](error_code ec) {
    self->write_waiting_ = false;
    if (ec) return;  // cancelled: the link is finished
    self->lateness_->observe(expiry, clock::now());
    self->write_more();
  });
}

void delay_link::fail() {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  auto failure = std::move(on_failure_);  // the callback may close() this link
  on_done_ = nullptr;
  if (failure) failure();
}

}  // namespace vnfs::netdelay
