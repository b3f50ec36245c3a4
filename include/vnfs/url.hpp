// vnfs public API: the URLs that name a file service and a root in it (client::connect).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vnfs {

/// Default TCP port of NFS (RFC 8881 §2.9.3) and of NFS over RDMA (RFC 8267 §7, "nfsrdma").
inline constexpr std::uint16_t nfs_default_port = 2049;
inline constexpr std::uint16_t nfs_rdma_default_port = 20049;

/// A URL as client::connect reads it.
struct url {
  std::string scheme;  ///< "nfs", "nfs+rdma" or "file" (lower case)
  std::string host;    ///< host name or address; an IPv6 address without its brackets; "" for file
  std::uint16_t port = 0;  ///< the URL's port or the scheme's default; 0 for file
  /// Absolute, percent-decoded, normalized: "/" alone or "/a/b" (no "", ".", ".." components,
  /// no trailing '/').
  std::string path;
  std::map<std::string, std::string> query;  ///< ?k=v&k2=v2, percent-decoded
};

/// Parses nfs://HOST[:PORT][/PATH][?QUERY], nfs+rdma://HOST[:PORT][/PATH][?QUERY] (e.g.
/// ?provider=cma) and file:///PATH (file://localhost/PATH too). HOST is a name, an IPv4
/// address or a bracketed IPv6 address ([::1]). Throws std::system_error(errc::bad_url) whose
/// message is "vnfs: bad URL 'TEXT': " and what is wrong; the scheme is compared without
/// regard to case.
url parse_url(std::string_view text);

/// The same without exceptions: the URL, or std::nullopt with `reason` set to what is wrong
/// (the end of parse_url's message, e.g. "no host").
std::optional<url> try_parse_url(std::string_view text, std::string& reason);

/// The URL's text, which parse_url reads back as `u`: the port always written, the path and
/// the query percent-encoded where they need it ("nfs://h:2049/a%20b?provider=cma").
std::string to_string(const url& u);

}  // namespace vnfs
