// vnfs command line: the clients one command uses — one per server (or one for all local
// files), connected on first use and closed at the end.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "location.hpp"
#include "vnfs/client.hpp"

namespace vnfs::cli {

class client_pool {
 public:
  explicit client_pool(client_options options) : options_(std::move(options)) {}

  /// The client for a location's root, connecting on first use. Throws command_error
  /// ("cannot connect to 'URL': reason") when the connection cannot be made.
  vnfs::client& at(const location& l);

  /// Whether two locations are served by one client (and so by one server).
  static bool same_client(const location& a, const location& b) { return a.connect_url == b.connect_url; }

  /// How many clients were connected.
  std::size_t size() const { return clients_.size(); }
  /// The counters of every client used, summed.
  client_stats total() const;

 private:
  client_options options_;
  std::map<std::string, std::unique_ptr<vnfs::client>> clients_;
};

}  // namespace vnfs::cli
