// AUTH_SYS identity per request on vnfsd: files are created as the caller, root squashing,
// AUTH_NONE as nobody, and permission checks made as the caller.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "support/test_session.hpp"
#include "vnfs/nfs4/attributes.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;

namespace {

/// Creates directory `name` (mode 0777) at the export root as the session's caller and
/// returns the owner the server's disk records.
struct stat create_dir(test_server& srv, test_session& s, const std::string& name, nfsstat4 expect = nfsstat4::NFS4_OK) {
  CREATE4args mk;
  mk.objtype.type = nfs_ftype4::NF4DIR;
  mk.objname = name;
  attributes a;
  a.mode = 0777;
  mk.createattrs = encode_attributes(a);
  auto ops = s.root_ops();
  ops.push_back(mk);
  auto r = s.compound(ops);
  CHECK(r.status == expect);
  struct stat st {};
  ::lstat((srv.export_dir() / name).c_str(), &st);
  return st;
}

}  // namespace

TEST_CASE("vnfsd: objects are created as the AUTH_SYS caller") {
  test_server srv(server_kind::vnfsd);
  ::chmod(srv.export_dir().c_str(), 0777);
  test_session root(srv);
  CHECK(create_dir(srv, root, "by_root").st_uid == 0);
  session_options u;
  u.uid = 1234;
  u.gid = 567;
  test_session user(srv, u);
  auto st = create_dir(srv, user, "by_user");
  CHECK(st.st_uid == 1234);
  CHECK(st.st_gid == 567);
}

TEST_CASE("vnfsd: permission checks are the caller's") {
  test_server srv(server_kind::vnfsd);
  ::chmod(srv.export_dir().c_str(), 0755);  // root's, not writable by others
  session_options u;
  u.uid = 1234;
  u.gid = 567;
  test_session user(srv, u);
  create_dir(srv, user, "denied", nfsstat4::NFS4ERR_ACCESS);
  CHECK_FALSE(std::filesystem::exists(srv.export_dir() / "denied"));
  session_options member = u;
  member.gids = {0};  // group root: still no write bit for the group
  test_session grouped(srv, member);
  create_dir(srv, grouped, "denied2", nfsstat4::NFS4ERR_ACCESS);
}

TEST_CASE("vnfsd --root-squash: uid 0 acts as nobody") {
  test_server srv(server_kind::vnfsd, {"--root-squash"});
  ::chmod(srv.export_dir().c_str(), 0777);
  test_session root(srv);
  auto st = create_dir(srv, root, "squashed");
  CHECK(st.st_uid == 65534);
  CHECK(st.st_gid == 65534);
}

TEST_CASE("vnfsd: AUTH_NONE acts as nobody") {
  test_server srv(server_kind::vnfsd);
  ::chmod(srv.export_dir().c_str(), 0777);
  session_options none;
  none.auth_sys = false;
  test_session anon(srv, none);
  auto st = create_dir(srv, anon, "anonymous");
  CHECK(st.st_uid == 65534);
}

TEST_CASE("vnfsd: every READ is checked against its own caller, also after another caller's") {
  test_server srv(server_kind::vnfsd);
  ::chmod(srv.export_dir().c_str(), 0755);
  const auto path = srv.export_dir() / "data";
  std::ofstream(path) << "private";
  REQUIRE(::chown(path.c_str(), 1234, 567) == 0);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  test_session root(srv);
  auto ops = root.path_ops("data");
  ops.push_back(GETFH4args{});
  auto got = root.compound(ops);
  REQUIRE(got.status == nfsstat4::NFS4_OK);
  const nfs_fh4 fh = result_at<GETFH4res>(got, got.resarray.size() - 1).resok4.object;

  session_options owner_opts;
  owner_opts.uid = 1234;
  owner_opts.gid = 567;
  test_session owner(srv, owner_opts);
  session_options other_opts;
  other_opts.uid = 999;
  other_opts.gid = 999;
  test_session other(srv, other_opts);
  session_options member_opts = other_opts;
  member_opts.gids = {567};
  test_session member(srv, member_opts);
  // PUTFH of the same handle: the same object of the server's handle cache each time.
  auto read_as = [&](test_session& s) {
    auto r = s.compound({PUTFH4args{fh}, READ4args{stateid4::anonymous(), 0, 100}});
    return r.status == nfsstat4::NFS4_OK ? to_string(result_at<READ4res>(r, 2).resok4.data)
                                         : std::string(nfs4::status_name(r.status));
  };
  const std::string denied(nfs4::status_name(nfsstat4::NFS4ERR_ACCESS));
  CHECK(read_as(other) == denied);
  CHECK(read_as(owner) == "private");
  CHECK(read_as(other) == denied);
  CHECK(read_as(member) == "private");
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK(read_as(member) == denied);
  CHECK(read_as(owner) == "private");
  CHECK(read_as(root) == "private");
}

// vnfsd remembers, per file, the last caller whose READ it granted and the file's ctime
// then, and takes that grant again (no faccessat) while the ctime PUTFH reads is the same
// and settled (older than the clock's last tick). A chmod sets a new ctime, so it is
// honoured at the next READ. The pauses let each ctime settle, so that grants are indeed
// remembered and looked up.
TEST_CASE("vnfsd: a remembered READ grant is the caller's, and a chmod between two READs is honoured") {
  test_server srv(server_kind::vnfsd);
  ::chmod(srv.export_dir().c_str(), 0755);
  const auto path = srv.export_dir() / "data";
  std::ofstream(path) << "private";
  REQUIRE(::chown(path.c_str(), 1234, 567) == 0);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  auto settle = [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); };
  test_session root(srv);
  auto ops = root.path_ops("data");
  ops.push_back(GETFH4args{});
  auto got = root.compound(ops);
  REQUIRE(got.status == nfsstat4::NFS4_OK);
  const nfs_fh4 fh = result_at<GETFH4res>(got, got.resarray.size() - 1).resok4.object;
  session_options owner_opts;
  owner_opts.uid = 1234;
  owner_opts.gid = 567;
  test_session owner(srv, owner_opts);
  session_options other_opts;
  other_opts.uid = 999;
  other_opts.gid = 999;
  test_session other(srv, other_opts);
  session_options member_opts = other_opts;
  member_opts.gids = {567};
  test_session member(srv, member_opts);
  auto read_as = [&](test_session& s) {
    auto r = s.compound({PUTFH4args{fh}, READ4args{stateid4::anonymous(), 0, 100}}, false);
    return r.status == nfsstat4::NFS4_OK ? to_string(result_at<READ4res>(r, 2).resok4.data)
                                         : std::string(nfs4::status_name(r.status));
  };
  const std::string denied(nfs4::status_name(nfsstat4::NFS4ERR_ACCESS));
  settle();
  CHECK(read_as(member) == "private");  // granted, remembered
  CHECK(read_as(member) == "private");  // the remembered grant
  CHECK(read_as(other) == denied);      // not the remembered caller: checked, refused
  CHECK(read_as(member) == "private");
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK(read_as(member) == denied);  // the new ctime, not settled yet
  settle();
  CHECK(read_as(member) == denied);  // settled: the remembered grant is of the old ctime
  CHECK(read_as(owner) == "private");
  CHECK(read_as(owner) == "private");
  CHECK(read_as(member) == denied);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  settle();
  CHECK(read_as(member) == "private");
  CHECK(read_as(owner) == "private");  // the owner's grant is remembered now
  // A SETATTR of the mode between PUTFH and READ drops the ctime PUTFH read: READ checks
  // the new mode.
  const auto mode_args = [&](std::uint32_t mode) {
    SETATTR4args sa;
    sa.stateid = stateid4::anonymous();
    attributes a;
    a.mode = mode;
    sa.obj_attributes = encode_attributes(a);
    return sa;
  };
  auto r = owner.compound({PUTFH4args{fh}, mode_args(0200), READ4args{stateid4::anonymous(), 0, 100}}, false);
  CHECK(r.status == nfsstat4::NFS4ERR_ACCESS);
  REQUIRE(r.resarray.size() == 4);
  CHECK(status_of(r.resarray[2]) == nfsstat4::NFS4_OK);
}
