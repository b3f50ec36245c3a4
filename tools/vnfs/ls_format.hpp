// vnfs command line: `ls -l` lines as GNU ls prints them in the C locale (mode string, link
// count, owner, group, size, time, name, "-> target"), columns aligned over one listing.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "vnfs/file_stat.hpp"

namespace vnfs::cli {

/// One object of a listing: the name to print, its attributes and, for a symlink shown
/// with -l, its contents.
struct listed {
  std::string name;
  file_stat stat;
  std::string link_target;
};

/// "-rw-r--r--", "drwxr-xr-x", "lrwxrwxrwx", with s/S, t/T for the set-id and sticky bits.
std::string mode_string(file_type type, std::uint32_t mode);

/// GNU ls's time column: "Nov 22 02:30" within the six months before `now`, else
/// "Nov 22  2025" (local time).
std::string ls_time(const timespec& when, const timespec& now);

/// The user (group) name of an id, or the id in decimal when the system has no name for it.
std::string user_name(std::uint32_t uid);
std::string group_name(std::uint32_t gid);

/// GNU ls -l's "total": the space used by `items`, in 1024-byte blocks, rounded up.
std::uint64_t total_blocks(const std::vector<listed>& items);

/// The -l lines of `items`, in the given order, without newlines; columns aligned.
std::vector<std::string> long_lines(const std::vector<listed>& items, const timespec& now);

/// Sorts by name byte by byte, as `LC_ALL=C ls` does.
void sort_by_name(std::vector<listed>& items);

}  // namespace vnfs::cli
