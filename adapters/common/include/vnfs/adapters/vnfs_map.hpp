// vnfs adapters: VNFS_MAP, which local path prefixes stand for which vnfs locations. Shared
// by the drop-in adapters (adapters/bdb, adapters/tpie); header-only, so an adapter library
// needs no extra link dependency to use it.
//
//   VNFS_MAP='PREFIX=URL'                      one mapping (the bsdtar drop-in's syntax)
//   VNFS_MAP='PREFIX=URL;PREFIX=URL;...'       several, separated by ';'
//
// PREFIX is an absolute local path (not "/"); trailing slashes are ignored. URL is any URL
// vnfs::client::connect accepts (nfs://, nfs+rdma://...?provider=cma, file://). A path is
// under PREFIX when it is PREFIX itself or begins with PREFIX followed by '/'; when several
// prefixes contain a path, the longest one wins (longest_prefix). Empty entries (";;", a
// trailing ';') are ignored. The URL may contain '=' (only the first '=' of an entry
// separates).
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vnfs::adapters {

struct mapping {
  std::string prefix;  ///< absolute, without a trailing '/'
  std::string url;     ///< as given
};

/// Parses VNFS_MAP's syntax. Throws std::invalid_argument with one line that names the
/// faulty entry and what is wrong with it; at least one mapping is required.
inline std::vector<mapping> parse_vnfs_map(std::string_view text) {
  std::vector<mapping> out;
  auto fail = [](std::string_view entry, const char* why) {
    throw std::invalid_argument("VNFS_MAP: entry '" + std::string(entry) + "': " + why +
                                " (expected /local/prefix=URL[;/other/prefix=URL...])");
  };
  while (!text.empty()) {
    std::size_t end = text.find(';');
    std::string_view entry = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (entry.empty()) continue;
    std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) fail(entry, "no '='");
    std::string prefix(entry.substr(0, eq));
    std::string url(entry.substr(eq + 1));
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (prefix.empty() || prefix[0] != '/') fail(entry, "the prefix is not an absolute path");
    if (prefix == "/") fail(entry, "the prefix is the root directory");
    if (url.find("://") == std::string::npos) fail(entry, "the URL has no scheme (nfs://, nfs+rdma://, file://)");
    for (const mapping& m : out)
      if (m.prefix == prefix) fail(entry, "the prefix is mapped twice");
    out.push_back({std::move(prefix), std::move(url)});
  }
  if (out.empty()) throw std::invalid_argument("VNFS_MAP: no mapping (expected /local/prefix=URL[;...])");
  return out;
}

/// The index in `maps` of the longest prefix that contains `path` (PREFIX itself or
/// PREFIX/...), or maps.size() when none does. `path` is compared as given (absolute,
/// not normalised).
inline std::size_t longest_prefix(const std::vector<mapping>& maps, std::string_view path) {
  std::size_t best = maps.size();
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const std::string& p = maps[i].prefix;
    if (path.size() < p.size() || path.compare(0, p.size(), p) != 0) continue;
    if (path.size() > p.size() && path[p.size()] != '/') continue;
    if (best == maps.size() || p.size() > maps[best].prefix.size()) best = i;
  }
  return best;
}

}  // namespace vnfs::adapters
