// vnfs fuzzing: helpers shared by the libFuzzer harnesses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace vnfs::fuzz {

/// The fuzzer's bytes as the span the decoders take.
inline std::span<const std::byte> bytes_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

/// Reads the fuzzer's bytes front to back; past the end it yields zeros.
class input_reader {
 public:
  explicit input_reader(std::span<const std::byte> in) : in_(in) {}
  std::uint8_t u8() { return at_ < in_.size() ? std::to_integer<std::uint8_t>(in_[at_++]) : 0; }
  std::uint32_t u16() {
    const std::uint32_t hi = u8();
    return hi << 8 | u8();
  }
  bool at_end() const { return at_ >= in_.size(); }
  /// What is left, consumed.
  std::span<const std::byte> rest() {
    auto r = in_.subspan(std::min(at_, in_.size()));
    at_ = in_.size();
    return r;
  }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

/// A property every input must keep; a violation aborts, which libFuzzer reports as a crash
/// and saves the input that caused it.
inline void require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz: property violated: %s\n", what);
  std::abort();
}

}  // namespace vnfs::fuzz
