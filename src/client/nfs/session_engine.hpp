// vnfs client, nfs backend: one NFSv4.1 session over one connection (TCP or RPC-over-RDMA,
// see transport/rpc_channel.hpp), driven by its I/O thread or by a caller waiting for a
// synchronous call (caller_drive.hpp) — slot table, sequence ids, zero-copy READ
// receive, reconnection with retransmission on the same slot and sequence id, session
// recovery, lease renewal.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "client/nfs/reply_decoder.hpp"
#include "transport/registered_region.hpp"
#include "client/nfs/open_reclaims.hpp"
#include "vnfs/client.hpp"
#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

/// The caller's registered regions a COMPOUND's payloads lie in.
using registered_regions = std::vector<std::shared_ptr<transport::registered_region>>;

/// Thread-safe front of the engine. submit() may be called from any thread; callbacks run on
/// the thread running the engine: its I/O thread, or an application thread waiting for a
/// synchronous call (session_engine.cpp, "who runs the engine").
class session_engine {
 public:
  struct settings {
    std::string host;
    std::uint16_t port = 2049;
    /// RPC-over-RDMA over this fabric provider ("cma", "verbs") instead of TCP when set.
    std::string rdma_provider;
    std::uint32_t uid = 0, gid = 0;
    std::vector<std::uint32_t> gids;
    std::uint32_t slots = 64;
    std::uint32_t max_operations = 1024;  ///< asked for at CREATE_SESSION
    /// Take the operation limit of a server known to refuse less than it grants from
    /// known_operation_limit() (operation_limit.hpp) instead of learning it by probes.
    bool known_server_limits = true;
    /// Nothing else asks for the server's lease time (the caller sends no COMPOUND of its
    /// own for it): the first COMPOUND with room does (PUTROOTFH and GETATTR of lease_time
    /// after its SEQUENCE, results taken out before the caller sees the reply).
    bool lease_from_first_call = false;
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds reconnect_for{30'000};
  };

  /// Connects and creates the session (blocking). Throws std::system_error on failure.
  explicit session_engine(settings s);
  ~session_engine();  // close()
  session_engine(const session_engine&) = delete;
  session_engine& operator=(const session_engine&) = delete;

  /// Sends SEQUENCE + ops (minor version 1) when a slot is free. A PUTFH of the empty
  /// filehandle, which no server hands out, names the server's root: it is sent as
  /// PUTROOTFH. `done` gets the reply,
  /// whatever the NFS status, or a transport/closing error. A COMPOUND the server refused
  /// whole for its number of operations (nothing ran) completes with NFS4ERR_TOO_MANY_OPS and
  /// no results, once limits() gives the server's real limit (operation_limit.hpp): the
  /// caller splits it and sends the parts. `read_targets[k]` is where the
  /// payload of the k-th READ in `ops` may be received (from the socket, or RDMA-Written by
  /// the server) straight into the caller's memory, zero-copy; an empty span, a payload that
  /// does not fit, or a transport that cannot place it leaves that READ4resok data a view
  /// into compound_reply::buffer (compound_reply::placed says which). The targets
  /// must stay valid until `done` runs. `cachethis` asks the server to keep the reply for a
  /// retransmission (exactly-once); by default, unless every operation is one that may
  /// simply run again (lookups, reads). `registered`: the registered regions the read
  /// targets and WRITE payloads lie in (the transport may expose them through its own
  /// registration of each region, made once; see transport::registered_region); held until
  /// `done` runs.
  void submit(std::vector<nfs4::nfs_argop4> ops, compound_done done, std::vector<std::span<std::byte>> read_targets = {},
              std::optional<bool> cachethis = std::nullopt,
              registered_regions registered = {});

  /// Fails what is queued and in flight with errc::closed, then destroys the session and the
  /// client ID (best effort, bounded by connect_timeout). Idempotent; blocks.
  void close();

  client_stats stats() const;
  /// Counts payload bytes the backend copied (READ data that did not arrive directly).
  void note_copied(std::size_t n);
  nfs4::clientid4 client_id() const;
  /// The fore channel the server granted (sizes, operations per COMPOUND, slots), with the
  /// operation count lowered to what the server really takes, where that is known or was
  /// learned (operation_limit.hpp).
  nfs4::channel_attrs4 limits() const;
  /// Whether the server answered a VNFS_TXN (TXN_BEGIN or TXN_ONE_COMPOUND ran there): it has
  /// vnfsd's transaction extension. Set by note_transactions(), never cleared.
  bool transactions_known() const;
  void note_transactions();
  /// The lease the server grants (from the root's lease_time), for renewal.
  void set_lease(std::chrono::seconds lease);
  /// The files held open, which the engine reclaims when the server has lost the client's
  /// state (a new client ID after a restart), before its RECLAIM_COMPLETE.
  open_reclaims& reclaims();

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace vnfs::detail
