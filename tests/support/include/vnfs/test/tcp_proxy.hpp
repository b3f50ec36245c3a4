// vnfs test support: a TCP proxy that injects connection faults between a client and a
// server on loopback.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace vnfs::test {

/// Listens on 127.0.0.1:0 and forwards every accepted connection to target_host:target_port
/// (a numeric address), byte for byte, in both directions. On demand it cuts connections:
/// all of them at once, or the connection that carries the next N bytes in one direction —
/// exactly N bytes are forwarded, then both sockets close (the peers see EOF), and the rest
/// of what arrived is dropped.
///
/// One background thread runs a poll() loop over non-blocking sockets; a slow reader only
/// stops its own direction. All members are thread-safe. The destructor closes everything.
class tcp_proxy {
 public:
  enum class direction { to_server, to_client };

  /// Throws std::system_error if the listening socket cannot be set up.
  tcp_proxy(std::string target_host, std::uint16_t target_port);
  ~tcp_proxy();
  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;

  const std::string& host() const noexcept { return host_; }
  std::uint16_t port() const noexcept { return port_; }

  /// Closes every open connection now; new connections are still accepted. Returns once
  /// the sockets are closed.
  void cut_all();

  /// Arms a one-shot cut: the next `n` bytes travelling in `d` (on whichever connection
  /// carries them) are forwarded, then that connection is cut. n == 0 cuts the connection
  /// on which the next byte in `d` arrives, forwarding nothing. Replaces an armed cut.
  void cut_after(direction d, std::uint64_t n);
  /// Whether an armed cut has not fired yet.
  bool cut_pending() const;

  /// Stops (on) or resumes (off) forwarding in `d` on every connection: bytes wait in the
  /// kernel's socket buffers. Returns once the proxy's thread has taken note: nothing more
  /// is forwarded in `d` after hold(d, true) returns.
  void hold(direction d, bool on);

  /// Starts (on) or stops (off) keeping a copy of every byte forwarded, per direction and
  /// connection: real traffic for the fuzzers' seed corpora.
  void record(bool on);
  /// What was recorded in `d`: one stream per connection, in the order they were accepted
  /// (a connection that carried nothing while recording has an empty stream).
  std::vector<std::vector<std::byte>> recorded(direction d) const;

  /// Connections accepted so far, and connections cut (by cut_all or cut_after).
  std::uint64_t accepted() const noexcept { return accepted_.load(); }
  std::uint64_t cuts() const noexcept { return cuts_.load(); }
  /// Bytes forwarded so far in each direction.
  std::uint64_t bytes(direction d) const noexcept {
    return d == direction::to_server ? to_server_.load() : to_client_.load();
  }

 private:
  struct loop;
  void run();

  std::string host_ = "127.0.0.1";
  std::uint16_t port_ = 0;
  std::unique_ptr<loop> loop_;
  std::atomic<std::uint64_t> accepted_{0}, cuts_{0}, to_server_{0}, to_client_{0};
  std::thread thread_;
};

}  // namespace vnfs::test
