// vnfs public API: attributes of a file, as stat(2) reports them.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

namespace vnfs {

enum class file_type { regular, directory, symlink, block, character, fifo, socket, unknown };

struct file_stat {
  file_type type = file_type::unknown;
  std::uint32_t mode = 0;  ///< permission bits (07777)
  std::uint32_t nlink = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t size = 0;
  std::uint64_t space_used = 0;  ///< bytes allocated
  std::uint64_t fileid = 0;      ///< inode number
  std::uint64_t change = 0;      ///< changes whenever the file does (NFSv4 change attribute)
  timespec atime{}, mtime{}, ctime{};
};

/// One entry of a directory listing.
struct dir_entry {
  std::string name;
  file_stat stat;
};

}  // namespace vnfs
