// vnfs client, nfs backend: the files a client holds open, so that it can reclaim them
// after a server restart (RFC 8881 §8.4.2.1), and the stateids they have since.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

/// The opens of one client. Thread-safe (one mutex).
///
/// The backend adds an open when OPEN grants it and removes it when it is closed. After the
/// server lost the client's state, the session engine reclaims each open it holds (OPEN with
/// CLAIM_PREVIOUS) and records the new stateid here, or that the open is lost. The files keep
/// the stateid their OPEN returned; translate() rewrites it into the reclaimed one in every
/// COMPOUND sent from then on, so an open file keeps working across the restart.
class open_reclaims {
 public:
  /// What OPEN with CLAIM_PREVIOUS needs to reclaim an open.
  struct open {
    nfs4::stateid4 first;  ///< the stateid OPEN returned: the key the file keeps
    nfs4::nfs_fh4 fh;
    std::vector<std::byte> owner;  ///< the open-owner's bytes
    std::uint32_t access = 0;      ///< OPEN4_SHARE_ACCESS_READ / WRITE / BOTH
  };

  void add(open o);
  /// Forgets the open whose OPEN returned `first` (after its CLOSE, whatever the answer).
  void remove(const nfs4::stateid4& first);
  /// The opens held now, for reclaiming.
  std::vector<open> all() const;
  /// The open `first` was reclaimed: its state is `now`.
  void reclaimed(const nfs4::stateid4& first, const nfs4::stateid4& now);
  /// The open `first` could not be reclaimed: forgotten, its stateid stays stale.
  void lost(const nfs4::stateid4& first);

  /// Replaces, in the stateid arguments of `ops` (READ, WRITE, CLOSE, SETATTR, COPY), each
  /// stateid of a reclaimed open by the reclaimed one: same other field as that, and its seqid
  /// unless the given seqid is 0 ("the current one", §8.2.2), which stays 0. A stateid that an
  /// earlier reclaim gave (a call translated, then in flight through a second restart) is
  /// replaced too.
  void translate(std::vector<nfs4::nfs_argop4>& ops) const;

 private:
  using key = std::array<std::byte, 12>;
  struct entry {
    open what;
    nfs4::stateid4 now;
    bool reclaimed = false;
  };
  void translate_one(nfs4::stateid4& s) const;

  mutable std::mutex mu_;
  std::map<key, entry> opens_;
  std::map<key, key> earlier_;  ///< other field of a stateid an earlier reclaim gave -> its open's key
  std::atomic<bool> any_reclaimed_{false};  ///< lets translate() skip the lock until needed
};

}  // namespace vnfs::detail
