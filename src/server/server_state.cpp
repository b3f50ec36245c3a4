#include "server/server_state.hpp"

#include <sys/random.h>

#include <stdexcept>

namespace vnfs::server {

namespace {

template <class T>
T random_value() {
  T v{};
  if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v))
    throw std::runtime_error("vnfsd: getrandom failed");
  return v;
}

}  // namespace

server_state::server_state(server_options opts)
    : options(std::move(opts)),
      exp(options.export_dir),
      boot_id(random_value<std::uint32_t>()),
      write_verifier(random_value<nfs4::verifier4>()),
      clients(options, boot_id, [this](nfs4::clientid4 id) { opens.release_client(id); }),
      txns(exp, options.transactions,
           txn::limits{.max_backup_bytes = options.txn_max_backup_bytes, .crash_at = options.txn_crash_at}) {}

}  // namespace vnfs::server
