// vnfsd: who a request acts for.
#pragma once

#include <sys/types.h>

#include <vector>

namespace vnfs::server {

/// The identity a COMPOUND runs with: the AUTH_SYS credential after root squashing, or
/// nobody for AUTH_NONE. Applied to the worker thread with fs::scoped_identity.
struct caller {
  static constexpr uid_t nobody_uid = 65534;
  static constexpr gid_t nobody_gid = 65534;

  uid_t uid = nobody_uid;
  gid_t gid = nobody_gid;
  std::vector<gid_t> gids;
};

}  // namespace vnfs::server
