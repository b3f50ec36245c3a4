// vnfsd: from file-system errors to NFSv4 status codes.
#pragma once

#include <system_error>

#include "vnfs/nfs4/status.hpp"

namespace vnfs::server {

/// Maps an error of the fs layer (system_category errno or fs::errc) to the NFS4ERR_* the
/// RFC gives for it (table in server/fs/error.hpp). NFS4_OK for no error.
nfs4::nfsstat4 to_nfsstat(std::error_code ec) noexcept;

}  // namespace vnfs::server
