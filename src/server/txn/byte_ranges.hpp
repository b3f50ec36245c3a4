// vnfsd transactions: a set of byte ranges of one file, [from, to) pairs kept disjoint and
// merged. A transaction keeps one per file it changes: the bytes whose content at the
// transaction's start an undo record already restores (docs/transactions.md, "Records").
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

namespace vnfs::server::txn {

class byte_ranges {
 public:
  using range = std::pair<std::uint64_t, std::uint64_t>;  ///< [first, second)

  /// Adds [from, to) (nothing if empty), merging with the ranges it touches or overlaps.
  void add(std::uint64_t from, std::uint64_t to) {
    if (from >= to) return;
    auto it = ranges_.upper_bound(from);
    if (it != ranges_.begin() && std::prev(it)->second >= from) {
      --it;
      from = it->first;
    }
    while (it != ranges_.end() && it->first <= to) {
      to = std::max(to, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(from, to);
  }

  /// The parts of [from, to) that no range covers, in order.
  std::vector<range> gaps(std::uint64_t from, std::uint64_t to) const {
    std::vector<range> out;
    if (from >= to) return out;
    auto it = ranges_.upper_bound(from);
    if (it != ranges_.begin() && std::prev(it)->second > from) from = std::prev(it)->second;
    for (; from < to; ++it) {
      const std::uint64_t next = it == ranges_.end() ? to : std::min(to, it->first);
      if (from < next) out.emplace_back(from, next);
      if (it == ranges_.end()) break;
      from = std::max(from, it->second);
    }
    return out;
  }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;  ///< from -> to, disjoint, not touching
};

}  // namespace vnfs::server::txn
