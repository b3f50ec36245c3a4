#include "server/txn/lock_table.hpp"

#include <algorithm>

namespace vnfs::server::txn {

namespace {

bool holds(const std::vector<std::uint64_t>& v, std::uint64_t owner) {
  return std::find(v.begin(), v.end(), owner) != v.end();
}

}  // namespace

std::uint64_t lock_table::enroll(std::uint64_t age) {
  std::unique_lock g(mu_);
  const std::uint64_t id = next_id_++;
  owners_.emplace(id, owner_state{age});
  cv_.wait(g, [&] { return unchecked_ == 0; });  // none starts meanwhile: owners_ is not empty
  return id;
}

std::uint64_t lock_table::age_of(std::uint64_t owner) {
  std::lock_guard g(mu_);
  return owners_.at(owner).age;
}

bool lock_table::older(std::uint64_t a, std::uint64_t b) const {
  const std::uint64_t age_a = owners_.at(a).age, age_b = owners_.at(b).age;
  return age_a < age_b || (age_a == age_b && a < b);
}

void lock_table::set_busy(std::uint64_t owner, bool busy) {
  std::lock_guard g(mu_);
  owners_.at(owner).busy = busy;
  cv_.notify_all();
}

void lock_table::set_committed(std::uint64_t owner, std::span<const object_key> keep) {
  std::lock_guard g(mu_);
  owner_state& o = owners_.at(owner);
  o.committed = o.busy = true;
  std::vector<object_key> kept;
  for (const object_key& k : o.held) {
    auto it = table_.find(k);
    if (it == table_.end()) continue;
    entry& e = it->second;
    const bool keeps = std::find(keep.begin(), keep.end(), k) != keep.end();
    if (e.exclusive == owner) e.exclusive = 0;
    std::erase(e.shared, owner);
    if (keeps) {
      e.shared.push_back(owner);
      kept.push_back(k);
    } else if (e.empty()) {
      table_.erase(it);
    }
  }
  o.held = std::move(kept);
  cv_.notify_all();
}

void lock_table::release(std::uint64_t owner) {
  std::lock_guard g(mu_);
  auto o = owners_.find(owner);
  if (o == owners_.end()) return;
  for (const object_key& k : o->second.held) {
    auto it = table_.find(k);
    if (it == table_.end()) continue;
    entry& e = it->second;
    if (e.exclusive == owner) e.exclusive = 0;
    std::erase(e.shared, owner);
    if (e.empty()) table_.erase(it);
  }
  owners_.erase(o);
  cv_.notify_all();
}

void lock_table::holders_against(const entry& e, std::uint64_t owner, lock_mode mode,
                                 std::vector<std::uint64_t>& out) {
  if (e.exclusive != 0 && e.exclusive != owner) out.push_back(e.exclusive);
  if (mode == lock_mode::exclusive)
    for (std::uint64_t s : e.shared)
      if (s != owner) out.push_back(s);
}

void lock_table::drop_if_empty(const object_key& k) {
  auto it = table_.find(k);
  if (it != table_.end() && it->second.empty()) table_.erase(it);
}

lock_table::verdict lock_table::lock(std::uint64_t owner, std::span<const lock_request> reqs, std::uint64_t& victim) {
  std::unique_lock g(mu_);
  std::vector<std::uint64_t> against;
  for (const lock_request& r : reqs) {
    for (;;) {
      entry& e = table_[r.key];  // looked up again after each wait: others may erase it
      if (e.exclusive == owner || (r.mode == lock_mode::shared && holds(e.shared, owner))) break;
      against.clear();
      holders_against(e, owner, r.mode, against);
      const bool pinned = r.mode == lock_mode::shared ? e.plain_writers > 0 : e.plain_readers + e.plain_writers > 0;
      if (against.empty() && !pinned) {
        owner_state& me = owners_.at(owner);
        if (!holds(e.shared, owner)) me.held.push_back(r.key);
        if (r.mode == lock_mode::exclusive) {
          std::erase(e.shared, owner);  // an upgrade
          e.exclusive = owner;
        } else {
          e.shared.push_back(owner);
        }
        break;
      }
      // A committed holder ends by itself: everyone waits for it.
      std::erase_if(against, [&](std::uint64_t h) { return owners_.at(h).committed; });
      if (std::any_of(against.begin(), against.end(), [&](std::uint64_t h) { return older(h, owner); })) {
        drop_if_empty(r.key);
        return verdict::die;
      }
      for (std::uint64_t h : against) {
        if (!owners_.at(h).busy) {
          drop_if_empty(r.key);
          victim = h;
          return verdict::wound;
        }
      }
      cv_.wait(g);  // younger busy holders end their COMPOUNDs, committed ones their checkpoint;
                    // plain pins end with their operation
    }
  }
  return verdict::granted;
}

bool lock_table::enter_plain() {
  std::lock_guard g(mu_);
  if (!owners_.empty()) return false;
  ++unchecked_;
  return true;
}

void lock_table::leave_plain(bool unchecked) {
  if (!unchecked) return;
  std::lock_guard g(mu_);
  if (--unchecked_ == 0) cv_.notify_all();
}

bool lock_table::pin(std::span<const lock_request> reqs, bool may_wait, std::chrono::milliseconds idle_wait) {
  std::unique_lock g(mu_);
  const auto deadline = std::chrono::steady_clock::now() + idle_wait;
  std::vector<std::uint64_t> against;
  for (;;) {
    against.clear();
    for (const lock_request& r : reqs) {
      auto it = table_.find(r.key);
      if (it != table_.end()) holders_against(it->second, 0, r.mode, against);
    }
    if (against.empty()) break;
    // A committed holder ends by itself, without waiting for anyone: waiting for it while
    // holding pins can close no cycle.
    if (std::all_of(against.begin(), against.end(), [&](std::uint64_t h) { return owners_.at(h).committed; })) {
      cv_.wait(g);
      continue;
    }
    if (!may_wait) return false;
    const bool idle = std::any_of(against.begin(), against.end(), [&](std::uint64_t h) { return !owners_.at(h).busy; });
    if (!idle) {
      cv_.wait(g);
    } else if (cv_.wait_until(g, deadline) == std::cv_status::timeout) {
      return false;
    }
  }
  for (const lock_request& r : reqs) {
    entry& e = table_[r.key];
    ++(r.mode == lock_mode::shared ? e.plain_readers : e.plain_writers);
  }
  return true;
}

void lock_table::unpin(std::span<const lock_request> reqs) {
  std::lock_guard g(mu_);
  for (const lock_request& r : reqs) {
    auto it = table_.find(r.key);
    if (it == table_.end()) continue;
    --(r.mode == lock_mode::shared ? it->second.plain_readers : it->second.plain_writers);
    if (it->second.empty()) table_.erase(it);
  }
  cv_.notify_all();
}

std::size_t lock_table::size() {
  std::lock_guard g(mu_);
  return table_.size();
}

}  // namespace vnfs::server::txn
