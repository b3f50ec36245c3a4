#include "vnfs/bench/temp_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

namespace vnfs::bench {

temp_dir::temp_dir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::filesystem::path parent = (base != nullptr && *base != '\0') ? base : "/tmp";
  std::string pattern = (parent / (std::string(prefix) + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  path_ = std::filesystem::absolute(buf.data());
}

temp_dir::~temp_dir() { remove(); }

temp_dir::temp_dir(temp_dir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

temp_dir& temp_dir::operator=(temp_dir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

void temp_dir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  // A test may leave read-only subdirectories behind; as root that does not matter, as a
  // user remove_all would fail on them, so make everything writable first.
  for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ec);
    }
  }
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace vnfs::bench
