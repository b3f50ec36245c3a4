// vnfs client: following final symlinks for the vectorized calls that may (vattr::follow).
#pragma once

#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "client/backend.hpp"

namespace vnfs::detail {

/// Replaces each of `paths` (normalized) that names a symlink by what the link leads to,
/// following chains of up to 40 links, with rounds of vgetattrs and vreadlink over the whole
/// vector (so following costs two round trips per level of links, not per item). A relative
/// target is taken from the link's directory; an absolute one, or one climbing above the
/// client's root, cannot be followed: that path fails with EINVAL; a longer chain with ELOOP;
/// a missing one with the lookup's error. `done(errors)` gets one error per path (empty where
/// resolved) and runs on a client thread; `paths` must stay valid until then.
void resolve_links(backend& b, std::vector<std::string>& paths, std::function<void(std::vector<std::error_code>)> done);

}  // namespace vnfs::detail
