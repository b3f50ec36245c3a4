// vnfs server tests: a blocking NFSv4.1 session (tests/support) over the shared codec,
// and the servers it runs against (vnfsd, NFS-Ganesha).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "vnfs/nfs4/compound.hpp"
#include "vnfs/test/blocking_session.hpp"
#include "vnfs/test/ganesha_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

namespace vnfs::test {

enum class server_kind { vnfsd, ganesha };
const char* name_of(server_kind k);

/// A real server on loopback exporting a fresh temporary directory.
class test_server {
 public:
  explicit test_server(server_kind kind, std::vector<std::string> vnfsd_args = {});
  server_kind kind() const { return kind_; }
  std::string host() const;
  std::uint16_t port() const;
  const std::filesystem::path& export_dir() const;
  /// Components to LOOKUP after PUTROOTFH to reach the export (empty on vnfsd).
  std::vector<std::string> root_path() const;
  /// vnfsd only: stop and start again on the same export and port.
  void restart();
  vnfsd_process* vnfsd() { return vnfsd_.get(); }

 private:
  server_kind kind_;
  std::unique_ptr<temp_dir> dir_;
  std::unique_ptr<vnfsd_process> vnfsd_;
  std::unique_ptr<ganesha_process> ganesha_;
};

/// A blocking_session opened on a test_server.
class test_session : public blocking_session {
 public:
  using blocking_session::blocking_session;
  explicit test_session(test_server& s, session_options opts = {})
      : blocking_session(s.host(), s.port(), s.root_path(), std::move(opts)) {}
};

/// The result at `index`, which must be of type R (a Catch2 failure names what it was).
template <class R>
const R& result_at(const nfs4::COMPOUND4res& res, std::size_t index);

/// Status of the result at `index` (NFS4_OK ... ), or throws if there is no such result.
nfs4::nfsstat4 status_at(const nfs4::COMPOUND4res& res, std::size_t index);

}  // namespace vnfs::test

#include "support/test_session_inl.hpp"
