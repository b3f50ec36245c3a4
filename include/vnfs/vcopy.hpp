// vnfs public API: one item of vcopy / vscopy — copy a file in whole or in part.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace vnfs {

/// Copies `length` bytes of `src` from `src_offset` to `dst` at `dst_offset`; with
/// length == to_end, everything from src_offset to src's end. `dst` is created if missing
/// (with src's permission bits); copying a whole file (src_offset 0, to_end) also truncates
/// it to the copied size.
struct vcopy_item {
  static constexpr std::uint64_t to_end = std::numeric_limits<std::uint64_t>::max();
  std::string src;
  std::string dst;
  std::uint64_t src_offset = 0;
  std::uint64_t dst_offset = 0;
  std::uint64_t length = to_end;

  std::uint64_t bytes = 0;  ///< result: bytes copied
};

}  // namespace vnfs
