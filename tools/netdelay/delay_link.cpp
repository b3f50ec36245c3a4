#include "delay_link.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>

namespace vnfs::netdelay {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// One write gathers at most this many due chunks (and bytes), so one writev stays cheap.
constexpr std::size_t max_gather_chunks = 64;
constexpr std::size_t max_gather_bytes = 8 * 1024 * 1024;
// read_size buffers kept for reuse by one link.
constexpr std::size_t max_spare = 8;
}  // namespace

delay_link::delay_link(socket_ptr from, socket_ptr to, clock::duration delay,
                       link_limits limits, std::function<void()> on_done, std::function<void()> on_failure)
    : from_(from),
      to_(to),
      delay_(delay),
      limits_(limits),
      on_done_(std::move(on_done)),
      on_failure_(std::move(on_failure)),
      timer_(from_->get_executor()) {}

void delay_link::start() { read_more(); }

void delay_link::close() noexcept {
  finished_ = true;
  on_done_ = nullptr;
  on_failure_ = nullptr;
  timer_.cancel();
}

std::vector<char> delay_link::take_buffer() {
  if (!spare_.empty()) {
    std::vector<char> b = std::move(spare_.back());
    spare_.pop_back();
    return b;
  }
  return std::vector<char>(limits_.read_size);
}

void delay_link::give_back(std::vector<char>&& buffer) {
  if (buffer.capacity() == limits_.read_size && spare_.size() < max_spare) {
    buffer.resize(limits_.read_size);
    spare_.push_back(std::move(buffer));
  }
}

void delay_link::read_more() {
  if (finished_ || eof_ || reading_active_) return;
  if (queued_ + limits_.read_size > limits_.max_queued && !queue_.empty()) return;  // resumed by write_more
  reading_ = take_buffer();
  queued_ += reading_.capacity();
  reading_active_ = true;
  from_->async_read_some(asio::buffer(reading_), [self = shared_from_this()](error_code ec, std::size_t n) {
    self->reading_active_ = false;
    if (self->finished_) return;
    clock::time_point due = clock::now() + self->delay_;
    std::vector<char> buf = std::move(self->reading_);
    self->queued_ -= buf.capacity();
    if (n > 0) {
      chunk c;
      if (n < self->limits_.small_read) {
        c.data.assign(buf.data(), buf.data() + n);
        self->give_back(std::move(buf));
      } else {
        buf.resize(n);
        c.data = std::move(buf);
      }
      c.due = due;
      self->queued_ += c.data.capacity();
      self->queue_.push_back(std::move(c));
    } else {
      self->give_back(std::move(buf));
    }
    if (ec == asio::error::eof) {
      self->eof_ = true;
      self->eof_due_ = due;
    } else if (ec) {
      self->fail();
      return;
    }
    self->write_more();
    self->read_more();
  });
}

void delay_link::write_more() {
  if (finished_ || writing_active_) return;
  if (queue_.empty()) {
    if (eof_) forward_eof();
    return;
  }
  clock::time_point now = clock::now();
  if (queue_.front().due > now) {
    writing_active_ = true;
    timer_.expires_at(queue_.front().due);
    timer_.async_wait([self = shared_from_this()](error_code) {
      self->writing_active_ = false;
      self->write_more();
    });
    return;
  }
  // Every chunk already due goes out in one gathered write; later ones wait.
  std::vector<asio::const_buffer> buffers;
  std::size_t bytes = 0;
  for (const chunk& c : queue_) {
    if (c.due > now || buffers.size() == max_gather_chunks || bytes >= max_gather_bytes) break;
    buffers.emplace_back(c.data.data(), c.data.size());
    bytes += c.data.size();
  }
  writing_count_ = buffers.size();
  writing_active_ = true;
  asio::async_write(*to_, buffers, [self = shared_from_this()](error_code ec, std::size_t n) {
    self->writing_active_ = false;
    if (self->finished_) return;
    if (ec) {
      self->fail();
      return;
    }
    self->forwarded_ += n;
    for (std::size_t i = 0; i < self->writing_count_; ++i) {
      self->queued_ -= self->queue_.front().data.capacity();
      self->give_back(std::move(self->queue_.front().data));
      self->queue_.pop_front();
    }
    self->writing_count_ = 0;
    self->read_more();  // may have been paused at max_queued
    self->write_more();
  });
}

void delay_link::forward_eof() {
  clock::time_point now = clock::now();
  if (eof_due_ > now) {
    writing_active_ = true;
    timer_.expires_at(eof_due_);
    timer_.async_wait([self = shared_from_this()](error_code) {
      self->writing_active_ = false;
      self->write_more();
    });
    return;
  }
  finished_ = true;
  error_code ignored;
  to_->shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  auto done = std::move(on_done_);  // the callback may close() this link
  on_failure_ = nullptr;
  if (done) done();
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
