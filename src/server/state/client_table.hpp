// vnfsd: NFSv4.1 client records and sessions (RFC 8881 §2.4, §2.10, §18.35-18.37, §18.50).
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "server/server_options.hpp"
#include "server/state/client_principal.hpp"
#include "server/state/client_records.hpp"
#include "server/state/session.hpp"
#include "vnfs/nfs4/session_ops.hpp"

namespace vnfs::server {

/// The client records and sessions of one server instance. Thread-safe: one mutex guards
/// the tables; a session's slot table has its own (session::mu).
///
/// Client records (§18.35.4). Each co_ownerid has at most one confirmed and one unconfirmed
/// record, each with its own client ID. EXCHANGE_ID creates unconfirmed records; the first
/// CREATE_SESSION of a record confirms it. A client that restarts (same owner and principal,
/// new verifier) gets a new unconfirmed record while its confirmed one, with its sessions and
/// state, stays valid; the new record's confirmation releases the old one (case 5).
///
/// Leases: every SEQUENCE renews its client (renew()); expire_idle() drops the clients whose
/// lease ran out, with their sessions. Whenever a client record goes (expiry, a rebooted
/// client's new EXCHANGE_ID, DESTROY_CLIENTID), `on_drop` is called with its ID, under the
/// table's lock, so the owner can release its open and lock state; it must not call back.
///
/// Stable records and grace (RFC 8881 §8.4.2, docs/server_state.md). The owner and principal
/// of every client that holds state are in `records` before the state is granted
/// (note_state()) and leave them when the client goes (expiry, DESTROY_CLIENTID, a rebooted
/// client's confirmation). A table constructed with records from an earlier instance starts
/// in a grace period (options.grace_period, else one lease): those clients may reclaim until
/// each has sent RECLAIM_COMPLETE or is gone, or the period has run out; meanwhile nobody
/// gets new locking state (check_locking()). When the period ends, the clients that did not
/// come back are dropped from the records.
class client_table {
 public:
  using clock = std::chrono::steady_clock;

  using drop_handler = std::function<void(nfs4::clientid4)>;

  /// Loads the records an earlier instance left in `records` (and starts the grace period
  /// if there are any), or, with options.grace false, forgets them. Throws
  /// std::runtime_error when they cannot be read or forgotten.
  client_table(const server_options& options, std::uint64_t boot_id, drop_handler on_drop,
               client_records records);

  /// The smallest back channel CREATE_SESSION accepts (NFS4ERR_TOOSMALL below, §18.36.3):
  /// room for a CB_COMPOUND of CB_SEQUENCE and a CB_RECALL of a 128-byte filehandle with
  /// an AUTH_SYS RPC header, and for its reply.
  static constexpr std::uint32_t min_back_request = 512;
  static constexpr std::uint32_t min_back_response = 128;
  static constexpr std::uint32_t min_back_operations = 2;

  /// EXCHANGE_ID from `who`: the case analysis of §18.35.4.
  nfs4::EXCHANGE_ID4res exchange_id(const nfs4::EXCHANGE_ID4args& args,
                                    const client_principal& who);
  /// CREATE_SESSION from `who` (§18.36.4); confirms the record if need be.
  nfs4::CREATE_SESSION4res create_session(const nfs4::CREATE_SESSION4args& args,
                                          const client_principal& who);
  nfs4::nfsstat4 destroy_session(const nfs4::sessionid4& id);
  nfs4::nfsstat4 destroy_clientid(nfs4::clientid4 id);
  /// NFS4ERR_COMPLETE_ALREADY on the second call for a client.
  nfs4::nfsstat4 reclaim_complete(nfs4::clientid4 id);

  /// The session, or null (NFS4ERR_BADSESSION).
  std::shared_ptr<session> find_session(const nfs4::sessionid4& id) const;
  /// Whether the client exists and is confirmed.
  bool is_confirmed(nfs4::clientid4 id) const;
  /// Whether the client may now get locking state (OPEN, LOCK), for a reclaim (`reclaim`:
  /// OPEN with CLAIM_PREVIOUS, LOCK with reclaim TRUE) or not:
  ///   - a non-reclaim: NFS4ERR_GRACE until the client has sent RECLAIM_COMPLETE
  ///     (rca_one_fs FALSE, §18.51.3) and while the grace period lasts (§8.4.2.1);
  ///   - a reclaim: NFS4ERR_NO_GRACE outside the grace period or after the client's
  ///     RECLAIM_COMPLETE; NFS4ERR_RECLAIM_BAD for a client the records do not list (it
  ///     held no state before the restart, §8.4.2.1).
  nfs4::nfsstat4 check_locking(nfs4::clientid4 id, bool reclaim);
  /// Called before the client is granted open or lock state: makes sure its owner is in the
  /// stable records (written and fsynced the first time). On the write's error (ENOSPC,
  /// EIO, ...) no state may be granted. A recovery directory on a read-only file system
  /// (a read-only export) keeps nothing: the state is granted without a record, so such a
  /// client cannot reclaim after a restart (said once on stderr).
  std::error_code note_state(nfs4::clientid4 id);
  /// Whether the grace period lasts (it ends here once its time is up).
  bool in_grace();
  /// Marks the client as active now (SEQUENCE).
  void renew(nfs4::clientid4 id);
  std::vector<nfs4::clientid4> expire_idle(clock::time_point now);

 private:
  struct client {
    nfs4::clientid4 id = 0;
    std::string ownerid;  ///< co_ownerid's bytes
    nfs4::verifier4 verifier{};
    client_principal principal;  ///< who sent the EXCHANGE_ID that created the record
    bool confirmed = false;
    bool reclaim_complete = false;
    bool has_state = false;  ///< note_state() was called: the owner is in the records
    nfs4::sequenceid4 create_session_seq = 1;  ///< the next csa_sequence expected
    nfs4::CREATE_SESSION4res last_create_session{};  ///< replayed for csa_sequence - 1
    bool has_last_create_session = false;
    clock::time_point renewed{};
    std::vector<nfs4::sessionid4> sessions;
  };

  /// The records of one co_ownerid (0: none).
  struct owner_records {
    nfs4::clientid4 confirmed = 0;
    nfs4::clientid4 unconfirmed = 0;
  };

  client& new_record_locked(const std::string& owner, const nfs4::EXCHANGE_ID4args& args,
                            const client_principal& who);
  void fill_exchange_id_locked(const client& c, nfs4::EXCHANGE_ID4res& res) const;
  void drop_client_locked(nfs4::clientid4 id);
  nfs4::channel_attrs4 negotiate_fore(const nfs4::channel_attrs4& asked) const;
  /// A client of the earlier instance has come back and completed, or is gone: it may
  /// reclaim no more; the grace period ends when none is left.
  void resolve_previous_locked(const std::string& owner);
  /// Ends the grace period if its time is up; whether it still lasts.
  bool in_grace_locked(clock::time_point now);
  /// Writes `next` as the stable records; stable_ follows on success.
  std::error_code store_locked(client_records::list next);
  /// The owner leaves the records unless a record of it holds state or it may still reclaim.
  void forget_owner_locked(const std::string& owner);
  /// Whether a record of the owner holds state.
  bool holds_state_locked(const std::string& owner) const;

  const server_options& options_;
  const std::uint64_t boot_id_;
  const drop_handler on_drop_;
  mutable std::mutex mu_;
  std::uint32_t next_client_ = 1;
  std::uint32_t next_session_ = 1;
  std::map<nfs4::clientid4, client> clients_;
  std::map<std::string, owner_records> by_owner_;
  std::map<nfs4::sessionid4, std::shared_ptr<session>> sessions_;

  client_records records_;
  client_records::list stable_;    ///< what records_ holds
  bool said_read_only_ = false;    ///< the read-only recovery directory was reported
  client_records::list previous_;  ///< clients of the earlier instance that may still reclaim
  bool grace_ = false;
  clock::time_point grace_end_{};
};

}  // namespace vnfs::server
