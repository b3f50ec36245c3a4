// bench: the loop step of a benchmark that keeps operations in flight through one
// completion group.
#pragma once

#include <cstddef>
#include <span>

#include "vnfs/completion_group.hpp"

namespace vnfs::bench {

/// Takes the completions ready in `g` into `batch` (not empty), waiting for one when none is
/// ready yet. Returns how many it took: at least 1.
inline std::size_t take_completions(vnfs::completion_group& g, std::span<vnfs::completion> batch) {
  if (std::size_t k = g.poll(batch); k != 0) return k;
  batch[0] = g.wait();
  return 1;
}

}  // namespace vnfs::bench
