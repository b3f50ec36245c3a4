// Fuzzes what a user or a configuration hands the client as text: URLs (client::connect,
// VNFS_MAP, the command line) and the paths every call takes (hostile paths: "..", NUL,
// repeated slashes). Properties: parse_url throws only std::system_error; a parsed URL's
// path is absolute and normalized, and to_string gives text that parses to the same URL;
// normalize_path throws only std::system_error, never lets ".." or "." through, and is
// idempotent; split_path and join_path take it apart and put it back unchanged.
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "client/path.hpp"
#include "fuzz_input.hpp"
#include "vnfs/url.hpp"

using namespace vnfs;

namespace {

bool same(const url& a, const url& b) {
  return a.scheme == b.scheme && a.host == b.host && a.port == b.port && a.path == b.path && a.query == b.query;
}

/// No empty, "." or ".." component and no NUL; `absolute` paths start with '/', the others
/// do not; no trailing '/' except the root "/".
bool normalized(std::string_view p, bool absolute) {
  if (p.find('\0') != std::string_view::npos) return false;
  if (absolute) {
    if (p.empty() || p[0] != '/') return false;
    if (p == "/") return true;
    p.remove_prefix(1);
  } else if (p.empty()) {
    return true;
  }
  std::size_t at = 0;
  for (;;) {
    std::size_t end = p.find('/', at);
    std::string_view c = p.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (c.empty() || c == "." || c == "..") return false;
    if (end == std::string_view::npos) return true;
    at = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  std::optional<url> u;
  try {
    u = parse_url(text);
  } catch (const std::system_error&) {
  }
  if (u) {
    fuzz::require(u->scheme == "nfs" || u->scheme == "nfs+rdma" || u->scheme == "file", "a known scheme");
    fuzz::require(normalized(u->path, true), "a URL's path is absolute and normalized");
    fuzz::require(same(parse_url(to_string(*u)), *u), "to_string reads back as the same URL");
  }

  std::string p;
  try {
    p = detail::normalize_path(text);
  } catch (const std::system_error&) {
    fuzz::require(!detail::is_normal_path(text), "a path normalize_path refuses is not normal");
    return 0;
  }
  fuzz::require(detail::is_normal_path(text) == (p == text), "is_normal_path: exactly the fixed points");
  fuzz::require(normalized(p, false), "a client path is relative and normalized");
  fuzz::require(detail::normalize_path(p) == p, "normalize_path is idempotent");
  std::string rebuilt;
  for (std::string_view c : detail::split_path(p)) rebuilt = detail::join_path(rebuilt, c);
  fuzz::require(rebuilt == p, "split_path and join_path put it back");
  return 0;
}
