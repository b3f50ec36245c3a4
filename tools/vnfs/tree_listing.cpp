// vnfs command line: directory trees through vlistdir.
#include "tree_listing.hpp"

#include "diagnostics.hpp"
#include "location.hpp"

namespace vnfs::cli {

namespace {
void collect(const std::string& dir, const dir_entry& e, std::size_t depth, void* user) {
  static_cast<std::vector<tree_node>*>(user)->push_back({dir, e, depth});
}
}  // namespace

std::string tree_node::path() const { return join_path(dir, entry.name); }

std::vector<tree_node> list_tree(vnfs::client& c, const std::string& path, const std::string& display, unsigned mask,
                                 bool recursive) {
  std::vector<tree_node> nodes;
  vlistdir_options o;
  o.mask = mask | attr::type;
  o.recursive = recursive;
  o.callback = collect;
  o.user = &nodes;
  std::vector<std::string> dirs{path};
  vresult r = c.vlistdir(dirs, o);
  if (!r.ok()) throw command_error(failure("cannot open directory", display, r.error));
  return nodes;
}

}  // namespace vnfs::cli
