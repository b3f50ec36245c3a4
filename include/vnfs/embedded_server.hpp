// vnfs public API: vnfsd inside the application's own process.
//
// Programs that need a server and nothing else installed (examples, tests, demos, a
// single-machine deployment) start one here and connect to url() with vnfs::client. The
// server is the same one the `vnfsd` program runs; linking it needs the vnfs::server library
// (pkg-config: vnfs-server).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace vnfs {

/// What an embedded server serves and where it listens.
struct server_options {
  /// The directory exported as the root of the server's namespace (nfs://HOST:PORT/a names
  /// export_dir/a; nothing outside it is touched but recovery_dir below). Empty: a fresh temporary directory, removed
  /// again when the server is destroyed.
  std::filesystem::path export_dir;
  std::string host = "127.0.0.1";  ///< address (or name) of the TCP listener
  std::uint16_t port = 0;          ///< 0: a free port, see embedded_server::port()
  unsigned threads = 4;            ///< worker threads executing COMPOUNDs (file-system calls)
  std::chrono::seconds lease{90};  ///< clients silent this long lose their state
  bool root_squash = false;        ///< AUTH_SYS uid 0 acts as nobody
  /// An RPC-over-RDMA listener beside TCP: "cma" (same host) or "verbs" (an RDMA NIC); empty
  /// for none.
  std::string rdma_provider;
  std::string rdma_host = "127.0.0.1";
  std::uint16_t rdma_port = 0;  ///< 0: a free port

  // Limits against misbehaving or hostile TCP peers (vnfsd --max-connections, --max-record,
  // --idle-timeout, --max-requests-in-flight). A connection that breaks one is closed with a
  // line on stderr saying which; the server and its other connections carry on.
  /// Connections open at once; one more is closed as soon as it is accepted. 0: no limit.
  std::size_t max_connections = 1024;
  /// The largest RPC record accepted (the bytes a connection may buffer for one request):
  /// a record mark announcing more closes the connection before anything is allocated for
  /// it. 0: 4 MiB + 128 KiB. Sessions are granted at most this less 64 KiB per request, so a
  /// well-behaved client never exceeds it. At least 128 KiB.
  std::size_t max_record = 0;
  /// A connection with no complete request arriving and no reply leaving for this long
  /// (while none of its requests is executing) is closed: an idle client, or a record sent
  /// in part and then stalled or trickled (slow-loris). Clients renew their lease every
  /// third of it, so keep this above lease / 3. 0: never.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(300)};
  /// Requests a connection may have outstanding (executing, or their reply not yet
  /// written); beyond it the server stops reading that connection until replies leave.
  /// 0: no limit.
  std::size_t max_requests_in_flight = 128;
  // Limits against misbehaving or hostile RPC-over-RDMA peers (vnfsd --rdma-max-connections,
  // --rdma-max-credits, --rdma-inline-size, --rdma-idle-timeout). A connection that breaks
  // one is closed with a line on stderr saying which; the others carry on.
  /// RDMA connections open at once; one more is closed as soon as it is accepted. 0: no
  /// limit.
  std::uint32_t rdma_max_connections = 256;
  /// Credits: the receives posted for each connection, and the most calls a client may have
  /// outstanding (every reply grants at most this many); a client with more is
  /// disconnected. 1..1024. Receive memory per connection: rdma_max_credits *
  /// rdma_inline_size.
  std::uint32_t rdma_max_credits = 32;
  /// The largest message either side sends inline, announced to clients in RFC 8797 private
  /// data (a longer call comes through Read chunks, a longer reply through the client's Reply
  /// chunk); a larger message closes its connection. A multiple of 1024 in 1024..262144.
  std::uint32_t rdma_inline_size = 4096;
  /// An RDMA connection on which no message arrives or leaves and no RDMA transfer completes
  /// for this long, while none of its calls is executing, is closed (within 1.25 times
  /// this). Keep it above lease / 3, as for TCP. 0: never.
  std::chrono::milliseconds rdma_idle_timeout{std::chrono::seconds(300)};
  // Recovery after a restart (RFC 8881 §8.4.2). The owners of the clients that hold state
  // are kept on stable storage; a server started on an export that has such records gives
  // those clients a grace period to reclaim their opens and locks, during which nobody else
  // gets new ones.
  /// Where the client records live. Empty: a directory `.vnfsd-recovery` in the export root,
  /// which clients can neither see nor touch. Otherwise a directory outside the export.
  std::filesystem::path recovery_dir;
  /// false: start without a grace period and forget the records (a fresh export).
  bool grace = true;
  /// The longest grace period; 0: one lease. It ends early once every client of before has
  /// sent RECLAIM_COMPLETE or is gone.
  std::chrono::seconds grace_period{0};

  /// Transactional COMPOUNDs (docs/transactions.md). Off, the server answers the extension's
  /// operation as a server without it would (NFS4ERR_OP_ILLEGAL); a crash's journal is
  /// still rolled back at start-up either way.
  bool transactions = true;
  /// Bytes of backups one transaction may make (overwritten ranges, truncated tails) and of
  /// writes it may defer to its commit (docs/transactions.md, redo);
  /// past it the operation fails with NFS4ERR_NOSPC and the transaction rolls back.
  std::uint64_t txn_max_backup_bytes = std::uint64_t(1) << 30;
  /// For crash tests only: the server process exits abruptly (_exit(86)) at its Nth
  /// transaction crash point (docs/transactions.md lists them); 0: never.
  unsigned txn_crash_at = 0;
  /// How long a multi-COMPOUND transaction may stay open (from its begin); an older one is
  /// rolled back, as is one whose client's lease expires.
  std::chrono::seconds txn_max_age{120};
};

/// An NFSv4.1 server (vnfsd) for one export, in this process.
///
/// Construction opens the export and binds the listeners, so url() is valid and clients may
/// connect (their calls wait until the server serves). Serving happens either on a thread of
/// the server's own (start()) or on the caller's (run()), until stop() or destruction.
/// Filehandles stay valid across servers on the same directory: the key that authenticates
/// them lives in the directory's trusted.vnfs.fhkey extended attribute, so the process runs
/// as root and the directory is on a file system with extended attributes.
class embedded_server {
 public:
  /// Throws std::system_error or std::runtime_error, with a readable message, when the export
  /// cannot be opened or a listener cannot be bound; std::invalid_argument for a limit out of
  /// its range.
  explicit embedded_server(server_options options = {});
  /// stop(), which waits for start()'s thread: not to be destroyed on that thread.
  ~embedded_server();
  embedded_server(const embedded_server&) = delete;
  embedded_server& operator=(const embedded_server&) = delete;

  /// "nfs://HOST:PORT/": the root of the export, for vnfs::client::connect.
  std::string url() const;
  /// "nfs+rdma://HOST:PORT/?provider=PROVIDER", or "" without an RDMA listener.
  std::string rdma_url() const;
  /// The bound TCP listener: its numeric address and its port (the chosen one for port 0).
  std::string address() const;
  std::uint16_t port() const;
  /// The port of the RDMA listener, 0 without one.
  std::uint16_t rdma_port() const;
  /// The directory served (the temporary one when options.export_dir was empty).
  const std::filesystem::path& export_dir() const;
  const server_options& options() const;

  /// Serves on a new thread until stop(). At most once, and not together with run().
  void start();
  /// Serves on the calling thread until stop().
  void run();
  /// Stops serving: run() returns, start()'s thread ends (and is joined unless stop() runs on
  /// it). Safe from any thread and more than once; a stopped server does not serve again.
  void stop();
  /// From now on SIGINT and SIGTERM stop the server (a signal that arrives before serving
  /// starts is kept until then). Call before announcing readiness.
  void stop_on_signals();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace vnfs
