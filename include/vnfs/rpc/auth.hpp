// vnfs RPC layer: authentication bodies — opaque_auth and AUTH_SYS (RFC 5531 §8.2, §A).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "vnfs/rpc/constants.hpp"
#include "vnfs/xdr/codec.hpp"

namespace vnfs::rpc {

/// A credential or verifier: a flavor and an opaque body of at most max_auth_bytes.
struct opaque_auth {
  auth_flavor flavor = auth_flavor::none;
  std::vector<std::byte> body;

  static opaque_auth none() { return {}; }
  bool operator==(const opaque_auth&) const = default;
};

/// The AUTH_SYS credential body.
struct authsys_parms {
  std::uint32_t stamp = 0;
  std::string machinename;  // at most max_machinename bytes
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::uint32_t> gids;  // at most max_authsys_gids

  bool operator==(const authsys_parms&) const = default;
};

}  // namespace vnfs::rpc

namespace vnfs::xdr {

/// Encoding an over-long body is a caller bug (std::length_error); decoding one is
/// malformed input (decode_error).
template <>
struct codec<rpc::opaque_auth> {
  static void encode(encoder& e, const rpc::opaque_auth& v) {
    if (v.body.size() > rpc::max_auth_bytes) throw std::length_error("rpc: opaque_auth body over 400 bytes");
    e.put_u32(static_cast<std::uint32_t>(v.flavor));
    e.put_opaque(v.body);
  }
  static void decode(decoder& d, rpc::opaque_auth& v) {
    v.flavor = static_cast<rpc::auth_flavor>(d.get_u32());
    bytes_view b = d.get_opaque(rpc::max_auth_bytes);
    v.body.assign(b.begin(), b.end());
  }
};

template <>
struct codec<rpc::authsys_parms> {
  static void encode(encoder& e, const rpc::authsys_parms& v) {
    if (v.machinename.size() > rpc::max_machinename)
      throw std::length_error("rpc: AUTH_SYS machinename over 255 bytes");
    if (v.gids.size() > rpc::max_authsys_gids) throw std::length_error("rpc: AUTH_SYS with more than 16 gids");
    e.put_u32(v.stamp);
    e.put_string(v.machinename);
    e.put_u32(v.uid);
    e.put_u32(v.gid);
    xdr::encode(e, v.gids);
  }
  static void decode(decoder& d, rpc::authsys_parms& v) {
    v.stamp = d.get_u32();
    v.machinename = d.get_string(rpc::max_machinename);
    v.uid = d.get_u32();
    v.gid = d.get_u32();
    std::uint32_t n = d.get_count(rpc::max_authsys_gids);
    v.gids.resize(n);
    for (std::uint32_t& g : v.gids) g = d.get_u32();
  }
};

}  // namespace vnfs::xdr

namespace vnfs::rpc {

/// Wraps AUTH_SYS parameters into a credential. Throws std::length_error when a bound is
/// exceeded (the result would not fit the 400-byte credential either).
inline opaque_auth make_authsys(const authsys_parms& p) {
  return {auth_flavor::sys, xdr::to_bytes(p)};
}

/// Parses an AUTH_SYS credential. Throws xdr::decode_error when the flavor is not AUTH_SYS
/// or the body is malformed (bounds exceeded, truncated, trailing bytes): a server answers
/// that with AUTH_ERROR/AUTH_BADCRED.
inline authsys_parms parse_authsys(const opaque_auth& cred) {
  if (cred.flavor != auth_flavor::sys) throw xdr::decode_error("rpc: credential is not AUTH_SYS");
  return xdr::from_bytes<authsys_parms>(cred.body);
}

}  // namespace vnfs::rpc
