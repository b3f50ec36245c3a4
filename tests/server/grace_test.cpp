// vnfsd after a restart: the stable client records and the grace period (RFC 8881 §8.4.2,
// §8.4.2.1, §18.16.3 CLAIM_PREVIOUS, §18.10.3 LOCK reclaim, §18.51 RECLAIM_COMPLETE).
//
// Each test runs its own vnfsd and "crashes" clients by restarting the server under them:
// a session that is forgotten (never destroyed) keeps its client's record, as a client that
// is cut off by the restart would. vnfsd only (NFS-Ganesha is run Graceless by the tests).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/test_session.hpp"
#include "vnfs/test/child_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* records_dir = ".vnfsd-recovery";

/// A session of client owner `owner` on the vnfsd at host:port.
std::unique_ptr<test_session> session(const vnfsd_process& v, const std::string& owner) {
  session_options o;
  o.owner = owner;
  return std::make_unique<test_session>(v.host(), v.port(), std::vector<std::string>{}, o);
}

open_claim4 by_name(const std::string& name) {
  open_claim4 c;
  c.claim = open_claim_type4::CLAIM_NULL;
  c.file = name;
  return c;
}

open_claim4 previous() {
  open_claim4 c;
  c.claim = open_claim_type4::CLAIM_PREVIOUS;
  c.delegate_type = open_delegation_type4::OPEN_DELEGATE_NONE;
  return c;
}

OPEN4args open_args(const test_session& s, const std::string& owner, open_claim4 claim,
                    std::uint32_t access = OPEN4_SHARE_ACCESS_BOTH) {
  OPEN4args o;
  o.share_access = access;
  o.share_deny = OPEN4_SHARE_DENY_NONE;
  o.owner = {s.client_id(), to_byte_vector(owner)};
  o.openhow.opentype = opentype4::OPEN4_NOCREATE;
  o.claim = std::move(claim);
  return o;
}

/// OPEN of `name` in the export root by name (CLAIM_NULL): its status.
nfsstat4 open_by_name(test_session& s, const std::string& name) {
  auto r = s.compound({PUTROOTFH4args{}, open_args(s, "oo", by_name(name))});
  return status_at(r, 2);
}

/// A write lock of bytes 0-9 through a new lock-owner of the open `sid`.
LOCK4args write_lock(const test_session& s, const stateid4& sid, bool reclaim) {
  LOCK4args l;
  l.locktype = nfs_lock_type4::WRITE_LT;
  l.reclaim = reclaim;
  l.offset = 0;
  l.length = 10;
  l.locker.new_lock_owner = true;
  l.locker.open_owner.open_stateid = sid;
  l.locker.open_owner.lock_owner = {s.client_id(), to_byte_vector("lo")};
  return l;
}

struct opened {
  nfs_fh4 fh;
  stateid4 sid;
};

/// Opens `name` (which exists) for reading and writing; REQUIREs success.
opened open_file(test_session& s, const std::string& name) {
  auto r = s.compound({PUTROOTFH4args{}, open_args(s, "oo", by_name(name)), GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  return {result_at<GETFH4res>(r, 3).resok4.object, result_at<OPEN4res>(r, 2).resok4.stateid};
}

std::string hex(const std::string& s) {
  std::ostringstream out;
  for (unsigned char c : s) out << "0123456789abcdef"[c >> 4] << "0123456789abcdef"[c & 15];
  return out.str();
}

/// The lines of the stable client records in `dir` ("" if there is no file).
std::string records_in(const fs::path& dir) {
  std::ifstream in(dir / "clients", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The record line of `owner` as AUTH_SYS root (the sessions' credential).
std::string record_of(const std::string& owner) { return "1 0 0 " + hex(owner) + "\n"; }

void write_local(const fs::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
}

}  // namespace

TEST_CASE("RFC 8881 §8.4.2.1: a client with state is on stable storage before it gets it") {
  temp_dir dir("vnfs-grace-records");
  write_local(dir.path() / "f", "hello");
  vnfsd_process v(dir.path());
  auto a = session(v, "grace-a");
  auto idle = session(v, "grace-idle");
  CHECK(a->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  CHECK(records_in(dir.path() / records_dir).empty());  // nothing held yet, nothing written
  open_file(*a, "f");
  CHECK(records_in(dir.path() / records_dir) == "vnfsd-clients 1\n" + record_of("grace-a"));
  // A client that holds nothing is not recorded; one that goes is removed.
  a.reset();  // DESTROY_SESSION, DESTROY_CLIENTID (the open goes with the client)
  CHECK(records_in(dir.path() / records_dir) == "vnfsd-clients 1\n");
}

TEST_CASE("vnfsd: the records in the export root are invisible and untouchable to clients") {
  temp_dir dir("vnfs-grace-hidden");
  write_local(dir.path() / "f", "hello");
  vnfsd_process v(dir.path());
  auto a = session(v, "grace-hidden");
  CHECK(a->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  open_file(*a, "f");
  REQUIRE(fs::is_directory(dir.path() / records_dir));

  CHECK(a->compound({PUTROOTFH4args{}, LOOKUP4args{records_dir}}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(open_by_name(*a, records_dir) == nfsstat4::NFS4ERR_NOENT);
  CHECK(a->compound({PUTROOTFH4args{}, REMOVE4args{records_dir}}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(a->compound({PUTROOTFH4args{}, SAVEFH4args{}, RENAME4args{records_dir, "x"}}).status ==
        nfsstat4::NFS4ERR_NOENT);
  CHECK(a->compound({PUTROOTFH4args{}, SAVEFH4args{}, RENAME4args{"f", records_dir}}).status ==
        nfsstat4::NFS4ERR_ACCESS);
  CREATE4args mk;
  mk.objtype.type = nfs_ftype4::NF4DIR;
  mk.objname = records_dir;
  CHECK(a->compound({PUTROOTFH4args{}, mk}).status == nfsstat4::NFS4ERR_ACCESS);
  // Elsewhere the name is an ordinary one.
  mk.objname = "sub";
  REQUIRE(a->compound({PUTROOTFH4args{}, mk}).status == nfsstat4::NFS4_OK);
  mk.objname = records_dir;
  CHECK(a->compound({PUTROOTFH4args{}, LOOKUP4args{"sub"}, mk}).status == nfsstat4::NFS4_OK);

  READDIR4args rd;
  rd.dircount = 4096;
  rd.maxcount = 8192;
  auto r = a->compound({PUTROOTFH4args{}, rd});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  std::vector<std::string> names;
  for (const auto& e : result_at<READDIR4res>(r, 2).resok4.reply.entries) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"f", "sub"});
  // The records are untouched.
  CHECK(records_in(dir.path() / records_dir) == "vnfsd-clients 1\n" + record_of("grace-hidden"));
}

TEST_CASE("RFC 8881 §8.4.2.1, §18.51: grace after a restart — reclaims by the clients of "
          "before, NFS4ERR_GRACE for the rest, over once every one has completed or gone") {
  temp_dir dir("vnfs-grace-period");
  write_local(dir.path() / "f", "0123456789");
  vnfsd_process v(dir.path());  // the default grace period: one lease (90 s)
  opened before;
  {
    auto a = session(v, "grace-a");
    auto d = session(v, "grace-d");
    REQUIRE(a->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
    REQUIRE(d->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
    before = open_file(*a, "f");
    open_file(*d, "f");
    a->forget();  // cut off by the restart: their records stay
    d->forget();
  }
  v.restart();

  auto b = session(v, "grace-b");  // a client that held nothing before
  CHECK(b->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  CHECK(open_by_name(*b, "f") == nfsstat4::NFS4ERR_GRACE);  // §8.4.2.1: no new state yet
  auto c = session(v, "grace-c");
  // A client the records do not list may not reclaim (§8.4.2.1) ...
  CHECK(c->compound({PUTFH4args{before.fh}, open_args(*c, "oo", previous())}).status ==
        nfsstat4::NFS4ERR_RECLAIM_BAD);
  // ... and one that has completed reclaims none (§18.51.3).
  CHECK(b->compound({PUTFH4args{before.fh}, open_args(*b, "oo", previous())}).status ==
        nfsstat4::NFS4ERR_NO_GRACE);

  auto a = session(v, "grace-a");
  CHECK(open_by_name(*a, "f") == nfsstat4::NFS4ERR_GRACE);
  // CLAIM_PREVIOUS with OPEN4_CREATE is malformed; the reclaim itself succeeds.
  auto bad = open_args(*a, "oo", previous());
  bad.openhow.opentype = opentype4::OPEN4_CREATE;
  CHECK(a->compound({PUTFH4args{before.fh}, bad}).status == nfsstat4::NFS4ERR_INVAL);
  auto r = a->compound({PUTFH4args{before.fh}, open_args(*a, "oo", previous())});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const stateid4 sid = result_at<OPEN4res>(r, 2).resok4.stateid;
  CHECK(sid.other != before.sid.other);
  // The reclaimed stateid works: READ, WRITE, and a reclaimed lock through it (§18.10.3).
  r = a->compound({PUTFH4args{before.fh}, READ4args{sid, 0, 10}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(to_string(result_at<READ4res>(r, 2).resok4.data) == "0123456789");
  r = a->compound({PUTFH4args{before.fh},
                   WRITE4args{sid, 0, stable_how4::FILE_SYNC4, to_byte_vector("A")}});
  CHECK(r.status == nfsstat4::NFS4_OK);
  CHECK(a->compound({PUTFH4args{before.fh}, write_lock(*a, sid, false)}).status ==
        nfsstat4::NFS4ERR_GRACE);
  r = a->compound({PUTFH4args{before.fh}, write_lock(*a, sid, true)});
  CHECK(r.status == nfsstat4::NFS4_OK);

  CHECK(a->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  CHECK(a->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4ERR_COMPLETE_ALREADY);
  CHECK(a->compound({PUTFH4args{before.fh}, open_args(*a, "o2", previous())}).status ==
        nfsstat4::NFS4ERR_NO_GRACE);
  // grace-d has not come back: the period lasts.
  CHECK(open_by_name(*b, "f") == nfsstat4::NFS4ERR_GRACE);

  // grace-d comes back and goes (DESTROY_CLIENTID) without reclaiming: it is gone, the last
  // client of before is accounted for, and the period ends early.
  session(v, "grace-d").reset();
  auto got = b->compound({PUTROOTFH4args{}, open_args(*b, "oo", by_name("f")), GETFH4args{}});
  REQUIRE(got.status == nfsstat4::NFS4_OK);
  const stateid4 bsid = result_at<OPEN4res>(got, 2).resok4.stateid;
  // The reclaimed lock holds against the newcomer.
  CHECK(b->compound({PUTFH4args{before.fh}, write_lock(*b, bsid, false)}).status ==
        nfsstat4::NFS4ERR_DENIED);
  CHECK(c->compound({PUTFH4args{before.fh}, open_args(*c, "oo", previous())}).status ==
        nfsstat4::NFS4ERR_NO_GRACE);  // after the period (§8.4.2.1)
  // The records: the clients that hold state now, no longer grace-d.
  CHECK(records_in(dir.path() / records_dir) ==
        "vnfsd-clients 1\n" + record_of("grace-a") + record_of("grace-b"));
}

TEST_CASE("RFC 8881 §8.4.2.1: the grace period ends by time when a client of before never "
          "comes back, and that client may not reclaim after it") {
  temp_dir dir("vnfs-grace-time");
  write_local(dir.path() / "f", "x");
  vnfsd_process v(dir.path(), {"--grace", "6"});
  opened before;
  {
    auto a = session(v, "grace-away");
    REQUIRE(a->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
    before = open_file(*a, "f");
    a->forget();
  }
  v.restart();
  auto b = session(v, "grace-new");
  REQUIRE(b->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  CHECK(open_by_name(*b, "f") == nfsstat4::NFS4ERR_GRACE);
  // Polled, bounded: the period is 6 s (room for a slow start under sanitizers); what is
  // asserted is the state after it.
  nfsstat4 st = nfsstat4::NFS4ERR_GRACE;
  for (int i = 0; i < 200 && st == nfsstat4::NFS4ERR_GRACE; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = open_by_name(*b, "f");
  }
  CHECK(st == nfsstat4::NFS4_OK);
  auto a = session(v, "grace-away");
  CHECK(a->compound({PUTFH4args{before.fh}, open_args(*a, "oo", previous())}).status ==
        nfsstat4::NFS4ERR_NO_GRACE);
  // The client that never came back is no longer on record.
  CHECK(records_in(dir.path() / records_dir) == "vnfsd-clients 1\n" + record_of("grace-new"));
}

TEST_CASE("vnfsd --no-grace: a fresh start forgets the clients of before; --recovery-dir "
          "keeps the records outside the export") {
  temp_dir dir("vnfs-grace-none"), elsewhere("vnfs-grace-rec");
  write_local(dir.path() / "f", "x");
  const fs::path rec = elsewhere.path() / "records";
  opened before;
  {
    vnfsd_process v(dir.path(), {"--recovery-dir", rec.string()});
    auto a = session(v, "grace-gone");
    REQUIRE(a->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
    before = open_file(*a, "f");
    a->forget();
    CHECK(records_in(rec) == "vnfsd-clients 1\n" + record_of("grace-gone"));
    CHECK_FALSE(fs::exists(dir.path() / records_dir));
  }
  vnfsd_process v(dir.path(), {"--recovery-dir", rec.string(), "--no-grace"});
  CHECK(records_in(rec) == "vnfsd-clients 1\n");
  auto b = session(v, "grace-fresh");
  REQUIRE(b->compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  CHECK(open_by_name(*b, "f") == nfsstat4::NFS4_OK);  // no grace period
  auto a = session(v, "grace-gone");
  CHECK(a->compound({PUTFH4args{before.fh}, open_args(*a, "oo", previous())}).status ==
        nfsstat4::NFS4ERR_NO_GRACE);
}

TEST_CASE("vnfsd refuses a recovery directory inside the export, and corrupt records") {
  temp_dir dir("vnfs-grace-bad");
  CHECK_THROWS_AS(vnfsd_process(dir.path(), {"--recovery-dir", (dir.path() / "r").string()}),
                  process_error);
  fs::create_directory(dir.path() / records_dir);
  write_local(dir.path() / records_dir / "clients", "vnfsd-clients 1\n1 0 0 zz\n");
  CHECK_THROWS_AS(vnfsd_process(dir.path()), process_error);
  vnfsd_process fresh(dir.path(), {"--no-grace"});  // discards them
  CHECK(records_in(dir.path() / records_dir) == "vnfsd-clients 1\n");
}
