#include "vnfs/bench/vnfsd_process.hpp"

#include <csignal>

#include <algorithm>

#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <thread>

#include "vnfs/host_port.hpp"

namespace vnfs::bench {

using namespace std::chrono_literals;

namespace {

constexpr std::string_view ready_prefix = "vnfsd listening on tcp://";

}  // namespace

std::filesystem::path vnfsd_process::binary() {
  if (const char* env = std::getenv("VNFSD_BIN"); env != nullptr && *env != '\0') return env;
#ifdef VNFSD_PATH
  return VNFSD_PATH;
#else
  throw process_error("vnfsd_process: no vnfsd binary: this build has no vnfsd target and VNFSD_BIN is not set");
#endif
}

bool vnfsd_process::available() noexcept {
  try {
    return ::access(binary().c_str(), X_OK) == 0;
  } catch (...) {
    return false;
  }
}

vnfsd_process::vnfsd_process(std::filesystem::path export_dir, std::vector<std::string> extra_args)
    : vnfsd_process(options{std::move(export_dir), std::move(extra_args)}) {}

vnfsd_process::vnfsd_process(options opts) : opts_(std::move(opts)) { start(); }

vnfsd_process::~vnfsd_process() = default;  // child_process stops the server

pid_t vnfsd_process::pid() const noexcept { return child_ ? child_->pid() : -1; }

bool vnfsd_process::running() { return child_ && child_->running(); }

bool vnfsd_process::try_start(std::string& failure) {
  std::vector<std::string> args = {"--export", opts_.export_dir.string(), "--listen",
                                   "127.0.0.1:" + std::to_string(port_)};
  args.insert(args.end(), opts_.extra_args.begin(), opts_.extra_args.end());
  child_ = std::make_unique<child_process>(binary(), std::move(args));

  // Anything else vnfsd prints before the ready line is kept for the error message.
  std::string before;
  auto deadline = std::chrono::steady_clock::now() + opts_.ready_timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    std::string line;
    try {
      line = child_->read_line(std::max(left, 0ms));
    } catch (const process_error& e) {
      if (!child_->running()) {  // exited early: maybe the port is still busy; caller may retry
        failure = e.what() + (before.empty() ? "" : "; its output: " + before);
        child_.reset();
        return false;
      }
      child_.reset();  // stops it
      throw process_error(std::string("vnfsd_process: no ready line: ") + e.what() +
                          (before.empty() ? "" : "; its output: " + before));
    }
    if (line.starts_with(ready_prefix)) {
      const std::optional<host_port> tcp = parse_host_port(std::string_view(line).substr(ready_prefix.size()));
      if (!tcp || tcp->port == 0) {
        child_.reset();
        throw process_error("vnfsd_process: malformed ready line: \"" + line + "\"");
      }
      host_ = tcp->host;
      port_ = tcp->port;
      if (std::find(opts_.extra_args.begin(), opts_.extra_args.end(), "--rdma") == opts_.extra_args.end()) return true;
      // With --rdma a second ready line follows: "vnfsd listening on rdma+PROVIDER://HOST:PORT".
      std::string second;
      try {
        left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        second = child_->read_line(std::max(left, 0ms));
      } catch (const process_error& e) {
        child_.reset();
        throw process_error(std::string("vnfsd_process: no RDMA ready line: ") + e.what());
      }
      const auto scheme_end = second.find("://");
      const std::optional<host_port> rdma = scheme_end == std::string::npos
                                                ? std::nullopt
                                                : parse_host_port(std::string_view(second).substr(scheme_end + 3));
      if (rdma) rdma_port_ = rdma->port;
      if (!second.starts_with("vnfsd listening on rdma+") || !rdma || rdma_port_ == 0) {
        child_.reset();
        throw process_error("vnfsd_process: malformed RDMA ready line: \"" + second + "\"");
      }
      // A restart asks for the same RDMA port.
      for (std::size_t i = 0; i + 1 < opts_.extra_args.size(); ++i) {
        if (opts_.extra_args[i] != "--rdma") continue;
        auto& spec = opts_.extra_args[i + 1];
        spec = spec.substr(0, spec.rfind(':') + 1) + std::to_string(rdma_port_);
      }
      return true;
    }
    before += line + "\\n";
  }
}

void vnfsd_process::start(std::vector<std::string> extra_args) {
  opts_.extra_args = std::move(extra_args);
  start();
}

void vnfsd_process::start() {
  if (running()) throw process_error("vnfsd_process::start: already running (pid " + std::to_string(pid()) + ")");
  // A restart asks for the port of the previous run; the old listening socket may take a
  // moment to be released, so retry for a few seconds before giving up.
  std::string failure;
  for (int attempt = 0; attempt < (port_ == 0 ? 1 : 20); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(200ms);
    if (try_start(failure)) return;
  }
  throw process_error("vnfsd_process: vnfsd exited before it was ready: " + failure);
}

exit_status vnfsd_process::stop(std::chrono::milliseconds grace) {
  if (!child_) throw process_error("vnfsd_process::stop: not started");
  if (!child_->running()) throw process_error("vnfsd_process::stop: not running (" + child_->wait().describe() + ")");
  exit_status st = child_->terminate(grace);
  child_.reset();
  return st;
}

exit_status vnfsd_process::kill() {
  if (!child_ || !child_->running()) throw process_error("vnfsd_process::kill: not running");
  child_->send_signal(SIGKILL);
  exit_status st = child_->wait();
  child_.reset();
  return st;
}

void vnfsd_process::restart() {
  stop();
  start();
}

}  // namespace vnfs::bench
