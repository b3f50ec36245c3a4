#include "transport/tcp/connection.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <utility>

namespace vnfs::transport::tcp {

std::shared_ptr<connection> connection::create(asio::ip::tcp::socket socket, const options& opts,
                                               record_handler on_record, close_handler on_close) {
  return std::make_shared<connection>(passkey{}, std::move(socket), opts, std::move(on_record), std::move(on_close));
}

connection::connection(passkey, asio::ip::tcp::socket socket, const options& opts, record_handler on_record,
                       close_handler on_close)
    : socket_(std::move(socket)),
      strand_(asio::make_strand(socket_.get_executor())),
      assembler_(opts.max_record_size),
      idle_timeout_(opts.idle_timeout),
      max_in_flight_(opts.max_in_flight),
      idle_timer_(socket_.get_executor()),
      on_record_(std::move(on_record)),
      on_close_(std::move(on_close)) {
  boost::system::error_code ec;
  remote_ = socket_.remote_endpoint(ec);
  if (opts.no_delay) socket_.set_option(asio::ip::tcp::no_delay(true), ec);  // best effort
}

connection::~connection() = default;

void connection::start() {
  asio::dispatch(strand_, [self = shared_from_this()] {
    self->last_progress_ = std::chrono::steady_clock::now();
    self->arm_idle_timer();
    self->read_next();
  });
}

void connection::arm_idle_timer() {
  if (idle_timeout_.count() <= 0 || socket_closed_) return;
  idle_timer_.expires_at(last_progress_ + idle_timeout_);
  idle_timer_.async_wait(asio::bind_executor(strand_, [self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->on_idle_timer();
  }));
}

void connection::on_idle_timer() {
  if (socket_closed_) return;
  auto now = std::chrono::steady_clock::now();
  bool executing;  // requests outstanding and no reply stuck in a write: the server's own time
  {
    std::lock_guard lock(mu_);
    executing = in_flight_ > 0 && !writing_;
  }
  if (executing) {
    last_progress_ = now;
  } else if (now >= last_progress_ + idle_timeout_) {
    shut(std::make_error_code(std::errc::timed_out));
    return;
  }
  arm_idle_timer();
}

void connection::read_next() {
  if (socket_closed_) return;
  std::span<std::byte> buf = assembler_.prepare();
  socket_.async_read_some(asio::buffer(buf.data(), buf.size()),
                          asio::bind_executor(strand_, [self = shared_from_this()](const boost::system::error_code& ec,
                                                                                    std::size_t n) {
                            self->on_read(ec, n);
                          }));
}

void connection::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (ec) {
    shut(ec);
    return;
  }
  bytes_in_.fetch_add(n, std::memory_order_relaxed);
  try {
    assembler_.commit(n);
  } catch (const rpc::record_error&) {
    shut(std::make_error_code(std::errc::message_size));
    return;
  }
  auto self = shared_from_this();
  while (auto record = assembler_.next_record()) {
    records_in_.fetch_add(1, std::memory_order_relaxed);
    ++in_flight_;
    last_progress_ = std::chrono::steady_clock::now();
    if (!on_record_) continue;
    try {
      on_record_(self, std::move(*record));
    } catch (const std::exception&) {
      // A handler that cannot cope with a request must not take the io thread down with it.
      shut(std::make_error_code(std::errc::protocol_error));
      return;
    }
    if (socket_closed_) return;
  }
  if (max_in_flight_ != 0 && in_flight_ >= max_in_flight_) {
    reading_paused_ = true;  // resumed by the write that brings in_flight_ below the limit
    return;
  }
  read_next();
}

bool connection::send(xdr::encoder&& msg, std::shared_ptr<const void> keepalive) {
  std::unique_lock lock(mu_);
  if (closed_.load(std::memory_order_relaxed)) return false;
  queue_.push_back({std::move(msg), std::move(keepalive)});
  if (writing_) return true;
  writing_ = true;
  // On the strand (a reply made by the thread that received the call) the write starts at
  // once. From elsewhere (a worker that executed the call) the message starts to leave from
  // the calling thread, as much of it as the socket takes without waiting, while the bytes
  // the worker just produced (READ payload) are still in its core's cache; the strand
  // writes the rest and does the bookkeeping. The lock is held meanwhile, so shut() cannot
  // close the socket under the write.
  if (strand_.running_in_this_thread()) {
    lock.unlock();
    write_next();
    return true;
  }
  head_sent_ = write_now(queue_.front());
  lock.unlock();
  asio::post(strand_, [self = shared_from_this()] { self->write_next(); });
  return true;
}

std::size_t connection::write_now(const outgoing& o) {
  std::vector<xdr::bytes_view> pieces = o.msg.pieces();
  rpc::framed_record frame = rpc::frame_record(pieces);
  std::vector<iovec> iov;
  iov.reserve(std::min<std::size_t>(frame.buffers.size(), IOV_MAX));
  for (auto b : frame.buffers) {
    if (iov.size() == IOV_MAX) break;
    iov.push_back({const_cast<std::byte*>(b.data()), b.size()});
  }
  msghdr mh{};
  mh.msg_iov = iov.data();
  mh.msg_iovlen = iov.size();
  const ssize_t n = ::sendmsg(socket_.native_handle(), &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n <= 0) return 0;  // nothing taken now (a full socket, or an error the strand's write will meet)
  bytes_out_.fetch_add(static_cast<std::size_t>(n), std::memory_order_relaxed);
  return static_cast<std::size_t>(n);
}

void connection::write_next() {
  std::size_t skip = 0;  // bytes of the first message that send() wrote already
  {
    std::lock_guard lock(mu_);
    if (queue_.empty() || socket_closed_) {
      writing_ = false;
      head_sent_ = 0;
      return;
    }
    inflight_.swap(queue_);
    skip = std::exchange(head_sent_, 0);
  }
  // Everything queued goes out in one gather write, each message its own record.
  frames_.clear();
  buffers_.clear();
  frames_.reserve(inflight_.size());
  for (const outgoing& o : inflight_) {
    std::vector<xdr::bytes_view> pieces = o.msg.pieces();
    frames_.push_back(rpc::frame_record(pieces));
    for (auto b : frames_.back().buffers) {
      const std::size_t drop = std::min(skip, b.size());
      skip -= drop;
      if (drop < b.size()) buffers_.emplace_back(b.data() + drop, b.size() - drop);
    }
  }
  asio::async_write(socket_, buffers_,
                    asio::bind_executor(strand_, [self = shared_from_this()](const boost::system::error_code& ec,
                                                                              std::size_t n) {
                      self->bytes_out_.fetch_add(n, std::memory_order_relaxed);
                      if (!ec) {
                        self->records_out_.fetch_add(self->inflight_.size(), std::memory_order_relaxed);
                        self->in_flight_ -= std::min(self->in_flight_, self->inflight_.size());
                        self->last_progress_ = std::chrono::steady_clock::now();
                      }
                      self->inflight_.clear();  // releases messages and keepalives
                      self->frames_.clear();
                      self->buffers_.clear();
                      if (ec) {
                        {
                          std::lock_guard lock(self->mu_);
                          self->writing_ = false;
                        }
                        self->shut(ec);
                        return;
                      }
                      if (self->reading_paused_ && self->in_flight_ < self->max_in_flight_) {
                        self->reading_paused_ = false;
                        self->read_next();
                      }
                      self->write_next();
                    }));
}

void connection::close() {
  {
    std::lock_guard lock(mu_);
    closed_.store(true, std::memory_order_release);
    queue_.clear();
  }
  asio::dispatch(strand_, [self = shared_from_this()] { self->shut({}); });
}

void connection::shut(std::error_code why) {
  if (socket_closed_) return;
  socket_closed_ = true;
  {
    std::lock_guard lock(mu_);
    closed_.store(true, std::memory_order_release);
    queue_.clear();
  }
  boost::system::error_code ignored;
  idle_timer_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (on_close_) {
    close_handler h = std::move(on_close_);
    on_close_ = nullptr;
    h(shared_from_this(), why);
  }
  on_record_ = nullptr;  // drops anything the handler captured (it may hold the server)
}

connection_stats connection::stats() const {
  return {records_in_.load(std::memory_order_relaxed), bytes_in_.load(std::memory_order_relaxed),
          records_out_.load(std::memory_order_relaxed), bytes_out_.load(std::memory_order_relaxed)};
}

}  // namespace vnfs::transport::tcp
