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

/// How locate() treats a malformed VNFS_MAP.
enum class on_bad_map {
  fail,      ///< throw io_error (an open: the application hears why)
  as_local,  ///< every path is local (the C library calls of path_calls.cpp: a bad map must
             ///< not break the process's other file calls; the accessor's open reports it)
};

/// The mapping containing `path` (made absolute against the working directory, normalised)
/// with its client connected, or nothing for a local path. Throws io_error (naming `path`)
/// when the client cannot connect, and when VNFS_MAP is malformed unless `bad_map` says
/// otherwise.
std::optional<remote_location> locate(const std::string& path, on_bad_map bad_map = on_bad_map::fail);

}  // namespace vnfs::tpie::detail
