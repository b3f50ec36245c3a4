// vnfs fuzzing: helpers shared by the libFuzzer harnesses.
#pragma once

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

/// A property every input must keep; a violation aborts, which libFuzzer reports as a crash
/// and saves the input that caused it.
inline void require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz: property violated: %s\n", what);
  std::abort();
}

}  // namespace vnfs::fuzz
