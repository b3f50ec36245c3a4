// vnfs client: registered memory — one registration per memory_region, and the table that
// caps how many bytes are registered at once (client_options::max_registered_bytes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "vnfs/memory_region.hpp"

namespace vnfs::detail {

class registration_table;

/// One registered range. Shared by its memory_region and by the slices that operations hold.
/// Deregistration (the region's destruction) makes it invalid; it stays alive as long as a
/// slice does, so in-flight operations never touch a dangling object, but backends must
/// refuse to start new operations on an invalid registration (errc::bad_argument).
struct registration {
  std::byte* data = nullptr;
  std::size_t size = 0;
  vnfs::access access = vnfs::access::read_write;
  std::uint64_t id = 0;  ///< unique within its table, never reused; transports may key on it

  bool valid() const noexcept { return valid_.load(std::memory_order_acquire); }
  /// Whether the registration allows `a` (read: data lands in it; write: data leaves it).
  bool allows(vnfs::access a) const noexcept {
    return (static_cast<unsigned>(access) & static_cast<unsigned>(a)) == static_cast<unsigned>(a);
  }
  /// Releases the bytes from the table's cap and marks the registration invalid. Idempotent;
  /// called by ~memory_region.
  void deregister() noexcept;

  // Registrations are made by registration_table::add only.
  registration(std::byte* d, std::size_t n, vnfs::access a, std::uint64_t i,
               std::weak_ptr<registration_table> t)
      : data(d), size(n), access(a), id(i), table_(std::move(t)) {}
  // Also when no region deregistered it (a region move-assigned over drops its old
  // registration without destroying a region): the bytes return to the cap at the latest
  // when the last slice goes.
  ~registration() { deregister(); }
  registration(const registration&) = delete;
  registration& operator=(const registration&) = delete;

 private:
  std::atomic<bool> valid_{true};
  std::weak_ptr<registration_table> table_;
};

/// The registrations of one client. Thread-safe. Must be owned by a std::shared_ptr
/// (create()), so a region outliving its client deregisters harmlessly.
class registration_table : public std::enable_shared_from_this<registration_table> {
 public:
  static std::shared_ptr<registration_table> create(std::size_t cap_bytes);

  /// Registers [ptr, ptr + len). Throws std::system_error: errc::bad_argument for a null or
  /// empty range or an access that is not read, write or read_write, errc::registration_limit
  /// when registered bytes + len would exceed the cap, errc::closed after close().
  std::shared_ptr<registration> add(void* ptr, std::size_t len, vnfs::access a);

  /// The client is closing: later add() calls fail with errc::closed. Existing registrations
  /// stay as they are (their regions still deregister). The front also reads closed() as the
  /// client's closed state, so every call on a closed client fails alike whatever the backend.
  void close() noexcept;
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  std::size_t cap() const noexcept { return cap_; }
  /// Bytes of the registrations not yet deregistered.
  std::size_t registered_bytes() const;
  /// Number of registrations not yet deregistered.
  std::size_t count() const;

 private:
  friend struct registration;
  explicit registration_table(std::size_t cap_bytes) : cap_(cap_bytes) {}
  void release(std::size_t len) noexcept;

  const std::size_t cap_;
  std::atomic<bool> closed_{false};
  mutable std::mutex mutex_;
  std::size_t bytes_ = 0;
  std::size_t count_ = 0;
  std::uint64_t next_id_ = 1;
};

}  // namespace vnfs::detail
