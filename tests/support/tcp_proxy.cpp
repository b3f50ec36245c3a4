#include "vnfs/test/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <list>
#include <mutex>
#include <system_error>
#include <vector>

namespace vnfs::test {

namespace {

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

/// One proxied connection. Index 0 of the arrays is the client side, 1 the server side;
/// pending[i] holds bytes waiting to be written to fd[i].
struct connection {
  std::size_t index = 0;  // in accept order, from 0
  int fd[2] = {-1, -1};
  std::vector<char> pending[2];
  bool close_after_flush = false;
  bool closed = false;

  void close_now() {
    for (int& f : fd) {
      if (f >= 0) ::close(f);
      f = -1;
    }
    closed = true;
  }
};

}  // namespace

struct tcp_proxy::loop {
  int listen_fd = -1;
  int wake_fd = -1;
  sockaddr_in target{};
  std::list<connection> conns;  // owned by the loop thread

  std::mutex mu;  // guards what follows
  std::condition_variable cv;
  bool stop = false;
  std::uint64_t cut_all_requested = 0, cut_all_done = 0;
  std::uint64_t sync_requested = 0, sync_done = 0;
  bool held[2] = {false, false};  // by direction: [0] to_server, [1] to_client
  bool armed = false;
  direction armed_dir = direction::to_client;
  std::uint64_t armed_left = 0;
  bool recording = false;
  /// By direction ([0] to_server, [1] to_client), one stream per connection index.
  std::vector<std::vector<std::byte>> streams[2];
  std::size_t next_index = 0;  // loop thread only

  ~loop() {
    for (auto& c : conns) c.close_now();
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void wake() {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
  }
};

tcp_proxy::tcp_proxy(std::string target_host, std::uint16_t target_port) : loop_(std::make_unique<loop>()) {
  auto& l = *loop_;
  l.target.sin_family = AF_INET;
  l.target.sin_port = htons(target_port);
  if (::inet_pton(AF_INET, target_host.c_str(), &l.target.sin_addr) != 1)
    throw std::system_error(std::make_error_code(std::errc::invalid_argument), "tcp_proxy: target " + target_host);

  l.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (l.listen_fd < 0) throw_errno("tcp_proxy: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(l.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw_errno("tcp_proxy: bind");
  if (::listen(l.listen_fd, 64) != 0) throw_errno("tcp_proxy: listen");
  socklen_t len = sizeof addr;
  if (::getsockname(l.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw_errno("tcp_proxy: getsockname");
  port_ = ntohs(addr.sin_port);
  l.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (l.wake_fd < 0) throw_errno("tcp_proxy: eventfd");
  thread_ = std::thread([this] { run(); });
}

tcp_proxy::~tcp_proxy() {
  {
    std::lock_guard lock(loop_->mu);
    loop_->stop = true;
  }
  loop_->wake();
  thread_.join();
}

void tcp_proxy::cut_all() {
  std::unique_lock lock(loop_->mu);
  std::uint64_t ticket = ++loop_->cut_all_requested;
  loop_->wake();
  loop_->cv.wait(lock, [&] { return loop_->cut_all_done >= ticket || loop_->stop; });
}

void tcp_proxy::cut_after(direction d, std::uint64_t n) {
  std::lock_guard lock(loop_->mu);
  loop_->armed = true;
  loop_->armed_dir = d;
  loop_->armed_left = n;
}

void tcp_proxy::hold(direction d, bool on) {
  std::unique_lock lock(loop_->mu);
  loop_->held[d == direction::to_server ? 0 : 1] = on;
  std::uint64_t ticket = ++loop_->sync_requested;
  loop_->wake();
  loop_->cv.wait(lock, [&] { return loop_->sync_done >= ticket || loop_->stop; });
}

void tcp_proxy::record(bool on) {
  std::lock_guard lock(loop_->mu);
  loop_->recording = on;
}

std::vector<std::vector<std::byte>> tcp_proxy::recorded(direction d) const {
  std::lock_guard lock(loop_->mu);
  return loop_->streams[d == direction::to_server ? 0 : 1];
}

bool tcp_proxy::cut_pending() const {
  std::lock_guard lock(loop_->mu);
  return loop_->armed;
}

void tcp_proxy::run() {
  auto& l = *loop_;
  std::vector<char> buf(64 * 1024);

  // Writes what is pending towards side i; on a hard error the connection is closed.
  auto flush = [&](connection& c, int i) {
    while (!c.pending[i].empty()) {
      ssize_t n = ::send(c.fd[i], c.pending[i].data(), c.pending[i].size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR) continue;
        c.close_now();
        return;
      }
      c.pending[i].erase(c.pending[i].begin(), c.pending[i].begin() + n);
    }
    if (c.close_after_flush && c.pending[0].empty() && c.pending[1].empty()) c.close_now();
  };

  // Bytes read from side `from` go to the other side, up to an armed cut.
  auto forward = [&](connection& c, int from, const char* data, std::size_t n) {
    int to = 1 - from;
    direction d = to == 1 ? direction::to_server : direction::to_client;
    std::size_t take = n;
    bool cut = false;
    {
      std::lock_guard lock(l.mu);
      if (l.armed && l.armed_dir == d) {
        if (n >= l.armed_left) {
          take = static_cast<std::size_t>(l.armed_left);
          l.armed = false;
          cut = true;
        } else {
          l.armed_left -= n;
        }
      }
      if (l.recording) {
        auto& streams = l.streams[d == direction::to_server ? 0 : 1];
        if (streams.size() <= c.index) streams.resize(c.index + 1);
        auto b = reinterpret_cast<const std::byte*>(data);
        streams[c.index].insert(streams[c.index].end(), b, b + take);
      }
    }
    c.pending[to].insert(c.pending[to].end(), data, data + take);
    (d == direction::to_server ? to_server_ : to_client_) += take;
    if (cut) {
      cuts_++;
      c.close_after_flush = true;
      c.pending[from].clear();  // what the cut side had not delivered yet is lost with it
    }
    flush(c, to);
  };

  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({l.wake_fd, POLLIN, 0});
    fds.push_back({l.listen_fd, POLLIN, 0});
    std::vector<std::pair<connection*, int>> who;
    bool held[2];
    {
      std::lock_guard lock(l.mu);
      held[0] = l.held[0];
      held[1] = l.held[1];
    }
    for (auto& c : l.conns) {
      for (int i = 0; i < 2; ++i) {
        short ev = 0;
        // Read a side only when what it sent before has been passed on (back-pressure).
        // Side i is read for direction i (0: client side, bytes to the server).
        if (!c.close_after_flush && c.pending[1 - i].empty() && !held[i]) ev |= POLLIN;
        if (!c.pending[i].empty()) ev |= POLLOUT;
        fds.push_back({c.fd[i], ev, 0});
        who.emplace_back(&c, i);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }

    if (fds[0].revents) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(l.wake_fd, &v, sizeof v);
      std::unique_lock lock(l.mu);
      if (l.stop) break;
      held[0] = l.held[0];  // reads below in this round see the new setting
      held[1] = l.held[1];
      if (l.sync_done < l.sync_requested) {
        l.sync_done = l.sync_requested;
        l.cv.notify_all();
      }
      if (l.cut_all_done < l.cut_all_requested) {
        for (auto& c : l.conns) {
          if (c.closed) continue;
          c.close_now();
          cuts_++;
        }
        l.conns.clear();
        l.cut_all_done = l.cut_all_requested;
        l.cv.notify_all();
        continue;  // `who` points into the cleared list
      }
    }

    if (fds[1].revents & POLLIN) {
      int cfd = ::accept4(l.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (cfd >= 0) {
        int sfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        // A blocking connect: the target is on loopback, so it completes or fails at once.
        if (sfd >= 0 && ::connect(sfd, reinterpret_cast<const sockaddr*>(&l.target), sizeof l.target) == 0) {
          set_nonblocking(sfd);
          int one = 1;
          ::setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          connection c;
          c.index = l.next_index++;
          c.fd[0] = cfd;
          c.fd[1] = sfd;
          l.conns.push_back(std::move(c));
          accepted_++;
        } else {
          if (sfd >= 0) ::close(sfd);
          ::close(cfd);
        }
      }
    }

    for (std::size_t k = 0; k < who.size(); ++k) {
      auto [c, i] = who[k];
      short re = fds[k + 2].revents;
      if (c->closed || re == 0) continue;
      if (re & POLLOUT) flush(*c, i);
      if (c->closed) continue;
      if (re & (POLLIN | POLLHUP | POLLERR)) {
        if (c->close_after_flush || held[i]) continue;
        ssize_t n = ::recv(c->fd[i], buf.data(), buf.size(), 0);
        if (n > 0) {
          forward(*c, i, buf.data(), static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          // One side ended: pass on what it sent, then close both.
          c->close_after_flush = true;
          flush(*c, 1 - i);
          if (!c->closed && c->pending[1 - i].empty()) c->close_now();
        }
      }
    }
    l.conns.remove_if([](const connection& c) { return c.closed; });
  }
  std::lock_guard lock(l.mu);
  l.cut_all_done = l.cut_all_requested;
  l.sync_done = l.sync_requested;
  l.cv.notify_all();
}

}  // namespace vnfs::test
