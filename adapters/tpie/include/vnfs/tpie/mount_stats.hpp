// vnfs TPIE adapter: the counters of the client behind a mounted prefix (C++20: it names
// vnfs::client_stats).
#pragma once

#include <optional>
#include <string>

#include "vnfs/client.hpp"

namespace vnfs::tpie {

/// client::stats() of the client serving `prefix` (a mounted prefix, spelled as mounted),
/// or nothing when no such mapping exists or its client has not connected yet.
std::optional<client_stats> mount_stats(const std::string& prefix);

}  // namespace vnfs::tpie
