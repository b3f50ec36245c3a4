#include "vnfs/bench/netdelay_process.hpp"

#include <cstdlib>
#include <string_view>

#include "vnfs/host_port.hpp"

namespace vnfs::bench {

namespace {
constexpr std::string_view ready_prefix = "netdelay listening on ";
}  // namespace

std::filesystem::path netdelay_process::binary() {
  if (const char* env = std::getenv("VNFS_NETDELAY_BIN"); env != nullptr && *env != '\0') return env;
#ifdef NETDELAY_PATH
  return NETDELAY_PATH;
#else
  throw process_error("netdelay_process: no vnfs-netdelay binary: this build has none and VNFS_NETDELAY_BIN is not set");
#endif
}

netdelay_process::netdelay_process(const std::string& target_host, std::uint16_t target_port,
                                   const std::string& delay_ms, std::vector<std::string> extra_args) {
  std::string to = target_host.find(':') != std::string::npos ? "[" + target_host + "]" : target_host;
  std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--to", to + ":" + std::to_string(target_port),
                                   "--delay-ms", delay_ms};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  child_ = std::make_unique<child_process>(binary(), std::move(args));
  std::string line;
  try {
    line = child_->read_line(std::chrono::seconds(10));
  } catch (const process_error& e) {
    child_.reset();  // stops it
    throw process_error(std::string("netdelay_process: no ready line: ") + e.what());
  }
  if (!line.starts_with(ready_prefix)) {
    child_.reset();
    throw process_error("netdelay_process: unexpected first line: \"" + line + "\"");
  }
  const std::optional<host_port> at = parse_host_port(std::string_view(line).substr(ready_prefix.size()));
  if (!at || at->port == 0) {
    child_.reset();
    throw process_error("netdelay_process: malformed ready line: \"" + line + "\"");
  }
  host_ = at->host;
  port_ = at->port;
}

netdelay_process::~netdelay_process() = default;  // child_process stops the proxy

exit_status netdelay_process::stop(std::chrono::milliseconds grace) {
  if (!status_) status_ = child_ ? child_->terminate(grace) : exit_status{};
  return *status_;
}

}  // namespace vnfs::bench
