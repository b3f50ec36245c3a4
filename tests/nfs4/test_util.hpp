// Helpers shared by the nfs4 tests.
#pragma once

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <vector>

#include "vnfs/nfs4/nfs4.hpp"

namespace nfs4_test {

using namespace vnfs;
using namespace vnfs::nfs4;

inline std::vector<std::byte> B(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int x : v) out.push_back(std::byte(x));
  return out;
}
inline std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(std::byte(c));
  return out;
}
template <std::size_t N>
std::array<std::byte, N> filled(int first) {
  std::array<std::byte, N> a{};
  for (std::size_t i = 0; i < N; ++i) a[i] = std::byte(first + i);
  return a;
}
inline stateid4 sid(std::uint32_t seq, int first) { return {seq, filled<NFS4_OTHER_SIZE>(first)}; }

/// Encodes v, decodes it back, checks equality and full consumption, and checks that every
/// proper prefix of the encoding is rejected with decode_error.
template <class T>
std::vector<std::byte> round_trip(const T& v) {
  std::vector<std::byte> bytes = xdr::to_bytes(v);
  REQUIRE(bytes.size() % 4 == 0);
  CHECK(xdr::from_bytes<T>(bytes) == v);
  for (std::size_t n = 0; n < bytes.size(); n += 4)
    CHECK_THROWS_AS(xdr::from_bytes<T>(xdr::bytes_view(bytes.data(), n)), xdr::decode_error);
  return bytes;
}

/// Round trip of an operation's arguments through encode_argop / decode_argop.
template <class Args>
void argop_round_trip(const Args& a) {
  round_trip(a);
  xdr::encoder e;
  encode_argop(e, nfs_argop4(a));
  auto bytes = e.flatten();
  xdr::decoder d(bytes);
  nfs_argop4 back = decode_argop(d);
  CHECK(d.remaining() == 0);
  REQUIRE(std::holds_alternative<Args>(back));
  CHECK(std::get<Args>(back) == a);
  CHECK(opnum_of(back) == Args::opnum);
}

/// Round trip of an operation's result through encode_resop / decode_resop.
template <class Res>
void resop_round_trip(const Res& r) {
  round_trip(r);
  xdr::encoder e;
  encode_resop(e, nfs_resop4(r));
  auto bytes = e.flatten();
  xdr::decoder d(bytes);
  nfs_resop4 back = decode_resop(d);
  CHECK(d.remaining() == 0);
  REQUIRE(std::holds_alternative<Res>(back));
  CHECK(std::get<Res>(back) == r);
  CHECK(opnum_of(back) == Res::opnum);
  CHECK(status_of(back) == r.status);
}

inline fattr4 some_attrs() {
  return {bitmap4::of({FATTR4_SIZE, FATTR4_MODE}), B({0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 0xa4})};
}
inline change_info4 some_cinfo(std::uint64_t base) { return {true, base, base + 1}; }

}  // namespace nfs4_test
