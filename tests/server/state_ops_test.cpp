// Open and lock state: OPEN (create modes, claims), OPEN_DOWNGRADE, CLOSE, LOCK, LOCKT,
// LOCKU, TEST_STATEID, FREE_STATEID — against vnfsd and, where RFC 8881 fixes the answer,
// NFS-Ganesha too. The open_state_table is also tested on its own (stale stateids, range
// arithmetic) where a server cannot be steered into the case.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "server/state/open_state_table.hpp"
#include "stateful_client.hpp"
#include "vnfs/rpc/auth.hpp"
#include "vnfs/test/blocking_channel.hpp"
#include "vnfs/nfs4/attributes.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;

namespace {

fattr4 mode_attr(mode4 m) {
  attributes a;
  a.mode = m;
  return encode_attributes(a);
}

OPEN4args open_nocreate(const nfs_client& c, std::string name, std::string_view owner,
                        std::uint32_t access, std::uint32_t deny = OPEN4_SHARE_DENY_NONE) {
  OPEN4args a;
  a.share_access = access;
  a.share_deny = deny;
  a.owner = c.owner(owner);
  a.openhow.opentype = opentype4::OPEN4_NOCREATE;
  a.claim.claim = open_claim_type4::CLAIM_NULL;
  a.claim.file = std::move(name);
  return a;
}

OPEN4args open_create(const nfs_client& c, std::string name, std::string_view owner,
                      std::uint32_t access, createmode4 mode, mode4 perm = 0644,
                      verifier4 verf = {}) {
  OPEN4args a = open_nocreate(c, std::move(name), owner, access);
  a.openhow.opentype = opentype4::OPEN4_CREATE;
  a.openhow.how.mode = mode;
  if (mode == createmode4::EXCLUSIVE4_1) {
    a.openhow.how.ch_createboth.cva_verf = verf;
    a.openhow.how.ch_createboth.cva_attrs = mode_attr(perm);
  } else if (mode == createmode4::EXCLUSIVE4) {
    a.openhow.how.createverf = verf;
  } else {
    a.openhow.how.createattrs = mode_attr(perm);
  }
  return a;
}

LOCK4args lock_new(nfs_lock_type4 t, offset4 off, length4 len, const stateid4& open_sid,
                   const state_owner4& lock_owner) {
  LOCK4args a;
  a.locktype = t;
  a.offset = off;
  a.length = len;
  a.locker.new_lock_owner = true;
  a.locker.open_owner.open_stateid = open_sid;
  a.locker.open_owner.lock_owner = lock_owner;
  return a;
}

LOCK4args lock_more(nfs_lock_type4 t, offset4 off, length4 len, const stateid4& lock_sid) {
  LOCK4args a;
  a.locktype = t;
  a.offset = off;
  a.length = len;
  a.locker.new_lock_owner = false;
  a.locker.lock_owner.lock_stateid = lock_sid;
  return a;
}

LOCKT4args lockt(nfs_lock_type4 t, offset4 off, length4 len, const state_owner4& owner) {
  LOCKT4args a;
  a.locktype = t;
  a.offset = off;
  a.length = len;
  a.owner = owner;
  return a;
}

LOCKU4args locku(offset4 off, length4 len, const stateid4& sid) {
  LOCKU4args a;
  a.locktype = nfs_lock_type4::WRITE_LT;
  a.lock_stateid = sid;
  a.offset = off;
  a.length = len;
  return a;
}

/// The file `name` opened (created if need be) by open-owner `owner`: {stateid, handle}.
std::pair<stateid4, nfs_fh4> open_file(nfs_client& c, const std::string& name, std::string_view owner,
                                       std::uint32_t access = OPEN4_SHARE_ACCESS_BOTH,
                                       std::uint32_t deny = OPEN4_SHARE_DENY_NONE) {
  OPEN4args a = open_create(c, name, owner, access, createmode4::UNCHECKED4);
  a.share_deny = deny;
  auto r = c.run({a, GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  return {c.at<OPEN4res>(r, 0).resok4.stateid, c.at<GETFH4res>(r, 1).resok4.object};
}

void write_local(const std::filesystem::path& p, std::string_view content) {
  std::ofstream(p, std::ios::binary) << content;
}

}  // namespace

TEST_CASE("OPEN creates, reports its state, and makes the file current") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  auto r = c.run({open_create(c, "f", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::GUARDED4, 0640),
                  GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const auto& o = c.at<OPEN4res>(r, 0).resok4;
  CHECK(o.stateid.seqid == 1);
  CHECK((o.rflags & OPEN4_RESULT_CONFIRM) == 0);  // never in NFSv4.1
  CHECK(o.delegation.delegation_type == open_delegation_type4::OPEN_DELEGATE_NONE);
  CHECK(o.attrset.test(FATTR4_MODE));
  CHECK(o.cinfo.before != o.cinfo.after);
  struct stat st {};
  REQUIRE(::stat((srv.export_dir() / wd / "f").c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0640);

  SECTION("a second OPEN by the same owner upgrades the same stateid") {
    auto r2 = c.run({open_nocreate(c, "f", "oo", OPEN4_SHARE_ACCESS_READ)});
    REQUIRE(r2.status == nfsstat4::NFS4_OK);
    const auto& sid2 = c.at<OPEN4res>(r2, 0).resok4.stateid;
    CHECK(sid2.other == o.stateid.other);
    CHECK(sid2.seqid == 2);
    SECTION("OPEN_DOWNGRADE increments it again") {
      OPEN_DOWNGRADE4args d{sid2, 0, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE};
      auto r3 = c.on(c.at<GETFH4res>(r, 1).resok4.object, {d});
      REQUIRE(r3.status == nfsstat4::NFS4_OK);
      const auto& sid3 = result_at<OPEN_DOWNGRADE4res>(r3, 2).resok4.open_stateid;
      CHECK(sid3.other == o.stateid.other);
      CHECK(sid3.seqid == 3);
      // Now read-only: a write through it is refused (RFC 8881 §18.32.4). NFS-Ganesha 4.3
      // keeps the access of before the downgrade and lets it through.
      if (kind == server_kind::vnfsd) {
        std::vector<std::byte> data(4, std::byte{'x'});
        auto w = c.on(c.at<GETFH4res>(r, 1).resok4.object,
                      {WRITE4args{sid3, 0, stable_how4::UNSTABLE4, data}});
        CHECK(w.status == nfsstat4::NFS4ERR_OPENMODE);
      }
    }
  }
}

TEST_CASE("OPEN GUARDED4 of an existing name is NFS4ERR_EXIST") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  write_local(srv.export_dir() / wd / "there", "abc");
  nfs_client c(srv, wd);
  auto r = c.run({open_create(c, "there", "oo", OPEN4_SHARE_ACCESS_READ, createmode4::GUARDED4)});
  CHECK(r.status == nfsstat4::NFS4ERR_EXIST);
  CHECK(c.status(r, 0) == nfsstat4::NFS4ERR_EXIST);
  CHECK(std::filesystem::file_size(srv.export_dir() / wd / "there") == 3);
}

TEST_CASE("OPEN UNCHECKED4 with size 0 truncates an existing file") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  write_local(srv.export_dir() / wd / "t", "abcdef");
  nfs_client c(srv, wd);
  OPEN4args a = open_nocreate(c, "t", "oo", OPEN4_SHARE_ACCESS_WRITE);
  a.openhow.opentype = opentype4::OPEN4_CREATE;
  a.openhow.how.mode = createmode4::UNCHECKED4;
  attributes z;
  z.size = 0;
  a.openhow.how.createattrs = encode_attributes(z);
  auto r = c.run({a});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(std::filesystem::file_size(srv.export_dir() / wd / "t") == 0);
}

TEST_CASE("OPEN EXCLUSIVE4_1: a replay with the same verifier returns the same file") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  const verifier4 v{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                    std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
  auto r1 = c.run({open_create(c, "x", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4_1,
                               0600, v),
                   GETFH4args{}});
  REQUIRE(r1.status == nfsstat4::NFS4_OK);
  const nfs_fh4 fh1 = c.at<GETFH4res>(r1, 1).resok4.object;
  struct stat st {};
  REQUIRE(::stat((srv.export_dir() / wd / "x").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);

  auto r2 = c.run({open_create(c, "x", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4_1,
                               0600, v),
                   GETFH4args{}});
  REQUIRE(r2.status == nfsstat4::NFS4_OK);
  CHECK(c.at<GETFH4res>(r2, 1).resok4.object == fh1);

  verifier4 other = v;
  other[0] = std::byte{9};
  auto r3 = c.run({open_create(c, "x", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4_1,
                               0600, other)});
  CHECK(r3.status == nfsstat4::NFS4ERR_EXIST);
}

TEST_CASE("OPEN EXCLUSIVE4: replay with the same verifier, EXIST with another") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  const verifier4 v{std::byte{8}, std::byte{7}, std::byte{6}, std::byte{5},
                    std::byte{4}, std::byte{3}, std::byte{2}, std::byte{1}};
  auto r1 = c.run({open_create(c, "e", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4,
                               0644, v),
                   GETFH4args{}});
  REQUIRE(r1.status == nfsstat4::NFS4_OK);
  auto r2 = c.run({open_create(c, "e", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4,
                               0644, v),
                   GETFH4args{}});
  REQUIRE(r2.status == nfsstat4::NFS4_OK);
  CHECK(c.at<GETFH4res>(r2, 1).resok4.object == c.at<GETFH4res>(r1, 1).resok4.object);
  verifier4 other = v;
  other[7] = std::byte{0};
  CHECK(c.run({open_create(c, "e", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4, 0644,
                           other)})
            .status == nfsstat4::NFS4ERR_EXIST);
}

TEST_CASE("vnfsd: after a WRITE, an EXCLUSIVE4_1 retry is no longer a replay") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  const verifier4 v{std::byte{1}, std::byte{1}, std::byte{2}, std::byte{3},
                    std::byte{5}, std::byte{8}, std::byte{13}, std::byte{21}};
  auto r1 = c.run({open_create(c, "w", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4_1,
                               0644, v),
                   WRITE4args{stateid4::current(), 0, stable_how4::UNSTABLE4,
                              to_byte_vector("data")}});
  REQUIRE(r1.status == nfsstat4::NFS4_OK);
  CHECK(c.run({open_create(c, "w", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::EXCLUSIVE4_1, 0644,
                           v)})
            .status == nfsstat4::NFS4ERR_EXIST);
}

TEST_CASE("OPEN of a directory or a symlink") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  std::filesystem::create_directory(srv.export_dir() / wd / "d");
  std::filesystem::create_symlink("d", srv.export_dir() / wd / "l");
  nfs_client c(srv, wd);
  CHECK(c.run({open_nocreate(c, "d", "oo", OPEN4_SHARE_ACCESS_READ)}).status ==
        nfsstat4::NFS4ERR_ISDIR);
  CHECK(c.run({open_nocreate(c, "l", "oo", OPEN4_SHARE_ACCESS_READ)}).status ==
        nfsstat4::NFS4ERR_SYMLINK);
  CHECK(c.run({open_nocreate(c, "missing", "oo", OPEN4_SHARE_ACCESS_READ)}).status ==
        nfsstat4::NFS4ERR_NOENT);
}

TEST_CASE("OPEN CLAIM_FH opens the current filehandle") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  write_local(srv.export_dir() / wd / "byfh", "hello");
  nfs_client c(srv, wd);
  auto r = c.run({LOOKUP4args{"byfh"}, GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const nfs_fh4 fh = c.at<GETFH4res>(r, 1).resok4.object;
  OPEN4args a = open_nocreate(c, "", "oo", OPEN4_SHARE_ACCESS_READ);
  a.claim.claim = open_claim_type4::CLAIM_FH;
  auto r2 = c.on(fh, {a, READ4args{stateid4::current(), 0, 100}});
  REQUIRE(r2.status == nfsstat4::NFS4_OK);
  CHECK(to_string(result_at<READ4res>(r2, 3).resok4.data) == "hello");
}

TEST_CASE("share reservations: a deny mode refuses other owners' opens") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  auto [sid_a, fh] = open_file(c, "shared", "owner-a", OPEN4_SHARE_ACCESS_READ,
                               OPEN4_SHARE_DENY_WRITE);
  // Another owner asking for write access is denied ...
  auto r = c.run({open_nocreate(c, "shared", "owner-b", OPEN4_SHARE_ACCESS_WRITE)});
  CHECK(r.status == nfsstat4::NFS4ERR_SHARE_DENIED);
  // ... read access is fine, but denying read to owner-a (who reads) is not.
  CHECK(c.run({open_nocreate(c, "shared", "owner-b", OPEN4_SHARE_ACCESS_READ)}).status ==
        nfsstat4::NFS4_OK);
  CHECK(c.run({open_nocreate(c, "shared", "owner-c", OPEN4_SHARE_ACCESS_READ,
                             OPEN4_SHARE_DENY_READ)})
            .status == nfsstat4::NFS4ERR_SHARE_DENIED);
  // A second client is an other owner too.
  nfs_client c2(srv, wd);
  CHECK(c2.run({open_nocreate(c2, "shared", "owner-a", OPEN4_SHARE_ACCESS_BOTH)}).status ==
        nfsstat4::NFS4ERR_SHARE_DENIED);
  // After owner-a's CLOSE the write open succeeds.
  auto cl = c.on(fh, {CLOSE4args{0, sid_a}});
  REQUIRE(cl.status == nfsstat4::NFS4_OK);
  CHECK(c2.run({open_nocreate(c2, "shared", "owner-a", OPEN4_SHARE_ACCESS_BOTH)}).status ==
        nfsstat4::NFS4_OK);
}

TEST_CASE("byte-range lock conflicts report the conflicting lock") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  auto [sid_a, fh] = open_file(c, "locked", "open-a");
  auto [sid_b, fh_b] = open_file(c, "locked", "open-b");
  REQUIRE(fh_b == fh);

  auto la = c.on(fh, {lock_new(nfs_lock_type4::WRITE_LT, 100, 50, sid_a, c.owner("lock-a"))});
  REQUIRE(la.status == nfsstat4::NFS4_OK);
  const stateid4 lsid = result_at<LOCK4res>(la, 2).resok4.lock_stateid;
  CHECK(lsid.seqid == 1);
  CHECK(lsid.other != sid_a.other);

  auto lb = c.on(fh, {lock_new(nfs_lock_type4::READ_LT, 120, 1000, sid_b, c.owner("lock-b"))});
  REQUIRE(lb.status == nfsstat4::NFS4ERR_DENIED);
  const LOCK4denied& d = result_at<LOCK4res>(lb, 2).denied;
  CHECK(d.offset == 100);
  CHECK(d.length == 50);
  CHECK(d.locktype == nfs_lock_type4::WRITE_LT);
  CHECK(d.owner.clientid == c.s.client_id());
  CHECK(d.owner.owner == to_byte_vector("lock-a"));

  // Outside the range, and read locks among themselves, do not conflict.
  auto lb2 = c.on(fh, {lock_new(nfs_lock_type4::READ_LT, 150, NFS4_UINT64_MAX, sid_b,
                                c.owner("lock-b"))});
  REQUIRE(lb2.status == nfsstat4::NFS4_OK);
  CHECK(result_at<LOCK4res>(lb2, 2).resok4.lock_stateid.seqid == 1);

  SECTION("LOCKT tests without locking") {
    auto t = c.on(fh, {lockt(nfs_lock_type4::WRITE_LT, 0, 101, c.owner("lock-z"))});
    REQUIRE(t.status == nfsstat4::NFS4ERR_DENIED);
    CHECK(result_at<LOCKT4res>(t, 2).denied.offset == 100);
    CHECK(result_at<LOCKT4res>(t, 2).denied.length == 50);
    // The owner's own lock never conflicts.
    CHECK(c.on(fh, {lockt(nfs_lock_type4::WRITE_LT, 0, 150, c.owner("lock-a"))}).status ==
          nfsstat4::NFS4_OK);
    // A read lock to end of file conflicts with lock-a's write lock, and reports lock-b's
    // read lock only to a writer.
    auto t2 = c.on(fh, {lockt(nfs_lock_type4::WRITE_LT, 1000, 1, c.owner("lock-z"))});
    REQUIRE(t2.status == nfsstat4::NFS4ERR_DENIED);
    CHECK(result_at<LOCKT4res>(t2, 2).denied.offset == 150);
    // A lock to end of file has length NFS4_UINT64_MAX (RFC 8881 §18.10.4: all ones);
    // NFS-Ganesha 4.3 reports its internal "to EOF" length 0 instead.
    if (kind == server_kind::vnfsd)
      CHECK(result_at<LOCKT4res>(t2, 2).denied.length == NFS4_UINT64_MAX);
    CHECK(result_at<LOCKT4res>(t2, 2).denied.locktype == nfs_lock_type4::READ_LT);
    CHECK(c.on(fh, {lockt(nfs_lock_type4::READ_LT, 1000, 1, c.owner("lock-z"))}).status ==
          nfsstat4::NFS4_OK);
  }
  SECTION("a zero length is invalid") {
    CHECK(c.on(fh, {lockt(nfs_lock_type4::READ_LT, 0, 0, c.owner("lock-z"))}).status ==
          nfsstat4::NFS4ERR_INVAL);
  }
}

TEST_CASE("LOCKU splits a range and increments the lock stateid") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  auto [sid, fh] = open_file(c, "split", "open-a");
  auto l = c.on(fh, {lock_new(nfs_lock_type4::WRITE_LT, 0, 100, sid, c.owner("lock-a"))});
  REQUIRE(l.status == nfsstat4::NFS4_OK);
  const stateid4 lsid = result_at<LOCK4res>(l, 2).resok4.lock_stateid;
  auto u = c.on(fh, {locku(40, 20, lsid)});
  REQUIRE(u.status == nfsstat4::NFS4_OK);
  const stateid4 lsid2 = result_at<LOCKU4res>(u, 2).lock_stateid;
  CHECK(lsid2.other == lsid.other);
  CHECK(lsid2.seqid == 2);

  const auto other = c.owner("lock-z");
  CHECK(c.on(fh, {lockt(nfs_lock_type4::WRITE_LT, 40, 20, other)}).status == nfsstat4::NFS4_OK);
  auto lo = c.on(fh, {lockt(nfs_lock_type4::WRITE_LT, 39, 1, other)});
  REQUIRE(lo.status == nfsstat4::NFS4ERR_DENIED);
  CHECK(result_at<LOCKT4res>(lo, 2).denied.offset == 0);
  CHECK(result_at<LOCKT4res>(lo, 2).denied.length == 40);
  auto hi = c.on(fh, {lockt(nfs_lock_type4::WRITE_LT, 60, 1, other)});
  REQUIRE(hi.status == nfsstat4::NFS4ERR_DENIED);
  CHECK(result_at<LOCKT4res>(hi, 2).denied.offset == 60);
  CHECK(result_at<LOCKT4res>(hi, 2).denied.length == 40);

  // A further LOCK with the lock stateid (seqid 0 = current) extends the owner's locks.
  auto l2 = c.on(fh, {lock_more(nfs_lock_type4::WRITE_LT, 45, 5, {0, lsid.other})});
  REQUIRE(l2.status == nfsstat4::NFS4_OK);
  CHECK(result_at<LOCK4res>(l2, 2).resok4.lock_stateid.seqid == 3);
  CHECK(c.on(fh, {lockt(nfs_lock_type4::READ_LT, 47, 1, other)}).status ==
        nfsstat4::NFS4ERR_DENIED);
  // The superseded seqid is old.
  CHECK(c.on(fh, {locku(0, 1, lsid)}).status == nfsstat4::NFS4ERR_OLD_STATEID);
}

TEST_CASE("CLOSE with locks held, FREE_STATEID of lock stateids") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  auto [sid, fh] = open_file(c, "held", "open-a");
  auto l = c.on(fh, {lock_new(nfs_lock_type4::READ_LT, 0, NFS4_UINT64_MAX, sid,
                              c.owner("lock-a"))});
  REQUIRE(l.status == nfsstat4::NFS4_OK);
  const stateid4 lsid = result_at<LOCK4res>(l, 2).resok4.lock_stateid;

  CHECK(c.on(fh, {CLOSE4args{0, sid}}).status == nfsstat4::NFS4ERR_LOCKS_HELD);
  CHECK(c.s.compound({FREE_STATEID4args{lsid}}).status == nfsstat4::NFS4ERR_LOCKS_HELD);

  auto u = c.on(fh, {locku(0, NFS4_UINT64_MAX, lsid)});
  REQUIRE(u.status == nfsstat4::NFS4_OK);
  const stateid4 lsid2 = result_at<LOCKU4res>(u, 2).lock_stateid;
  auto f = c.s.compound({FREE_STATEID4args{lsid2}});
  CHECK(f.status == nfsstat4::NFS4_OK);
  auto t = c.s.compound({TEST_STATEID4args{{lsid2}}});
  REQUIRE(t.status == nfsstat4::NFS4_OK);
  CHECK(result_at<TEST_STATEID4res>(t, 1).resok4.tsr_status_codes ==
        std::vector<nfsstat4>{nfsstat4::NFS4ERR_BAD_STATEID});

  auto cl = c.on(fh, {CLOSE4args{0, sid}});
  CHECK(cl.status == nfsstat4::NFS4_OK);
  // The open stateid is gone (NFS-Ganesha 4.3 answers a second CLOSE with NFS4_OK).
  if (kind == server_kind::vnfsd)
    CHECK(c.on(fh, {CLOSE4args{0, sid}}).status == nfsstat4::NFS4ERR_BAD_STATEID);
  CHECK(c.on(fh, {READ4args{sid, 0, 1}}).status == nfsstat4::NFS4ERR_BAD_STATEID);
}

TEST_CASE("TEST_STATEID reports each stateid's status") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  auto [sid1, fh] = open_file(c, "ts", "open-a", OPEN4_SHARE_ACCESS_READ);
  auto up = c.run({open_nocreate(c, "ts", "open-a", OPEN4_SHARE_ACCESS_WRITE)});
  REQUIRE(up.status == nfsstat4::NFS4_OK);
  const stateid4 sid2 = c.at<OPEN4res>(up, 0).resok4.stateid;
  REQUIRE(sid2.seqid == 2);
  stateid4 bad = sid2;
  bad.other[11] ^= std::byte{0x80};
  bad.other[10] ^= std::byte{0x5a};

  auto t = c.s.compound({TEST_STATEID4args{{sid2, sid1, bad, stateid4::anonymous()}}});
  REQUIRE(t.status == nfsstat4::NFS4_OK);
  CHECK(result_at<TEST_STATEID4res>(t, 1).resok4.tsr_status_codes ==
        std::vector<nfsstat4>{nfsstat4::NFS4_OK, nfsstat4::NFS4ERR_OLD_STATEID,
                              nfsstat4::NFS4ERR_BAD_STATEID, nfsstat4::NFS4ERR_BAD_STATEID});

  // Another client may not use (or test) this client's stateids.
  if (kind == server_kind::vnfsd) {
    nfs_client c2(srv, wd);
    auto t2 = c2.s.compound({TEST_STATEID4args{{sid2}}});
    REQUIRE(t2.status == nfsstat4::NFS4_OK);
    CHECK(result_at<TEST_STATEID4res>(t2, 1).resok4.tsr_status_codes ==
          std::vector<nfsstat4>{nfsstat4::NFS4ERR_BAD_STATEID});
  }
}

TEST_CASE("a forged or unknown stateid is NFS4ERR_BAD_STATEID") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  nfs_client c(srv, wd);
  auto [sid, fh] = open_file(c, "bs", "open-a");
  stateid4 bad = sid;
  bad.other[11] ^= std::byte{0x80};
  bad.other[10] ^= std::byte{0x5a};
  CHECK(c.on(fh, {READ4args{bad, 0, 10}}).status == nfsstat4::NFS4ERR_BAD_STATEID);
  // NFS-Ganesha 4.3 closes the owner's open whatever the stateid's other field says.
  if (kind == server_kind::vnfsd)
    CHECK(c.on(fh, {CLOSE4args{0, bad}}).status == nfsstat4::NFS4ERR_BAD_STATEID);
  stateid4 future = sid;
  future.seqid = 7;
  CHECK(c.on(fh, {READ4args{future, 0, 10}}).status == nfsstat4::NFS4ERR_BAD_STATEID);
  // The current stateid when none is set.
  CHECK(c.on(fh, {READ4args{stateid4::current(), 0, 10}}).status ==
        nfsstat4::NFS4ERR_BAD_STATEID);
}

TEST_CASE("vnfsd: stateids of an earlier instance are stale") {
  test_server srv(server_kind::vnfsd);  // its own: restarted
  ::chmod(srv.export_dir().c_str(), 0755);
  const std::string wd = new_workdir(srv, "so");
  stateid4 sid;
  nfs_fh4 fh;
  {
    nfs_client c(srv, wd);
    std::tie(sid, fh) = open_file(c, "st", "open-a");
  }
  srv.restart();
  nfs_client c(srv, wd);
  CHECK(c.on(fh, {READ4args{sid, 0, 10}}).status == nfsstat4::NFS4ERR_STALE_STATEID);
}

TEST_CASE("identity: files are created and checked as the AUTH_SYS caller") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string wd = new_workdir(srv, "so");
  write_local(srv.export_dir() / wd / "private", "secret");
  REQUIRE(::chmod((srv.export_dir() / wd / "private").c_str(), 0600) == 0);

  session_options o;
  o.uid = 1000;
  o.gid = 1000;
  nfs_client c(srv, wd, o);
  auto r = c.run({open_create(c, "mine", "oo", OPEN4_SHARE_ACCESS_BOTH, createmode4::GUARDED4,
                              0444)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  struct stat st {};
  REQUIRE(::stat((srv.export_dir() / wd / "mine").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
  CHECK(st.st_gid == 1000);
  CHECK((st.st_mode & 07777) == 0444);

  CHECK(c.run({open_nocreate(c, "private", "oo", OPEN4_SHARE_ACCESS_READ)}).status ==
        nfsstat4::NFS4ERR_ACCESS);
  // The creator's read-only file cannot be reopened for writing.
  CHECK(c.run({open_nocreate(c, "mine", "o2", OPEN4_SHARE_ACCESS_WRITE)}).status ==
        nfsstat4::NFS4ERR_ACCESS);
}

// ---- the table on its own ----------------------------------------------------------------

TEST_CASE("open_state_table: stale, bad and old stateids; release_client") {
  using vnfs::server::open_state_table;
  using vnfs::server::file_key;
  open_state_table t1(0x01020304), t2(0x0a0b0c0d);
  open_state_table::open_request req;
  req.client = 7;
  req.owner = to_byte_vector("o");
  req.file = file_key{1, 2};
  req.access = OPEN4_SHARE_ACCESS_READ;
  stateid4 s;
  REQUIRE(t1.open(req, s) == nfsstat4::NFS4_OK);
  CHECK(s.seqid == 1);
  CHECK(s.other[0] == std::byte{1});
  CHECK(s.other[3] == std::byte{4});
  CHECK(t1.test(7, s) == nfsstat4::NFS4_OK);
  CHECK(t2.test(7, s) == nfsstat4::NFS4ERR_STALE_STATEID);
  CHECK(t1.test(8, s) == nfsstat4::NFS4ERR_BAD_STATEID);
  CHECK(t1.test(7, {0, s.other}) == nfsstat4::NFS4_OK);
  CHECK(t1.test(7, {2, s.other}) == nfsstat4::NFS4ERR_BAD_STATEID);

  open_state_table::lock_request lr;
  lr.client = 7;
  lr.file = req.file;
  lr.type = nfs_lock_type4::WRITE_LT;
  lr.offset = NFS4_UINT64_MAX - 10;
  lr.length = 11;  // one byte past 2^64 - 1
  lr.new_lock_owner = true;
  lr.open_stateid = s;
  lr.lock_owner = to_byte_vector("l");
  stateid4 ls;
  LOCK4denied d;
  CHECK(t1.lock(lr, ls, d) == nfsstat4::NFS4ERR_INVAL);
  lr.length = 10;
  REQUIRE(t1.lock(lr, ls, d) == nfsstat4::NFS4_OK);
  CHECK(t1.lock_state_count() == 1);

  t1.release_client(7);
  CHECK(t1.open_count() == 0);
  CHECK(t1.lock_state_count() == 0);
  CHECK(t1.test(7, s) == nfsstat4::NFS4ERR_BAD_STATEID);
}

TEST_CASE("open_state_table: a lock-owner's ranges merge and change type") {
  using vnfs::server::open_state_table;
  using vnfs::server::file_key;
  open_state_table t(0x11111111);
  open_state_table::open_request req;
  req.client = 1;
  req.owner = to_byte_vector("o");
  req.file = file_key{1, 1};
  req.access = OPEN4_SHARE_ACCESS_BOTH;
  stateid4 s;
  REQUIRE(t.open(req, s) == nfsstat4::NFS4_OK);
  open_state_table::lock_request lr;
  lr.client = 1;
  lr.file = req.file;
  lr.type = nfs_lock_type4::READ_LT;
  lr.offset = 0;
  lr.length = 10;
  lr.new_lock_owner = true;
  lr.open_stateid = s;
  lr.lock_owner = to_byte_vector("l");
  stateid4 ls;
  LOCK4denied d;
  REQUIRE(t.lock(lr, ls, d) == nfsstat4::NFS4_OK);
  lr.new_lock_owner = false;
  lr.lock_stateid = ls;
  lr.offset = 10;  // adjacent: merged into [0, 20)
  REQUIRE(t.lock(lr, ls, d) == nfsstat4::NFS4_OK);
  lr.lock_stateid = ls;
  lr.type = nfs_lock_type4::WRITE_LT;  // [5, 8) becomes a write lock
  lr.offset = 5;
  lr.length = 3;
  REQUIRE(t.lock(lr, ls, d) == nfsstat4::NFS4_OK);
  CHECK(ls.seqid == 3);

  const auto other = to_byte_vector("x");
  CHECK(t.test_lock(1, other, req.file, nfs_lock_type4::READ_LT, 0, 20, d) ==
        nfsstat4::NFS4ERR_DENIED);
  CHECK(d.offset == 5);
  CHECK(d.length == 3);
  CHECK(d.locktype == nfs_lock_type4::WRITE_LT);
  CHECK(t.test_lock(1, other, req.file, nfs_lock_type4::READ_LT, 8, 100, d) == nfsstat4::NFS4_OK);
  CHECK(t.test_lock(1, other, req.file, nfs_lock_type4::WRITE_LT, 8, 100, d) ==
        nfsstat4::NFS4ERR_DENIED);
  CHECK(d.offset == 8);
  CHECK(d.length == 12);
  CHECK(d.locktype == nfs_lock_type4::READ_LT);
}
