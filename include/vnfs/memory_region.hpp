// vnfs public API: registered memory (DAFS, papers/003 §3.3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace vnfs {

/// What a registered region may be used for.
enum class access : unsigned {
  read = 1,        ///< data is read INTO it (destination of reads: remote write access)
  write = 2,       ///< data is written FROM it (source of writes: remote read access)
  read_write = 3,
};

namespace detail {
struct registration;
struct internals;
}

/// A part of a registered region: what direct reads land in and direct writes leave from.
/// Copies are cheap and keep the registration alive while an operation uses them.
class memory_slice {
 public:
  memory_slice() = default;
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  /// A narrower part; throws std::out_of_range beyond this slice.
  memory_slice sub(std::size_t offset, std::size_t length) const;

 private:
  friend class memory_region;
  friend struct detail::internals;  // the library's access (src/client/internals.hpp)
  memory_slice(std::shared_ptr<detail::registration> r, std::byte* d, std::size_t n)
      : reg_(std::move(r)), data_(d), size_(n) {}
  std::shared_ptr<detail::registration> reg_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Memory the application registered with a client (client::register_memory). The memory
/// stays the application's; registration makes it a place the transport moves data into and
/// out of directly, with no intermediate copy: over TCP the socket reads READ payload straight
/// into it and writes WRITE payload from it by scatter-gather; over RPC-over-RDMA the server
/// RDMA-Writes and RDMA-Reads it, through ONE registration of the whole region with the RDMA
/// fabric, made at the first I/O through it and used by every later one. Registered bytes
/// count against client_options::max_registered_bytes until the region is destroyed
/// (deregistration). Move-only. Operations in flight keep the registration alive through
/// their slices; the fabric registration goes when the region is destroyed and no I/O
/// through it is in flight (else when the last such I/O completes).
class memory_region {
 public:
  memory_region() = default;
  memory_region(memory_region&&) noexcept = default;
  /// Deregisters the region this one held, then takes `other`'s.
  memory_region& operator=(memory_region&& other) noexcept;
  ~memory_region();

  std::byte* data() const;
  std::size_t size() const;
  vnfs::access access() const;
  explicit operator bool() const { return static_cast<bool>(reg_); }

  /// [offset, offset + length); throws std::out_of_range beyond the region.
  memory_slice slice(std::size_t offset, std::size_t length) const;
  memory_slice all() const { return slice(0, size()); }

 private:
  friend struct detail::internals;  // the library's access (src/client/internals.hpp)
  explicit memory_region(std::shared_ptr<detail::registration> reg) : reg_(std::move(reg)) {}
  std::shared_ptr<detail::registration> reg_;
};

}  // namespace vnfs
