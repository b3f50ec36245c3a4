// vnfs client: the factories of the backends, for client::connect.
#pragma once

#include <filesystem>
#include <memory>

#include "client/backend.hpp"
#include "client/url.hpp"

namespace vnfs::detail {

/// NFSv4.1 over TCP to u.host:u.port, rooted at u.path (client/nfs/).
std::unique_ptr<backend> make_nfs_backend(const url& u, const client_options& options);
/// POSIX calls under `root` (client/local/).
std::unique_ptr<backend> make_local_backend(const std::filesystem::path& root, const client_options& options);

}  // namespace vnfs::detail
