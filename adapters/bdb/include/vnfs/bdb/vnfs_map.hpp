// vnfs Berkeley DB adapter: VNFS_MAP, which local path prefixes stand for which vnfs
// locations. The syntax and the parser are shared by the adapters: see
// vnfs/adapters/vnfs_map.hpp (adapters/common).
#pragma once
#include "vnfs/adapters/vnfs_map.hpp"

namespace vnfs::bdb {

using vnfs::adapters::mapping;
using vnfs::adapters::parse_vnfs_map;

}  // namespace vnfs::bdb
