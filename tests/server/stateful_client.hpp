// Shared fixture of the open/lock state and I/O operation tests: one server of each kind per
// test program, a fresh working directory per test, and a session whose COMPOUNDs start there.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/test_session.hpp"
#include "vnfs/rpc/auth.hpp"
#include "vnfs/test/blocking_channel.hpp"

namespace vnfs::test {

using namespace vnfs::nfs4;


/// One server of each kind per test program (started on first use); each test works in a
/// fresh directory of its export, prepared locally before the server first looks at it.
inline test_server& server_of(server_kind k) {
  static std::unique_ptr<test_server> vnfsd, ganesha;
  auto& p = k == server_kind::vnfsd ? vnfsd : ganesha;
  if (!p) {
    p = std::make_unique<test_server>(k);
    ::chmod(p->export_dir().c_str(), 0755);  // searchable by the non-root callers of tests
  }
  return *p;
}

/// A new directory (mode 0777) at the top of the export of `srv`; returns its name.
inline std::string new_workdir(test_server& srv, const std::string& prefix) {
  static int counter = 0;
  std::string name = prefix + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::filesystem::create_directory(srv.export_dir() / name);
  ::chmod((srv.export_dir() / name).c_str(), 0777);
  return name;
}

/// A session (its own client ID) whose COMPOUNDs start in the working directory: run()
/// prefixes the root operations and LOOKUP of the directory, at<R>(r, k) is the result of
/// the k-th operation given to run().
struct nfs_client {
  test_session s;
  session_options opts;
  std::string dir;
  std::size_t base;
  nfs_client(test_server& srv, std::string workdir, session_options o = {})
      : s(srv, o), opts(o), dir(std::move(workdir)), base(1 + s.root_ops().size() + 1) {
    // A server in its grace period refuses non-reclaim OPENs until this (§18.51.3).
    s.compound({RECLAIM_COMPLETE4args{false}});
  }

  /// SEQUENCE + ops (minor version 1, or 2 for COPY), not cached by the server. Unlike
  /// test_session::compound, the reply bytes are kept for the life of this object, so the
  /// READ data views in the results stay valid.
  COMPOUND4res call(std::vector<nfs_argop4> ops, std::uint32_t minorversion = 1) {
    SEQUENCE4args seq;
    seq.sa_sessionid = s.session_id();
    seq.sa_sequenceid = s.next_seqid();
    seq.sa_slotid = 0;
    seq.sa_highest_slotid = 0;
    seq.sa_cachethis = false;
    ops.insert(ops.begin(), seq);
    const COMPOUND4args args{"", minorversion, std::move(ops)};
    rpc::authsys_parms p;
    p.machinename = "vnfs-test";
    p.uid = opts.uid;
    p.gid = opts.gid;
    p.gids = opts.gids;
    replies_.push_back(std::make_unique<std::vector<std::byte>>(test::rpc_call(
        s.channel(), NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND,
        [&](xdr::encoder& e) { xdr::encode(e, args); }, rpc::make_authsys(p))));
    xdr::decoder d(*replies_.back());
    COMPOUND4res r = xdr::decode<COMPOUND4res>(d);
    if (!r.resarray.empty() && status_of(r.resarray[0]) == nfsstat4::NFS4_OK)
      s.set_seqid(0, seq.sa_sequenceid);
    return r;
  }
  /// root operations, LOOKUP of the working directory, then `ops`.
  COMPOUND4res run(std::vector<nfs_argop4> ops) {
    auto all = s.root_ops();
    all.push_back(LOOKUP4args{dir});
    all.insert(all.end(), ops.begin(), ops.end());
    return call(std::move(all));
  }
  /// PUTFH of `fh`, then `ops` (results from index 2).
  COMPOUND4res on(const nfs_fh4& fh, std::vector<nfs_argop4> ops) {
    ops.insert(ops.begin(), PUTFH4args{fh});
    return call(std::move(ops));
  }
  template <class R>
  const R& at(const COMPOUND4res& r, std::size_t k) const {
    return result_at<R>(r, base + k);
  }
  nfsstat4 status(const COMPOUND4res& r, std::size_t k) const { return status_at(r, base + k); }
  state_owner4 owner(std::string_view name) const { return {s.client_id(), to_byte_vector(name)}; }

 private:
  std::vector<std::unique_ptr<std::vector<std::byte>>> replies_;
};

}  // namespace vnfs::test
