// tests/adapters/tpie: a vnfsd for one test, mounted under a local prefix that never exists
// on local disk, and a local scratch directory for the same files done locally.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"
#include "vnfs/tpie/mount_stats.hpp"
#include "vnfs/tpie/mounts.hpp"

namespace vnfs::tpie::test {

enum class transport { tcp, cma };

inline const char* name(transport t) { return t == transport::tcp ? "vnfsd over TCP" : "vnfsd over RPC-over-RDMA (cma)"; }

/// vnfsd exporting a scratch directory, mounted (vnfs::tpie::mount) at `prefix`; a second
/// scratch directory for local files. Unmounts on destruction.
struct mounted_server {
  vnfs::test::temp_dir export_dir{"vnfs-tpie-export"};
  vnfs::test::temp_dir local{"vnfs-tpie-local"};
  std::unique_ptr<vnfs::test::vnfsd_process> vnfsd;
  std::string url;
  std::string prefix;  ///< local spelling of the export's root; not a directory on disk

  std::filesystem::path export_path;  ///< what vnfsd exports: export_dir unless given

  explicit mounted_server(transport t = transport::tcp, vnfs::client_options options = {},
                          std::filesystem::path exported = {})
      : export_path(exported.empty() ? export_dir.path() : exported) {
    if (t == transport::cma) {
      vnfsd = std::make_unique<vnfs::test::vnfsd_process>(export_path,
                                                          std::vector<std::string>{"--rdma", "cma:127.0.0.1:0"});
      url = "nfs+rdma://127.0.0.1:" + std::to_string(vnfsd->rdma_port()) + "/?provider=cma";
    } else {
      vnfsd = std::make_unique<vnfs::test::vnfsd_process>(export_path);
      url = "nfs://127.0.0.1:" + std::to_string(vnfsd->port()) + "/";
    }
    prefix = (local / "on-vnfs").string();
    vnfs::tpie::unmount_all();
    vnfs::tpie::mount(prefix, url, options);
  }
  ~mounted_server() { vnfs::tpie::unmount_all(); }

  std::string remote(const std::string& name) const { return prefix + "/" + name; }
  std::string local_path(const std::string& name) const { return (local / name).string(); }
  /// The bytes of a file as the server stores it.
  std::vector<char> server_bytes(const std::string& name) const { return file_bytes(export_path / name); }
  vnfs::client_stats stats() const { return *vnfs::tpie::mount_stats(prefix); }

  static std::vector<char> file_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
};

/// Byte `i` of the test data: depends on the offset, so a misplaced block shows.
inline char pattern(std::uint64_t i) {
  std::uint64_t x = (i / 8 + 1) * 0x9E3779B97F4A7C15ull;
  return static_cast<char>(x >> (8 * (i % 8)));
}

inline std::vector<char> pattern_bytes(std::uint64_t offset, std::size_t n) {
  std::vector<char> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = pattern(offset + k);
  return v;
}

}  // namespace vnfs::tpie::test
