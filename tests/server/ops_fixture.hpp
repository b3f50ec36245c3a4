// Shared helpers of the filehandle / attribute / name-space operation tests: one server of
// each kind per test program, and a fresh working directory in its export per test.
//
// Each test prepares its files in the local export directory BEFORE the server first looks
// at the working directory, so NFS-Ganesha's metadata cache never holds stale entries for
// it; after that, changes go through NFS.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "support/test_session.hpp"
#include "vnfs/nfs4/attributes.hpp"

namespace vnfs::ops_test {

using namespace vnfs::nfs4;
using vnfs::test::result_at;
using vnfs::test::server_kind;

/// A server and a root (AUTH_SYS 0:0) session to it, shared by the tests of one program.
struct shared_server {
  vnfs::test::test_server server;
  vnfs::test::test_session session;
  explicit shared_server(server_kind k) : server(k), session(server) {
    // Without it a server in its grace period refuses non-reclaim OPENs (§18.51.3).
    session.compound({RECLAIM_COMPLETE4args{false}});
    // temp_dir makes the export private (0700); tests with other users need to enter it.
    ::chmod(server.export_dir().c_str(), 0755);
  }
};

inline shared_server& shared(server_kind k) {
  static std::unique_ptr<shared_server> vnfsd, ganesha;
  auto& p = k == server_kind::vnfsd ? vnfsd : ganesha;
  if (!p) p = std::make_unique<shared_server>(k);
  return *p;
}

/// A fresh directory "w<N>" (mode 0777) at the top of the export.
class workdir {
 public:
  explicit workdir(server_kind k) : srv_(shared(k)) {
    static std::atomic<int> counter{0};
    name_ = "w" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    path_ = srv_.server.export_dir() / name_;
    std::filesystem::create_directory(path_);
    ::chmod(path_.c_str(), 0777);
  }

  server_kind kind() const { return srv_.server.kind(); }
  bool is_vnfsd() const { return kind() == server_kind::vnfsd; }
  vnfs::test::test_session& session() { return srv_.session; }
  vnfs::test::test_server& server() { return srv_.server; }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }
  const std::string& name() const { return name_; }

  /// root_ops(), LOOKUP of the working directory, then `ops`.
  std::vector<nfs_argop4> at(std::vector<nfs_argop4> ops) const {
    std::vector<nfs_argop4> all = srv_.session.root_ops();
    all.push_back(LOOKUP4args{name_});
    for (auto& op : ops) all.push_back(std::move(op));
    return all;
  }
  /// Runs at(ops): result i of `ops` is at index base() + i.
  COMPOUND4res run(std::vector<nfs_argop4> ops) { return srv_.session.compound(at(std::move(ops))); }
  /// Runs root_ops() then `ops`: result i of `ops` is at index root_base() + i.
  COMPOUND4res run_root(std::vector<nfs_argop4> ops) {
    std::vector<nfs_argop4> all = srv_.session.root_ops();
    for (auto& op : ops) all.push_back(std::move(op));
    return srv_.session.compound(std::move(all));
  }
  std::size_t base() const { return 1 + srv_.session.root_ops().size() + 1; }
  std::size_t root_base() const { return 1 + srv_.session.root_ops().size(); }

  /// Result i of the caller's ops in a reply of run().
  template <class R>
  const R& res(const COMPOUND4res& r, std::size_t i) const {
    return result_at<R>(r, base() + i);
  }
  /// Status of result i of the caller's ops (the last result's status is r.status).
  nfsstat4 status(const COMPOUND4res& r, std::size_t i) const {
    return vnfs::test::status_at(r, base() + i);
  }

  /// The filehandle of a path inside the working directory ("" = the directory itself).
  nfs_fh4 fh(const std::string& rel = "") {
    std::vector<nfs_argop4> ops;
    for (const std::string& c : split(rel)) ops.push_back(LOOKUP4args{c});
    ops.push_back(GETFH4args{});
    COMPOUND4res r = run(std::move(ops));
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    return std::get<GETFH4res>(r.resarray.back()).resok4.object;
  }

  /// GETATTR of a path inside the working directory, decoded.
  attributes getattr(const std::string& rel, const bitmap4& request) {
    std::vector<nfs_argop4> ops;
    for (const std::string& c : split(rel)) ops.push_back(LOOKUP4args{c});
    ops.push_back(GETATTR4args{request});
    COMPOUND4res r = run(std::move(ops));
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    return decode_attributes(std::get<GETATTR4res>(r.resarray.back()).resok4.obj_attributes);
  }

  /// Local helpers (before the server sees the directory).
  void write_file(const std::string& rel, const std::string& content, mode_t mode = 0644) const {
    std::ofstream(path_ / rel, std::ios::binary) << content;
    ::chmod((path_ / rel).c_str(), mode);
  }
  void make_dir(const std::string& rel, mode_t mode = 0755) const {
    std::filesystem::create_directory(path_ / rel);
    ::chmod((path_ / rel).c_str(), mode);
  }
  void make_symlink(const std::string& target, const std::string& rel) const {
    std::filesystem::create_symlink(target, path_ / rel);
  }

  static std::vector<std::string> split(const std::string& rel) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < rel.size()) {
      std::size_t end = rel.find('/', start);
      if (end == std::string::npos) end = rel.size();
      if (end > start) out.push_back(rel.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }

 private:
  shared_server& srv_;
  std::string name_;
  std::filesystem::path path_;
};

/// lstat() of a local path; fails the test if it does not exist.
inline struct stat lstat_of(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st;
}

inline bool exists_local(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

/// A fattr4 with the given typed values.
inline fattr4 attrs_of(const attributes& a) { return encode_attributes(a); }

/// OPEN (CLAIM_NULL, no create) of `name` in the current directory for read and write.
inline OPEN4args open_existing(clientid4 client, const std::string& name,
                               std::uint32_t access = OPEN4_SHARE_ACCESS_BOTH) {
  OPEN4args a;
  a.share_access = access;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner = {client, vnfs::test::to_byte_vector("ops-test-owner")};
  a.openhow.opentype = opentype4::OPEN4_NOCREATE;
  a.claim.claim = open_claim_type4::CLAIM_NULL;
  a.claim.file = name;
  return a;
}

inline std::string kind_name(server_kind k) { return vnfs::test::name_of(k); }

}  // namespace vnfs::ops_test
