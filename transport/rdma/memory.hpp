// vnfs RDMA transport: memory registration — what a peer may access with one-sided RDMA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "vnfs/rpc/rdma_header.hpp"

namespace vnfs::transport::rdma {

/// What the PEER may do to a registered range (local access is always allowed).
enum class remote_access : unsigned {
  none = 0,
  read = 1,        ///< the peer may RDMA Read from it (e.g. WRITE payload, long calls)
  write = 2,       ///< the peer may RDMA Write into it (READ payload, Reply chunks)
  read_write = 3,
};

inline bool allows(remote_access granted, remote_access wanted) {
  return (static_cast<unsigned>(granted) & static_cast<unsigned>(wanted)) == static_cast<unsigned>(wanted);
}

/// One registered range of this process's memory. Its handle (verbs: the rkey) names it to
/// peers, inside rpc::rdma::segment{handle, length, offset = address}.
///
/// Contract: destroying the registration deregisters it at once: every later remote
/// access presenting its handle is refused, and the handle is never reused by the same
/// fabric. The memory itself stays the caller's and must outlive the registration.
class memory_registration {
 public:
  virtual ~memory_registration() = default;
  memory_registration(const memory_registration&) = delete;
  memory_registration& operator=(const memory_registration&) = delete;

  std::uint32_t handle() const { return handle_; }
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  remote_access access() const { return access_; }

  /// The segment a peer uses for [offset, offset + length) of this range. Throws
  /// std::out_of_range beyond the range or above 4 GiB - 1 bytes (a segment's length field).
  rpc::rdma::segment segment(std::size_t offset, std::size_t length) const {
    if (offset > size_ || length > size_ - offset || length > UINT32_MAX)
      throw std::out_of_range("memory_registration: segment beyond the registered range");
    return {handle_, static_cast<std::uint32_t>(length), reinterpret_cast<std::uint64_t>(data_ + offset)};
  }
  /// Whether [p, p + n) lies inside the range.
  bool contains(const void* p, std::size_t n) const {
    auto b = static_cast<const std::byte*>(p);
    return b >= data_ && n <= size_ && b - data_ <= static_cast<std::ptrdiff_t>(size_ - n);
  }

 protected:
  memory_registration(std::uint32_t handle, std::byte* data, std::size_t size, remote_access a)
      : handle_(handle), data_(data), size_(size), access_(a) {}

 private:
  std::uint32_t handle_;
  std::byte* data_;
  std::size_t size_;
  remote_access access_;
};

}  // namespace vnfs::transport::rdma
