// vnfs command line: the commands that change names — rm, mkdir, ln.
#include <sys/stat.h>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "tree_remove.hpp"

namespace vnfs::cli {

namespace {

/// The permission bits mkdir(1) gives a new directory: 0777 less the umask.
std::uint32_t directory_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0777u & ~static_cast<std::uint32_t>(mask);
}

std::string last_component(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  auto slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

}  // namespace

void run_rm(command_context& ctx, const arguments& a) {
  const bool recursive = a.has('r') || a.has('R'), force = a.has('f');
  std::vector<location> locs;  // all parsed first: a bad one is a usage error before any removal
  for (const std::string& text : a.operands) locs.push_back(parse_location(text));
  for (const location& loc : locs) {
    try {
      vnfs::client& c = ctx.pool.at(loc);
      std::error_code ec;
      file_stat s = stat_of(c, loc, attr::type, ec);
      if (ec) {
        if (!(force && ec == std::errc::no_such_file_or_directory)) report(failure("cannot remove", loc.text, ec));
        continue;
      }
      if (loc.path.empty()) {
        report("refusing to remove '" + loc.text + "': it is the root of its file system");
        continue;
      }
      if (s.type == file_type::directory) {
        if (!recursive) {
          report("cannot remove '" + loc.text + "': Is a directory");
          continue;
        }
        progress bar("removing");
        remove_tree(c, loc, bar);
        continue;
      }
      std::vector<std::string> paths{loc.path};
      vresult r = c.vremove(paths);
      if (!r.ok()) report(failure("cannot remove", loc.text, r.error));
    } catch (const command_error& e) {
      report(e.what());
    }
  }
}

void run_mkdir(command_context& ctx, const arguments& a) {
  const std::uint32_t mode = directory_mode();
  std::vector<location> locs;
  for (const std::string& text : a.operands) locs.push_back(parse_location(text));
  if (a.has('p')) {
    for (const location& l : locs) {
      try {
        vresult r = ctx.pool.at(l).ensure_directory(l.path, mode);
        if (!r.ok()) report(failure("cannot create directory", l.text, r.error));
      } catch (const command_error& e) {
        report(e.what());
      }
    }
    return;
  }
  // Consecutive operands on one client go in one vmkdir; after a failure the call resumes
  // with the next operand, as mkdir(1) goes on.
  std::size_t from = 0;
  while (from < locs.size()) {
    std::size_t to = from + 1;
    while (to < locs.size() && client_pool::same_client(locs[from], locs[to])) ++to;
    try {
      vnfs::client& c = ctx.pool.at(locs[from]);
      while (from < to) {
        std::vector<vmkdir_item> items;
        for (std::size_t k = from; k < to; ++k) items.push_back({locs[k].path, mode});
        vresult r = c.vmkdir(items);
        if (r.ok()) break;
        report(failure("cannot create directory", locs[from + r.failed_index].text, r.error));
        from += r.failed_index + 1;
      }
    } catch (const command_error& e) {
      report(e.what());
    }
    from = to;
  }
}

void run_ln(command_context& ctx, const arguments& a) {
  const std::string& target_text = a.operands[0];
  location link = parse_location(a.operands[1]);
  vnfs::client& c = ctx.pool.at(link);
  // LOC an existing directory: the link goes inside it, named after TARGET.
  std::error_code ec;
  file_stat s = stat_of(c, link, attr::type, ec);
  if (!ec && s.type == file_type::directory) link = link.child(last_component(target_text));
  if (a.has('s')) {
    std::vector<vlink> items{{target_text, link.path}};
    vresult r = c.vsymlink(items);
    if (!r.ok()) throw command_error(failure("failed to create symbolic link", link.text, r.error));
    return;
  }
  location target = parse_location(target_text);
  if (!client_pool::same_client(target, link))
    throw command_error("failed to create hard link '" + link.text + "' => '" + target.text +
                        "': " + reason(std::make_error_code(std::errc::cross_device_link)));
  std::vector<vlink> items{{target.path, link.path}};
  vresult r = c.vhardlink(items);
  if (!r.ok())
    throw command_error("failed to create hard link '" + link.text + "' => '" + target.text + "': " + reason(r.error));
}

}  // namespace vnfs::cli
