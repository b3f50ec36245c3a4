// Server tests: deterministic test data, different for each seed, so that misplaced or
// mixed-up bytes show.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vnfs::test {

/// `n` bytes of a linear congruential sequence started from `seed`.
inline std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = std::byte(x >> 16);
  }
  return v;
}

}  // namespace vnfs::test
