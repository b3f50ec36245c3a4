// vnfsd — serves one local directory over NFSv4.1 (TCP).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include <boost/program_options.hpp>

#include "vnfs/embedded_server.hpp"
#include "vnfs/host_port.hpp"

namespace po = boost::program_options;

namespace {

constexpr const char* usage_head =
    "Usage: vnfsd --export DIR --listen HOST:PORT [options]\n"
    "\n"
    "Serves the directory DIR over NFSv4.1 (RFC 8881) on TCP. DIR is the root of the\n"
    "server's namespace: nfs://HOST:PORT/a/b names DIR/a/b. Nothing outside DIR is ever\n"
    "read or written, except a --recovery-dir. Filehandles stay valid across restarts on the\n"
    "same DIR (the key that authenticates them is kept in DIR's trusted.vnfs.fhkey extended\n"
    "attribute, so vnfsd runs as root and DIR must be on a file system with extended\n"
    "attributes).\n"
    "\n"
    "Once listening it prints one line, 'vnfsd listening on tcp://HOST:PORT' (and with\n"
    "--rdma a second one, 'vnfsd listening on rdma+PROVIDER://HOST:PORT'), and serves\n"
    "until SIGINT or SIGTERM. At start it raises its soft limit of open files to the hard\n"
    "limit (each open file of a client holds descriptors).\n"
    "\n"
    "--rdma PROVIDER:HOST:PORT adds an RPC-over-RDMA v1 listener (RFC 8166/8267/8797).\n"
    "PROVIDER is 'verbs' (an RDMA NIC through librdmacm; HOST:PORT is its IP address) or\n"
    "'cma' (same host only: HOST:PORT names the abstract Unix socket\n"
    "'@vnfs-rdma-cma/HOST:PORT', data moves by process_vm_readv/writev, so clients need\n"
    "ptrace rights over vnfsd: same uid or root). PORT 0 picks a free port.\n"
    "\n"
    "Limits against misbehaving or hostile TCP clients: a connection beyond\n"
    "--max-connections is closed as soon as it is accepted; a record mark announcing more\n"
    "than --max-record bytes closes its connection before anything is allocated for it; a\n"
    "connection on which no complete request arrives and no reply leaves for\n"
    "--idle-timeout seconds (idle, or a request sent in part and then stalled) is closed;\n"
    "a connection with --max-requests-in-flight requests unanswered is not read until\n"
    "replies leave. Each closing and refusal is reported on stderr as one line,\n"
    "'vnfsd: closed the connection from HOST:PORT: REASON' or 'vnfsd: refused ...'.\n"
    "A value of 0 lifts a limit.\n"
    "\n"
    "The same for RPC-over-RDMA clients: an RDMA connection beyond --rdma-max-connections\n"
    "is closed as soon as it is accepted (0 lifts the limit); every reply grants at most\n"
    "--rdma-max-credits credits (the receives posted per connection) and a client with\n"
    "more calls outstanding is disconnected; --rdma-inline-size is the largest message\n"
    "either side sends inline, announced to clients (RFC 8797), and a larger one closes\n"
    "its connection; a connection on which nothing arrives or leaves for\n"
    "--rdma-idle-timeout seconds while none of its calls executes is closed (0: never).\n"
    "Each is reported as 'vnfsd: closed the RDMA connection from PEER: REASON' or\n"
    "'vnfsd: refused ... RDMA connection(s) ...'; PEER is 'cma:pid N' with cma.\n"
    "\n"
    "Restarts (RFC 8881 §8.4.2): vnfsd keeps the owner of every client that holds opens or\n"
    "locks in a recovery directory (by default DIR/.vnfsd-recovery, which clients can\n"
    "neither see nor touch; --recovery-dir puts it outside DIR). Started on records left\n"
    "by an earlier run, it gives those clients a grace period to reclaim their state:\n"
    "until each has sent RECLAIM_COMPLETE or is gone, or --grace runs out, new opens and\n"
    "locks answer NFS4ERR_GRACE. --no-grace starts at once and forgets the records.\n"
    "\n"
    "Options";

/// The kernel doubles a process's descriptor table when a descriptor does not fit, and in a
/// process with threads each growth first waits for an RCU grace period: 16 ms each on this
/// project's VM (a transaction's planner that holds a descriptor per file it looked up
/// stalled 35 ms passing 256). Grown to fd_table slots here, before the server's threads
/// exist, it costs microseconds; only a server past fd_table descriptors grows it again.
void grow_descriptor_table() {
  constexpr rlim_t fd_table = 8192;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur < 2) return;
  const int highest = static_cast<int>(std::min(r.rlim_cur, fd_table) - 1);
  if (::fcntl(highest, F_GETFD) != -1) return;  // in use (inherited): the table is that big already
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (fd < highest && ::dup3(fd, highest, O_CLOEXEC) == highest) ::close(highest);
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  vnfs::server_options opts;
  std::string export_dir, listen, rdma;
  unsigned lease_seconds = static_cast<unsigned>(opts.lease.count());
  unsigned idle_seconds = static_cast<unsigned>(opts.idle_timeout.count() / 1000);
  unsigned rdma_idle_seconds = static_cast<unsigned>(opts.rdma_idle_timeout.count() / 1000);
  unsigned grace_seconds = 0;
  std::string recovery_dir;
  bool no_grace = false;
  po::options_description desc(usage_head);
  desc.add_options()
      ("help,h", "print this help and exit")
      ("export", po::value(&export_dir)->value_name("DIR"), "directory to export (required)")
      ("listen", po::value(&listen)->value_name("HOST:PORT"),
       "address to listen on (required); PORT 0 picks a free port")
      ("threads", po::value(&opts.threads)->value_name("N")->default_value(opts.threads),
       "worker threads executing COMPOUNDs")
      ("lease", po::value(&lease_seconds)->value_name("SECONDS")->default_value(lease_seconds),
       "lease time: clients silent this long lose their state")
      ("root-squash", po::bool_switch(&opts.root_squash),
       "AUTH_SYS uid 0 acts as nobody (65534)")
      ("rdma", po::value(&rdma)->value_name("PROVIDER:HOST:PORT"),
       "also serve RPC-over-RDMA (PROVIDER: cma or verbs)")
      ("max-connections", po::value(&opts.max_connections)->value_name("N")->default_value(opts.max_connections),
       "TCP connections open at once")
      ("max-record", po::value(&opts.max_record)->value_name("BYTES"),
       "largest request record (default 4 MiB + 128 KiB; at least 131072); sessions are "
       "granted requests of at most BYTES - 64 KiB")
      ("idle-timeout", po::value(&idle_seconds)->value_name("SECONDS")->default_value(idle_seconds),
       "close a connection when nothing complete arrives or leaves for this long")
      ("max-requests-in-flight",
       po::value(&opts.max_requests_in_flight)->value_name("N")->default_value(opts.max_requests_in_flight),
       "unanswered requests per connection before the server stops reading it")
      ("rdma-max-connections",
       po::value(&opts.rdma_max_connections)->value_name("N")->default_value(opts.rdma_max_connections),
       "RDMA connections open at once")
      ("rdma-max-credits", po::value(&opts.rdma_max_credits)->value_name("N")->default_value(opts.rdma_max_credits),
       "most calls an RDMA client may have outstanding (1..1024); receives posted per connection")
      ("rdma-inline-size",
       po::value(&opts.rdma_inline_size)->value_name("BYTES")->default_value(opts.rdma_inline_size),
       "largest RDMA message sent inline (a multiple of 1024 in 1024..262144)")
      ("rdma-idle-timeout", po::value(&rdma_idle_seconds)->value_name("SECONDS")->default_value(rdma_idle_seconds),
       "close an RDMA connection when nothing arrives or leaves for this long")
      ("recovery-dir", po::value(&recovery_dir)->value_name("DIR"),
       "keep the client records here, outside the export (default: DIR/.vnfsd-recovery)")
      ("grace", po::value(&grace_seconds)->value_name("SECONDS"),
       "longest grace period after a restart (default: the lease)")
      ("no-grace", po::bool_switch(&no_grace),
       "start without a grace period, forgetting the clients of earlier runs")
      ("no-transactions", "refuse transactional COMPOUNDs as a server without the extension does")
      ("txn-max-backup-mib", po::value<std::uint64_t>()->value_name("MIB"),
       "backups and deferred writes one transaction may keep (default 1024)")
      ("txn-max-age", po::value<unsigned>()->value_name("SECONDS"),
       "how long a transaction spanning COMPOUNDs may stay open, and how long after its first "
       "begin a transaction run again keeps its age (default 120)")
      ("txn-crash-at", po::value(&opts.txn_crash_at)->value_name("N"),
       "for crash tests: exit abruptly at the Nth transaction crash point");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    if (export_dir.empty() || listen.empty()) throw po::error("--export and --listen are required");
    const std::optional<vnfs::host_port> tcp = vnfs::parse_host_port(listen);
    if (!tcp) throw po::error("--listen wants HOST:PORT, e.g. 127.0.0.1:2049, not '" + listen + "'");
    opts.host = tcp->host;
    opts.port = tcp->port;
    if (!rdma.empty()) {
      auto colon = rdma.find(':');
      opts.rdma_provider = rdma.substr(0, colon);
      const std::optional<vnfs::host_port> at =
          colon == std::string::npos ? std::nullopt : vnfs::parse_host_port(std::string_view(rdma).substr(colon + 1));
      if (at) {
        opts.rdma_host = at->host;
        opts.rdma_port = at->port;
      }
      if (!at || (opts.rdma_provider != "cma" && opts.rdma_provider != "verbs"))
        throw po::error("--rdma wants PROVIDER:HOST:PORT with PROVIDER cma or verbs, e.g. cma:127.0.0.1:20049, not '" +
                        rdma + "'");
    }
    if (!std::filesystem::is_directory(export_dir))
      throw po::error("--export: '" + export_dir + "' is not a directory");
    if (opts.threads == 0 || opts.threads > 1024) throw po::error("--threads must be 1..1024");
    if (lease_seconds < 1 || lease_seconds > 3600) throw po::error("--lease must be 1..3600 seconds");
    opts.lease = std::chrono::seconds(lease_seconds);
    if (opts.max_record != 0 && (opts.max_record < 131072 || opts.max_record > (std::size_t(1) << 30)))
      throw po::error("--max-record must be 131072..1073741824 bytes (or 0 for the default)");
    if (idle_seconds > 86400) throw po::error("--idle-timeout must be 0..86400 seconds");
    opts.idle_timeout = std::chrono::seconds(idle_seconds);
    if (opts.rdma_max_credits < 1 || opts.rdma_max_credits > 1024) throw po::error("--rdma-max-credits must be 1..1024");
    if (opts.rdma_inline_size < 1024 || opts.rdma_inline_size > 262144 || opts.rdma_inline_size % 1024 != 0)
      throw po::error("--rdma-inline-size must be a multiple of 1024 in 1024..262144 bytes");
    if (rdma_idle_seconds > 86400) throw po::error("--rdma-idle-timeout must be 0..86400 seconds");
    opts.rdma_idle_timeout = std::chrono::seconds(rdma_idle_seconds);
    if (vm.count("grace") && (grace_seconds < 1 || grace_seconds > 3600))
      throw po::error("--grace must be 1..3600 seconds");
    if (vm.count("grace") && no_grace) throw po::error("--grace and --no-grace exclude each other");
    opts.grace_period = std::chrono::seconds(grace_seconds);
    opts.grace = !no_grace;
    if (!recovery_dir.empty()) {
      if (std::filesystem::exists(recovery_dir) && !std::filesystem::is_directory(recovery_dir))
        throw po::error("--recovery-dir: '" + recovery_dir + "' is not a directory");
      opts.recovery_dir = recovery_dir;
    }
    opts.transactions = vm.count("no-transactions") == 0;
    if (vm.count("txn-max-age")) {
      unsigned s = vm["txn-max-age"].as<unsigned>();
      if (s == 0 || s > 86400) throw po::error("--txn-max-age must be 1..86400");
      opts.txn_max_age = std::chrono::seconds(s);
    }
    if (vm.count("txn-max-backup-mib")) {
      std::uint64_t mib = vm["txn-max-backup-mib"].as<std::uint64_t>();
      if (mib == 0 || mib > (std::uint64_t(1) << 30)) throw po::error("--txn-max-backup-mib must be 1..2^30");
      opts.txn_max_backup_bytes = mib << 20;
    }
    opts.export_dir = export_dir;
  } catch (const po::error& e) {
    std::cerr << "vnfsd: " << e.what() << "\nTry 'vnfsd --help'.\n";
    return 2;
  }
  // A write past the file-size limit (RLIMIT_FSIZE) must fail that WRITE with EFBIG, which
  // the client sees as NFS4ERR_FBIG, not kill the server with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  // Every open state holds descriptors of its file, and a transaction's planner one per
  // object it looked up: allow as many as the hard limit does (the usual soft limit of
  // 1,024 caps the files open across all clients). Not required: a failure leaves it.
  if (rlimit r{}; ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  grow_descriptor_table();
  try {
    vnfs::embedded_server server(opts);
    server.stop_on_signals();  // before the ready line: a client may signal right after it
    std::cout << "vnfsd listening on tcp://" << server.address() << ":" << server.port() << std::endl;  // flushes
    if (!opts.rdma_provider.empty())
      std::cout << "vnfsd listening on rdma+" << opts.rdma_provider << "://" << opts.rdma_host << ":"
                << server.rdma_port() << std::endl;
    server.run();
  } catch (const std::exception& e) {
    std::cerr << "vnfsd: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
