#include "transport/tcp/connection.hpp"
#include "transport/tcp/send_file.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

#include <algorithm>
#include <climits>
#include <exception>
#include <stdexcept>
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
  // Replies are written by non-blocking sendmsg and sendfile (write_segments), which the
  // descriptor's own mode decides for sendfile.
  socket_.native_non_blocking(true, ec);
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
  if (msg.has_file_payloads() && msg.size() > rpc::max_fragment_length)
    throw std::length_error("tcp: a message with file payloads must fit one record fragment");
  std::unique_lock lock(mu_);
  if (closed_.load(std::memory_order_relaxed)) return false;
  queue_.push_back({std::move(msg), std::move(keepalive)});
  if (writing_) return true;
  writing_ = true;
  // On the strand (a reply made by the thread that received the call) the write starts at
  // once. From elsewhere (a worker that executed the call) the message starts to leave from
  // the calling thread, as much of it as the socket takes without waiting, while the bytes
  // the worker just produced are still in its core's cache; the strand writes the rest and
  // does the bookkeeping. The lock is held meanwhile, so shut() cannot close the socket
  // under the write.
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

namespace {

/// Appends the record of `msg` to `out`, its record marks kept in `frame`. A message with
/// payloads left in a file is one fragment (send() checked its size); others are framed
/// by rpc::frame_record.
template <class Segment>
void frame_into(const xdr::encoder& msg, rpc::framed_record& frame, std::vector<Segment>& out) {
  if (!msg.has_file_payloads()) {
    frame = rpc::frame_record(msg.pieces());
    for (auto b : frame.buffers) out.push_back({b.data(), b.size()});
    return;
  }
  frame.headers.push_back(rpc::make_fragment_header(msg.size(), true));
  out.push_back({frame.headers.back().data(), 4});
  for (const auto& p : msg.chain()) {
    if (p.file.fd >= 0) {
      if (p.file.size != 0) out.push_back({nullptr, p.file.size, p.file.fd, p.file.offset});
    } else if (!p.bytes.empty()) {
      out.push_back({p.bytes.data(), p.bytes.size()});
    }
  }
}

/// Where zeros are sent from.
constexpr std::size_t zero_block_size = 64 * 1024;
const std::byte zero_block[zero_block_size] = {};

}  // namespace

std::size_t connection::write_segments(std::vector<segment>& segs, cursor& at, boost::system::error_code& ec) {
  const int sock = socket_.native_handle();
  std::size_t total = 0;
  auto advance = [&](std::size_t n) {
    total += n;
    while (n > 0) {
      const std::size_t step = std::min(n, segs[at.index].size - at.offset);
      n -= step;
      at.offset += step;
      if (at.offset == segs[at.index].size) {
        ++at.index;
        at.offset = 0;
      }
    }
  };
  iovec iov[IOV_MAX];
  while (at.index < segs.size()) {
    segment& s = segs[at.index];
    if (s.fd >= 0) {
      off_t off = static_cast<off_t>(s.offset + at.offset);
      const ssize_t n = send_file(sock, s.fd, &off, s.size - at.offset);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) ec.assign(errno, boost::system::system_category());
        return total;
      }
      if (n == 0) {
        s.fd = -1;  // the file ended before the range: the rest goes as zeros
        continue;
      }
      advance(static_cast<std::size_t>(n));
      continue;
    }
    // The memory (and zeros) up to the next file range, in one gather write.
    int count = 0;
    std::size_t asked = 0;
    std::size_t i = at.index, from = at.offset;
    for (; i < segs.size() && segs[i].fd < 0 && count < IOV_MAX; ++i, from = 0) {
      const segment& m = segs[i];
      if (m.data != nullptr) {
        iov[count++] = {const_cast<std::byte*>(m.data + from), m.size - from};
        asked += m.size - from;
        continue;
      }
      for (std::size_t z = from; z < m.size && count < IOV_MAX; z += zero_block_size) {
        const std::size_t len = std::min(zero_block_size, m.size - z);
        iov[count++] = {const_cast<std::byte*>(zero_block), len};
        asked += len;
      }
    }
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = static_cast<std::size_t>(count);
    // A file range comes next: the kernel may hold these bytes back to go out with it.
    const int more = i < segs.size() && segs[i].fd >= 0 ? MSG_MORE : 0;
    const ssize_t n = ::sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL | more);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) ec.assign(errno, boost::system::system_category());
      return total;
    }
    advance(static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < asked) return total;  // the socket is full
  }
  return total;
}

std::size_t connection::write_now(const outgoing& o) {
  rpc::framed_record frame;
  std::vector<segment> segs;
  frame_into(o.msg, frame, segs);
  cursor at;
  boost::system::error_code ec;  // met again by the strand's write
  const std::size_t n = write_segments(segs, at, ec);
  bytes_out_.fetch_add(n, std::memory_order_relaxed);
  return n;
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
  // Everything queued goes out together, each message its own record.
  frames_.clear();
  segments_.clear();
  frames_.reserve(inflight_.size());
  for (const outgoing& o : inflight_) frame_into(o.msg, frames_.emplace_back(), segments_);
  written_ = {};
  while (skip > 0) {
    const std::size_t step = std::min(skip, segments_[written_.index].size - written_.offset);
    skip -= step;
    written_.offset += step;
    if (written_.offset == segments_[written_.index].size) written_ = {written_.index + 1, 0};
  }
  write_more();
}

void connection::write_more() {
  boost::system::error_code ec;
  bytes_out_.fetch_add(write_segments(segments_, written_, ec), std::memory_order_relaxed);
  if (ec || written_.index == segments_.size()) return write_done(ec);
  socket_.async_wait(asio::socket_base::wait_write,
                     asio::bind_executor(strand_, [self = shared_from_this()](const boost::system::error_code& e) {
                       if (e) return self->write_done(e);
                       self->write_more();
                     }));
}

void connection::write_done(const boost::system::error_code& ec) {
  if (!ec) {
    records_out_.fetch_add(inflight_.size(), std::memory_order_relaxed);
    in_flight_ -= std::min(in_flight_, inflight_.size());
    last_progress_ = std::chrono::steady_clock::now();
  }
  inflight_.clear();  // releases messages and keepalives
  frames_.clear();
  segments_.clear();
  if (ec) {
    {
      std::lock_guard lock(mu_);
      writing_ = false;
    }
    shut(ec);
    return;
  }
  if (reading_paused_ && in_flight_ < max_in_flight_) {
    reading_paused_ = false;
    read_next();
  }
  write_next();
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
