// vnfs command line: the commands that only look — ls, stat, cat.
#include <time.h>

#include <fcntl.h>

#include <map>
#include <span>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "ls_format.hpp"
#include "output.hpp"
#include "tree_listing.hpp"

namespace vnfs::cli {

namespace {

timespec now() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

/// Fills the link_target of each item with the contents of paths[i] (one vreadlink; a
/// failure is reported and the call resumed after it).
void read_links(vnfs::client& c, const std::vector<std::string>& paths, const std::vector<std::string>& display,
                const std::vector<listed*>& items) {
  std::size_t from = 0;
  while (from < paths.size()) {
    std::span<const std::string> rest(paths.data() + from, paths.size() - from);
    std::vector<std::string> targets;
    vresult r = c.vreadlink(rest, &targets);
    for (std::size_t k = 0; k < rest.size() && k < targets.size(); ++k)
      if (k < r.status.size() && !r.status[k]) items[from + k]->link_target = targets[k];
    if (r.ok()) return;
    report(failure("cannot read symbolic link", display[from + r.failed_index], r.error));
    from += r.failed_index + 1;
  }
}

struct ls_printer {
  bool long_format, recursive;
  timespec when;
  std::map<std::string, std::vector<listed>> by_dir;  // client path of a directory -> its entries

  void print_entries(const std::vector<listed>& items) const {
    if (long_format) {
      for (const auto& line : long_lines(items, when)) out(line + "\n");
    } else {
      for (const auto& i : items) out(i.name + "\n");
    }
  }

  // As GNU ls -R: a header per directory, a blank line between directories, depth first in
  // name order.
  void print_dir(const std::string& path, const location& shown, bool first) const {
    auto it = by_dir.find(path);
    static const std::vector<listed> none;
    const std::vector<listed>& items = it == by_dir.end() ? none : it->second;
    if (recursive) out((first ? "" : "\n") + shown.text + ":\n");
    if (long_format) out("total " + std::to_string(total_blocks(items)) + "\n");
    print_entries(items);
    if (!recursive) return;
    for (const auto& i : items)
      if (i.stat.type == file_type::directory) print_dir(join_path(path, i.name), shown.child(i.name), false);
  }
};

/// The client of a location, or nullptr after reporting why it cannot be had (so that a
/// command with many operands goes on with the next).
vnfs::client* connect_or_report(command_context& ctx, const location& l) {
  try {
    return &ctx.pool.at(l);
  } catch (const command_error& e) {
    report(e.what());
    return nullptr;
  }
}

std::string stat_time(const timespec& t) {
  std::tm tm{};
  time_t s = t.tv_sec;
  ::localtime_r(&s, &tm);
  char date[64], zone[16], nanos[16];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
  std::strftime(zone, sizeof zone, "%z", &tm);
  std::snprintf(nanos, sizeof nanos, ".%09ld", static_cast<long>(t.tv_nsec));
  return std::string(date) + nanos + " " + zone;
}

const char* type_name(const file_stat& s) {
  switch (s.type) {
    case file_type::regular: return s.size == 0 ? "regular empty file" : "regular file";
    case file_type::directory: return "directory";
    case file_type::symlink: return "symbolic link";
    case file_type::block: return "block special file";
    case file_type::character: return "character special file";
    case file_type::fifo: return "fifo";
    case file_type::socket: return "socket";
    case file_type::unknown: break;
  }
  return "unknown";
}

}  // namespace

void run_ls(command_context& ctx, const arguments& a) {
  location loc = parse_location(a.operands[0]);
  vnfs::client& c = ctx.pool.at(loc);
  ls_printer p{a.has('l'), a.has('R'), now(), {}};
  const unsigned mask = p.long_format ? attr::stat : attr::type;
  std::error_code ec;
  file_stat top = stat_of(c, loc, mask, ec);
  if (ec) throw command_error(failure("cannot access", loc.text, ec));
  if (top.type != file_type::directory) {
    std::vector<listed> one{{loc.text, top, {}}};
    if (p.long_format && top.type == file_type::symlink) read_links(c, {loc.path}, {loc.text}, {&one[0]});
    p.print_entries(one);
    return;
  }
  for (auto& n : list_tree(c, loc.path, loc.text, mask, p.recursive)) {
    if (!a.has('A') && !n.entry.name.empty() && n.entry.name[0] == '.') continue;
    p.by_dir[n.dir].push_back({n.entry.name, n.entry.stat, {}});
  }
  if (p.long_format) {
    std::vector<std::string> paths, display;
    std::vector<listed*> links;
    for (auto& [dir, items] : p.by_dir)
      for (auto& i : items)
        if (i.stat.type == file_type::symlink) {
          paths.push_back(join_path(dir, i.name));
          location shown = dir == loc.path ? loc : loc.child(dir.substr(loc.path.empty() ? 0 : loc.path.size() + 1));
          display.push_back(shown.child(i.name).text);
          links.push_back(&i);
        }
    if (!links.empty()) read_links(c, paths, display, links);
  }
  for (auto& [dir, items] : p.by_dir) sort_by_name(items);
  p.print_dir(loc.path, loc, true);
}

void run_stat(command_context& ctx, const arguments& a) {
  std::vector<location> locs;
  for (const std::string& text : a.operands) locs.push_back(parse_location(text));
  for (const location& loc : locs) {
    vnfs::client* c = connect_or_report(ctx, loc);
    if (!c) continue;
    std::error_code ec;
    file_stat s = stat_of(*c, loc, attr::stat, ec);
    if (ec) {
      report(failure("cannot stat", loc.text, ec));
      continue;
    }
    std::string file = loc.text;
    if (s.type == file_type::symlink) {
      listed l{loc.text, s, {}};
      read_links(*c, {loc.path}, {loc.text}, {&l});
      file += " -> " + l.link_target;
    }
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", s.mode & 07777);
    out("  File: " + file + "\n");
    out("  Type: " + std::string(type_name(s)) + "\n");
    out("  Size: " + std::to_string(s.size) + "\n");
    out("Blocks: " + std::to_string((s.space_used + 511) / 512) + "\n");
    out("  Mode: " + std::string(mode) + " (" + mode_string(s.type, s.mode) + ")\n");
    out(" Links: " + std::to_string(s.nlink) + "\n");
    out(" Owner: " + std::to_string(s.uid) + " (" + user_name(s.uid) + ")\n");
    out(" Group: " + std::to_string(s.gid) + " (" + group_name(s.gid) + ")\n");
    out(" Inode: " + std::to_string(s.fileid) + "\n");
    out("Access: " + stat_time(s.atime) + "\n");
    out("Modify: " + stat_time(s.mtime) + "\n");
    out("Change: " + stat_time(s.ctime) + "\n");
  }
}

void run_cat(command_context& ctx, const arguments& a) {
  // 16 reads of 1 MiB per vread: one call moves 16 MiB.
  constexpr std::size_t piece = std::size_t(1) << 20, pieces = 16;
  std::vector<std::byte> buffer(piece * pieces);
  std::vector<location> locs;
  for (const std::string& text : a.operands) locs.push_back(parse_location(text));
  for (const location& loc : locs) {
    vnfs::client* cp = connect_or_report(ctx, loc);
    if (!cp) continue;
    vnfs::client& c = *cp;
    // The first piece is read by path (the call opens, reads and closes the file): a file
    // that fits in it costs one COMPOUND. A longer one is then opened and read on.
    std::vector<vio> first;
    first.emplace_back(vfile(loc.path), 0, std::span<std::byte>(buffer.data(), piece));
    vresult r = c.vread(first);
    if (!r.ok()) {
      report(failure("cannot open", loc.text, r.error));
      continue;
    }
    out(std::string_view(reinterpret_cast<const char*>(buffer.data()), first[0].bytes));
    if (first[0].bytes < piece) continue;
    std::vector<vopen_item> open(1);
    open[0].path = loc.path;
    open[0].flags = O_RDONLY;
    r = c.vopen(open);
    if (!r.ok()) {
      report(failure("cannot open", loc.text, r.error));
      continue;
    }
    std::uint64_t offset = piece;
    bool eof = false;
    while (!eof) {
      std::vector<vio> ios;
      for (std::size_t k = 0; k < pieces; ++k)
        ios.emplace_back(open[0].result, offset + k * piece, std::span<std::byte>(buffer.data() + k * piece, piece));
      r = c.vread(ios);
      if (!r.ok()) {
        report(failure("cannot read", loc.text, r.error));
        break;
      }
      for (const vio& io : ios) {
        out(std::string_view(reinterpret_cast<const char*>(io.buffer.data()), io.bytes));
        offset += io.bytes;
        if (io.bytes < piece) {
          eof = true;
          break;
        }
      }
    }
    std::vector<file> files{open[0].result};
    c.vclose(files);
  }
}

}  // namespace vnfs::cli
