// vnfs XDR layer: typed encode/decode through the codec<T> customization point.
//
// A type is XDR-codable when codec<T> has
//     static void encode(encoder&, const T&);
//     static void decode(decoder&, T&);
// Provided here: fixed-width integers, bool, enums (as int), std::string (string<>),
// std::vector<std::byte> (opaque<>), std::array<std::byte, N> (opaque[N]), bytes_view
// (opaque<> by reference: zero-copy both ways), std::vector<T> (T<>), std::array<T, N>
// (T[N]), std::optional<T> (*T, optional-data), and structs that list their members
// with VNFS_XDR_FIELDS. Discriminated unions specialize codec<T> by hand.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "vnfs/xdr/decoder.hpp"
#include "vnfs/xdr/encoder.hpp"

/// Declares a struct's members, in XDR order, for the generic struct codec.
#define VNFS_XDR_FIELDS(...)                                  \
  auto xdr_tie() { return std::tie(__VA_ARGS__); }            \
  auto xdr_tie() const { return std::tie(__VA_ARGS__); }

namespace vnfs::xdr {

template <class T, class Enable = void>
struct codec;  // undefined: a type without a codec does not compile

template <class T>
void encode(encoder& e, const T& v) {
  codec<T>::encode(e, v);
}
template <class T>
void decode(decoder& d, T& v) {
  codec<T>::decode(d, v);
}
template <class T>
T decode(decoder& d) {
  T v{};
  codec<T>::decode(d, v);
  return v;
}

/// Encodes a value into a fresh contiguous buffer (tests, small messages).
template <class T>
std::vector<std::byte> to_bytes(const T& v) {
  encoder e;
  encode(e, v);
  return e.flatten();
}
/// Decodes a value that must occupy all of `in`.
template <class T>
T from_bytes(bytes_view in) {
  decoder d(in);
  T v = decode<T>(d);
  if (d.remaining() != 0) throw decode_error("xdr: trailing bytes");
  return v;
}

template <class T>
struct codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "XDR integers are 32 or 64 bits");
  static void encode(encoder& e, T v) {
    if constexpr (sizeof(T) == 8) e.put_u64(static_cast<std::uint64_t>(v));
    else e.put_u32(static_cast<std::uint32_t>(v));
  }
  static void decode(decoder& d, T& v) {
    if constexpr (sizeof(T) == 8) v = static_cast<T>(d.get_u64());
    else v = static_cast<T>(d.get_u32());
  }
};

template <>
struct codec<bool> {
  static void encode(encoder& e, bool v) { e.put_bool(v); }
  static void decode(decoder& d, bool& v) { v = d.get_bool(); }
};

/// Enums travel as their 32-bit value; any value decodes (validity is the protocol's call).
template <class T>
struct codec<T, std::enable_if_t<std::is_enum_v<T>>> {
  static void encode(encoder& e, T v) { e.put_u32(static_cast<std::uint32_t>(v)); }
  static void decode(decoder& d, T& v) { v = static_cast<T>(d.get_u32()); }
};

template <>
struct codec<std::string> {
  static void encode(encoder& e, const std::string& v) { e.put_string(v); }
  static void decode(decoder& d, std::string& v) { v = d.get_string(); }
};

template <>
struct codec<std::vector<std::byte>> {
  static void encode(encoder& e, const std::vector<std::byte>& v) { e.put_opaque(v); }
  static void decode(decoder& d, std::vector<std::byte>& v) {
    bytes_view b = d.get_opaque();
    v.assign(b.begin(), b.end());
  }
};

/// opaque<> that is never copied: encoded by reference, decoded as a view into the input.
template <>
struct codec<bytes_view> {
  static void encode(encoder& e, bytes_view v) { e.put_opaque_ref(v); }
  static void decode(decoder& d, bytes_view& v) { v = d.get_opaque(); }
};

template <std::size_t N>
struct codec<std::array<std::byte, N>> {
  static void encode(encoder& e, const std::array<std::byte, N>& v) { e.put_fixed_opaque(v); }
  static void decode(decoder& d, std::array<std::byte, N>& v) {
    bytes_view b = d.get_fixed_opaque(N);
    std::copy(b.begin(), b.end(), v.begin());
  }
};

template <class T, std::size_t N>
struct codec<std::array<T, N>, std::enable_if_t<!std::is_same_v<T, std::byte>>> {
  static void encode(encoder& e, const std::array<T, N>& v) {
    for (const T& x : v) xdr::encode(e, x);
  }
  static void decode(decoder& d, std::array<T, N>& v) {
    for (T& x : v) xdr::decode(d, x);
  }
};

template <class T>
struct codec<std::vector<T>, std::enable_if_t<!std::is_same_v<T, std::byte>>> {
  static void encode(encoder& e, const std::vector<T>& v) {
    e.put_u32(static_cast<std::uint32_t>(v.size()));
    for (const T& x : v) xdr::encode(e, x);
  }
  static void decode(decoder& d, std::vector<T>& v) {
    std::uint32_t n = d.get_count();  // every XDR item is at least 4 bytes
    v.clear();
    v.resize(n);
    for (T& x : v) xdr::decode(d, x);
  }
};

template <class T>
struct codec<std::optional<T>> {
  static void encode(encoder& e, const std::optional<T>& v) {
    e.put_bool(v.has_value());
    if (v) xdr::encode(e, *v);
  }
  static void decode(decoder& d, std::optional<T>& v) {
    if (d.get_bool()) v.emplace(xdr::decode<T>(d));
    else v.reset();
  }
};

template <class T>
struct codec<T, std::void_t<decltype(std::declval<T&>().xdr_tie())>> {
  static void encode(encoder& e, const T& v) {
    std::apply([&](const auto&... f) { (xdr::encode(e, f), ...); }, v.xdr_tie());
  }
  static void decode(decoder& d, T& v) {
    std::apply([&](auto&... f) { (xdr::decode(d, f), ...); }, v.xdr_tie());
  }
};

}  // namespace vnfs::xdr
