// vnfs RPC layer: call and reply message headers (RFC 5531 §9).
//
// A message on the wire is a header followed by the procedure's arguments or results; this
// header covers the header only, so arguments and results can be encoded straight into the
// same xdr::encoder (and decoded from the same xdr::decoder) by the layer above.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "vnfs/rpc/auth.hpp"
#include "vnfs/rpc/constants.hpp"
#include "vnfs/xdr/codec.hpp"

namespace vnfs::rpc {

struct call_header {
  std::uint32_t xid = 0;
  std::uint32_t prog = 0;
  std::uint32_t vers = 0;
  std::uint32_t proc = 0;
  opaque_auth cred;
  opaque_auth verf;
  // rpcvers is not a member: it is always written as 2 and checked on decode.

  bool operator==(const call_header&) const = default;
};

/// Supported version range, for PROG_MISMATCH and RPC_MISMATCH.
struct mismatch_info {
  std::uint32_t low = 0;
  std::uint32_t high = 0;
  bool operator==(const mismatch_info&) const = default;
};

/// Any reply header, flattened: `stat` says which of the other members are meaningful.
///   msg_accepted: verf, accepted; mismatch when accepted == prog_mismatch.
///   msg_denied:   rejected; mismatch when rpc_mismatch, auth when auth_error.
struct reply_header {
  std::uint32_t xid = 0;
  reply_stat stat = reply_stat::msg_accepted;
  opaque_auth verf;
  accept_stat accepted = accept_stat::success;
  reject_stat rejected = reject_stat::rpc_mismatch;
  mismatch_info mismatch;
  auth_stat auth = auth_stat::ok;

  /// True for MSG_ACCEPTED/SUCCESS: the procedure's results follow the header.
  bool is_success() const { return stat == reply_stat::msg_accepted && accepted == accept_stat::success; }
  bool operator==(const reply_header&) const = default;
};

inline const char* to_string(accept_stat s) {
  switch (s) {
    case accept_stat::success: return "SUCCESS";
    case accept_stat::prog_unavail: return "PROG_UNAVAIL";
    case accept_stat::prog_mismatch: return "PROG_MISMATCH";
    case accept_stat::proc_unavail: return "PROC_UNAVAIL";
    case accept_stat::garbage_args: return "GARBAGE_ARGS";
    case accept_stat::system_err: return "SYSTEM_ERR";
  }
  return "unknown accept_stat";
}

inline const char* to_string(auth_stat s) {
  switch (s) {
    case auth_stat::ok: return "AUTH_OK";
    case auth_stat::badcred: return "AUTH_BADCRED";
    case auth_stat::rejectedcred: return "AUTH_REJECTEDCRED";
    case auth_stat::badverf: return "AUTH_BADVERF";
    case auth_stat::rejectedverf: return "AUTH_REJECTEDVERF";
    case auth_stat::tooweak: return "AUTH_TOOWEAK";
    case auth_stat::invalidresp: return "AUTH_INVALIDRESP";
    case auth_stat::failed: return "AUTH_FAILED";
    default: return "auth_stat (other)";
  }
}

/// One line for logs and exception messages, e.g. "xid 7: MSG_DENIED AUTH_ERROR AUTH_BADCRED".
inline std::string describe(const reply_header& h) {
  std::string s = "xid " + std::to_string(h.xid) + ": ";
  if (h.stat == reply_stat::msg_accepted) {
    s += "MSG_ACCEPTED ";
    s += to_string(h.accepted);
    if (h.accepted == accept_stat::prog_mismatch)
      s += " (" + std::to_string(h.mismatch.low) + ".." + std::to_string(h.mismatch.high) + ")";
  } else if (h.rejected == reject_stat::rpc_mismatch) {
    s += "MSG_DENIED RPC_MISMATCH (" + std::to_string(h.mismatch.low) + ".." + std::to_string(h.mismatch.high) + ")";
  } else {
    s += "MSG_DENIED AUTH_ERROR ";
    s += to_string(h.auth);
  }
  return s;
}

/// Thrown by check_reply (and clients built on it) for any reply that is not
/// MSG_ACCEPTED/SUCCESS; the header tells exactly why.
class reply_error : public std::runtime_error {
 public:
  explicit reply_error(const reply_header& h) : std::runtime_error("rpc: " + describe(h)), header_(h) {}
  const reply_header& header() const { return header_; }

 private:
  reply_header header_;
};

inline void check_reply(const reply_header& h) {
  if (!h.is_success()) throw reply_error(h);
}

/// Thrown by decode_call when a call cannot be served. It carries everything a server needs
/// to answer as RFC 5531 requires, so a server never has to guess:
///   drop          — not a call, or too short to have an xid: send nothing;
///   rpc_mismatch  — rpcvers != 2: MSG_DENIED RPC_MISMATCH 2..2;
///   auth_error    — credential/verifier malformed or over 400 bytes (auth() says which);
///   garbage_args  — the header is truncated after the xid.
class call_error : public std::runtime_error {
 public:
  enum class kind { drop, rpc_mismatch, auth_error, garbage_args };

  call_error(kind k, std::uint32_t xid, const char* what, auth_stat a = auth_stat::ok)
      : std::runtime_error(what), kind_(k), xid_(xid), auth_(a) {}

  kind reason() const { return kind_; }
  std::uint32_t xid() const { return xid_; }
  auth_stat auth() const { return auth_; }
  bool has_reply() const { return kind_ != kind::drop; }

  /// The reply this call is owed (the header only: nothing follows it).
  /// Returns false, encoding nothing, when the message must be dropped.
  inline bool encode_reply(xdr::encoder& e) const;

 private:
  kind kind_;
  std::uint32_t xid_;
  auth_stat auth_;
};

/// Writes a call header (rpcvers 2); the procedure's arguments go after it.
inline void encode_call(xdr::encoder& e, const call_header& h) {
  e.put_u32(h.xid);
  e.put_u32(static_cast<std::uint32_t>(msg_type::call));
  e.put_u32(rpc_version);
  e.put_u32(h.prog);
  e.put_u32(h.vers);
  e.put_u32(h.proc);
  xdr::encode(e, h.cred);
  xdr::encode(e, h.verf);
}

/// Reads a call header, leaving `d` at the first argument byte. Throws call_error (never
/// xdr::decode_error) when the call cannot be served; see call_error for the replies.
/// An AUTH_SYS credential is parsed to validate it (AUTH_BADCRED when malformed); other
/// flavors are returned as they are, for the server to accept or refuse (AUTH_TOOWEAK).
inline call_header decode_call(xdr::decoder& d) {
  call_header h;
  if (d.remaining() < 8) throw call_error(call_error::kind::drop, 0, "rpc: message too short for a call");
  h.xid = d.get_u32();
  if (d.get_u32() != static_cast<std::uint32_t>(msg_type::call))
    throw call_error(call_error::kind::drop, h.xid, "rpc: message is not a call");
  auto read_auth = [&](opaque_auth& a, auth_stat bad) {
    a.flavor = static_cast<auth_flavor>(d.get_u32());
    std::uint32_t n = d.get_u32();
    if (n > max_auth_bytes) throw call_error(call_error::kind::auth_error, h.xid, "rpc: auth body over 400 bytes", bad);
    xdr::bytes_view b = d.get_fixed_opaque(n);
    a.body.assign(b.begin(), b.end());
  };
  try {
    if (d.get_u32() != rpc_version) throw call_error(call_error::kind::rpc_mismatch, h.xid, "rpc: rpcvers is not 2");
    h.prog = d.get_u32();
    h.vers = d.get_u32();
    h.proc = d.get_u32();
    read_auth(h.cred, auth_stat::badcred);
    read_auth(h.verf, auth_stat::badverf);
  } catch (const xdr::decode_error&) {
    throw call_error(call_error::kind::garbage_args, h.xid, "rpc: call header truncated");
  }
  if (h.cred.flavor == auth_flavor::sys) {
    try {
      (void)parse_authsys(h.cred);
    } catch (const xdr::decode_error&) {
      throw call_error(call_error::kind::auth_error, h.xid, "rpc: malformed AUTH_SYS credential", auth_stat::badcred);
    }
  }
  return h;
}

/// Writes any reply header. For MSG_ACCEPTED/SUCCESS the results go after it.
inline void encode_reply(xdr::encoder& e, const reply_header& h) {
  e.put_u32(h.xid);
  e.put_u32(static_cast<std::uint32_t>(msg_type::reply));
  e.put_u32(static_cast<std::uint32_t>(h.stat));
  if (h.stat == reply_stat::msg_accepted) {
    xdr::encode(e, h.verf);
    e.put_u32(static_cast<std::uint32_t>(h.accepted));
    if (h.accepted == accept_stat::prog_mismatch) {
      e.put_u32(h.mismatch.low);
      e.put_u32(h.mismatch.high);
    }
    return;
  }
  e.put_u32(static_cast<std::uint32_t>(h.rejected));
  if (h.rejected == reject_stat::rpc_mismatch) {
    e.put_u32(h.mismatch.low);
    e.put_u32(h.mismatch.high);
  } else {
    e.put_u32(static_cast<std::uint32_t>(h.auth));
  }
}

/// MSG_ACCEPTED with the given status; `mismatch` is written only for PROG_MISMATCH.
inline void encode_accepted_reply(xdr::encoder& e, std::uint32_t xid, accept_stat stat,
                                  const opaque_auth& verf = {}, mismatch_info mismatch = {}) {
  reply_header h;
  h.xid = xid;
  h.verf = verf;
  h.accepted = stat;
  h.mismatch = mismatch;
  encode_reply(e, h);
}

/// MSG_DENIED RPC_MISMATCH with the supported RPC versions (2..2 unless told otherwise).
inline void encode_denied_reply(xdr::encoder& e, std::uint32_t xid,
                                mismatch_info versions = {rpc_version, rpc_version}) {
  reply_header h;
  h.xid = xid;
  h.stat = reply_stat::msg_denied;
  h.rejected = reject_stat::rpc_mismatch;
  h.mismatch = versions;
  encode_reply(e, h);
}

/// MSG_DENIED AUTH_ERROR with the reason.
inline void encode_denied_reply(xdr::encoder& e, std::uint32_t xid, auth_stat why) {
  reply_header h;
  h.xid = xid;
  h.stat = reply_stat::msg_denied;
  h.rejected = reject_stat::auth_error;
  h.auth = why;
  encode_reply(e, h);
}

/// Reads a reply header, leaving `d` at the first result byte (for SUCCESS). Throws
/// xdr::decode_error when the message is not a reply or a discriminant is not defined.
/// Unknown accept_stat values decode (the RFC's union has a void default arm).
inline reply_header decode_reply(xdr::decoder& d) {
  reply_header h;
  h.xid = d.get_u32();
  if (d.get_u32() != static_cast<std::uint32_t>(msg_type::reply)) throw xdr::decode_error("rpc: message is not a reply");
  std::uint32_t stat = d.get_u32();
  if (stat == static_cast<std::uint32_t>(reply_stat::msg_accepted)) {
    h.stat = reply_stat::msg_accepted;
    xdr::decode(d, h.verf);
    h.accepted = static_cast<accept_stat>(d.get_u32());
    if (h.accepted == accept_stat::prog_mismatch) {
      h.mismatch.low = d.get_u32();
      h.mismatch.high = d.get_u32();
    }
    return h;
  }
  if (stat != static_cast<std::uint32_t>(reply_stat::msg_denied)) throw xdr::decode_error("rpc: unknown reply_stat");
  h.stat = reply_stat::msg_denied;
  std::uint32_t rej = d.get_u32();
  if (rej == static_cast<std::uint32_t>(reject_stat::rpc_mismatch)) {
    h.rejected = reject_stat::rpc_mismatch;
    h.mismatch.low = d.get_u32();
    h.mismatch.high = d.get_u32();
  } else if (rej == static_cast<std::uint32_t>(reject_stat::auth_error)) {
    h.rejected = reject_stat::auth_error;
    h.auth = static_cast<auth_stat>(d.get_u32());
  } else {
    throw xdr::decode_error("rpc: unknown reject_stat");
  }
  return h;
}

inline bool call_error::encode_reply(xdr::encoder& e) const {
  switch (kind_) {
    case kind::drop: return false;
    case kind::rpc_mismatch: encode_denied_reply(e, xid_); return true;
    case kind::auth_error: encode_denied_reply(e, xid_, auth_); return true;
    case kind::garbage_args: encode_accepted_reply(e, xid_, accept_stat::garbage_args); return true;
  }
  return false;
}

}  // namespace vnfs::rpc
