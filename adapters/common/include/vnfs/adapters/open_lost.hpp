// vnfs adapters: recognising an open that the server has forgotten, so that an adapter can
// open the file again by path and retry the call (Berkeley DB's and TPIE's accessors do).
#pragma once

#include <system_error>

#include "vnfs/error.hpp"
#include "vnfs/nfs4/status.hpp"

namespace vnfs::adapters {

/// Whether `ec` says the server no longer knows an open file's state: it restarted, or the
/// client's lease expired (stale or revoked stateids, a stale client ID, a lost session).
inline bool open_lost(const std::error_code& ec) {
  using vnfs::nfs4::nfsstat4;
  if (ec == vnfs::errc::session_lost) return true;
  if (ec.category() != vnfs::nfs4::nfs4_category()) return false;
  switch (static_cast<nfsstat4>(ec.value())) {
    case nfsstat4::NFS4ERR_STALE_STATEID:
    case nfsstat4::NFS4ERR_BAD_STATEID:
    case nfsstat4::NFS4ERR_EXPIRED:
    case nfsstat4::NFS4ERR_ADMIN_REVOKED:
    case nfsstat4::NFS4ERR_STALE_CLIENTID:
      return true;
    default:
      return false;
  }
}

}  // namespace vnfs::adapters
