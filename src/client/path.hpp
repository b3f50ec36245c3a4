// vnfs client: client paths — what the application names, made safe for a backend.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vnfs::detail {

/// Normalizes a path relative to the client's root: "a/b", "/a/b", "a//b/", "./a/./b" all
/// give "a/b"; "" and "/" give "" (the root itself). ".." removes the component before it
/// ("a/../b" is "b"), resolved lexically — sound because names are never resolved through
/// symlinks on the way (client.hpp). A ".." that would climb above the root, and a NUL
/// character, throw std::system_error(errc::bad_argument): a backend never sees "..".
std::string normalize_path(std::string_view path);

/// Whether `path` is already in the form normalize_path gives: no NUL character, no empty,
/// "." or ".." component, no leading or trailing '/' ("" is the root). Then
/// normalize_path(path) == path, and a caller may keep it as it is (no allocation).
bool is_normal_path(std::string_view path);

/// The components of a normalized path ("" has none).
std::vector<std::string_view> split_path(std::string_view normalized);

/// {parent, name} of a normalized path: "a/b/c" gives {"a/b", "c"}, "c" gives {"", "c"},
/// "" gives {"", ""}.
std::pair<std::string_view, std::string_view> split_parent(std::string_view normalized);

/// Joins two normalized paths ("" is the root): join_path("a", "b/c") is "a/b/c".
std::string join_path(std::string_view parent, std::string_view child);

}  // namespace vnfs::detail
