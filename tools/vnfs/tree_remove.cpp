// vnfs command line: recursive removal.
#include "tree_remove.hpp"

#include <algorithm>
#include <span>

#include "diagnostics.hpp"
#include "tree_listing.hpp"

namespace vnfs::cli {

namespace {
/// Paths per vremove call: few enough for a steady progress bar, many enough to fill
/// COMPOUNDs.
constexpr std::size_t remove_batch = 4096;
}  // namespace

void remove_tree(vnfs::client& c, const location& loc, progress& bar) {
  std::vector<tree_node> nodes = list_tree(c, loc.path, loc.text, attr::type, true);
  // Deepest first; within a depth the listing's order.
  std::stable_sort(nodes.begin(), nodes.end(), [](const tree_node& a, const tree_node& b) { return a.depth > b.depth; });
  std::vector<std::string> paths;
  paths.reserve(nodes.size() + 1);
  for (const auto& n : nodes) paths.push_back(n.path());
  paths.push_back(loc.path);
  bar.expect(paths.size(), 0);
  auto display = [&loc](const std::string& p) {
    return p.size() == loc.path.size() ? loc.text : loc.child(p.substr(loc.path.empty() ? 0 : loc.path.size() + 1)).text;
  };
  for (std::size_t at = 0; at < paths.size(); at += remove_batch) {
    std::span<const std::string> batch(paths.data() + at, std::min(remove_batch, paths.size() - at));
    vresult r = c.vremove(batch);
    bar.advance(r.ok_count, 0);
    if (!r.ok()) throw command_error(failure("cannot remove", display(batch[r.failed_index]), r.error));
  }
}

}  // namespace vnfs::cli
