// vnfs command line: listing a directory tree with vlistdir (one call; the client lists
// every level of the tree breadth-first, many directories per round trip).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "vnfs/client.hpp"

namespace vnfs::cli {

struct tree_node {
  std::string dir;  ///< client path of the directory the entry is in
  dir_entry entry;  ///< its name and the attributes asked for
  std::size_t depth = 0;  ///< 0 for the entries of the listed directory itself

  std::string path() const;  ///< the entry's client path
};

/// The entries of directory `path` of `c`, and with `recursive` of every directory below it
/// (not through symlinks), parents' entries before their children's; attributes `mask`
/// (attr::type always). Throws command_error "cannot open directory 'DISPLAY': reason".
std::vector<tree_node> list_tree(vnfs::client& c, const std::string& path, const std::string& display, unsigned mask,
                                 bool recursive);

}  // namespace vnfs::cli
