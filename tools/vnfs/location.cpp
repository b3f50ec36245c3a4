// vnfs command line: parsing locations (nfs://, nfs+rdma://, file://, plain paths).
#include "location.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <system_error>

#include "diagnostics.hpp"
#include "vnfs/url.hpp"

namespace vnfs::cli {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw usage_error("bad location '" + std::string(text) + "': " + why);
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
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out += dir;
  out += '/';
  out += name;
  return out;
}

location parse_location(std::string_view text) {
  if (text.empty()) bad(text, "empty");
  // SCHEME:// makes a URL; anything else is a local path.
  auto sep = text.find("://");
  bool is_url = sep != std::string_view::npos && sep > 0 &&
                std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(sep), [](char c) {
                  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
                });
  if (!is_url) return local_location(std::string(text), std::string(text));

  std::string reason;
  std::optional<vnfs::url> u = vnfs::try_parse_url(text, reason);
  if (!u) bad(text, reason);
  if (u->scheme == "file") {
    if (!u->query.empty()) bad(text, "a file:// URL takes no query");
    return local_location(std::string(text), u->path);
  }
  location l;
  l.text = std::string(text);
  l.path = u->path.substr(1);  // "/a/b" -> "a/b", "/" -> ""
  u->path = "/";
  l.connect_url = vnfs::to_string(*u);
  return l;
}

}  // namespace vnfs::cli
