// vnfs client: URL parsing (RFC 3986 syntax, restricted to what connect() accepts).
#include "vnfs/url.hpp"

#include <system_error>

#include "vnfs/error.hpp"

namespace vnfs {
namespace {

/// What is wrong with a URL: thrown by the parser, caught by try_parse_url.
struct bad_url {
  std::string reason;
};

[[noreturn]] void fail(std::string_view, const std::string& what) { throw bad_url{what}; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text, std::string_view s, const char* part) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
    int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) fail(text, std::string("bad percent escape in the ") + part);
    char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') fail(text, std::string("%00 in the ") + part);
    out += c;
    i += 2;
  }
  return out;
}

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The path: percent-decoded, then normalized to "/" or "/a/b". ".." is refused outright: the
// root of a client is what the URL names, not something relative to it.
std::string parse_path(std::string_view text, std::string_view raw) {
  std::string decoded = percent_decode(text, raw, "path");
  std::string out;
  std::size_t pos = 0;
  while (pos <= decoded.size()) {
    std::size_t end = decoded.find('/', pos);
    if (end == std::string::npos) end = decoded.size();
    std::string_view c(decoded.data() + pos, end - pos);
    pos = end + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") fail(text, "'..' in the path");
    out += '/';
    out += c;
  }
  return out.empty() ? std::string("/") : out;
}

void parse_query(std::string_view text, std::string_view q, url& u) {
  std::size_t pos = 0;
  while (pos <= q.size()) {
    std::size_t end = q.find('&', pos);
    if (end == std::string_view::npos) end = q.size();
    std::string_view item = q.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    std::string key = percent_decode(text, item.substr(0, eq), "query");
    std::string value = eq == std::string_view::npos ? std::string() : percent_decode(text, item.substr(eq + 1), "query");
    if (key.empty()) fail(text, "query parameter without a name");
    if (!u.query.emplace(std::move(key), std::move(value)).second)
      fail(text, "query parameter '" + std::string(item.substr(0, eq)) + "' given twice");
  }
}

void parse_authority(std::string_view text, std::string_view auth, url& u, std::uint16_t default_port) {
  if (auth.find('@') != std::string_view::npos) fail(text, "user information ('@') is not supported");
  std::string_view host, port;
  if (!auth.empty() && auth.front() == '[') {
    auto close = auth.find(']');
    if (close == std::string_view::npos) fail(text, "'[' without ']' around the IPv6 address");
    host = auth.substr(1, close - 1);
    if (host.empty()) fail(text, "empty IPv6 address");
    for (char c : host)
      if (!(hex_value(c) >= 0 || c == ':' || c == '.')) fail(text, "bad character in the IPv6 address");
    if (host.find(':') == std::string_view::npos) fail(text, "not an IPv6 address in brackets");
    auto rest = auth.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') fail(text, "unexpected characters after ']'");
      port = rest.substr(1);
      if (port.empty()) fail(text, "empty port");
    }
  } else {
    auto colon = auth.find(':');
    host = auth.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = auth.substr(colon + 1);
      if (port.empty()) fail(text, "empty port");
    }
    if (host.empty()) fail(text, "no host");
    for (char c : host)
      if (!(is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_'))
        fail(text, std::string("bad character '") + c + "' in the host");
  }
  u.host = std::string(host);
  if (port.empty()) {
    u.port = default_port;
    return;
  }
  unsigned long v = 0;
  for (char c : port) {
    if (!is_digit(c)) fail(text, "port '" + std::string(port) + "' is not a number");
    v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v > 65535) fail(text, "port '" + std::string(port) + "' is out of range");
  }
  if (v == 0) fail(text, "port 0");
  u.port = static_cast<std::uint16_t>(v);
}

url parse_text(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0) fail(text, "no scheme (nfs://, nfs+rdma:// or file://)");
  url u;
  for (char c : text.substr(0, sep)) {
    if (!(is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.')) fail(text, "bad scheme");
    u.scheme += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  if (u.scheme != "nfs" && u.scheme != "nfs+rdma" && u.scheme != "file")
    fail(text, "unknown scheme '" + u.scheme + "' (nfs, nfs+rdma or file)");

  std::string_view rest = text.substr(sep + 3);
  if (rest.find('#') != std::string_view::npos) fail(text, "fragments ('#') are not supported");
  for (char c : rest)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) fail(text, "space or control character");
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto slash = rest.find('/');
  std::string_view auth = rest.substr(0, slash);
  std::string_view raw_path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);

  if (u.scheme == "file") {
    if (!auth.empty() && auth != "localhost") fail(text, "a file URL names no host (file:///PATH)");
    if (raw_path.empty()) fail(text, "no path (file:///PATH)");
  } else {
    parse_authority(text, auth, u, u.scheme == "nfs" ? nfs_default_port : nfs_rdma_default_port);
  }
  u.path = parse_path(text, raw_path);
  parse_query(text, query, u);
  return u;
}

/// Appends `s` to `out` with every byte outside `keep` (and outside the unreserved characters
/// of RFC 3986) percent-encoded.
void percent_encode(std::string& out, std::string_view s, std::string_view keep) {
  static constexpr char hex[] = "0123456789ABCDEF";
  for (char c : s) {
    if (is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      auto b = static_cast<unsigned char>(c);
      out += '%';
      out += hex[b >> 4];
      out += hex[b & 15];
    }
  }
}

}  // namespace

std::optional<url> try_parse_url(std::string_view text, std::string& reason) {
  try {
    return parse_text(text);
  } catch (bad_url& e) {
    reason = std::move(e.reason);
    return std::nullopt;
  }
}

url parse_url(std::string_view text) {
  std::string reason;
  std::optional<url> u = try_parse_url(text, reason);
  if (!u) throw std::system_error(make_error_code(errc::bad_url), "vnfs: bad URL '" + std::string(text) + "': " + reason);
  return std::move(*u);
}

std::string to_string(const url& u) {
  std::string out = u.scheme + "://";
  if (u.scheme != "file") {
    out += u.host.find(':') == std::string::npos ? u.host : "[" + u.host + "]";
    out += ':' + std::to_string(u.port);
  }
  percent_encode(out, u.path.empty() ? std::string_view("/") : std::string_view(u.path), "/!$&'()*+,;=:@");
  char sep = '?';
  for (const auto& [key, value] : u.query) {
    out += sep;
    sep = '&';
    percent_encode(out, key, "!$'()*+,;:@/?");
    if (value.empty()) continue;
    out += '=';
    percent_encode(out, value, "!$'()*+,;:@/?");
  }
  return out;
}

}  // namespace vnfs
