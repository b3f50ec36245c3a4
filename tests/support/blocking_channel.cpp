#include "vnfs/test/blocking_channel.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits.h>
#include <random>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "vnfs/xdr/decoder.hpp"

namespace vnfs::test {

namespace {
[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

std::uint32_t random_xid() {
  std::random_device rd;
  return rd();
}
}  // namespace

blocking_channel::blocking_channel(int fd) : fd_(fd), xid_(random_xid()) {}

blocking_channel::blocking_channel(blocking_channel&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), max_record_(o.max_record_), xid_(o.xid_) {}

blocking_channel& blocking_channel::operator=(blocking_channel&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
    max_record_ = o.max_record_;
    xid_ = o.xid_;
  }
  return *this;
}

blocking_channel::~blocking_channel() { close(); }

blocking_channel blocking_channel::connect(const std::string& host, std::uint16_t port,
                                           std::chrono::milliseconds receive_timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw std::system_error(std::make_error_code(std::errc::host_unreachable),
                            "blocking_channel: cannot resolve " + host + ": " + ::gai_strerror(rc));
  int last_errno = 0;
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    last_errno = errno;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0)
    throw std::system_error(last_errno, std::generic_category(),
                            "blocking_channel: cannot connect to " + host + ":" + service);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  blocking_channel ch(fd);
  ch.set_receive_timeout(receive_timeout);
  return ch;
}

void blocking_channel::set_receive_timeout(std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) throw_errno("blocking_channel: SO_RCVTIMEO");
}

void blocking_channel::write_all(std::span<const std::span<const std::byte>> buffers) {
  if (fd_ < 0) throw std::system_error(std::make_error_code(std::errc::not_connected), "blocking_channel: closed");
  std::vector<iovec> iov;
  iov.reserve(buffers.size());
  for (auto b : buffers)
    if (!b.empty()) iov.push_back({const_cast<std::byte*>(b.data()), b.size()});
  std::size_t first = 0;
  while (first < iov.size()) {
    msghdr mh{};
    mh.msg_iov = iov.data() + first;
    mh.msg_iovlen = std::min<std::size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = ::sendmsg(fd_, &mh, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("blocking_channel: send");
    }
    auto left = static_cast<std::size_t>(n);
    while (left > 0 && first < iov.size()) {
      if (left >= iov[first].iov_len) {
        left -= iov[first].iov_len;
        ++first;
      } else {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
        left = 0;
      }
    }
  }
}

void blocking_channel::send_record(const xdr::encoder& msg, std::size_t max_fragment) {
  std::vector<xdr::bytes_view> pieces = msg.pieces();
  rpc::framed_record r = rpc::frame_record(pieces, max_fragment);
  write_all(r.buffers);
}

void blocking_channel::send_record(std::span<const std::byte> msg, std::size_t max_fragment) {
  std::span<const std::byte> one[1] = {msg};
  rpc::framed_record r = rpc::frame_record(one, max_fragment);
  write_all(r.buffers);
}

void blocking_channel::send_raw(std::span<const std::byte> bytes) {
  std::span<const std::byte> one[1] = {bytes};
  write_all(one);
}

void blocking_channel::read_exact(std::byte* p, std::size_t n) {
  if (fd_ < 0) throw std::system_error(std::make_error_code(std::errc::not_connected), "blocking_channel: closed");
  while (n > 0) {
    ssize_t k = ::recv(fd_, p, n, 0);
    if (k > 0) {
      p += k;
      n -= static_cast<std::size_t>(k);
      continue;
    }
    if (k == 0)
      throw std::system_error(std::make_error_code(std::errc::connection_reset),
                              "blocking_channel: connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      throw std::system_error(std::make_error_code(std::errc::timed_out), "blocking_channel: receive timed out");
    throw_errno("blocking_channel: receive");
  }
}

std::vector<std::byte> blocking_channel::receive_record() {
  std::vector<std::byte> record;
  for (;;) {
    rpc::fragment_header_bytes h;
    read_exact(h.data(), h.size());
    const rpc::fragment_header f = rpc::read_fragment_header(h);
    if (record.size() + f.length > max_record_) throw std::length_error("blocking_channel: record over the maximum size");
    std::size_t at = record.size();
    record.resize(at + f.length);
    read_exact(record.data() + at, f.length);
    if (f.last) return record;
  }
}

void blocking_channel::shutdown_send() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void blocking_channel::close() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

std::vector<std::byte> rpc_call(blocking_channel& ch, const rpc::call_header& header,
                                const std::function<void(xdr::encoder&)>& args) {
  xdr::encoder e;
  rpc::encode_call(e, header);
  if (args) args(e);
  ch.send_record(e);
  std::vector<std::byte> reply = ch.receive_record();
  xdr::decoder d(reply);
  rpc::reply_header h = rpc::decode_reply(d);
  if (h.xid != header.xid)
    throw std::runtime_error("rpc_call: reply xid " + std::to_string(h.xid) + " does not match call xid " +
                             std::to_string(header.xid));
  rpc::check_reply(h);
  reply.erase(reply.begin(), reply.begin() + static_cast<std::ptrdiff_t>(d.position()));
  return reply;
}

std::vector<std::byte> rpc_call(blocking_channel& ch, std::uint32_t prog, std::uint32_t vers, std::uint32_t proc,
                                const std::function<void(xdr::encoder&)>& args, const rpc::opaque_auth& cred,
                                const rpc::opaque_auth& verf) {
  rpc::call_header h{ch.next_xid(), prog, vers, proc, cred, verf};
  return rpc_call(ch, h, args);
}

}  // namespace vnfs::test
