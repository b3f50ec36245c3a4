#include "vnfs/bdb/vnfs_map.hpp"

#include <stdexcept>

namespace vnfs::bdb {

std::vector<mapping> parse_vnfs_map(std::string_view text) {
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

}  // namespace vnfs::bdb
