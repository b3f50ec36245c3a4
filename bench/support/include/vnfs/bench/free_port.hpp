// vnfs bench support (tests use it too): TCP ports on loopback (pick a free one, probe one).
#pragma once

#include <cstdint>
#include <string>

namespace vnfs::bench {

/// A TCP port that was free on 127.0.0.1 a moment ago: binds 127.0.0.1:0, reads the port
/// the kernel chose, closes the socket. Another process may take it before the caller
/// binds it, so callers that start servers on it should be ready to retry.
/// Throws std::system_error on socket errors.
std::uint16_t free_port();

/// True if a TCP connection to host:port (a numeric IPv4 or IPv6 address) succeeds right
/// now; the connection is closed at once. Never blocks longer than the kernel's loopback
/// connect, which is immediate.
bool tcp_port_open(const std::string& host, std::uint16_t port);

}  // namespace vnfs::bench
