// vnfs client: choosing the backend connect() makes for a URL's scheme.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "client/backend.hpp"
#include "vnfs/url.hpp"

namespace vnfs::detail {

using backend_factory = std::function<std::unique_ptr<backend>(const url&, const client_options&)>;

/// Makes client::connect() build the backend of URLs of `scheme` ("nfs", "nfs+rdma", "file")
/// with `f` instead of the built-in one; an empty `f` restores the built-in one. Returns the
/// factory it replaces (empty if none). For backends that live outside this library and for
/// tests of the front. Thread-safe.
backend_factory set_backend_factory(const std::string& scheme, backend_factory f);

}  // namespace vnfs::detail
