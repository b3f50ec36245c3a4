// vnfs client: registered memory bookkeeping.
#include "client/memory/registration.hpp"

#include <system_error>

#include "vnfs/error.hpp"

namespace vnfs::detail {

void registration::deregister() noexcept {
  if (!valid_.exchange(false, std::memory_order_acq_rel)) return;
  if (auto t = table_.lock()) t->release(size);
}

std::shared_ptr<registration_table> registration_table::create(std::size_t cap_bytes) {
  return std::shared_ptr<registration_table>(new registration_table(cap_bytes));
}

std::shared_ptr<registration> registration_table::add(void* ptr, std::size_t len, vnfs::access a) {
  if (ptr == nullptr || len == 0)
    throw std::system_error(make_error_code(errc::bad_argument), "vnfs: register_memory: null or empty range");
  const auto bits = static_cast<unsigned>(a);
  if (bits == 0 || (bits & ~static_cast<unsigned>(vnfs::access::read_write)) != 0)
    throw std::system_error(make_error_code(errc::bad_argument), "vnfs: register_memory: bad access");
  std::uint64_t id;
  {
    std::lock_guard lock(mutex_);
    if (closed())
      throw std::system_error(make_error_code(errc::closed), "vnfs: register_memory: client closed");
    if (len > cap_ - bytes_)  // bytes_ <= cap_ always, so this cannot wrap
      throw std::system_error(make_error_code(errc::registration_limit),
                              "vnfs: register_memory: " + std::to_string(len) + " bytes over the cap of " +
                                  std::to_string(cap_) + " (" + std::to_string(bytes_) + " registered)");
    bytes_ += len;
    ++count_;
    id = next_id_++;
  }
  return std::make_shared<registration>(static_cast<std::byte*>(ptr), len, a, id, weak_from_this());
}

void registration_table::close() noexcept {
  std::lock_guard lock(mutex_);
  closed_.store(true, std::memory_order_release);
}

std::size_t registration_table::registered_bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t registration_table::count() const {
  std::lock_guard lock(mutex_);
  return count_;
}

void registration_table::release(std::size_t len) noexcept {
  std::lock_guard lock(mutex_);
  bytes_ -= len;
  --count_;
}

}  // namespace vnfs::detail
