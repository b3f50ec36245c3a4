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

std::filesystem::path server_state::recovery_dir_of(const server_options& o) {
  if (o.recovery_dir.empty()) return o.export_dir / server_options::recovery_name;
  // Clients would see (and could change) records inside the export under any other name.
  std::error_code ec;
  const auto exp = std::filesystem::weakly_canonical(o.export_dir, ec);
  const auto rec = std::filesystem::weakly_canonical(o.recovery_dir, ec);
  const auto rel = rec.lexically_relative(exp);
  if (!ec && !rel.empty() && *rel.begin() != "..")
    throw std::runtime_error("the recovery directory " + o.recovery_dir.string() +
                             " is inside the export: leave it unset or name one outside");
  return o.recovery_dir;
}

server_state::server_state(server_options opts)
    : options(std::move(opts)),
      exp(options.export_dir),
      boot_id(random_value<std::uint32_t>()),
      write_verifier(random_value<nfs4::verifier4>()),
      recovery_in_export(options.recovery_dir.empty()),
      clients(options, boot_id, [this](nfs4::clientid4 id) {
                opens.release_client(id);
                txns.client_gone(id);
              },
              client_records(recovery_dir_of(options))),
      txns(exp, options.transactions,
           txn::limits{.max_backup_bytes = options.txn_max_backup_bytes, .crash_at = options.txn_crash_at,
                       .max_age = options.txn_max_age}) {}

}  // namespace vnfs::server
