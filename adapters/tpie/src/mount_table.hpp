// vnfs TPIE adapter (internal): the process's mappings of local prefixes to vnfs clients
// (the state behind mounts.hpp and mount_stats.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "vnfs/client.hpp"

namespace vnfs::tpie::detail {

/// Where a local path lives on vnfs.
struct remote_location {
  std::shared_ptr<vnfs::client> client;  ///< connected
  std::string remote_path;               ///< relative to the mapping's URL ("" for the prefix itself)
  std::string url;                       ///< the mapping's URL
};

/// The mapping containing `path` (made absolute against the working directory, normalised)
/// with its client connected, or nothing for a local path. Throws io_error (naming `path`)
/// when VNFS_MAP is malformed or the client cannot connect.
std::optional<remote_location> locate(const std::string& path);

}  // namespace vnfs::tpie::detail
