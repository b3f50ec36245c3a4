// vnfsd: the settings of one server instance.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace vnfs::server {

/// What `vnfsd` is told on its command line, plus the session limits it grants.
struct server_options {
  std::filesystem::path export_dir;
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 2049;  ///< 0: pick a free port
  unsigned threads = 4;              ///< workers that execute COMPOUNDs (file-system calls)
  /// Threads that run the TCP connections (reads, writes, the calls quick enough to execute
  /// there), each connection on one of them, round robin; run()'s caller is the first.
  unsigned network_threads = 2;
  /// After its last piece of work, or a worker's last reply, whichever is later, a network
  /// thread keeps looking for more (without sleeping, but yielding to threads ready to run)
  /// this long before it blocks: a client's next call, which follows a reply, then costs no
  /// wake-up. 0: block at once.
  std::chrono::microseconds network_poll{50};
  std::chrono::seconds lease{90};    ///< idle clients are expired after this
  bool root_squash = false;          ///< AUTH_SYS uid 0 acts as nobody
  /// RPC-over-RDMA listener beside TCP: provider "cma" or "verbs", empty for none.
  std::string rdma_provider;
  std::string rdma_host = "127.0.0.1";
  std::uint16_t rdma_port = 20049;  ///< 0: pick a free port
  /// Transactions (vnfs::server_options documents these three).
  bool transactions = true;
  std::uint64_t txn_max_backup_bytes = std::uint64_t(1) << 30;
  unsigned txn_crash_at = 0;
  std::chrono::seconds txn_max_age{120};

  // Recovery after a restart (RFC 8881 §8.4.2; docs/server_state.md).
  /// Where the stable client records live (client_records). Empty: `recovery_name` in the
  /// export root, which clients can neither see nor touch.
  std::filesystem::path recovery_dir;
  /// false: start without a grace period whatever the records say, and forget them (a fresh
  /// export, or clients known to hold nothing).
  bool grace = true;
  /// How long the grace period after a start that found records lasts at most; 0: one lease.
  std::chrono::seconds grace_period{0};
  /// The default recovery directory's name in the export root.
  static constexpr const char* recovery_name = ".vnfsd-recovery";

  // The most CREATE_SESSION grants on the fore channel (a client asking for less gets what it
  // asked for). Large on purpose: the vectorized client packs hundreds of operations and
  // megabytes of data into one COMPOUND.
  std::uint32_t max_request_size = 4u << 20 | 64u << 10;   ///< 4 MiB of data + headers
  std::uint32_t max_response_size = 4u << 20 | 64u << 10;
  std::uint32_t max_response_size_cached = 1u << 20;
  std::uint32_t max_operations = 1024;
  std::uint32_t max_slots = 64;

  // Limits against misbehaving or hostile peers on TCP (0: none), see vnfs::server_options.
  std::size_t max_connections = 1024;
  std::size_t max_record = 0;  ///< largest incoming record; 0: max_request_size + 64 KiB
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(300)};
  std::size_t max_requests_in_flight = 128;  ///< per connection

  // Limits of the RPC-over-RDMA listener, see vnfs::server_options.
  std::uint32_t rdma_max_connections = 256;  ///< 0: none
  std::uint32_t rdma_max_credits = 32;
  std::uint32_t rdma_inline_size = 4096;
  std::chrono::milliseconds rdma_idle_timeout{std::chrono::seconds(300)};  ///< 0: never
};

}  // namespace vnfs::server
