// vnfs Berkeley DB adapter: VNFS_MAP, which local path prefixes stand for which vnfs
// locations.
//
//   VNFS_MAP='PREFIX=URL'                      one mapping (the bsdtar drop-in's syntax)
//   VNFS_MAP='PREFIX=URL;PREFIX=URL;...'       several, separated by ';'
//
// PREFIX is an absolute local path (not "/"); trailing slashes are ignored. URL is any URL
// vnfs::client::connect accepts (nfs://, nfs+rdma://...?provider=cma, file://). A path is
// under PREFIX when it is PREFIX itself or begins with PREFIX followed by '/'; when several
// prefixes contain a path, the longest one wins. Empty entries (";;", a trailing ';') are
// ignored. The URL may contain '=' (only the first '=' of an entry separates).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace vnfs::bdb {

struct mapping {
  std::string prefix;  ///< absolute, without a trailing '/'
  std::string url;     ///< as given
};

/// Parses VNFS_MAP's syntax. Throws std::invalid_argument with one line that names the
/// faulty entry and what is wrong with it; at least one mapping is required.
std::vector<mapping> parse_vnfs_map(std::string_view text);

}  // namespace vnfs::bdb
