// vnfs client, nfs backend: a session's slot table (RFC 8881 §2.10.6) — per slot the last
// sequence id used and whether a call holds it, and how many slots the server wants used.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

class slot_table {
 public:
  /// A new session granted `n` slots (at least one is used): all free, sequence ids 0.
  void reset(std::uint32_t n) {
    slots_.assign(std::max<std::uint32_t>(1, n), slot{});
    usable_ = static_cast<std::uint32_t>(slots_.size());
  }
  /// The session is gone: every slot free, sequence ids 0 (the size stays until reset()).
  void forget() {
    for (auto& s : slots_) s = slot{};
  }
  /// Frees every slot (the calls holding them were failed), sequence ids kept.
  void release_all() {
    for (auto& s : slots_) s.busy = false;
  }

  /// Takes a free slot among those the server wants used, or none.
  std::optional<std::uint32_t> acquire() {
    for (std::uint32_t s = 0; s < usable_; ++s) {
      if (!slots_[s].busy) {
        slots_[s].busy = true;
        return s;
      }
    }
    return std::nullopt;
  }
  /// SEQUENCE of the next request on slot `s`.
  nfs4::SEQUENCE4args sequence(std::uint32_t s, const nfs4::sessionid4& session, bool cachethis) const {
    nfs4::SEQUENCE4args seq;
    seq.sa_sessionid = session;
    seq.sa_sequenceid = slots_[s].seqid + 1;
    seq.sa_slotid = s;
    seq.sa_highest_slotid = usable_ - 1;
    seq.sa_cachethis = cachethis;
    return seq;
  }
  /// Slot `s` ran a request: its sequence id, and how many slots the server wants used now.
  void completed(std::uint32_t s, nfs4::sequenceid4 seqid, nfs4::slotid4 target_highest) {
    slots_[s].seqid = seqid;
    usable_ = std::clamp<std::uint32_t>(target_highest + 1, 1, static_cast<std::uint32_t>(slots_.size()));
  }
  /// Slot `s` has moved on to `seqid` without a reply for it (NFS4ERR_RETRY_UNCACHED_REP).
  void moved_on(std::uint32_t s, nfs4::sequenceid4 seqid) { slots_[s].seqid = seqid; }
  void release(std::uint32_t s) { slots_[s].busy = false; }

 private:
  struct slot {
    nfs4::sequenceid4 seqid = 0;
    bool busy = false;
  };
  std::vector<slot> slots_;
  std::uint32_t usable_ = 0;
};

}  // namespace vnfs::detail
