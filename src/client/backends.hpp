// vnfs client: the factories of the backends, for client::connect.
#pragma once

#include <filesystem>
#include <memory>

#include "client/backend.hpp"
#include "vnfs/url.hpp"

namespace vnfs::detail {

/// NFSv4.1 over TCP to u.host:u.port, rooted at u.path (client/nfs/).
/// nfs:// and nfs+rdma:// (?provider=cma|verbs, default verbs when a device exists, else cma).
std::unique_ptr<backend> make_nfs_backend(const url& u, const client_options& options);
/// The fabric provider an nfs+rdma URL asks for; throws errc::unsupported_url for others.
std::string rdma_provider_of(const url& u);
/// POSIX calls under `root` (client/local/).
std::unique_ptr<backend> make_local_backend(const std::filesystem::path& root, const client_options& options);

}  // namespace vnfs::detail
