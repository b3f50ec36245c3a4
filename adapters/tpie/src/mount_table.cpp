#include "mount_table.hpp"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "failure.hpp"
#include "vnfs/adapters/vnfs_map.hpp"
#include "vnfs/tpie/mount_stats.hpp"
#include "vnfs/tpie/mounts.hpp"

namespace vnfs::tpie {

namespace {

struct mount_entry {
  adapters::mapping map;
  client_options options;
  std::mutex connect_mu;                  ///< one connect at a time per mapping
  std::shared_ptr<vnfs::client> client;   ///< guarded by connect_mu
};

struct mount_state {
  std::mutex mu;
  std::vector<std::shared_ptr<mount_entry>> entries;
  bool set_in_code = false;
  bool env_read = false;
  std::string env_error;  ///< VNFS_MAP could not be parsed
};

mount_state& state() {
  static mount_state s;
  return s;
}

/// Reads VNFS_MAP once, unless mount() was called. Caller holds s.mu.
void read_environment(mount_state& s) {
  if (s.set_in_code || s.env_read) return;
  s.env_read = true;
  const char* text = std::getenv("VNFS_MAP");
  if (!text || !*text) return;
  try {
    for (auto& m : adapters::parse_vnfs_map(text)) {
      auto e = std::make_shared<mount_entry>();
      e->map = std::move(m);
      s.entries.push_back(std::move(e));
    }
  } catch (const std::invalid_argument& e) {
    s.env_error = e.what();
  }
}

std::vector<adapters::mapping> maps_of(const mount_state& s) {
  std::vector<adapters::mapping> maps;
  for (const auto& e : s.entries) maps.push_back(e->map);
  return maps;
}

}  // namespace

void mount(const std::string& prefix, const std::string& url) { mount(prefix, url, client_options{}); }

void mount(const std::string& prefix, const std::string& url, const client_options& options) {
  auto parsed = adapters::parse_vnfs_map(prefix + "=" + url);  // the same checks as VNFS_MAP
  if (parsed.size() != 1 || parsed[0].url != url)
    throw std::invalid_argument("vnfs::tpie::mount: '" + prefix + "' cannot be mapped to '" + url + "'");
  auto e = std::make_shared<mount_entry>();
  e->map = std::move(parsed[0]);
  e->options = options;
  mount_state& s = state();
  std::lock_guard lock(s.mu);
  if (!s.set_in_code) {  // mappings made in code replace those of the environment
    s.entries.clear();
    s.env_error.clear();
    s.set_in_code = true;
  }
  std::erase_if(s.entries, [&](const auto& x) { return x->map.prefix == e->map.prefix; });
  s.entries.push_back(std::move(e));
}

void unmount_all() {
  mount_state& s = state();
  std::vector<std::shared_ptr<mount_entry>> old;
  {
    std::lock_guard lock(s.mu);
    old.swap(s.entries);
    s.set_in_code = false;
    s.env_read = false;
    s.env_error.clear();
  }
  // Dropped outside the lock: a client without open files closes its session here.
}

std::optional<client_stats> mount_stats(const std::string& prefix) {
  mount_state& s = state();
  std::shared_ptr<mount_entry> e;
  {
    std::lock_guard lock(s.mu);
    for (const auto& x : s.entries)
      if (x->map.prefix == prefix) e = x;
  }
  if (!e) return std::nullopt;
  std::lock_guard lock(e->connect_mu);
  if (!e->client) return std::nullopt;
  return e->client->stats();
}

namespace detail {

std::optional<remote_location> locate(const std::string& path, on_bad_map bad_map) {
  namespace fs = std::filesystem;
  std::string absolute = path;
  if (absolute.empty() || absolute[0] != '/') {
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    if (ec) throw_io_error(ec, "open (working directory unknown)", path);
    absolute = (cwd / path).string();
  }
  absolute = fs::path(absolute).lexically_normal().string();
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();

  mount_state& s = state();
  std::shared_ptr<mount_entry> e;
  {
    std::lock_guard lock(s.mu);
    read_environment(s);
    if (!s.env_error.empty() && bad_map == on_bad_map::as_local) return std::nullopt;
    if (!s.env_error.empty()) throw_io_error(std::make_error_code(std::errc::invalid_argument), "open (" + s.env_error + ")", path);
    const auto maps = maps_of(s);
    const std::size_t i = adapters::longest_prefix(maps, absolute);
    if (i == maps.size()) return std::nullopt;
    e = s.entries[i];
  }
  remote_location where;
  where.remote_path = absolute.substr(e->map.prefix.size());
  where.url = e->map.url;
  std::lock_guard lock(e->connect_mu);
  if (!e->client) {
    try {
      e->client = std::make_shared<vnfs::client>(vnfs::client::connect(e->map.url, e->options));
    } catch (const std::system_error& x) {
      throw_io_error(x.code(), "open (cannot connect to " + e->map.url + ")", path);
    }
  }
  where.client = e->client;
  return where;
}

}  // namespace detail
}  // namespace vnfs::tpie
