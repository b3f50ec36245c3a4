// tests/client: the targets the client suite runs against (vnfsd, NFS-Ganesha, file://),
// one server of each kind per test program, and a fresh working directory per test with a
// client rooted at it.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <catch2/catch.hpp>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "vnfs/client.hpp"
#include "vnfs/test/ganesha_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

namespace vnfs::client_test {

/// vnfsd_rdma: vnfsd reached by RPC-over-RDMA over the cma provider (nfs+rdma://...?provider=cma).
enum class target { vnfsd, ganesha, local, vnfsd_rdma };

inline const char* name_of(target t) {
  switch (t) {
    case target::vnfsd: return "vnfsd";
    case target::ganesha: return "NFS-Ganesha";
    case target::local: return "file://";
    case target::vnfsd_rdma: return "vnfsd over RPC-over-RDMA (cma)";
  }
  return "?";
}

/// Whether a target is to be tested: all of them unless $VNFS_TEST_TARGETS lists some
/// (comma-separated: vnfsd,ganesha,local,vnfsd_rdma), e.g. to run the suite where Ganesha is
/// missing.
inline bool enabled(target t) {
  const char* env = std::getenv("VNFS_TEST_TARGETS");
  if (env == nullptr || *env == 0) return true;
  std::string list = std::string(",") + env + ",";
  const char* key = t == target::vnfsd        ? ",vnfsd,"
                    : t == target::ganesha    ? ",ganesha,"
                    : t == target::vnfsd_rdma ? ",vnfsd_rdma,"
                                              : ",local,";
  return list.find(key) != std::string::npos;
}

/// True, with a warning in the test's output, when `t` is left out of $VNFS_TEST_TARGETS:
/// a test returns early on it, and a filtered run says so instead of reading as a pass.
inline bool skipped(target t) {
  if (enabled(t)) return false;
  WARN("skipped: target " << name_of(t) << " is not in VNFS_TEST_TARGETS");
  return true;
}

/// A server (or, for file://, a scratch directory) shared by the tests of one program.
struct target_server {
  target kind;
  std::unique_ptr<test::temp_dir> dir;
  std::unique_ptr<test::vnfsd_process> vnfsd;
  std::unique_ptr<test::ganesha_process> ganesha;

  explicit target_server(target k) : kind(k) {
    if (k == target::ganesha) {
      ganesha = std::make_unique<test::ganesha_process>();
      return;
    }
    dir = std::make_unique<test::temp_dir>("vnfs-client-test");
    if (k == target::vnfsd) vnfsd = std::make_unique<test::vnfsd_process>(dir->path());
    if (k == target::vnfsd_rdma)
      vnfsd = std::make_unique<test::vnfsd_process>(dir->path(), std::vector<std::string>{"--rdma", "cma:127.0.0.1:0"});
  }

  const std::filesystem::path& export_dir() const { return ganesha ? ganesha->export_dir() : dir->path(); }

  /// The URL of `sub` (a directory at the top of the export).
  std::string url(const std::string& sub) const {
    switch (kind) {
      case target::vnfsd: return "nfs://" + vnfsd->host() + ":" + std::to_string(vnfsd->port()) + "/" + sub;
      case target::ganesha:
        return "nfs://" + ganesha->host() + ":" + std::to_string(ganesha->port()) + ganesha->pseudo_path() + "/" + sub;
      case target::local: return "file://" + (dir->path() / sub).string();
      case target::vnfsd_rdma:
        return "nfs+rdma://127.0.0.1:" + std::to_string(vnfsd->rdma_port()) + "/" + sub + "?provider=cma";
    }
    return {};
  }
};

inline target_server& shared_server(target k) {
  static std::unique_ptr<target_server> servers[4];
  auto& s = servers[static_cast<int>(k)];
  if (!s) s = std::make_unique<target_server>(k);
  return *s;
}

/// A fresh directory "c<pid>_<n>" (mode 0777) at the top of the export, created locally
/// before any server looks at it (so NFS-Ganesha's caches never hold a stale view of it),
/// and a client whose root is that directory.
class client_env {
 public:
  explicit client_env(target k, client_options o = {}) : server_(shared_server(k)) {
    static std::atomic<int> counter{0};
    name_ = "c" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    dir_ = server_.export_dir() / name_;
    std::filesystem::create_directory(dir_);
    ::chmod(dir_.c_str(), 0777);
    client_ = std::make_unique<client>(client::connect(server_.url(name_), o));
  }

  target kind() const { return server_.kind; }
  bool is_nfs() const { return server_.kind != target::local; }
  vnfs::client& c() { return *client_; }
  /// The working directory as a local path (the server's export on this machine).
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path operator/(const std::string& rel) const { return dir_ / rel; }
  std::string url() const { return server_.url(name_); }
  target_server& server() { return server_; }

 private:
  target_server& server_;
  std::string name_;
  std::filesystem::path dir_;
  std::unique_ptr<vnfs::client> client_;
};

/// The error a call throws (std::system_error), or an empty code if it does not throw.
inline std::error_code error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::system_error& e) {
    return e.code();
  }
  return {};
}

/// n bytes of a pattern that differs at every offset modulo 251 (a prime: page-sized
/// misplacements show up) and with `seed`.
inline std::vector<std::byte> pattern(std::size_t n, unsigned seed = 0) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte((i % 251) ^ (seed * 37u));
  return v;
}

/// The difference of two stats snapshots, field by field.
inline client_stats operator-(const client_stats& a, const client_stats& b) {
  client_stats d;
  d.compounds = a.compounds - b.compounds;
  d.operations = a.operations - b.operations;
  d.bytes_sent = a.bytes_sent - b.bytes_sent;
  d.bytes_received = a.bytes_received - b.bytes_received;
  d.payload_bytes_copied = a.payload_bytes_copied - b.payload_bytes_copied;
  d.payload_bytes_direct = a.payload_bytes_direct - b.payload_bytes_direct;
  d.reconnects = a.reconnects - b.reconnects;
  d.retransmissions = a.retransmissions - b.retransmissions;
  d.replies_to_waiting_callers = a.replies_to_waiting_callers - b.replies_to_waiting_callers;
  return d;
}

/// COMPOUNDs and operations some calls sent (client::stats before and after).
struct cost {
  std::uint64_t compounds, operations;
};

/// What `f` cost on `c`; checks that nothing was retransmitted or reconnected meanwhile.
template <class F>
cost cost_of(client& c, F&& f) {
  client_stats before = c.stats();
  f();
  client_stats d = c.stats() - before;
  CHECK(d.reconnects == 0);
  CHECK(d.retransmissions == 0);
  return {d.compounds, d.operations};
}

}  // namespace vnfs::client_test

/// Runs the rest of a test case once per enabled target, with `env` (a fresh working
/// directory and client) and `c` (its client).
#define FOR_EACH_TARGET()                                                                            \
  const auto kind = GENERATE(vnfs::client_test::target::vnfsd, vnfs::client_test::target::ganesha,  \
                             vnfs::client_test::target::local, vnfs::client_test::target::vnfsd_rdma); \
  INFO("target " << vnfs::client_test::name_of(kind));                                              \
  if (vnfs::client_test::skipped(kind)) return;                                                    \
  vnfs::client_test::client_env env(kind);                                                          \
  vnfs::client& c = env.c()

/// Requires a vectorized call to have succeeded, saying which item failed and why if not.
#define REQUIRE_OK(expr)                                                             \
  do {                                                                               \
    vnfs::vresult r_ = (expr);                                                       \
    INFO(#expr << ": item " << r_.failed_index << " failed: " << r_.error.message()); \
    REQUIRE(r_.ok());                                                                \
  } while (0)
