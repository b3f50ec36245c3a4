// Isolation by per-object locks (docs/transactions.md, "Isolation: per-object locks"), with
// hand-built COMPOUNDs from separate client IDs so that the order of events is exact:
// transactions on disjoint directories are open at once and both commit; conflicting ones
// are resolved by age (the younger requester dies, an older requester rolls back an idle
// younger holder; a transaction run again keeps the age of the one that died); a plain COMPOUND that touches a locked object is refused whole with
// NFS4ERR_DELAY and never sees uncommitted state, while disjoint work proceeds. The lock
// table's rules are also checked on their own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "server/txn/lock_table.hpp"
#include "stateful_client.hpp"
#include "test_pattern.hpp"
#include "vnfs/nfs4/attributes.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;
using std::chrono::milliseconds;

namespace {

void write_local(const std::filesystem::path& p, const std::vector<std::byte>& data) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

std::vector<std::byte> read_local(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::vector<std::byte>(reinterpret_cast<const std::byte*>(c.data()),
                                reinterpret_cast<const std::byte*>(c.data()) + c.size());
}

VNFS_TXN4args txn(txn_action4 a, std::uint64_t id) { return VNFS_TXN4args{static_cast<std::uint32_t>(a), id, 0}; }

OPEN4args open_create(const nfs_client& c, std::string name) {
  OPEN4args a;
  a.share_access = OPEN4_SHARE_ACCESS_BOTH;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner = c.owner("lock-test");
  a.claim.claim = open_claim_type4::CLAIM_NULL;
  a.claim.file = std::move(name);
  a.openhow.opentype = opentype4::OPEN4_CREATE;
  a.openhow.how.mode = createmode4::UNCHECKED4;
  attributes m;
  m.mode = 0644;
  a.openhow.how.createattrs = encode_attributes(m);
  return a;
}

/// open_create() that truncates the file if it exists (UNCHECKED4 with size 0).
OPEN4args open_truncating(const nfs_client& c, std::string name) {
  OPEN4args a = open_create(c, std::move(name));
  attributes zero;
  zero.size = 0;
  a.openhow.how.createattrs = encode_attributes(zero);
  return a;
}

WRITE4args write_at(std::uint64_t offset, const std::vector<std::byte>& data) {
  return WRITE4args{stateid4{1, {}}, offset, stable_how4::UNSTABLE4, xdr::bytes_view(data.data(), data.size())};
}

READDIR4args readdir_page() {
  READDIR4args rd;
  rd.maxcount = 8192;
  return rd;
}

/// One client ID's view: COMPOUNDs that start with VNFS_TXN (or not) and then go to the
/// working directory.
struct party {
  nfs_client c;
  party(test_server& srv, const std::string& wd) : c(srv, wd) {}

  /// SEQUENCE, VNFS_TXN `t`, the way to the working directory, `ops`.
  COMPOUND4res in_txn(VNFS_TXN4args t, std::vector<nfs_argop4> ops) {
    std::vector<nfs_argop4> all{t};
    for (auto& o : c.s.root_ops()) all.push_back(o);
    all.push_back(LOOKUP4args{c.dir});
    for (auto& o : ops) all.push_back(std::move(o));
    return c.call(std::move(all));
  }
  /// Index of ops[k] of in_txn() in the results.
  std::size_t at(std::size_t k) const { return 3 + c.s.root_ops().size() + k; }
  COMPOUND4res control(VNFS_TXN4args t) { return c.call({t}); }
};

/// The filehandle of `name` in the working directory, as `p` looks it up (plain).
nfs_fh4 handle_of(party& p, const std::string& name) {
  auto r = p.c.run({LOOKUP4args{name}, GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  return p.c.at<GETFH4res>(r, 1).resok4.object;
}

txn_outcome4 outcome(const COMPOUND4res& r) { return static_cast<txn_outcome4>(result_at<VNFS_TXN4res>(r, 1).outcome); }
nfsstat4 txn_status(const COMPOUND4res& r) { return result_at<VNFS_TXN4res>(r, 1).status; }

/// A plain COMPOUND refused whole: SEQUENCE and one NFS4ERR_DELAY, nothing ran.
bool refused_whole(const COMPOUND4res& r) {
  return r.status == nfsstat4::NFS4ERR_DELAY && r.resarray.size() == 2 && status_at(r, 0) == nfsstat4::NFS4_OK &&
         status_at(r, 1) == nfsstat4::NFS4ERR_DELAY;
}

std::vector<std::string> names_in(const COMPOUND4res& r, std::size_t k) {
  std::vector<std::string> v;
  for (const auto& e : result_at<READDIR4res>(r, k).resok4.reply.entries) v.push_back(e.name);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("two transactions on disjoint directories are open at once and both commit", "[txn][lock]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "lk");
  const auto dir = srv.export_dir() / wd;
  std::filesystem::create_directory(dir / "A");
  std::filesystem::create_directory(dir / "B");
  write_local(dir / "other", pattern(300, 9));
  party p1(srv, wd), p2(srv, wd), reader(srv, wd);
  const auto one = pattern(1000, 1), two = pattern(2000, 2), three = pattern(3000, 3), four = pattern(400, 4);

  // Interleaved: p1 begins and writes in A, p2 begins and writes in B while p1 is open, then
  // each adds a file, then p2 commits first.
  auto r = p1.in_txn(txn(txn_action4::TXN_BEGIN, 101), {LOOKUP4args{"A"}, open_create(p1.c, "f1"), write_at(0, one)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(outcome(r) == txn_outcome4::TXN_OPEN);
  r = p2.in_txn(txn(txn_action4::TXN_BEGIN, 202), {LOOKUP4args{"B"}, open_create(p2.c, "g1"), write_at(0, two)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(outcome(r) == txn_outcome4::TXN_OPEN);
  r = p1.in_txn(txn(txn_action4::TXN_JOIN, 101), {LOOKUP4args{"A"}, open_create(p1.c, "f2"), write_at(0, three)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  r = p2.in_txn(txn(txn_action4::TXN_JOIN, 202), {LOOKUP4args{"B"}, open_create(p2.c, "g2"), write_at(0, four)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);

  // Both open. Plain COMPOUNDs: A and B are locked (refused whole); the working directory
  // (only read by the transactions) and a file nobody touched are not.
  CHECK(refused_whole(reader.c.run({LOOKUP4args{"A"}, readdir_page()})));
  CHECK(refused_whole(reader.c.run({LOOKUP4args{"B"}, GETATTR4args{bitmap4::of({FATTR4_SIZE})}})));
  r = reader.c.run({readdir_page()});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(names_in(r, reader.c.base) == std::vector<std::string>{"A", "B", "other"});
  r = reader.c.run({LOOKUP4args{"other"}, READ4args{stateid4::anonymous(), 0, 1000}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const auto& data = reader.c.at<READ4res>(r, 1).resok4.data;
  CHECK(std::vector<std::byte>(data.begin(), data.end()) == pattern(300, 9));

  r = p2.control(txn(txn_action4::TXN_COMMIT, 202));
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(outcome(r) == txn_outcome4::TXN_COMMITTED);
  r = reader.c.run({LOOKUP4args{"B"}, readdir_page()});  // B's lock went with the commit
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(names_in(r, reader.c.base + 1) == std::vector<std::string>{"g1", "g2"});
  CHECK(refused_whole(reader.c.run({LOOKUP4args{"A"}, readdir_page()})));  // p1 still open
  r = p1.control(txn(txn_action4::TXN_COMMIT, 101));
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(outcome(r) == txn_outcome4::TXN_COMMITTED);

  CHECK(read_local(dir / "A" / "f1") == one);
  CHECK(read_local(dir / "A" / "f2") == three);
  CHECK(read_local(dir / "B" / "g1") == two);
  CHECK(read_local(dir / "B" / "g2") == four);
}

TEST_CASE("conflicting transactions: the younger requester dies, an older one rolls back an idle younger holder",
          "[txn][lock]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "lk");
  const auto dir = srv.export_dir() / wd;
  std::filesystem::create_directory(dir / "A");
  std::filesystem::create_directory(dir / "Y");
  party older(srv, wd), younger(srv, wd);
  const auto one = pattern(100, 1), two = pattern(200, 2);

  SECTION("a younger transaction asking for a lock an older one holds is rolled back") {
    auto r = older.in_txn(txn(txn_action4::TXN_BEGIN, 301), {LOOKUP4args{"A"}, open_create(older.c, "f"), write_at(0, one)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    // The younger one changes Y first, then meets A.
    r = younger.in_txn(txn(txn_action4::TXN_BEGIN, 302),
                       {SAVEFH4args{}, LOOKUP4args{"Y"}, open_create(younger.c, "mine"), write_at(0, two),
                        RESTOREFH4args{}, LOOKUP4args{"A"}, open_create(younger.c, "g")});
    CHECK(r.status == nfsstat4::NFS4ERR_DEADLOCK);
    REQUIRE(r.resarray.size() == younger.at(6) + 1);  // the results stop at the OPEN in A
    CHECK(status_at(r, younger.at(5)) == nfsstat4::NFS4_OK);
    CHECK(status_at(r, younger.at(6)) == nfsstat4::NFS4ERR_DEADLOCK);
    CHECK(outcome(r) == txn_outcome4::TXN_ABORTED);
    CHECK_FALSE(std::filesystem::exists(dir / "Y" / "mine"));  // its earlier change is undone
    r = younger.in_txn(txn(txn_action4::TXN_JOIN, 302), {});
    CHECK(txn_status(r) == nfsstat4::NFS4ERR_EXPIRED);
    r = younger.control(txn(txn_action4::TXN_STATUS, 302));
    CHECK(outcome(r) == txn_outcome4::TXN_ABORTED);
    r = older.control(txn(txn_action4::TXN_COMMIT, 301));
    CHECK(outcome(r) == txn_outcome4::TXN_COMMITTED);
    CHECK(read_local(dir / "A" / "f") == one);
    CHECK_FALSE(std::filesystem::exists(dir / "A" / "g"));
  }
  SECTION("an older transaction asking for a lock an idle younger one holds rolls that one back") {
    auto r = older.control(txn(txn_action4::TXN_BEGIN, 401));  // older: begun first
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    r = younger.in_txn(txn(txn_action4::TXN_BEGIN, 402), {LOOKUP4args{"A"}, open_create(younger.c, "g"), write_at(0, two)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(read_local(dir / "A" / "g") == two);
    r = older.in_txn(txn(txn_action4::TXN_JOIN, 401), {LOOKUP4args{"A"}, open_create(older.c, "f"), write_at(0, one)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(outcome(r) == txn_outcome4::TXN_OPEN);
    CHECK_FALSE(std::filesystem::exists(dir / "A" / "g"));  // the younger one was rolled back
    r = younger.control(txn(txn_action4::TXN_COMMIT, 402));
    CHECK(txn_status(r) == nfsstat4::NFS4ERR_EXPIRED);
    r = younger.control(txn(txn_action4::TXN_STATUS, 402));
    CHECK(outcome(r) == txn_outcome4::TXN_ABORTED);
    r = older.control(txn(txn_action4::TXN_COMMIT, 401));
    CHECK(outcome(r) == txn_outcome4::TXN_COMMITTED);
    CHECK(read_local(dir / "A" / "f") == one);
    CHECK_FALSE(std::filesystem::exists(dir / "A" / "g"));
  }
}

TEST_CASE("a transaction run again keeps the age of the one that died, and so is older than those begun since",
          "[txn][lock]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "lk");
  const auto dir = srv.export_dir() / wd;
  std::filesystem::create_directory(dir / "A");
  std::filesystem::create_directory(dir / "Y");
  party older(srv, wd), retrying(srv, wd), later(srv, wd);
  const auto one = pattern(100, 1), two = pattern(200, 2), three = pattern(300, 3);
  const auto begin_retry = [](std::uint64_t id, std::uint64_t retries) {
    return VNFS_TXN4args{static_cast<std::uint32_t>(txn_action4::TXN_BEGIN), id, TXN_RETRY, retries};
  };

  SECTION("spanning COMPOUNDs: TXN_BEGIN with TXN_RETRY") {
    auto r = older.in_txn(txn(txn_action4::TXN_BEGIN, 901), {LOOKUP4args{"A"}, open_create(older.c, "f")});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    // 902 meets A, which the older 901 holds: it dies.
    r = retrying.in_txn(txn(txn_action4::TXN_BEGIN, 902), {LOOKUP4args{"A"}, open_create(retrying.c, "g")});
    CHECK(r.status == nfsstat4::NFS4ERR_DEADLOCK);
    CHECK(outcome(r) == txn_outcome4::TXN_ABORTED);
    // 903 begins after 902 and holds Y, idle.
    r = later.in_txn(txn(txn_action4::TXN_BEGIN, 903), {LOOKUP4args{"Y"}, open_create(later.c, "t"), write_at(0, three)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    // 904 runs 902's work again with 902's age: older than 903, it rolls 903 back instead of
    // dying.
    r = retrying.in_txn(begin_retry(904, 902), {LOOKUP4args{"Y"}, open_create(retrying.c, "r"), write_at(0, two)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(outcome(r) == txn_outcome4::TXN_OPEN);
    CHECK_FALSE(std::filesystem::exists(dir / "Y" / "t"));
    CHECK(txn_status(later.control(txn(txn_action4::TXN_COMMIT, 903))) == nfsstat4::NFS4ERR_EXPIRED);
    CHECK(outcome(later.control(txn(txn_action4::TXN_STATUS, 903))) == txn_outcome4::TXN_ABORTED);
    // An age is taken once: a second retry of 902 begins as a new transaction, younger than
    // 904, and dies at Y.
    r = retrying.in_txn(begin_retry(905, 902), {LOOKUP4args{"Y"}, open_create(retrying.c, "u")});
    CHECK(r.status == nfsstat4::NFS4ERR_DEADLOCK);
    CHECK(outcome(retrying.control(txn(txn_action4::TXN_COMMIT, 904))) == txn_outcome4::TXN_COMMITTED);
    CHECK(outcome(older.control(txn(txn_action4::TXN_COMMIT, 901))) == txn_outcome4::TXN_COMMITTED);
    CHECK(read_local(dir / "Y" / "r") == two);
    CHECK_FALSE(std::filesystem::exists(dir / "Y" / "u"));
  }
  SECTION("a single-COMPOUND transaction sent again with its txnid") {
    auto r = older.in_txn(txn(txn_action4::TXN_BEGIN, 911), {LOOKUP4args{"A"}, open_create(older.c, "f")});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    const std::vector<nfs_argop4> ops{SAVEFH4args{}, LOOKUP4args{"Y"}, open_create(retrying.c, "s"), write_at(0, two),
                                      RESTOREFH4args{}, LOOKUP4args{"A"}, open_create(retrying.c, "g")};
    r = retrying.in_txn(txn(txn_action4::TXN_ONE_COMPOUND, 912), ops);
    CHECK(r.status == nfsstat4::NFS4ERR_DELAY);  // died at A
    CHECK(r.resarray.size() == 2);
    r = later.in_txn(txn(txn_action4::TXN_BEGIN, 913), {LOOKUP4args{"Y"}, open_create(later.c, "t"), write_at(0, three)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(outcome(older.control(txn(txn_action4::TXN_COMMIT, 911))) == txn_outcome4::TXN_COMMITTED);
    // Sent again, 912 is older than 913 (begun after its first run): it rolls 913 back.
    r = retrying.in_txn(txn(txn_action4::TXN_ONE_COMPOUND, 912), ops);
    CHECK(r.status == nfsstat4::NFS4_OK);
    CHECK(read_local(dir / "Y" / "s") == two);
    CHECK_FALSE(std::filesystem::exists(dir / "Y" / "t"));
    CHECK(outcome(later.control(txn(txn_action4::TXN_STATUS, 913))) == txn_outcome4::TXN_ABORTED);
  }
}

TEST_CASE("a plain READ, GETATTR or READDIR of a locked object never sees uncommitted state", "[txn][lock]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "lk");
  const auto dir = srv.export_dir() / wd;
  std::filesystem::create_directory(dir / "d");
  const auto before = pattern(5000, 1), changed = pattern(7000, 2);
  write_local(dir / "f", before);
  party writer(srv, wd), reader(srv, wd);
  OPEN4args open_f = open_create(writer.c, "f");
  open_f.openhow.opentype = opentype4::OPEN4_NOCREATE;

  auto read_f = [&] { return reader.c.run({LOOKUP4args{"f"}, READ4args{stateid4::anonymous(), 0, 10000}}); };
  auto size_f = [&] { return reader.c.run({LOOKUP4args{"f"}, GETATTR4args{bitmap4::of({FATTR4_SIZE})}}); };
  auto list_d = [&] { return reader.c.run({LOOKUP4args{"d"}, readdir_page()}); };
  auto expect_committed = [&](const std::vector<std::byte>& content, const std::vector<std::string>& names) {
    auto r = read_f();
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    const auto& data = reader.c.at<READ4res>(r, 1).resok4.data;
    CHECK(std::vector<std::byte>(data.begin(), data.end()) == content);
    r = size_f();
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    attributes a = decode_attributes(reader.c.at<GETATTR4res>(r, 1).resok4.obj_attributes);
    CHECK(a.size == content.size());
    r = list_d();
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(names_in(r, reader.c.base + 1) == names);
  };

  for (const bool commit : {false, true}) {
    const std::uint64_t id = commit ? 502 : 501;
    auto r = writer.in_txn(txn(txn_action4::TXN_BEGIN, id),
                           {SAVEFH4args{}, open_f, write_at(0, changed), RESTOREFH4args{}, LOOKUP4args{"d"},
                            open_create(writer.c, "new"), write_at(0, before)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    // Uncommitted: f has 7000 bytes on disk and d a new name, but no plain COMPOUND sees them.
    CHECK(read_local(dir / "f") == changed);
    CHECK(refused_whole(read_f()));
    CHECK(refused_whole(size_f()));
    CHECK(refused_whole(list_d()));
    CHECK(refused_whole(reader.c.run({LOOKUP4args{"d"}, LOOKUP4args{"new"}})));
    r = writer.control(txn(commit ? txn_action4::TXN_COMMIT : txn_action4::TXN_ABORT, id));
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    if (commit)
      expect_committed(changed, {"new"});
    else
      expect_committed(before, {});
  }
}

TEST_CASE("an OPEN that truncates an existing file locks the file itself, planned or not", "[txn][lock]") {
  // A reader holding the file's handle reaches it without its directory, whose lock the
  // transaction also holds: only the file's own lock (op_locks' named lock, taken by the
  // planner for a planned OPEN and by the OPEN itself after the planning stopped) keeps
  // the truncation from it.
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "lt");
  const auto dir = srv.export_dir() / wd;
  const auto before = pattern(3000, 5);
  write_local(dir / "f", before);
  party writer(srv, wd), reader(srv, wd);
  const nfs_fh4 fh_f = handle_of(reader, "f");
  const OPEN4args truncate_f = open_truncating(writer.c, "f");
  auto read_by_handle = [&] { return reader.c.call({PUTFH4args{fh_f}, READ4args{stateid4::anonymous(), 0, 10000}}); };

  std::uint64_t id = 510;
  for (const bool planned : {true, false}) {
    INFO((planned ? "planned" : "after LOOKUPP, which stops the planning"));
    std::vector<nfs_argop4> ops;
    if (!planned) ops = {LOOKUPP4args{}, LOOKUP4args{wd}};
    ops.push_back(truncate_f);
    auto r = writer.in_txn(txn(txn_action4::TXN_BEGIN, ++id), ops);
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(std::filesystem::file_size(dir / "f") == 0);  // truncated on disk, uncommitted
    CHECK(refused_whole(read_by_handle()));
    r = writer.control(txn(txn_action4::TXN_ABORT, id));
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    r = read_by_handle();
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    const auto& data = result_at<READ4res>(r, 2).resok4.data;
    CHECK(std::vector<std::byte>(data.begin(), data.end()) == before);
  }
}

TEST_CASE("a plain OPEN that would truncate a file a transaction holds is refused and truncates nothing", "[txn][lock]") {
  // The transaction reaches the file by its handle, so it holds the file and not its
  // directory: the plain OPEN pins the file it would truncate (op_locks, named_objects::
  // truncated). The same pin waits for a committed transaction whose redo of the file awaits
  // its checkpoint, so that no replay after a crash writes over the truncation.
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "lp");
  const auto dir = srv.export_dir() / wd;
  const auto before = pattern(3000, 6), head = pattern(100, 7);
  write_local(dir / "f", before);
  party writer(srv, wd), plain(srv, wd);
  const nfs_fh4 fh_f = handle_of(plain, "f");
  const OPEN4args truncate_f = open_truncating(plain.c, "f");
  const OPEN4args open_f = open_create(plain.c, "f");  // UNCHECKED4 without a size: no truncation

  auto r = writer.in_txn(txn(txn_action4::TXN_BEGIN, 520),
                    {PUTFH4args{fh_f}, WRITE4args{stateid4::anonymous(), 0, stable_how4::UNSTABLE4,
                                                  xdr::bytes_view(head.data(), head.size())}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  auto changed = before;
  std::copy(head.begin(), head.end(), changed.begin());
  CHECK(read_local(dir / "f") == changed);  // uncommitted, on disk
  CHECK(refused_whole(plain.c.run({truncate_f})));
  CHECK(read_local(dir / "f") == changed);
  // An OPEN that truncates nothing pins the directory only: it passes.
  r = plain.c.run({open_f});
  CHECK(r.status == nfsstat4::NFS4_OK);
  r = writer.control(txn(txn_action4::TXN_ABORT, 520));
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(read_local(dir / "f") == before);
  r = plain.c.run({truncate_f});
  CHECK(r.status == nfsstat4::NFS4_OK);
  CHECK(std::filesystem::file_size(dir / "f") == 0);
}

TEST_CASE("the lock table: wait-die by age, wounds for idle holders, pins of plain COMPOUNDs", "[txn][lock]") {
  using namespace vnfs::server::txn;
  lock_table t;
  const object_key k1{1, 10}, k2{1, 20};
  const lock_request s1{k1, lock_mode::shared}, x1{k1, lock_mode::exclusive}, x2{k2, lock_mode::exclusive};
  CHECK(t.enter_plain());  // no transaction: unchecked
  t.leave_plain(true);
  const std::uint64_t a = t.enroll(100), b = t.enroll(200);  // a is older
  CHECK_FALSE(t.enter_plain());
  std::uint64_t victim = 0;
  // Shared locks are compatible; b's upgrade meets a's shared lock, and a is older: b dies.
  CHECK(t.lock(a, std::span(&s1, 1), victim) == lock_table::verdict::granted);
  CHECK(t.lock(b, std::span(&s1, 1), victim) == lock_table::verdict::granted);
  CHECK(t.lock(b, std::span(&x1, 1), victim) == lock_table::verdict::die);
  // b holds k2 and is idle: a's request wounds it.
  CHECK(t.lock(b, std::span(&x2, 1), victim) == lock_table::verdict::granted);
  t.set_busy(b, false);
  CHECK(t.lock(a, std::span(&x2, 1), victim) == lock_table::verdict::wound);
  CHECK(victim == b);
  // A plain pin meets b's idle exclusive lock: refused at once (no wait asked for).
  CHECK_FALSE(t.pin(std::span(&x2, 1), true, milliseconds(0)));
  CHECK(t.pin(std::span(&s1, 1), true, milliseconds(0)));  // shared beside shared
  t.unpin(std::span(&s1, 1));
  t.release(b);
  // b's locks are gone: a upgrades k1 and takes k2.
  CHECK(t.lock(a, std::span(&x1, 1), victim) == lock_table::verdict::granted);
  CHECK(t.lock(a, std::span(&x2, 1), victim) == lock_table::verdict::granted);
  CHECK(t.size() == 2);
  t.set_busy(a, false);
  CHECK_FALSE(t.pin(std::span(&s1, 1), true, milliseconds(0)));
  t.release(a);
  CHECK(t.size() == 0);
  CHECK(t.pin(std::span(&x1, 1), true, milliseconds(0)));
  CHECK(t.size() == 1);
  t.unpin(std::span(&x1, 1));
  CHECK(t.size() == 0);
  // A transaction enrolled later with an older age (one run again) is the older; of two of
  // the same age, the one enrolled first.
  const std::uint64_t d = t.enroll(60), c = t.enroll(50), e = t.enroll(50);
  CHECK(t.age_of(c) == 50);
  CHECK(t.lock(d, std::span(&x1, 1), victim) == lock_table::verdict::granted);
  t.set_busy(d, false);
  CHECK(t.lock(c, std::span(&x1, 1), victim) == lock_table::verdict::wound);
  CHECK(victim == d);
  t.release(d);
  CHECK(t.lock(c, std::span(&x1, 1), victim) == lock_table::verdict::granted);
  CHECK(t.lock(e, std::span(&x1, 1), victim) == lock_table::verdict::die);
  t.release(e);
  t.release(c);
  CHECK(t.size() == 0);
  CHECK(t.enter_plain());
  t.leave_plain(true);
}

TEST_CASE("the lock table: a committed holder keeps what awaits its checkpoint, shared, and changers wait for it",
          "[txn][lock]") {
  using namespace vnfs::server::txn;
  using std::chrono::milliseconds;
  lock_table t;
  // Three files the committed transaction keeps, one for each waiter below: they wait for
  // it, not for each other (two of them on one file would meet by wait-die once it let go).
  const object_key k{1, 10}, k2{1, 11}, k3{1, 12}, dir{1, 20};
  const lock_request s{k, lock_mode::shared}, x{k, lock_mode::exclusive}, x2{k2, lock_mode::exclusive},
      x3{k3, lock_mode::exclusive}, xdir{dir, lock_mode::exclusive};
  const std::uint64_t old = t.enroll(100), committed = t.enroll(200), young = t.enroll(300);
  std::uint64_t victim = 0;
  for (const lock_request& r : {x, x2, x3, xdir})
    REQUIRE(t.lock(committed, std::span(&r, 1), victim) == lock_table::verdict::granted);
  t.set_busy(committed, false);
  // Idle and younger: an older requester would wound it. Committed, keeping its files: its
  // other lock goes at once, the files stay locked shared.
  const object_key keep[] = {k, k2, k3};
  t.set_committed(committed, keep);
  CHECK(t.lock(young, std::span(&xdir, 1), victim) == lock_table::verdict::granted);
  t.release(young);
  CHECK(t.pin(std::span(&s, 1), false, milliseconds(0)));  // a reader passes
  t.unpin(std::span(&s, 1));
  const std::uint64_t young2 = t.enroll(400);
  std::atomic<int> granted{0};
  std::vector<std::thread> waiters;
  waiters.emplace_back([&] {
    std::uint64_t v = 0;
    if (t.lock(old, std::span(&x, 1), v) == lock_table::verdict::granted) ++granted;  // no wound
    t.release(old);
  });
  waiters.emplace_back([&] {
    std::uint64_t v = 0;
    if (t.lock(young2, std::span(&x2, 1), v) == lock_table::verdict::granted) ++granted;  // no die
    t.release(young2);
  });
  waiters.emplace_back([&] {
    // A plain COMPOUND that holds pins already is refused by a running transaction, but
    // waits for a committed one.
    if (t.pin(std::span(&x3, 1), false, milliseconds(0))) {
      ++granted;
      t.unpin(std::span(&x3, 1));
    }
  });
  std::this_thread::sleep_for(milliseconds(50));
  CHECK(granted == 0);  // all three wait
  t.release(committed);
  for (auto& w : waiters) w.join();
  CHECK(granted == 3);
  CHECK(t.size() == 0);
}

TEST_CASE("a txnid has one outcome: a dying single-COMPOUND transaction leaves none, an ended one is not begun again",
          "[txn][lock]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "lk");
  const auto dir = srv.export_dir() / wd;
  std::filesystem::create_directory(dir / "A");
  std::filesystem::create_directory(dir / "Y");
  party older(srv, wd), single(srv, wd);
  const auto one = pattern(100, 1), two = pattern(200, 2);
  const auto log = srv.export_dir() / ".vnfsd-txn" / "outcomes";

  auto r = older.in_txn(txn(txn_action4::TXN_BEGIN, 701), {LOOKUP4args{"A"}, open_create(older.c, "f")});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const auto at_start = std::filesystem::file_size(log);
  // The single-COMPOUND one changes Y, then meets A, which the older one holds: it dies,
  // is rolled back whole and answered as not begun; nothing is recorded about it.
  const std::vector<nfs_argop4> ops{SAVEFH4args{}, LOOKUP4args{"Y"}, open_create(single.c, "mine"), write_at(0, two),
                                    RESTOREFH4args{}, LOOKUP4args{"A"}, open_create(single.c, "g")};
  r = single.in_txn(txn(txn_action4::TXN_ONE_COMPOUND, 702), ops);
  CHECK(r.status == nfsstat4::NFS4ERR_DELAY);
  CHECK(r.resarray.size() == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "Y" / "mine"));
  CHECK(outcome(single.control(txn(txn_action4::TXN_STATUS, 702))) == txn_outcome4::TXN_UNKNOWN);
  CHECK(std::filesystem::file_size(log) == at_start);
  // The older one commits; sent again, the single one commits: one entry each.
  r = older.control(txn(txn_action4::TXN_COMMIT, 701));
  CHECK(outcome(r) == txn_outcome4::TXN_COMMITTED);
  r = single.in_txn(txn(txn_action4::TXN_ONE_COMPOUND, 702), ops);
  CHECK(r.status == nfsstat4::NFS4_OK);
  CHECK(read_local(dir / "Y" / "mine") == two);
  CHECK(outcome(single.control(txn(txn_action4::TXN_STATUS, 702))) == txn_outcome4::TXN_COMMITTED);
  CHECK(std::filesystem::file_size(log) == at_start + 2 * 16);

  // A spanning transaction rolled back by a failure after a change: one outcome (aborted).
  r = older.in_txn(txn(txn_action4::TXN_BEGIN, 703),
                   {LOOKUP4args{"A"}, open_create(older.c, "h"), write_at(0, one), PUTFH4args{nfs_fh4{std::byte{9}}}});
  CHECK(r.status == nfsstat4::NFS4ERR_BADHANDLE);
  CHECK(outcome(r) == txn_outcome4::TXN_ABORTED);
  CHECK(std::filesystem::file_size(log) == at_start + 3 * 16);
  // TXN_BEGIN of it again (as after a lost reply) is refused before anything runs.
  r = older.in_txn(txn(txn_action4::TXN_BEGIN, 703), {LOOKUP4args{"A"}, open_create(older.c, "h")});
  CHECK(r.status == nfsstat4::NFS4ERR_INVAL);
  CHECK(r.resarray.size() == 2);
  CHECK(txn_status(r) == nfsstat4::NFS4ERR_INVAL);
  CHECK_FALSE(std::filesystem::exists(dir / "A" / "h"));
  CHECK(outcome(older.control(txn(txn_action4::TXN_STATUS, 703))) == txn_outcome4::TXN_ABORTED);
  CHECK(std::filesystem::file_size(log) == at_start + 3 * 16);
}
