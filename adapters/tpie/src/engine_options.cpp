#include "vnfs/tpie/engine_options.hpp"

#include <cstdlib>
#include <mutex>
#include <string>

namespace vnfs::tpie {

namespace {

/// A KiB count from the environment, or nothing when unset or not a number.
bool env_kib(const char* name, std::size_t& bytes) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (*end) return false;
  bytes = static_cast<std::size_t>(n) << 10;
  return true;
}

engine_options from_environment() {
  engine_options o;
  env_kib("VNFS_TPIE_REQUEST_KIB", o.request_bytes);
  if (env_kib("VNFS_TPIE_READ_AHEAD_KIB", o.read_ahead_bytes) && o.read_ahead_bytes == 0) o.read_ahead = false;
  if (env_kib("VNFS_TPIE_WRITE_BEHIND_KIB", o.write_behind_bytes) && o.write_behind_bytes == 0) o.write_behind = false;
  return o;
}

std::mutex defaults_mu;
engine_options& defaults() {
  static engine_options o = from_environment();
  return o;
}

}  // namespace

engine_options default_engine_options() {
  std::lock_guard lock(defaults_mu);
  return defaults();
}

void set_default_engine_options(const engine_options& options) {
  std::lock_guard lock(defaults_mu);
  defaults() = options;
}

}  // namespace vnfs::tpie
