// vnfs command line: connecting clients on demand.
#include "client_pool.hpp"

#include "diagnostics.hpp"

namespace vnfs::cli {

vnfs::client& client_pool::at(const location& l) {
  auto it = clients_.find(l.connect_url);
  if (it != clients_.end()) return *it->second;
  try {
    auto c = std::make_unique<vnfs::client>(vnfs::client::connect(l.connect_url, options_));
    return *clients_.emplace(l.connect_url, std::move(c)).first->second;
  } catch (const std::system_error& e) {
    throw command_error(failure("cannot connect to", l.connect_url, e.code()));
  }
}

client_stats client_pool::total() const {
  client_stats t;
  for (const auto& [url, c] : clients_) {
    client_stats s = c->stats();
    t.compounds += s.compounds;
    t.operations += s.operations;
    t.bytes_sent += s.bytes_sent;
    t.bytes_received += s.bytes_received;
    t.payload_bytes_copied += s.payload_bytes_copied;
    t.payload_bytes_direct += s.payload_bytes_direct;
    t.reconnects += s.reconnects;
    t.retransmissions += s.retransmissions;
    t.replies_to_waiting_callers += s.replies_to_waiting_callers;
  }
  return t;
}

}  // namespace vnfs::cli
