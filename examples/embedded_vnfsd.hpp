// examples: an NFSv4.1 server inside the example's own process, so every example runs with
// no arguments and nothing else installed. Real programs connect to a server somewhere else
// and need none of this: they only call vnfs::client::connect(url).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "server/vnfsd.hpp"

namespace vnfs::examples {

/// vnfsd serving a directory on 127.0.0.1 and a free port, on a thread of its own, from
/// construction to destruction. Without a directory it serves a fresh temporary one, removed
/// again at the end.
class embedded_vnfsd {
 public:
  embedded_vnfsd() : embedded_vnfsd(make_temp_dir(), true) {}
  explicit embedded_vnfsd(std::filesystem::path export_dir) : embedded_vnfsd(std::move(export_dir), false) {}

  ~embedded_vnfsd() {
    server_.stop();
    serving_.join();
    if (owns_dir_) {
      std::error_code ignored;
      std::filesystem::remove_all(export_dir_, ignored);
    }
  }
  embedded_vnfsd(const embedded_vnfsd&) = delete;
  embedded_vnfsd& operator=(const embedded_vnfsd&) = delete;

  /// The URL a client connects to: the root of the export.
  std::string url() const { return "nfs://127.0.0.1:" + std::to_string(server_.port()) + "/"; }
  /// The local directory the server exports.
  const std::filesystem::path& export_dir() const { return export_dir_; }

 private:
  embedded_vnfsd(std::filesystem::path dir, bool owns)
      : export_dir_(std::move(dir)), owns_dir_(owns), server_(options(export_dir_)),
        serving_([this] { server_.run(); }) {}

  static std::filesystem::path make_temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vnfs-example-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::system_error(errno, std::generic_category(), "mkdtemp");
    return tmpl;
  }
  static server::server_options options(const std::filesystem::path& dir) {
    server::server_options o;
    o.export_dir = dir;
    o.listen_host = "127.0.0.1";
    o.listen_port = 0;  // any free port
    o.threads = 2;
    return o;
  }

  std::filesystem::path export_dir_;
  bool owns_dir_;
  server::vnfsd server_;
  std::thread serving_;
};

}  // namespace vnfs::examples
