// vnfs client: the library's way into what the public classes keep from applications — the
// backend behind a client, a completion group's queue, an open file's backend state, the
// registration behind registered memory. The public classes befriend detail::internals and
// expose none of it; this header is private (src/), seen by the library and, through
// vnfs_internal, by its tests.
#pragma once

#include <memory>
#include <utility>

#include "vnfs/client.hpp"
#include "vnfs/completion_group.hpp"
#include "vnfs/file.hpp"
#include "vnfs/memory_region.hpp"

namespace vnfs::detail {

struct internals {
  /// The backend behind a client (tests reach the nfs backend's registration table with it).
  static backend& backend_of(const client& c) { return *c.backend_; }
  /// The queue a group's copies share.
  static const std::shared_ptr<group_state>& state_of(const completion_group& g) { return g.state_; }
  /// An open file made by a backend, and the backend's state of it.
  static file make_file(std::shared_ptr<open_file> s) { return file(std::move(s)); }
  static const std::shared_ptr<open_file>& state_of(const file& f) { return f.state_; }
  /// A region made by register_memory, and the registration behind a slice.
  static memory_region make_region(std::shared_ptr<registration> r) { return memory_region(std::move(r)); }
  static const std::shared_ptr<registration>& registration_of(const memory_slice& s) { return s.reg_; }
};

}  // namespace vnfs::detail
