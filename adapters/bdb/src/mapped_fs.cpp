#include "mapped_fs.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <filesystem>

#include "state.hpp"

namespace vnfs::bdb::detail {

namespace {

/// An absolute, lexically normal path without a trailing '/'.
std::string absolute(const char* path) {
  std::string p = path;
  if (p.empty() || p[0] != '/') {
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd)) return {};
    p = std::string(cwd) + "/" + p;
  }
  std::string n = std::filesystem::path(p).lexically_normal().string();
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  return n;
}

}  // namespace

state& the_state() {
  static state s;
  return s;
}

bool attached() {
  state& s = the_state();
  std::lock_guard lk(s.mu);
  return !s.targets.empty();
}

std::optional<remote> lookup(const char* local_path) {
  if (!local_path) return std::nullopt;
  state& s = the_state();
  target* best = nullptr;
  client_options options;
  {
    std::lock_guard lk(s.mu);
    if (s.targets.empty()) return std::nullopt;
    options = s.options;
  }
  std::string p = absolute(local_path);
  std::string rest;
  {
    std::lock_guard lk(s.mu);
    for (auto& t : s.targets) {
      const std::string& pre = t->map.prefix;
      bool under = p == pre || (p.size() > pre.size() && p.compare(0, pre.size(), pre) == 0 && p[pre.size()] == '/');
      if (under && (!best || pre.size() > best->map.prefix.size())) best = t.get();
    }
    if (!best) return std::nullopt;
    rest = p.substr(best->map.prefix.size());
  }
  remote r{best, nullptr, rest.empty() ? "/" : rest, 0};
  std::lock_guard tl(best->mu);
  if (!best->c) {
    try {
      best->c = std::make_unique<client>(client::connect(best->map.url, options));
    } catch (const std::system_error& e) {
      r.error = to_errno(e.code());
      if (e.code() == std::errc::no_such_file_or_directory) r.error = ENOENT;
      report(*best, "cannot connect for", local_path, e.what());
      return r;
    } catch (const std::exception& e) {
      r.error = EIO;
      report(*best, "cannot connect for", local_path, e.what());
      return r;
    }
    // The regions that exist already are registered with the new client.
    std::lock_guard lk(s.mu);
    for (auto& reg : s.regions) {
      if (!s.register_regions) break;
      try {
        reg.registrations.emplace_back(best->c.get(), best->c->register_memory(reg.addr, reg.size));
      } catch (const std::exception& e) {
        report(*best, "cannot register Berkeley DB's region for", local_path, e.what());
      }
    }
  }
  r.c = best->c.get();
  return r;
}

void report(target& t, const std::string& what, const std::string& local_path, const std::string& message) {
  std::string line = "vnfs bdb: " + what + " " + local_path + " (" + t.map.url + "): " + message;
  {
    std::lock_guard lk(the_state().mu);
    if (std::find(t.reported.begin(), t.reported.end(), line) != t.reported.end()) return;
    t.reported.push_back(line);
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

std::optional<memory_slice> registered_slice(client* c, const void* p, std::size_t n) {
  state& s = the_state();
  auto b = static_cast<const std::byte*>(p);
  std::lock_guard lk(s.mu);
  for (auto& reg : s.regions) {
    if (b < reg.addr || b + n > reg.addr + reg.size) continue;
    for (auto& [owner, mr] : reg.registrations)
      if (owner == c) return mr.slice(static_cast<std::size_t>(b - reg.addr), n);
  }
  return std::nullopt;
}

void add_region(void* p, std::size_t n) {
  state& s = the_state();
  std::vector<target*> targets;
  {
    std::lock_guard lk(s.mu);
    for (auto& t : s.targets) targets.push_back(t.get());
  }
  region reg{static_cast<std::byte*>(p), n, {}};
  bool register_them = false;
  {
    std::lock_guard lk(s.mu);
    register_them = s.register_regions;
  }
  for (target* t : targets) {
    if (!register_them) break;
    std::lock_guard tl(t->mu);
    if (!t->c) continue;
    try {
      reg.registrations.emplace_back(t->c.get(), t->c->register_memory(p, n));
    } catch (const std::exception& e) {
      report(*t, "cannot register Berkeley DB's region of", std::to_string(n) + " bytes", e.what());
    }
  }
  std::lock_guard lk(s.mu);
  s.regions.push_back(std::move(reg));
}

void remove_region(void* p) {
  state& s = the_state();
  std::vector<region> gone;
  {
    std::lock_guard lk(s.mu);
    auto it = std::partition(s.regions.begin(), s.regions.end(), [p](const region& r) { return r.addr != p; });
    std::move(it, s.regions.end(), std::back_inserter(gone));
    s.regions.erase(it, s.regions.end());
  }
  // Deregistered here, outside the lock.
}

}  // namespace vnfs::bdb::detail
