// vnfs command line: parsing locations (nfs://, nfs+rdma://, file://, plain paths).
#include "location.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "diagnostics.hpp"

namespace vnfs::cli {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw usage_error("bad location '" + std::string(text) + "': " + why);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text, std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
    int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) bad(text, "bad percent escape");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

/// "a//b/./c/" -> "a/b/c"; ".." is refused (a server path is not resolved lexically here).
std::string normalize_remote(std::string_view text, std::string_view p) {
  std::string out;
  std::size_t pos = 0;
  while (pos <= p.size()) {
    std::size_t end = std::min(p.find('/', pos), p.size());
    std::string_view c = p.substr(pos, end - pos);
    pos = end + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") bad(text, "'..' in a server path");
    if (!out.empty()) out += '/';
    out += c;
  }
  return out;
}

/// An absolute local path as a path inside the file:/// client: the parent directory
/// resolved through symlinks (as far as it exists), the last component kept as written.
location local_location(std::string text, const std::string& path) {
  fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  p = s;
  location l;
  l.text = std::move(text);
  l.connect_url = "file:///";
  l.local = true;
  if (s == "/") return l;
  std::error_code ec;
  fs::path parent = fs::weakly_canonical(p.parent_path(), ec);
  if (ec) parent = p.parent_path();
  fs::path full = parent / p.filename();
  l.path = full.string().substr(1);
  return l;
}

}  // namespace

location location::child(std::string_view n) const {
  location l = *this;
  l.path = join_path(path, n);
  if (text.empty() || text.back() != '/') l.text += '/';
  l.text += n;
  return l;
}

std::string location::name() const {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join_path(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string out(dir);
  out += '/';
  out += name;
  return out;
}

location parse_location(std::string_view text) {
  if (text.empty()) bad(text, "empty");
  auto sep = text.find("://");
  bool url = sep != std::string_view::npos && sep > 0 &&
             std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(sep), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
             });
  if (!url) return local_location(std::string(text), std::string(text));

  std::string scheme(text.substr(0, sep));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string_view rest = text.substr(sep + 3);
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view raw_path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);

  if (scheme == "file") {
    if (!query.empty()) bad(text, "a file:// URL takes no query");
    if (!authority.empty() && authority != "localhost") bad(text, "a file:// URL names no other host");
    std::string p = percent_decode(text, raw_path);
    if (p.empty()) p = "/";
    return local_location(std::string(text), p);
  }
  if (scheme != "nfs" && scheme != "nfs+rdma") bad(text, "unknown scheme '" + scheme + "' (nfs, nfs+rdma, file)");
  if (authority.empty()) bad(text, "no host");
  // HOST, [IPV6] or either with :PORT.
  std::string_view host = authority, port;
  if (authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) bad(text, "'[' without ']'");
    host = authority.substr(0, close + 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') bad(text, "unexpected characters after ']'");
      port = after.substr(1);
      if (port.empty()) bad(text, "empty port");
    }
  } else if (auto colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) bad(text, "empty port");
  }
  if (host.empty() || host == "[]") bad(text, "no host");
  if (!port.empty()) {
    unsigned long v = 0;
    for (char c : port) {
      if (c < '0' || c > '9') bad(text, "port '" + std::string(port) + "' is not a number");
      v = v * 10 + static_cast<unsigned long>(c - '0');
      if (v > 65535) bad(text, "port '" + std::string(port) + "' is out of range");
    }
  }
  location l;
  l.text = std::string(text);
  l.connect_url = scheme + "://" + std::string(authority) + "/";
  if (!query.empty()) l.connect_url += "?" + std::string(query);
  l.path = normalize_remote(text, percent_decode(text, raw_path));
  return l;
}

}  // namespace vnfs::cli
