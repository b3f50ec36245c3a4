// vnfs::embedded_server: the public face of vnfsd (server/vnfsd.hpp) for programs that run one
// in their own process.
#include "vnfs/embedded_server.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include "server/vnfsd.hpp"

namespace vnfs {
namespace {

std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "vnfs-embedded-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "embedded_server: mkdtemp " + pattern);
  return pattern;
}

// Room a record needs beside a request's data (RPC and COMPOUND headers), and the smallest
// max_record that leaves a useful request size.
constexpr std::size_t record_headroom = 64 * 1024;
constexpr std::size_t min_record = 128 * 1024;

server::server_options vnfsd_options(const server_options& o) {
  server::server_options s;
  s.export_dir = o.export_dir;
  s.listen_host = o.host;
  s.listen_port = o.port;
  s.threads = o.threads;
  s.lease = o.lease;
  s.root_squash = o.root_squash;
  s.rdma_provider = o.rdma_provider;
  s.rdma_host = o.rdma_host;
  s.rdma_port = o.rdma_port;
  if (o.max_record != 0 && o.max_record < min_record)
    throw std::invalid_argument("embedded_server: max_record below " + std::to_string(min_record) + " bytes");
  s.max_connections = o.max_connections;
  s.max_record = o.max_record;
  if (o.max_record != 0) s.max_request_size = static_cast<std::uint32_t>(std::min<std::size_t>(s.max_request_size, o.max_record - record_headroom));
  s.idle_timeout = o.idle_timeout;
  s.max_requests_in_flight = o.max_requests_in_flight;
  s.rdma_max_connections = o.rdma_max_connections;
  s.rdma_max_credits = o.rdma_max_credits;
  s.rdma_inline_size = o.rdma_inline_size;
  s.rdma_idle_timeout = o.rdma_idle_timeout;
  s.recovery_dir = o.recovery_dir;
  s.grace = o.grace;
  s.grace_period = o.grace_period;
  s.transactions = o.transactions;
  s.txn_max_backup_bytes = o.txn_max_backup_bytes;
  s.txn_crash_at = o.txn_crash_at;
  s.txn_max_age = o.txn_max_age;
  return s;
}

/// HOST of a URL: an IPv6 address goes in brackets.
std::string url_host(const std::string& host) {
  return host.find(':') == std::string::npos ? host : "[" + host + "]";
}

/// Removes a directory the server made for itself, whatever happens after (the listeners may
/// fail to bind).
struct owned_dir {
  std::filesystem::path path;
  bool owned = false;
  ~owned_dir() {
    if (!owned) return;
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

struct embedded_server::impl {
  explicit impl(server_options o) : options(std::move(o)) {
    if (options.export_dir.empty()) {
      export_dir.path = make_temp_dir();
      export_dir.owned = true;
      options.export_dir = export_dir.path;
    } else {
      export_dir.path = options.export_dir;
    }
    server = std::make_unique<server::vnfsd>(vnfsd_options(options));
  }

  server_options options;
  owned_dir export_dir;  // declared before the server: outlives it
  std::unique_ptr<server::vnfsd> server;
  std::mutex serving_mutex;  // start() and the stop()s that join `serving`
  std::thread serving;
};

embedded_server::embedded_server(server_options options) : impl_(std::make_unique<impl>(std::move(options))) {}

embedded_server::~embedded_server() { stop(); }

std::string embedded_server::url() const { return "nfs://" + url_host(address()) + ":" + std::to_string(port()) + "/"; }

std::string embedded_server::rdma_url() const {
  if (impl_->options.rdma_provider.empty()) return {};
  return "nfs+rdma://" + url_host(impl_->options.rdma_host) + ":" + std::to_string(rdma_port()) +
         "/?provider=" + impl_->options.rdma_provider;
}

std::string embedded_server::address() const { return impl_->server->address(); }

std::uint16_t embedded_server::port() const { return impl_->server->port(); }
std::uint16_t embedded_server::rdma_port() const { return impl_->server->rdma_port(); }
const std::filesystem::path& embedded_server::export_dir() const { return impl_->export_dir.path; }
const server_options& embedded_server::options() const { return impl_->options; }

void embedded_server::start() {
  std::lock_guard lock(impl_->serving_mutex);
  if (impl_->serving.joinable()) throw std::logic_error("embedded_server::start: already serving");
  impl_->serving = std::thread([this] { impl_->server->run(); });
}

void embedded_server::run() { impl_->server->run(); }

void embedded_server::stop() {
  impl_->server->stop();
  std::lock_guard lock(impl_->serving_mutex);
  if (impl_->serving.joinable() && impl_->serving.get_id() != std::this_thread::get_id()) impl_->serving.join();
}

void embedded_server::stop_on_signals() { impl_->server->stop_on_signals(); }

}  // namespace vnfs
