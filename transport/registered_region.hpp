// vnfs transport: the caller's registered memory as a channel sees it — a range registered
// once for many calls. A transport that must register memory itself to expose it to its
// peer (RPC-over-RDMA: the fabric's registration) registers the whole range once, at the
// first call through it, attaches that registration to the region and reuses it for every
// later call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>

namespace vnfs::transport {

/// What calls may do with a region's bytes.
enum class region_use : unsigned {
  receive = 1,  ///< data is received into it (READ payload)
  send = 2,     ///< data is sent from it (WRITE payload)
  both = 3,
};

/// One registered range. Shared by its owner (the client's registration table) and the
/// calls in flight through it. Deregistration (by its owner) drops the attachments; a
/// transport holds its own reference to its attachment for each call in flight, so the
/// transport's registration is released when the region is gone and the last call using it
/// has completed.
class registered_region {
 public:
  virtual ~registered_region() = default;

  virtual std::span<std::byte> bytes() const noexcept = 0;
  virtual region_use use() const noexcept = 0;

  /// What `owner` (one transport instance: a key no other uses) attached to this region:
  /// the object attached before, else the one `make()` returns, attached from now on (a
  /// null result attaches nothing). Null once the region is deregistered: nothing is made
  /// then. Exceptions of make() propagate and attach nothing. Thread-safe; make() runs under
  /// the region's lock and must not call it.
  template <class T, class Make>
  std::shared_ptr<T> attachment(std::uint64_t owner, Make&& make) {
    return std::static_pointer_cast<T>(attach(owner, [&make]() -> std::shared_ptr<void> {
      return std::const_pointer_cast<std::remove_const_t<T>>(std::shared_ptr<T>(make()));
    }));
  }
  /// Drops what `owner` attached (the transport is going away). No-op when nothing is.
  virtual void detach(std::uint64_t owner) noexcept = 0;

 protected:
  /// attachment(), untyped.
  virtual std::shared_ptr<void> attach(std::uint64_t owner, const std::function<std::shared_ptr<void>()>& make) = 0;
};

}  // namespace vnfs::transport
