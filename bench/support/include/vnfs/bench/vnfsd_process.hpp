// vnfs bench support (tests use it too): the project's own server, vnfsd, started for one
// test or benchmark.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "vnfs/bench/child_process.hpp"

namespace vnfs::bench {

/// Runs `vnfsd --export DIR --listen 127.0.0.1:PORT [extra args]` and waits for its one
/// ready line on stdout, `vnfsd listening on tcp://HOST:PORT`. The first start uses port 0
/// (the server picks one); restarts reuse the port it reported, so clients can reconnect
/// to the same address. Stopped by pid (SIGTERM, then SIGKILL) at the latest on
/// destruction.
///
/// The binary is $VNFSD_BIN if set, else the vnfsd that this build produced (compiled in
/// as VNFSD_PATH when the build has a vnfsd target).
class vnfsd_process {
 public:
  struct options {
    std::filesystem::path export_dir;
    std::vector<std::string> extra_args;
    /// How long to wait for the ready line.
    std::chrono::milliseconds ready_timeout = std::chrono::seconds(10);
  };

  /// Starts the server. Throws process_error if the binary is unknown or the server exits
  /// or stays silent instead of printing its ready line.
  explicit vnfsd_process(std::filesystem::path export_dir, std::vector<std::string> extra_args = {});
  explicit vnfsd_process(options opts);
  ~vnfsd_process();

  vnfsd_process(const vnfsd_process&) = delete;
  vnfsd_process& operator=(const vnfsd_process&) = delete;

  /// Host and port from the ready line of the current (or last) run.
  const std::string& host() const noexcept { return host_; }
  std::uint16_t port() const noexcept { return port_; }
  /// With "--rdma PROVIDER:HOST:PORT" among the extra arguments: the port of the second
  /// ready line, "vnfsd listening on rdma+PROVIDER://HOST:PORT" (0 without).
  std::uint16_t rdma_port() const noexcept { return rdma_port_; }
  const std::filesystem::path& export_dir() const noexcept { return opts_.export_dir; }
  /// pid of the running server; -1 when stopped.
  pid_t pid() const noexcept;
  bool running();

  /// Stops the server (SIGTERM, up to `grace`, then SIGKILL); returns how it ended.
  /// Throws process_error if it is not running.
  exit_status stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

  /// Starts a stopped server again on the same export and the same port, retrying for a
  /// few seconds while the old port is still busy. Throws process_error if it is running.
  void start();
  /// start() with other extra arguments from now on (e.g. without a crash-injection flag).
  void start(std::vector<std::string> extra_args);

  /// stop() then start().
  void restart();

  /// Kills the server with SIGKILL, as a crash would (no clean-up of any kind), and reaps
  /// it; start() runs it again. Throws process_error if it is not running.
  exit_status kill();

  /// The binary these objects run: $VNFSD_BIN, else the compiled-in VNFSD_PATH. Throws
  /// process_error when neither is available.
  static std::filesystem::path binary();

  /// Whether binary() names an existing executable (false before vnfsd is built).
  static bool available() noexcept;

 private:
  /// One attempt; returns false if the server exited before its ready line (e.g. the
  /// port was taken), true when ready. Throws on a timeout or an unparsable ready line.
  bool try_start(std::string& failure);

  options opts_;
  std::string host_;
  std::uint16_t port_ = 0;
  std::uint16_t rdma_port_ = 0;
  std::unique_ptr<child_process> child_;
};

}  // namespace vnfs::bench
