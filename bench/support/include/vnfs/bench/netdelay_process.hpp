// vnfs bench support (tests use it too): the project's latency emulator, vnfs-netdelay,
// started for one test or benchmark.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vnfs/bench/child_process.hpp"

namespace vnfs::bench {

/// Runs `vnfs-netdelay --listen 127.0.0.1:0 --to TARGET --delay-ms D [extra args]` and
/// waits for its ready line, `netdelay listening on 127.0.0.1:PORT`. Stopped by pid
/// (SIGTERM, then SIGKILL) at the latest on destruction.
///
/// The binary is $VNFS_NETDELAY_BIN if set, else the vnfs-netdelay this build produced
/// (compiled in as NETDELAY_PATH).
class netdelay_process {
 public:
  /// `delay_ms` is passed as written (e.g. "0.1"). Throws process_error if the proxy exits
  /// or stays silent for 10 s instead of printing its ready line.
  netdelay_process(const std::string& target_host, std::uint16_t target_port, const std::string& delay_ms,
                   std::vector<std::string> extra_args = {});
  ~netdelay_process();

  netdelay_process(const netdelay_process&) = delete;
  netdelay_process& operator=(const netdelay_process&) = delete;

  /// Where clients connect: from the ready line.
  const std::string& host() const noexcept { return host_; }
  std::uint16_t port() const noexcept { return port_; }
  pid_t pid() const noexcept { return child_ ? child_->pid() : -1; }
  bool running() { return child_ && child_->running(); }

  /// SIGTERM, up to `grace`, then SIGKILL; returns how it ended. Idempotent.
  exit_status stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

  /// The binary these objects run. Throws process_error when none is known.
  static std::filesystem::path binary();

 private:
  std::string host_;
  std::uint16_t port_ = 0;
  std::unique_ptr<child_process> child_;
  std::optional<exit_status> status_;
};

}  // namespace vnfs::bench
