// vnfs client: registered memory bookkeeping.
#include "client/memory/registration.hpp"

#include <system_error>

#include "vnfs/error.hpp"

namespace vnfs::detail {

void registration::deregister() noexcept {
  if (!valid_.exchange(false, std::memory_order_acq_rel)) return;
  if (auto t = table_.lock()) t->release(size);
  std::map<std::uint64_t, std::shared_ptr<void>> dropped;
  {
    std::lock_guard lock(attach_mu_);
    dropped.swap(attached_);
  }
  // Released here, outside the lock: transport deregistration (ibv_dereg_mr) of what no
  // call in flight holds.
}

transport::region_use registration::use() const noexcept {
  switch (access) {
    case vnfs::access::read: return transport::region_use::receive;
    case vnfs::access::write: return transport::region_use::send;
    case vnfs::access::read_write: break;
  }
  return transport::region_use::both;
}

std::shared_ptr<void> registration::attach(std::uint64_t owner, const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard lock(attach_mu_);
  if (!valid()) return nullptr;  // checked under the lock: deregister() empties the map after clearing valid_
  if (auto it = attached_.find(owner); it != attached_.end()) return it->second;
  std::shared_ptr<void> made = make();
  if (!made) return nullptr;
  counts_->made++;
  counts_->held++;
  // The copy handed out and kept counts as held until its last holder drops it.
  std::shared_ptr<void> counted(made.get(), [made, counts = counts_](void*) mutable {
    made.reset();
    counts->held--;
  });
  attached_.emplace(owner, counted);
  return counted;
}

void registration::detach(std::uint64_t owner) noexcept {
  std::shared_ptr<void> dropped;  // released after the lock, as in deregister()
  std::lock_guard lock(attach_mu_);
  if (auto it = attached_.find(owner); it != attached_.end()) {
    dropped = std::move(it->second);
    attached_.erase(it);
  }
}

std::size_t registration::attachments() const {
  std::lock_guard lock(attach_mu_);
  return attached_.size();
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
  return std::make_shared<registration>(static_cast<std::byte*>(ptr), len, a, id, weak_from_this(), counts_);
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
