// vnfs XDR layer: RFC 4506 decoder over a contiguous span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "vnfs/xdr/error.hpp"

namespace vnfs::xdr {

using bytes_view = std::span<const std::byte>;

/// Decodes XDR from a span it does not own. Opaque data comes back as views into that
/// span (zero-copy), valid as long as the underlying buffer. Every read is bounds-checked;
/// malformed input throws decode_error and leaves the decoder in an unspecified position.
class decoder {
 public:
  static constexpr std::uint32_t no_limit = std::numeric_limits<std::uint32_t>::max();

  explicit decoder(bytes_view in) : in_(in) {}

  std::uint32_t get_u32() {
    const std::byte* p = take(4);
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) |
           (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
  }
  std::int32_t get_i32() { return static_cast<std::int32_t>(get_u32()); }
  std::uint64_t get_u64() {
    std::uint64_t hi = get_u32();
    return (hi << 32) | get_u32();
  }
  std::int64_t get_i64() { return static_cast<std::int64_t>(get_u64()); }
  bool get_bool() {
    std::uint32_t v = get_u32();
    if (v > 1) throw decode_error("xdr: bool is neither 0 nor 1");
    return v == 1;
  }

  /// Fixed-length opaque of n bytes (padding skipped and required to be present).
  bytes_view get_fixed_opaque(std::size_t n) {
    const std::byte* p = take(n);
    take(padding(n));
    return {p, n};
  }
  /// Variable-length opaque; throws if its length exceeds max_len or the input.
  bytes_view get_opaque(std::uint32_t max_len = no_limit) {
    std::uint32_t n = get_u32();
    if (n > max_len) throw decode_error("xdr: opaque longer than its bound");
    return get_fixed_opaque(n);
  }
  std::string get_string(std::uint32_t max_len = no_limit) {
    bytes_view v = get_opaque(max_len);
    return std::string(reinterpret_cast<const char*>(v.data()), v.size());
  }
  /// Reads an array count and checks that count elements of at least min_element_size
  /// bytes each can still follow, so hostile counts cannot force huge allocations.
  std::uint32_t get_count(std::uint32_t max_count = no_limit, std::size_t min_element_size = 4) {
    std::uint32_t n = get_u32();
    if (n > max_count) throw decode_error("xdr: array longer than its bound");
    if (min_element_size != 0 && n > remaining() / min_element_size)
      throw decode_error("xdr: array count exceeds the remaining input");
    return n;
  }

  /// Skips n bytes (no alignment implied).
  void skip(std::size_t n) { take(n); }

  std::size_t position() const { return at_; }
  std::size_t remaining() const { return in_.size() - at_; }
  bytes_view rest() const { return in_.subspan(at_); }
  bytes_view input() const { return in_; }

 private:
  static std::size_t padding(std::size_t n) { return (4 - (n & 3)) & 3; }
  const std::byte* take(std::size_t n) {
    if (n > remaining()) throw decode_error("xdr: input truncated");
    const std::byte* p = in_.data() + at_;
    at_ += n;
    return p;
  }

  bytes_view in_;
  std::size_t at_ = 0;
};

}  // namespace vnfs::xdr
