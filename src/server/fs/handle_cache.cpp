#include "server/fs/handle_cache.hpp"

namespace vnfs::server::fs {

std::optional<object> handle_cache::find(std::span<const std::byte> fh) {
  if (fh.size() > max_handle) return std::nullopt;
  const key k(fh);
  std::lock_guard lock(mu_);
  auto it = map_.find(k);
  if (it == map_.end()) return std::nullopt;
  it->second.used = true;
  return it->second.obj.share();
}

void handle_cache::insert(std::span<const std::byte> fh, const object& obj, std::uint64_t dev, std::uint64_t ino) {
  if (fh.size() > max_handle || capacity_ == 0 || !obj) return;
  key k(fh);
  std::lock_guard lock(mu_);
  if (auto it = map_.find(k); it != map_.end()) {
    it->second = {obj.share(), dev, ino, true};
    return;
  }
  if (map_.size() >= capacity_) {
    sweep_locked();
    if (map_.size() >= capacity_) map_.erase(map_.begin());
  }
  map_.emplace(k, entry{obj.share(), dev, ino, true});
}

void handle_cache::erase_inode(std::uint64_t dev, std::uint64_t ino) {
  std::lock_guard lock(mu_);
  std::erase_if(map_, [&](const auto& kv) { return kv.second.ino == ino && kv.second.dev == dev; });
}

void handle_cache::erase(std::span<const std::byte> fh) {
  if (fh.size() > max_handle) return;
  const key k(fh);
  std::lock_guard lock(mu_);
  map_.erase(k);
}

void handle_cache::sweep() {
  std::lock_guard lock(mu_);
  sweep_locked();
}

void handle_cache::sweep_locked() {
  for (auto it = map_.begin(); it != map_.end();) {
    if (!it->second.used) {
      it = map_.erase(it);
    } else {
      it->second.used = false;
      ++it;
    }
  }
}

std::size_t handle_cache::size() const {
  std::lock_guard lock(mu_);
  return map_.size();
}

}  // namespace vnfs::server::fs
