// vnfs TPIE adapter: which local paths live on vnfs. C++17.
//
// A path given to an accessor's open_* is on vnfs when it lies under a mounted prefix
// (the prefix itself or PREFIX/...; the longest prefix wins): the rest of the path, relative
// to the mapping's URL, names the file on the server. Every other path is a local file.
// So TPIE's temporary files go to vnfs when TPIE's temporary directory ($TMPDIR, or
// tpie::tempname::set_default_path) is under a prefix.
//
// The mappings come from the first of: mount() calls made by the program; else the
// environment variable VNFS_MAP (syntax in vnfs/adapters/vnfs_map.hpp:
// 'PREFIX=URL[;PREFIX=URL...]'), read at the first open. Each mapping has one client,
// connected at the first open under its prefix and shared by every accessor; an accessor
// keeps its client alive while its file is open.
#pragma once

#include <string>

namespace vnfs {
struct client_options;
}

namespace vnfs::tpie {

/// Maps `prefix` (absolute, not "/") to `url` (anything vnfs::client::connect accepts),
/// replacing an earlier mapping of the same prefix. Once mount() has been called VNFS_MAP is
/// not read. Throws std::invalid_argument for a malformed prefix or URL.
void mount(const std::string& prefix, const std::string& url);
void mount(const std::string& prefix, const std::string& url, const vnfs::client_options& options);

/// Forgets every mapping and releases their clients (files still open keep theirs until
/// they close). VNFS_MAP is read again at the next open unless mount() is called.
void unmount_all();

}  // namespace vnfs::tpie
