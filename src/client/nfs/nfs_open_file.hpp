// vnfs client, nfs backend: the state of a file opened over NFSv4.1 (internals::state_of(file)).
#pragma once

#include <memory>
#include <mutex>

#include "client/backend.hpp"
#include "vnfs/nfs4/types.hpp"

namespace vnfs::detail {

struct nfs_open_file : open_file {
  nfs4::nfs_fh4 fh;
  nfs4::stateid4 stateid;     ///< as OPEN returned it (CLOSE)
  nfs4::stateid4 io_stateid;  ///< the same with seqid 0 (RFC 8881 §8.2.2: "the current seqid"), for I/O
  int flags = 0;
  std::mutex mu;
  bool dirty = false;                ///< UNSTABLE4 data not yet committed (guarded by mu)
  nfs4::verifier4 write_verifier{};  ///< of the last WRITE (guarded by mu)
};

/// The nfs state of `f`; throws std::system_error(errc::bad_argument) for a file of another
/// backend.
inline std::shared_ptr<nfs_open_file> nfs_state(const file& f) {
  auto s = std::dynamic_pointer_cast<nfs_open_file>(internals::state_of(f));
  if (!s) throw std::system_error(make_error_code(errc::bad_argument), "vnfs: not a file of this client");
  return s;
}

}  // namespace vnfs::detail
