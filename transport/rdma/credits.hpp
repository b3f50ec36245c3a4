// vnfs RPC-over-RDMA: credit flow control (RFC 8166 §3.3.1) — how many calls a requester
// may have outstanding, and the pluggable policies that pick the numbers.
//
// Every message carries a credit value: in a call, what the requester asks for; in a reply,
// what the responder grants. The requester never has more calls outstanding than the last
// grant (a grant of 0 counts as 1, so a connection can always make progress); it starts with
// 1 on every new connection, before any grant arrived. The responder never grants more than
// the receives it has posted.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace vnfs::transport::rdma {

/// Client side: what to ask for in the next call.
class credit_request_policy {
 public:
  virtual ~credit_request_policy() = default;
  /// `inflight`: calls outstanding (the new one included); `granted`: the last grant.
  virtual std::uint32_t request(std::uint32_t inflight, std::uint32_t granted) = 0;
};

/// Server side: what to grant in the next reply.
class credit_grant_policy {
 public:
  virtual ~credit_grant_policy() = default;
  /// `requested`: the client's last request; `posted`: receives posted for this client;
  /// `average`: receive buffers the server can afford per connected client. The caller
  /// then bounds the result by the receives it can post.
  virtual std::uint32_t grant(std::uint32_t requested, std::uint32_t posted, std::uint32_t average) = 0;
};

/// papers/004 Figure 10: ask for the minimum while the grant leaves `threshold` spare
/// credits, else grow with the load (min_client + inflight * f_client).
class adaptive_request_policy final : public credit_request_policy {
 public:
  adaptive_request_policy(std::uint32_t min_client = 8, std::uint32_t threshold = 4, double f_client = 1.0,
                          std::uint32_t max_request = 128)
      : min_(min_client), threshold_(threshold), f_(f_client), max_(max_request) {}
  std::uint32_t request(std::uint32_t inflight, std::uint32_t granted) override {
    std::uint32_t r;
    if (granted >= inflight && granted - inflight >= threshold_) r = min_;
    else r = min_ + static_cast<std::uint32_t>(inflight * f_);
    return std::min(r, max_);
  }

 private:
  std::uint32_t min_, threshold_;
  double f_;
  std::uint32_t max_;
};

/// papers/004 Figure 11: grant what is posted when that covers the request, the request
/// when the client's fair share covers it, else the share plus a fraction of the excess.
class adaptive_grant_policy final : public credit_grant_policy {
 public:
  explicit adaptive_grant_policy(double f_server = 0.5) : f_(f_server) {}
  std::uint32_t grant(std::uint32_t requested, std::uint32_t posted, std::uint32_t average) override {
    if (requested <= posted) return posted;
    if (requested <= average) return requested;
    return average + static_cast<std::uint32_t>((requested - average) * f_);
  }

 private:
  double f_;
};

/// Always the same number (tests, and servers that want a fixed window).
class fixed_request_policy final : public credit_request_policy {
 public:
  explicit fixed_request_policy(std::uint32_t n) : n_(n) {}
  std::uint32_t request(std::uint32_t, std::uint32_t) override { return n_; }

 private:
  std::uint32_t n_;
};
/// A fixed grant that may be changed at any time from any thread; the next message sent
/// carries the new figure.
class fixed_grant_policy final : public credit_grant_policy {
 public:
  explicit fixed_grant_policy(std::uint32_t n) : n_(n) {}
  std::uint32_t grant(std::uint32_t, std::uint32_t, std::uint32_t) override { return n_.load(); }
  void set(std::uint32_t n) { n_.store(n); }

 private:
  std::atomic<std::uint32_t> n_;
};

/// A grant as the requester uses it: 0 counts as 1.
inline std::uint32_t effective_grant(std::uint32_t granted) { return std::max<std::uint32_t>(granted, 1); }

}  // namespace vnfs::transport::rdma
