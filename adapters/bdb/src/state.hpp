// vnfs Berkeley DB adapter, internal: the one process-wide state (see mapped_fs.hpp).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "mapped_fs.hpp"

namespace vnfs::bdb::detail {

/// Memory registered with the clients: a region of Berkeley DB's environment.
struct region {
  std::byte* addr = nullptr;
  std::size_t size = 0;
  std::vector<std::pair<client*, memory_region>> registrations;
};

struct state {
  std::mutex mu;  ///< guards the members (not the clients' calls)
  std::vector<std::unique_ptr<target>> targets;
  client_options options;
  bool register_regions = true;
  std::vector<region> regions;
};

state& the_state();

}  // namespace vnfs::bdb::detail
