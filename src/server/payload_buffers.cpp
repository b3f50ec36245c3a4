#include "server/payload_buffers.hpp"

#include <array>
#include <bit>
#include <mutex>
#include <vector>

namespace vnfs::server {

namespace {
/// Buffers are kept by size class: class k holds buffers of exactly min_pooled << k bytes.
constexpr std::size_t classes = 16;  // up to 2 GiB, beyond any READ
}  // namespace

struct payload_buffers::state {
  explicit state(std::size_t cap) : cap(cap) {}
  const std::size_t cap;
  std::mutex mu;
  std::size_t retained = 0;  // under mu
  std::array<std::vector<std::byte*>, classes> idle;  // under mu

  ~state() {
    for (auto& list : idle)
      for (std::byte* b : list) delete[] b;
  }

  void give_back(std::byte* b, std::size_t k) {
    const std::size_t size = min_pooled << k;
    {
      std::lock_guard lock(mu);
      if (retained + size <= cap) {
        idle[k].push_back(b);
        retained += size;
        return;
      }
    }
    delete[] b;
  }
};

payload_buffers::payload_buffers(std::size_t retained_bytes) : state_(std::make_shared<state>(retained_bytes)) {}

std::shared_ptr<std::byte[]> payload_buffers::get(std::size_t n) {
  if (n < min_pooled) return std::shared_ptr<std::byte[]>(new std::byte[n == 0 ? 1 : n]);
  // The smallest class that holds n bytes.
  const std::size_t k = static_cast<std::size_t>(std::bit_width((n - 1) / min_pooled));
  if (k >= classes) return std::shared_ptr<std::byte[]>(new std::byte[n]);
  std::byte* b = nullptr;
  {
    std::lock_guard lock(state_->mu);
    auto& list = state_->idle[k];
    if (!list.empty()) {
      b = list.back();
      list.pop_back();
      state_->retained -= min_pooled << k;
    }
  }
  if (b == nullptr) b = new std::byte[min_pooled << k];
  return std::shared_ptr<std::byte[]>(b, [s = state_, k](std::byte* p) { s->give_back(p, k); });
}

std::size_t payload_buffers::retained() const {
  std::lock_guard lock(state_->mu);
  return state_->retained;
}

}  // namespace vnfs::server
