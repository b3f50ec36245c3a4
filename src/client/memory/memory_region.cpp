// vnfs client: memory_region and memory_slice.
#include "vnfs/memory_region.hpp"

#include <stdexcept>
#include <string>

#include "client/memory/registration.hpp"

namespace vnfs {
namespace {

// offset + length may overflow; compare without adding.
void check_range(std::size_t offset, std::size_t length, std::size_t size, const char* what) {
  if (offset > size || length > size - offset)
    throw std::out_of_range(std::string("vnfs: ") + what + ": [" + std::to_string(offset) + ", +" +
                            std::to_string(length) + ") beyond " + std::to_string(size) + " bytes");
}

}  // namespace

memory_slice memory_slice::sub(std::size_t offset, std::size_t length) const {
  check_range(offset, length, size_, "memory_slice::sub");
  return memory_slice(reg_, data_ + offset, length);
}

memory_region::~memory_region() {
  if (reg_) reg_->deregister();
}

memory_region& memory_region::operator=(memory_region&& other) noexcept {
  if (this != &other) {
    if (reg_) reg_->deregister();
    reg_ = std::move(other.reg_);
  }
  return *this;
}

std::byte* memory_region::data() const { return reg_ ? reg_->data : nullptr; }
std::size_t memory_region::size() const { return reg_ ? reg_->size : 0; }
vnfs::access memory_region::access() const { return reg_ ? reg_->access : vnfs::access::read_write; }

memory_slice memory_region::slice(std::size_t offset, std::size_t length) const {
  check_range(offset, length, size(), "memory_region::slice");
  return memory_slice(reg_, data() + offset, length);
}

}  // namespace vnfs
