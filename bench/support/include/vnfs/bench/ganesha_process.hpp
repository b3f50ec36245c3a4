// vnfs bench support (tests use it too): a real NFS-Ganesha 4.3 NFSv4.1 server, started for
// one test or benchmark.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "vnfs/bench/child_process.hpp"
#include "vnfs/bench/temp_dir.hpp"

namespace vnfs::bench {

/// Runs `ganesha.nfsd -F -L LOG -f CONF -p PIDFILE` as a child, serving a fresh scratch
/// directory over NFSv4.1 (minor versions 1 and 2, TCP only, AUTH_SYS, no root squash,
/// numeric owners, no grace period) on 127.0.0.1 and a free port. No rpcbind, NLM,
/// RQUOTA or UDP. The configuration is generated here; nothing outside the scratch
/// directory is read or written, except the binary itself and its FSAL plugin.
///
/// Clients reach the export at pseudo_path() (default "/export"): PUTROOTFH, then
/// LOOKUP "export". Requires root (Ganesha's VFS FSAL uses open_by_handle_at).
///
/// The binary is $GANESHA_BIN if set, else ganesha.nfsd from PATH, /usr/bin or /usr/sbin.
class ganesha_process {
 public:
  struct options {
    /// 0: pick a free port (and retry with another one if Ganesha cannot bind it).
    std::uint16_t port = 0;
    /// Where the export appears in the server's pseudo file system; absolute.
    std::string pseudo_path = "/export";
    /// Ganesha's NFSv4 lease time in seconds.
    unsigned lease_seconds = 15;
    /// Ganesha's Default_Log_Level (EVENT, INFO, DEBUG, FULL_DEBUG, ...).
    std::string log_level = "EVENT";
    /// How long to wait for the port to accept connections.
    std::chrono::milliseconds ready_timeout = std::chrono::seconds(10);
  };

  /// Starts Ganesha and returns once its port accepts TCP connections. Throws
  /// process_error (with the tail of Ganesha's log) if it exits or is not ready in time.
  ganesha_process();
  explicit ganesha_process(options opts);
  ~ganesha_process();

  ganesha_process(const ganesha_process&) = delete;
  ganesha_process& operator=(const ganesha_process&) = delete;

  /// The exported local directory (empty at start); tests may create files in it.
  const std::filesystem::path& export_dir() const noexcept { return export_dir_; }
  const std::string& host() const noexcept { return host_; }
  std::uint16_t port() const noexcept { return port_; }
  const std::string& pseudo_path() const noexcept { return opts_.pseudo_path; }
  /// pid of the running server; -1 once stopped.
  pid_t pid() const noexcept;
  bool running();

  /// The configuration file and log of this instance, for diagnostics.
  const std::filesystem::path& config_file() const noexcept { return config_file_; }
  const std::filesystem::path& log_file() const noexcept { return log_file_; }
  /// The last `lines` lines of Ganesha's log.
  std::string log_tail(std::size_t lines = 40) const;

  /// SIGTERM by pid, up to `grace` for a clean exit, then SIGKILL; returns how it ended.
  /// Idempotent: later calls return the first result.
  exit_status stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

  /// The configuration text for an instance (exposed for tests and for documentation).
  static std::string make_config(const std::filesystem::path& export_dir, const std::filesystem::path& scratch_dir,
                                 std::uint16_t port, const options& opts);

  /// The ganesha.nfsd binary that would be run; throws process_error if none is found.
  static std::filesystem::path binary();

 private:
  bool try_start(std::string& failure);

  options opts_;
  temp_dir root_;
  std::filesystem::path export_dir_;
  std::filesystem::path scratch_dir_;
  std::filesystem::path config_file_;
  std::filesystem::path log_file_;
  std::filesystem::path pid_file_;
  std::string host_ = "127.0.0.1";
  std::uint16_t port_ = 0;
  std::unique_ptr<child_process> child_;
  std::optional<exit_status> stopped_;
};

}  // namespace vnfs::bench
