#include "vnfs/bench/free_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace vnfs::bench {

namespace {
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

std::uint16_t free_port() {
  fd_guard s{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0) throw std::system_error(errno, std::generic_category(), "free_port: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::system_error(errno, std::generic_category(), "free_port: bind 127.0.0.1:0");
  }
  socklen_t len = sizeof addr;
  if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::system_error(errno, std::generic_category(), "free_port: getsockname");
  }
  return ntohs(addr.sin_port);
}

bool tcp_port_open(const std::string& host, std::uint16_t port) {
  sockaddr_storage storage{};
  socklen_t len = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  } else {
    throw std::invalid_argument("tcp_port_open: not a numeric address: " + host);
  }
  fd_guard s{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0) throw std::system_error(errno, std::generic_category(), "tcp_port_open: socket");
  return ::connect(s.fd, reinterpret_cast<sockaddr*>(&storage), len) == 0;
}

}  // namespace vnfs::bench
