// vnfsd: NFSv4.1 client records and sessions (RFC 8881 §2.4, §2.10, §18.35-18.37, §18.50).
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/server_options.hpp"
#include "server/state/session.hpp"
#include "vnfs/nfs4/session_ops.hpp"

namespace vnfs::server {

/// The principal a request comes from (RFC 8881 §2.4, §18.35.4): the RPC credential's
/// flavor and, for AUTH_SYS, its uid and gid as sent (before root squashing), as NFS-Ganesha
/// compares them. Two requests are from the same principal when these are equal.
struct client_principal {
  std::uint32_t flavor = 0;  ///< AUTH_NONE (0) or AUTH_SYS (1)
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  friend bool operator==(const client_principal&, const client_principal&) = default;
};

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
class client_table {
 public:
  using clock = std::chrono::steady_clock;

  using drop_handler = std::function<void(nfs4::clientid4)>;

  client_table(const server_options& options, std::uint64_t boot_id, drop_handler on_drop);

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

  const server_options& options_;
  const std::uint64_t boot_id_;
  const drop_handler on_drop_;
  mutable std::mutex mu_;
  std::uint32_t next_client_ = 1;
  std::uint32_t next_session_ = 1;
  std::map<nfs4::clientid4, client> clients_;
  std::map<std::string, owner_records> by_owner_;
  std::map<nfs4::sessionid4, std::shared_ptr<session>> sessions_;
};

}  // namespace vnfs::server
