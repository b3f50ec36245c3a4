// vnfsd: VNFS_TXN (docs/transactions.md). The dispatcher executes it right after SEQUENCE
// (it takes the isolation lock and owns the transaction); reaching this handler means the
// operation came anywhere else.
#include "server/ops/handlers.hpp"

namespace vnfs::server {

nfs4::VNFS_TXN4res handle(compound_context&, const nfs4::VNFS_TXN4args&) {
  return {.status = nfs4::nfsstat4::NFS4ERR_INVAL};
}

}  // namespace vnfs::server
