// vnfs command line: GNU-compatible `ls -l` formatting.
#include "ls_format.hpp"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <map>

namespace vnfs::cli {

std::string mode_string(file_type type, std::uint32_t mode) {
  std::string s(10, '-');
  switch (type) {
    case file_type::directory: s[0] = 'd'; break;
    case file_type::symlink: s[0] = 'l'; break;
    case file_type::block: s[0] = 'b'; break;
    case file_type::character: s[0] = 'c'; break;
    case file_type::fifo: s[0] = 'p'; break;
    case file_type::socket: s[0] = 's'; break;
    case file_type::unknown: s[0] = '?'; break;
    case file_type::regular: break;
  }
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    if (mode & (0400u >> i)) s[static_cast<std::size_t>(i) + 1] = rwx[i];
  auto special = [&s, mode](std::uint32_t bit, std::size_t at, char set_exec, char set_noexec) {
    if (mode & bit) s[at] = s[at] == '-' ? set_noexec : set_exec;
  };
  special(04000, 3, 's', 'S');
  special(02000, 6, 's', 'S');
  special(01000, 9, 't', 'T');
  return s;
}

std::string ls_time(const timespec& when, const timespec& now) {
  // GNU ls: recent when within the last 31556952 / 2 seconds (half a Gregorian year) and not
  // in the future.
  auto before = [](const timespec& a, const timespec& b) {
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
  };
  timespec six_months_ago{now.tv_sec - 31556952 / 2, now.tv_nsec};
  bool recent = before(six_months_ago, when) && before(when, now);
  std::tm tm{};
  time_t t = when.tv_sec;
  if (!::localtime_r(&t, &tm)) return std::to_string(when.tv_sec);
  char buf[64];
  std::size_t n = std::strftime(buf, sizeof buf, recent ? "%b %e %H:%M" : "%b %e  %Y", &tm);
  return std::string(buf, n);
}

std::string user_name(std::uint32_t uid) {
  static std::map<std::uint32_t, std::string> cache;
  auto it = cache.find(uid);
  if (it != cache.end()) return it->second;
  passwd pw{}, *found = nullptr;
  char buf[4096];
  std::string name = ::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found ? found->pw_name : std::to_string(uid);
  return cache.emplace(uid, name).first->second;
}

std::string group_name(std::uint32_t gid) {
  static std::map<std::uint32_t, std::string> cache;
  auto it = cache.find(gid);
  if (it != cache.end()) return it->second;
  group gr{}, *found = nullptr;
  char buf[4096];
  std::string name = ::getgrgid_r(gid, &gr, buf, sizeof buf, &found) == 0 && found ? found->gr_name : std::to_string(gid);
  return cache.emplace(gid, name).first->second;
}

std::uint64_t total_blocks(const std::vector<listed>& items) {
  std::uint64_t bytes = 0;
  for (const auto& i : items) bytes += i.stat.space_used;
  return (bytes + 1023) / 1024;
}

std::vector<std::string> long_lines(const std::vector<listed>& items, const timespec& now) {
  struct columns {
    std::string mode, links, user, group, size, time;
  };
  std::vector<columns> rows;
  std::size_t wl = 0, wu = 0, wg = 0, ws = 0;
  for (const auto& i : items) {
    columns c{mode_string(i.stat.type, i.stat.mode), std::to_string(i.stat.nlink), user_name(i.stat.uid),
              group_name(i.stat.gid), std::to_string(i.stat.size), ls_time(i.stat.mtime, now)};
    wl = std::max(wl, c.links.size());
    wu = std::max(wu, c.user.size());
    wg = std::max(wg, c.group.size());
    ws = std::max(ws, c.size.size());
    rows.push_back(std::move(c));
  }
  std::vector<std::string> lines;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const columns& c = rows[k];
    std::string line = c.mode + ' ';
    line += std::string(wl - c.links.size(), ' ') + c.links + ' ';
    line += c.user + std::string(wu - c.user.size(), ' ') + ' ';
    line += c.group + std::string(wg - c.group.size(), ' ') + ' ';
    line += std::string(ws - c.size.size(), ' ') + c.size + ' ';
    line += c.time + ' ' + items[k].name;
    if (items[k].stat.type == file_type::symlink) line += " -> " + items[k].link_target;
    lines.push_back(std::move(line));
  }
  return lines;
}

void sort_by_name(std::vector<listed>& items) {
  std::sort(items.begin(), items.end(), [](const listed& a, const listed& b) { return a.name < b.name; });
}

}  // namespace vnfs::cli
