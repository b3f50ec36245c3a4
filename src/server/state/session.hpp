// vnfsd: an NFSv4.1 session and its slot table (RFC 8881 §2.10.6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "server/state/cached_reply.hpp"
#include "vnfs/nfs4/session_ops.hpp"

namespace vnfs::server {

/// One slot of the fore channel: the sequence id last accepted and, when the client asked
/// for it (sa_cachethis), the reply to replay if the request is retransmitted.
struct slot {
  nfs4::sequenceid4 seqid = 0;
  bool in_progress = false;
  /// The COMPOUND4res (no RPC header) of sequence id `seqid`, when it was cached. A replay
  /// shares it until its reply has been sent, even after the slot moved on.
  std::shared_ptr<const cached_reply> cached;
};

/// A session. The slot table is guarded by `mu`; the negotiated attributes are immutable.
struct session {
  nfs4::sessionid4 id{};
  nfs4::clientid4 clientid = 0;
  nfs4::channel_attrs4 fore{};
  nfs4::channel_attrs4 back{};
  std::uint32_t flags = 0;

  std::mutex mu;
  std::vector<slot> slots;  ///< size fore.ca_maxrequests
};

}  // namespace vnfs::server
