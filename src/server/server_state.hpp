// vnfsd: everything one server instance shares between its COMPOUNDs.
#pragma once

#include <cstdint>

#include "server/fs/export_root.hpp"
#include "server/payload_buffers.hpp"
#include "server/server_options.hpp"
#include "server/state/client_table.hpp"
#include "server/state/open_state_table.hpp"
#include "server/txn/manager.hpp"
#include "vnfs/nfs4/types.hpp"

namespace vnfs::server {

/// The shared state of a running vnfsd. Each member is thread-safe on its own.
struct server_state {
  explicit server_state(server_options opts);

  /// Where the stable client records of `o` live.
  static std::filesystem::path recovery_dir_of(const server_options& o);

  const server_options options;
  const fs::export_root exp;
  /// Differs on every start: part of client IDs, session IDs and the write verifier, so
  /// that state from an earlier instance is recognised as stale.
  const std::uint64_t boot_id;
  /// WRITE/COMMIT verifier (RFC 8881 §18.32.3): changes when unstable data may have been lost.
  const nfs4::verifier4 write_verifier;
  /// Whether the stable client records are in the export root (server_options::recovery_name),
  /// where the handlers hide them from clients (ops_detail::hidden_entry).
  const bool recovery_in_export;
  client_table clients;
  open_state_table opens;
  /// Where READ payloads are read into (payload_buffers.hpp).
  payload_buffers payloads;
  /// Transactions; constructed after `exp` and before any listener: its construction rolls
  /// back what a crash left unfinished.
  txn::manager txns;
};

}  // namespace vnfs::server
