// Open files and attributes where RFC 8881 (or the Linux server, where the RFC leaves it
// open) fixes the answer: a file renamed over while open, OPEN's delegation wants, SETATTR
// on a symlink — against vnfsd and NFS-Ganesha. Where Ganesha 4.3 answers otherwise than
// the RFC, the test asserts Ganesha's actual answer and says so.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "stateful_client.hpp"
#include "vnfs/nfs4/attributes.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;

namespace {

void write_local(const std::filesystem::path& p, std::string_view content) {
  std::ofstream(p, std::ios::binary) << content;
}

std::string read_local(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

OPEN4args open_existing(const nfs_client& c, std::string name, std::uint32_t access) {
  OPEN4args a;
  a.share_access = access;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner = c.owner("open-conformance");
  a.openhow.opentype = opentype4::OPEN4_NOCREATE;
  a.claim.claim = open_claim_type4::CLAIM_NULL;
  a.claim.file = std::move(name);
  return a;
}

}  // namespace

TEST_CASE("RFC 8881 §9.1.4, §18.26: RENAME over an open file keeps its open stateid usable") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string dir = new_workdir(srv, "rn_");
  write_local(srv.export_dir() / dir / "target", "old-data");
  write_local(srv.export_dir() / dir / "source", "new");
  nfs_client c(srv, dir);

  auto o = c.run({open_existing(c, "target", OPEN4_SHARE_ACCESS_BOTH), GETFH4args{}});
  REQUIRE(o.status == nfsstat4::NFS4_OK);
  const stateid4 sid = c.at<OPEN4res>(o, 0).resok4.stateid;
  const nfs_fh4 fh = c.at<GETFH4res>(o, 1).resok4.object;

  // "source" replaces "target": the open file has no name any more.
  auto rn = c.run({SAVEFH4args{}, RENAME4args{"source", "target"}});
  REQUIRE(rn.status == nfsstat4::NFS4_OK);
  CHECK(read_local(srv.export_dir() / dir / "target") == "new");

  // Reads and writes through the open stateid still reach the open (now unlinked) file.
  auto rd = c.on(fh, {READ4args{sid, 0, 100}});
  REQUIRE(rd.status == nfsstat4::NFS4_OK);
  CHECK(to_string(result_at<READ4res>(rd, 2).resok4.data) == "old-data");
  const auto xyz = to_byte_vector("XYZ");
  auto wr = c.on(fh, {WRITE4args{sid, 0, stable_how4::FILE_SYNC4, xyz}, READ4args{sid, 0, 100}});
  REQUIRE(wr.status == nfsstat4::NFS4_OK);
  CHECK(to_string(result_at<READ4res>(wr, 3).resok4.data) == "XYZ-data");
  // GETATTR works too, and the file has no links.
  auto ga = c.on(fh, {GETATTR4args{bitmap4::of({FATTR4_NUMLINKS})}});
  REQUIRE(ga.status == nfsstat4::NFS4_OK);
  CHECK(decode_attributes(result_at<GETATTR4res>(ga, 2).resok4.obj_attributes).numlinks == 0u);
  // The new "target" is untouched.
  CHECK(read_local(srv.export_dir() / dir / "target") == "new");

  auto cl = c.on(fh, {CLOSE4args{0, sid}});
  CHECK(cl.status == nfsstat4::NFS4_OK);
  if (kind == server_kind::vnfsd) {
    // Once closed, nothing holds the file: its handle is stale (§4.2.3).
    CHECK(c.on(fh, {GETATTR4args{bitmap4::of({FATTR4_SIZE})}}).status == nfsstat4::NFS4ERR_STALE);
  }
}

TEST_CASE("RFC 8881 §18.16.3: OPEN's delegation wants and the why-not of NONE_EXT") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string dir = new_workdir(srv, "want_");
  write_local(srv.export_dir() / dir / "f", "x");
  nfs_client c(srv, dir);

  auto open_with = [&](std::uint32_t want) {
    auto r = c.run({open_existing(c, "f", OPEN4_SHARE_ACCESS_READ | want)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    open_delegation4 d = c.at<OPEN4res>(r, 0).resok4.delegation;
    auto cl = c.run({LOOKUP4args{"f"}, CLOSE4args{0, c.at<OPEN4res>(r, 0).resok4.stateid}});
    CHECK(cl.status == nfsstat4::NFS4_OK);
    return d;
  };

  SECTION("WANT_NO_DELEG: OPEN_DELEGATE_NONE_EXT, WND4_NOT_WANTED") {
    auto d = open_with(OPEN4_SHARE_ACCESS_WANT_NO_DELEG);
    CHECK(d.delegation_type == open_delegation_type4::OPEN_DELEGATE_NONE_EXT);
    CHECK(d.od_whynone.ond_why == why_no_delegation4::WND4_NOT_WANTED);
  }
  SECTION("no preference: plain OPEN_DELEGATE_NONE (no delegation is granted here)") {
    auto d = open_with(OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE);
    CHECK(d.delegation_type == open_delegation_type4::OPEN_DELEGATE_NONE);
  }
  // Neither server grants a delegation here; both answer a wanted one with NONE_EXT. The
  // reasons differ: vnfsd says WND4_RESOURCE (as the Linux server when it cannot give one);
  // NFS-Ganesha 4.3 (VFS) says WND4_NOT_SUPP_FTYPE for a regular file.
  const auto refused = kind == server_kind::vnfsd ? why_no_delegation4::WND4_RESOURCE
                                                  : why_no_delegation4::WND4_NOT_SUPP_FTYPE;
  SECTION("WANT_READ_DELEG / WANT_WRITE_DELEG / WANT_ANY_DELEG: NONE_EXT and a reason") {
    for (std::uint32_t want : {OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
                               OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
                               OPEN4_SHARE_ACCESS_WANT_ANY_DELEG}) {
      INFO("want " << want);
      auto d = open_with(want);
      CHECK(d.delegation_type == open_delegation_type4::OPEN_DELEGATE_NONE_EXT);
      CHECK(d.od_whynone.ond_why == refused);
      CHECK_FALSE(d.od_whynone.ond_server_will_signal_avail);
    }
  }
  SECTION("WANT_CANCEL: NONE_EXT, WND4_CANCELLED") {
    auto d = open_with(OPEN4_SHARE_ACCESS_WANT_CANCEL);
    CHECK(d.delegation_type == open_delegation_type4::OPEN_DELEGATE_NONE_EXT);
    // NFS-Ganesha 4.3 answers WND4_NOT_WANTED instead.
    CHECK(d.od_whynone.ond_why == (kind == server_kind::vnfsd
                                       ? why_no_delegation4::WND4_CANCELLED
                                       : why_no_delegation4::WND4_NOT_WANTED));
  }
  SECTION("an undefined want value") {
    auto r = c.run({open_existing(c, "f", OPEN4_SHARE_ACCESS_READ | 0x0700)});
    // vnfsd refuses it with NFS4ERR_INVAL; NFS-Ganesha 4.3 ignores it and opens.
    CHECK(r.status == (kind == server_kind::vnfsd ? nfsstat4::NFS4ERR_INVAL : nfsstat4::NFS4_OK));
  }
}

TEST_CASE("SETATTR of mode on a symlink succeeds and changes nothing (as the Linux server)") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string dir = new_workdir(srv, "sl_");
  const auto link = srv.export_dir() / dir / "l";
  std::filesystem::create_symlink("nowhere", link);
  struct stat before {};
  REQUIRE(::lstat(link.c_str(), &before) == 0);
  nfs_client c(srv, dir);

  attributes a;
  a.mode = 0600;
  auto r = c.run({LOOKUP4args{"l"}, SETATTR4args{stateid4::anonymous(), encode_attributes(a)}});
  CHECK(r.status == nfsstat4::NFS4_OK);
  struct stat after {};
  REQUIRE(::lstat(link.c_str(), &after) == 0);
  CHECK((after.st_mode & 07777) == (before.st_mode & 07777));
  CHECK(std::filesystem::read_symlink(link) == "nowhere");

  // The link's own times can be set, as on the Linux server. NFS-Ganesha 4.3 answers OK
  // but leaves them unchanged.
  attributes t;
  t.time_modify_set = settime4{time_how4::SET_TO_CLIENT_TIME4, nfstime4{1000000, 0}};
  auto rt = c.run({LOOKUP4args{"l"}, SETATTR4args{stateid4::anonymous(), encode_attributes(t)}});
  CHECK(rt.status == nfsstat4::NFS4_OK);
  struct stat timed {};
  REQUIRE(::lstat(link.c_str(), &timed) == 0);
  if (kind == server_kind::vnfsd)
    CHECK(timed.st_mtime == 1000000);
  else
    CHECK(timed.st_mtime == before.st_mtime);
}

TEST_CASE("RFC 8881 §18.51.3: a non-reclaim OPEN before RECLAIM_COMPLETE (known gap)") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string dir = new_workdir(srv, "rc_");
  test_session s(srv);  // a new client ID that has not sent RECLAIM_COMPLETE
  auto ops = s.root_ops();
  ops.push_back(LOOKUP4args{dir});
  OPEN4args a;
  a.share_access = OPEN4_SHARE_ACCESS_BOTH;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner = {s.client_id(), to_byte_vector("before-rc")};
  a.openhow.opentype = opentype4::OPEN4_CREATE;
  a.openhow.how.mode = createmode4::UNCHECKED4;
  a.claim.claim = open_claim_type4::CLAIM_NULL;
  a.claim.file = "f";
  ops.push_back(a);
  auto r = s.compound(ops);
  // §18.51.3 says NFS4ERR_GRACE, and NFS-Ganesha 4.3 answers so even with Graceless = true.
  // vnfsd does not enforce it yet and lets the OPEN through: tools/demo, an existing user
  // of vnfsd, opens files without RECLAIM_COMPLETE (docs/server_state.md, "Not done").
  if (kind == server_kind::ganesha)
    CHECK(r.status == nfsstat4::NFS4ERR_GRACE);
  else
    CHECK(r.status == nfsstat4::NFS4_OK);
}
