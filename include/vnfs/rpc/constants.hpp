// vnfs RPC layer: ONC RPC v2 protocol constants (RFC 5531 §8-§9).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vnfs::rpc {

/// The only RPC protocol version; a call with another version is answered RPC_MISMATCH.
inline constexpr std::uint32_t rpc_version = 2;
/// Bound of opaque_auth bodies (credentials and verifiers).
inline constexpr std::size_t max_auth_bytes = 400;
/// Bounds of authsys_parms (RFC 5531 appendix A).
inline constexpr std::size_t max_machinename = 255;
inline constexpr std::size_t max_authsys_gids = 16;

enum class msg_type : std::uint32_t { call = 0, reply = 1 };

enum class reply_stat : std::uint32_t { msg_accepted = 0, msg_denied = 1 };

enum class accept_stat : std::uint32_t {
  success = 0,        // results follow
  prog_unavail = 1,   // program not exported
  prog_mismatch = 2,  // version not supported: mismatch_info follows
  proc_unavail = 3,   // procedure unknown
  garbage_args = 4,   // arguments could not be decoded
  system_err = 5,     // e.g. memory allocation failure
};

enum class reject_stat : std::uint32_t {
  rpc_mismatch = 0,  // rpcvers != 2: mismatch_info follows
  auth_error = 1,    // auth_stat follows
};

enum class auth_stat : std::uint32_t {
  ok = 0,
  badcred = 1,       // malformed or unacceptable credential
  rejectedcred = 2,  // client must begin a new session
  badverf = 3,
  rejectedverf = 4,
  tooweak = 5,       // flavor not accepted by this program
  invalidresp = 6,
  failed = 7,
  kerb_generic = 8,
  timeexpire = 9,
  tktfile = 10,
  decode = 11,
  net_addr = 12,
  rpcsec_gss_credproblem = 13,
  rpcsec_gss_ctxproblem = 14,
};

enum class auth_flavor : std::uint32_t {
  none = 0,
  sys = 1,
  short_hand = 2,
  dh = 3,
  rpcsec_gss = 6,
};

}  // namespace vnfs::rpc
