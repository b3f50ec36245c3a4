// Fuzzes VNFS_MAP, the environment variable every drop-in adapter parses at load time
// (adapters/common/include/vnfs/adapters/vnfs_map.hpp). Properties: parse_vnfs_map throws
// only std::invalid_argument, with a message that starts "VNFS_MAP: "; a parsed map has at
// least one mapping, every prefix absolute, not "/", without a trailing '/', and unique, and
// every URL has a scheme; longest_prefix finds each prefix for itself and for a path below
// it, and no prefix for a path that merely begins with its text ("/a" is not under "/ab").
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_input.hpp"
#include "vnfs/adapters/vnfs_map.hpp"

using namespace vnfs::adapters;
using vnfs::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<mapping> maps;
  try {
    maps = parse_vnfs_map(text);
  } catch (const std::invalid_argument& e) {
    require(std::string_view(e.what()).starts_with("VNFS_MAP: "), "an error message names VNFS_MAP");
    return 0;
  }
  require(!maps.empty(), "a parsed map has a mapping");
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const std::string& p = maps[i].prefix;
    require(p.size() > 1 && p[0] == '/' && p.back() != '/', "a prefix is absolute, not '/', no trailing '/'");
    require(maps[i].url.find("://") != std::string::npos, "a URL has a scheme");
    for (std::size_t j = 0; j < i; ++j) require(maps[j].prefix != p, "prefixes are unique");
    require(longest_prefix(maps, p) == i, "a prefix is its own longest prefix");
    require(longest_prefix(maps, p + "/x") == i || maps[longest_prefix(maps, p + "/x")].prefix.size() > p.size(),
            "a path below a prefix finds it, or a longer one");
    std::size_t sib = longest_prefix(maps, p + "x");
    require(sib == maps.size() || maps[sib].prefix != p, "a longer name is not under the prefix");
  }
  require(longest_prefix(maps, "relative") == maps.size(), "a relative path is under no prefix");
  return 0;
}
