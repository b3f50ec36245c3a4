// vnfs client, nfs backend: the state of a file opened over NFSv4.1 (internals::state_of(file)).
#pragma once

#include <memory>
#include <mutex>

#include "client/backend.hpp"
#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

struct nfs_open_file : open_file {
  nfs4::nfs_fh4 fh;
  nfs4::stateid4 stateid;     ///< as OPEN returned it (CLOSE)
  nfs4::stateid4 io_stateid;  ///< the same with seqid 0 (RFC 8881 §8.2.2: "the current seqid"), for I/O
  int flags = 0;
  std::mutex mu;
  bool dirty = false;                ///< data not yet committed: a WRITE answered below FILE_SYNC4 (guarded by mu)
  bool verifier_changed = false;     ///< the uncommitted WRITEs were answered with different verifiers (guarded by mu)
  nfs4::verifier4 write_verifier{};  ///< of the last uncommitted WRITE (guarded by mu)

  /// Records a WRITE's reply. Data written below FILE_SYNC4 awaits a COMMIT; a verifier that
  /// differs from that of the uncommitted writes before it says the server restarted in
  /// between, and may have lost them (RFC 8881 §18.32.3).
  void wrote(const nfs4::WRITE4resok& w) {
    std::lock_guard lock(mu);
    if (w.committed == nfs4::stable_how4::FILE_SYNC4) return;
    if (dirty && w.writeverf != write_verifier) verifier_changed = true;
    dirty = true;
    write_verifier = w.writeverf;
  }
  /// Whether a COMMIT is owed.
  bool needs_commit() {
    std::lock_guard lock(mu);
    return dirty;
  }
  /// After a COMMIT that answered `verf`: whether it vouches for every uncommitted write.
  /// False when the server restarted since one of them (a verifier changed): the caller
  /// reports EIO, once; the writes after this COMMIT start afresh.
  bool committed(const nfs4::verifier4& verf) {
    std::lock_guard lock(mu);
    const bool all = !dirty || (!verifier_changed && verf == write_verifier);
    dirty = verifier_changed = false;
    return all;
  }
};

/// The nfs state of `f`; throws std::system_error(errc::bad_argument) for a file of another
/// backend.
inline std::shared_ptr<nfs_open_file> nfs_state(const file& f) {
  auto s = std::dynamic_pointer_cast<nfs_open_file>(internals::state_of(f));
  if (!s) throw std::system_error(make_error_code(errc::bad_argument), "vnfs: not a file of this client");
  return s;
}

}  // namespace vnfs::detail
