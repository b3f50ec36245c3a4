// vnfs client: client path normalization.
#include "client/path.hpp"

#include <system_error>

#include "vnfs/error.hpp"

namespace vnfs::detail {

bool is_normal_path(std::string_view path) {
  if (path.empty()) return true;
  if (path.find('\0') != std::string_view::npos) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t end = path.find('/', start);
    std::size_t len = (end == std::string_view::npos ? path.size() : end) - start;
    if (len == 0 || (len <= 2 && path[start] == '.' && (len == 1 || path[start + 1] == '.'))) return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

std::string normalize_path(std::string_view path) {
  if (is_normal_path(path)) return std::string(path);
  if (path.find('\0') != std::string_view::npos)
    throw std::system_error(make_error_code(errc::bad_argument), "vnfs: path contains a NUL character");
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view c = path.substr(pos, end - pos);
    pos = end + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (parts.empty())
        throw std::system_error(make_error_code(errc::bad_argument),
                                "vnfs: path '" + std::string(path) + "' climbs above the root");
      parts.pop_back();
      continue;
    }
    parts.push_back(c);
  }
  std::string out;
  out.reserve(path.size());
  for (auto c : parts) {
    if (!out.empty()) out += '/';
    out += c;
  }
  return out;
}

std::vector<std::string_view> split_path(std::string_view normalized) {
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos < normalized.size()) {
    std::size_t end = normalized.find('/', pos);
    if (end == std::string_view::npos) end = normalized.size();
    if (end > pos) parts.push_back(normalized.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

std::pair<std::string_view, std::string_view> split_parent(std::string_view normalized) {
  auto slash = normalized.rfind('/');
  if (slash == std::string_view::npos) return {std::string_view(), normalized};
  return {normalized.substr(0, slash), normalized.substr(slash + 1)};
}

std::string join_path(std::string_view parent, std::string_view child) {
  if (parent.empty()) return std::string(child);
  if (child.empty()) return std::string(parent);
  std::string out;
  out.reserve(parent.size() + 1 + child.size());
  out += parent;
  out += '/';
  out += child;
  return out;
}

}  // namespace vnfs::detail
