// vnfsd: who a request comes from, as client records compare it.
#pragma once

#include <cstdint>

namespace vnfs::server {

/// The principal a request comes from (RFC 8881 §2.4, §18.35.4): the RPC credential's
/// flavor and, for AUTH_SYS, its uid and gid as sent (before root squashing), as NFS-Ganesha
/// compares them. Two requests are from the same principal when these are equal.
struct client_principal {
  std::uint32_t flavor = 0;  ///< AUTH_NONE (0) or AUTH_SYS (1)
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  friend bool operator==(const client_principal&, const client_principal&) = default;
  friend auto operator<=>(const client_principal&, const client_principal&) = default;
};

}  // namespace vnfs::server
