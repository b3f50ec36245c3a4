// Transactional COMPOUNDs on the server (docs/transactions.md), with hand-built COMPOUNDs:
// every mutating operation inside a transaction that then fails leaves the export exactly
// as it was (tree digest); the same operations commit when nothing fails; the state
// directory is invisible; servers without the extension (NFS-Ganesha, vnfsd
// --no-transactions) execute nothing of a transactional COMPOUND.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "stateful_client.hpp"
#include "test_pattern.hpp"
#include "state_leftovers.hpp"
#include "tree_digest.hpp"
#include "server/txn/journal.hpp"
#include "server/txn/transaction.hpp"
#include "vnfs/nfs4/attributes.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;
using vnfs::txn_test::settled_digest;
using vnfs::txn_test::tree_digest;

namespace {

void write_local(const std::filesystem::path& p, const std::vector<std::byte>& data) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

/// Sets atime and mtime of `p` (not following a symlink) to fixed, distinct values.
void set_times(const std::filesystem::path& p, std::int64_t sec) {
  struct timespec ts[2] = {{sec, 111}, {sec + 7, 222}};
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), ts, AT_SYMLINK_NOFOLLOW) == 0);
}

/// The working directory every test starts from: files of several sizes, a file with two
/// links, an empty directory, a symlink, a subdirectory with a file; all times fixed.
void populate(const std::filesystem::path& wd) {
  namespace fs = std::filesystem;
  write_local(wd / "f", pattern(5000, 1));
  write_local(wd / "a", pattern(100, 2));
  write_local(wd / "b", pattern(7000, 3));
  write_local(wd / "c", pattern(300, 4));
  write_local(wd / "src", pattern(10000, 5));
  write_local(wd / "dst", pattern(4000, 6));
  fs::create_hard_link(wd / "f", wd / "f2");
  fs::create_directory(wd / "emptydir");
  fs::create_directory(wd / "sub");
  write_local(wd / "sub" / "g", pattern(64, 7));
  fs::create_symlink("f", wd / "ln");
  ::chmod((wd / "a").c_str(), 0640);
  std::int64_t t = 1'600'000'000;
  for (const char* n : {"f", "a", "b", "c", "src", "dst", "sub/g", "ln", "emptydir", "sub"}) set_times(wd / n, t += 100);
  set_times(wd, t + 100);
}

/// The export's working directory with the transaction prefix: SEQUENCE, VNFS_TXN, the root
/// operations, LOOKUP of the working directory, then `ops`.
struct txn_client {
  nfs_client c;
  std::uint64_t next_id = 1;
  explicit txn_client(test_server& srv, std::string wd, session_options o = {}) : c(srv, std::move(wd), o) {}

  std::vector<nfs_argop4> to_wd() const {
    auto ops = c.s.root_ops();
    ops.push_back(LOOKUP4args{c.dir});
    return ops;
  }
  COMPOUND4res run(std::vector<nfs_argop4> ops, std::uint32_t minor = 1) {
    std::vector<nfs_argop4> all{VNFS_TXN4args{1, next_id++, 0}};
    for (auto& o : to_wd()) all.push_back(std::move(o));
    for (auto& o : ops) all.push_back(std::move(o));
    return c.call(std::move(all), minor);
  }
  /// Index in the results of ops[k] of run().
  std::size_t at(std::size_t k) const { return 2 + to_wd().size() + k; }
};

/// An operation that fails wherever it comes: PUTFH of a handle no server minted.
nfs_argop4 failing_op() { return PUTFH4args{nfs_fh4{std::byte{1}, std::byte{2}, std::byte{3}}}; }

OPEN4args open_args(const nfs_client& c, std::string name, bool create, std::optional<std::uint64_t> size = {}) {
  OPEN4args a;
  a.share_access = OPEN4_SHARE_ACCESS_BOTH;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner = c.owner("txn-owner");
  a.claim.claim = open_claim_type4::CLAIM_NULL;
  a.claim.file = std::move(name);
  if (create) {
    a.openhow.opentype = opentype4::OPEN4_CREATE;
    a.openhow.how.mode = createmode4::UNCHECKED4;
    attributes m;
    m.mode = 0600;
    m.size = size;
    a.openhow.how.createattrs = encode_attributes(m);
  } else {
    a.openhow.opentype = opentype4::OPEN4_NOCREATE;
  }
  return a;
}

WRITE4args write_args(std::uint64_t offset, const std::vector<std::byte>& data) {
  WRITE4args w;
  w.stateid = stateid4{1, {}};  // the current stateid (set by OPEN)
  w.offset = offset;
  w.stable = stable_how4::UNSTABLE4;
  w.data = xdr::bytes_view(data.data(), data.size());
  return w;
}

/// The records of the journal that transaction `id` wrote on `srv`, if it wrote one.
std::optional<server::txn::journal_contents> journal_of_txn(test_server& srv, std::uint64_t id) {
  const auto state = srv.export_dir() / ".vnfsd-txn";
  std::optional<server::txn::journal_contents> found;
  const int sfd = ::open(state.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (sfd < 0) return found;
  for (const auto& e : std::filesystem::directory_iterator(state)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".j0" && ext != ".j1") continue;
    std::error_code ec;
    server::txn::journal_contents j = server::txn::read_journal(sfd, e.path().filename().string(), ec);
    if (!ec && !j.records.empty() && std::get<server::txn::rec_begin>(j.records.front()).client_txnid == id)
      found = std::move(j);
  }
  ::close(sfd);
  return found;
}

/// How many records of type `Kind` journal `j` holds.
template <class Kind>
std::ptrdiff_t count(const server::txn::journal_contents& j, Kind) {
  return std::count_if(j.records.begin(), j.records.end(),
                       [](const server::txn::record& r) { return std::holds_alternative<Kind>(r); });
}

SETATTR4args setattr_args(const attributes& a) {
  SETATTR4args s;
  s.obj_attributes = encode_attributes(a);
  return s;
}

CREATE4args create_dir(std::string name) {
  CREATE4args c;
  c.objtype.type = nfs_ftype4::NF4DIR;
  c.objname = std::move(name);
  attributes m;
  m.mode = 0750;
  c.createattrs = encode_attributes(m);
  return c;
}

CREATE4args create_symlink(std::string name, std::string target) {
  CREATE4args c;
  c.objtype.type = nfs_ftype4::NF4LNK;
  c.objtype.linkdata = std::move(target);
  c.objname = std::move(name);
  return c;
}

COPY4args copy_args(std::uint64_t src_offset, std::uint64_t dst_offset, std::uint64_t count) {
  COPY4args cp;
  cp.ca_src_offset = src_offset;
  cp.ca_dst_offset = dst_offset;
  cp.ca_count = count;
  cp.ca_consecutive = true;
  cp.ca_synchronous = true;
  return cp;
}

/// The operations of one kind of change, each leaving the current filehandle where the
/// next starts: the working directory.
struct change_case {
  const char* name;
  std::function<std::vector<nfs_argop4>(txn_client&)> ops;
  std::uint32_t minor = 1;
};

std::vector<change_case> change_cases() {
  static const auto overwrite = pattern(2000, 11);
  static const auto extend = pattern(3000, 12);
  static const auto fresh = pattern(1500, 13);
  std::vector<change_case> cases;
  cases.push_back({"CREATE directory, directory in it, symlink in that", [](txn_client&) {
                     return std::vector<nfs_argop4>{create_dir("d1"), create_dir("d2"), create_symlink("l", "../x")};
                   }});
  cases.push_back({"OPEN with create, WRITE", [](txn_client& t) {
                     return std::vector<nfs_argop4>{open_args(t.c, "new", true), write_args(0, fresh)};
                   }});
  cases.push_back({"OPEN with truncate of an existing file", [](txn_client& t) {
                     return std::vector<nfs_argop4>{open_args(t.c, "f", true, 0)};
                   }});
  // vnfsd writes over the old bytes and cuts the file after them (compound_context::truncation).
  cases.push_back({"OPEN with truncate, then WRITE at 0 of fewer bytes than the file had", [](txn_client& t) {
                     return std::vector<nfs_argop4>{open_args(t.c, "f", true, 0), write_args(0, overwrite)};
                   }});
  cases.push_back({"WRITE overwrite and extend", [](txn_client& t) {
                     return std::vector<nfs_argop4>{open_args(t.c, "f", false), write_args(1000, overwrite),
                                                    write_args(4500, extend)};
                   }});
  cases.push_back({"SETATTR size (shrink, grow), mode, times, owner", [](txn_client&) {
                     attributes shrink, grow, mode, times, owner;
                     shrink.size = 10;
                     grow.size = 20000;
                     mode.mode = 0604;
                     times.time_modify_set = settime4{time_how4::SET_TO_CLIENT_TIME4, {1'234'567'890, 5}};
                     times.time_access_set = settime4{time_how4::SET_TO_SERVER_TIME4, {}};
                     owner.owner = "1234";
                     owner.owner_group = "4321";
                     return std::vector<nfs_argop4>{LOOKUP4args{"b"}, setattr_args(shrink), setattr_args(grow),
                                                    setattr_args(mode), setattr_args(times), setattr_args(owner)};
                   }});
  cases.push_back({"REMOVE a file with two links, an empty directory, a symlink", [](txn_client&) {
                     return std::vector<nfs_argop4>{REMOVE4args{"f"}, REMOVE4args{"emptydir"}, REMOVE4args{"ln"}};
                   }});
  cases.push_back({"RENAME to a new name, over an existing file, a directory", [](txn_client&) {
                     return std::vector<nfs_argop4>{SAVEFH4args{}, RENAME4args{"a", "a2"}, RENAME4args{"b", "c"},
                                                    RENAME4args{"sub", "sub2"}};
                   }});
  cases.push_back({"LINK", [](txn_client& t) {
                     std::vector<nfs_argop4> ops{LOOKUP4args{"c"}, SAVEFH4args{}};
                     for (auto& o : t.to_wd()) ops.push_back(std::move(o));
                     ops.push_back(LINK4args{"c-link"});
                     return ops;
                   }});
  cases.push_back({"COPY over and past the end of the destination", [](txn_client& t) {
                     std::vector<nfs_argop4> ops{LOOKUP4args{"src"}, SAVEFH4args{}};
                     for (auto& o : t.to_wd()) ops.push_back(std::move(o));
                     ops.push_back(LOOKUP4args{"dst"});
                     ops.push_back(copy_args(0, 3000, 6000));
                     return ops;
                   },
                   2});
  return cases;
}

}  // namespace

TEST_CASE("a transaction whose last operation fails leaves the export as it was", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  for (const change_case& cc : change_cases()) {
    INFO(cc.name);
    const std::string wd = new_workdir(srv, "tx");
    const auto dir = srv.export_dir() / wd;
    populate(dir);
    txn_client t(srv, wd);
    const std::string before = settled_digest(dir);
    std::vector<nfs_argop4> ops = cc.ops(t);
    const std::size_t n = ops.size();
    ops.push_back(failing_op());
    COMPOUND4res r = t.run(std::move(ops), cc.minor);
    REQUIRE(r.status == nfsstat4::NFS4ERR_BADHANDLE);
    REQUIRE(r.resarray.size() == t.at(n) + 1);  // every change ran, then the failing PUTFH
    CHECK(status_at(r, 1) == nfsstat4::NFS4_OK);
    for (std::size_t k = 0; k < n; ++k) CHECK(status_at(r, t.at(k)) == nfsstat4::NFS4_OK);
    CHECK(tree_digest(dir) == before);
    CHECK(vnfs::txn_test::state_leftovers(srv.export_dir(), false).empty());

    // The same operations without the failure commit, and change the tree.
    const std::string wd2 = new_workdir(srv, "tx");
    populate(srv.export_dir() / wd2);
    txn_client t2(srv, wd2);
    const std::string before2 = settled_digest(srv.export_dir() / wd2);
    COMPOUND4res ok = t2.run(cc.ops(t2), cc.minor);
    REQUIRE(ok.status == nfsstat4::NFS4_OK);
    CHECK(tree_digest(srv.export_dir() / wd2) != before2);
    CHECK(vnfs::txn_test::state_leftovers(srv.export_dir(), false).empty());
  }
}

TEST_CASE("the opens of a rolled-back transaction are released; a committed one's stay", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  populate(srv.export_dir() / wd);
  txn_client t(srv, wd);
  const auto data = pattern(100, 31);
  for (const bool fail : {true, false}) {
    INFO((fail ? "rolled back" : "committed"));
    std::vector<nfs_argop4> ops{SAVEFH4args{}, open_args(t.c, "f", false), write_args(0, data), RESTOREFH4args{},
                                open_args(t.c, "fresh", true)};
    if (fail) ops.push_back(failing_op());
    COMPOUND4res r = t.run(std::move(ops));
    REQUIRE(r.status == (fail ? nfsstat4::NFS4ERR_BADHANDLE : nfsstat4::NFS4_OK));
    const stateid4 existing = result_at<OPEN4res>(r, t.at(1)).resok4.stateid;
    const stateid4 created = result_at<OPEN4res>(r, t.at(4)).resok4.stateid;
    CHECK(existing.seqid == 1);
    CHECK(created.seqid == 1);
    // Outside the transaction: the client is told the open states are gone.
    COMPOUND4res st = t.c.call({TEST_STATEID4args{{existing, created}}});
    REQUIRE(st.status == nfsstat4::NFS4_OK);
    const nfsstat4 expect = fail ? nfsstat4::NFS4ERR_BAD_STATEID : nfsstat4::NFS4_OK;
    CHECK(result_at<TEST_STATEID4res>(st, 1).resok4.tsr_status_codes == std::vector<nfsstat4>{expect, expect});
    if (!fail) {  // the committed opens are the client's to close
      for (const auto& [name, sid] : {std::pair{"f", existing}, std::pair{"fresh", created}}) {
        COMPOUND4res c = t.c.run({LOOKUP4args{name}, CLOSE4args{0, sid}});
        CHECK(c.status == nfsstat4::NFS4_OK);
      }
    }
  }
}

TEST_CASE("the byte-range locks of a rolled-back transaction are released; a committed one's stay", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  populate(srv.export_dir() / wd);
  txn_client t(srv, wd);
  auto lock_args = [&] {
    LOCK4args l;
    l.locktype = nfs_lock_type4::WRITE_LT;
    l.offset = 100;
    l.length = 50;
    l.locker.new_lock_owner = true;
    l.locker.open_owner.open_stateid = stateid4{1, {}};  // the current stateid (set by OPEN)
    l.locker.open_owner.lock_owner = t.c.owner("txn-locker");
    return l;
  };
  auto test_lock = [&] {  // another lock-owner asks for an overlapping range
    LOCKT4args lt;
    lt.locktype = nfs_lock_type4::WRITE_LT;
    lt.offset = 120;
    lt.length = 1;
    lt.owner = t.c.owner("someone-else");
    COMPOUND4res r = t.c.run({LOOKUP4args{"f"}, lt});
    return r.status;
  };
  for (const bool fail : {true, false}) {
    INFO((fail ? "rolled back" : "committed"));
    std::vector<nfs_argop4> ops{open_args(t.c, "f", false), lock_args()};
    if (fail) ops.push_back(failing_op());
    COMPOUND4res r = t.run(std::move(ops));
    REQUIRE(r.status == (fail ? nfsstat4::NFS4ERR_BADHANDLE : nfsstat4::NFS4_OK));
    const stateid4 open_sid = result_at<OPEN4res>(r, t.at(0)).resok4.stateid;
    const stateid4 lock_sid = result_at<LOCK4res>(r, t.at(1)).resok4.lock_stateid;
    CHECK(lock_sid.seqid == 1);
    CHECK(test_lock() == (fail ? nfsstat4::NFS4_OK : nfsstat4::NFS4ERR_DENIED));
    COMPOUND4res st = t.c.call({TEST_STATEID4args{{lock_sid, open_sid}}});
    REQUIRE(st.status == nfsstat4::NFS4_OK);
    const nfsstat4 expect = fail ? nfsstat4::NFS4ERR_BAD_STATEID : nfsstat4::NFS4_OK;
    CHECK(result_at<TEST_STATEID4res>(st, 1).resok4.tsr_status_codes == std::vector<nfsstat4>{expect, expect});
    if (fail) {  // the stateid itself is refused where a lock stateid is used
      LOCKU4args u;
      u.locktype = nfs_lock_type4::WRITE_LT;
      u.lock_stateid = lock_sid;
      u.offset = 100;
      u.length = 50;
      COMPOUND4res ur = t.c.run({LOOKUP4args{"f"}, u});
      CHECK(ur.status == nfsstat4::NFS4ERR_BAD_STATEID);
    } else {  // the committed lock and open are the client's to release
      LOCKU4args u;
      u.locktype = nfs_lock_type4::WRITE_LT;
      u.lock_stateid = stateid4{0, lock_sid.other};
      u.offset = 100;
      u.length = 50;
      CHECK(t.c.run({LOOKUP4args{"f"}, u}).status == nfsstat4::NFS4_OK);
      CHECK(t.c.call({FREE_STATEID4args{stateid4{0, lock_sid.other}}}).status == nfsstat4::NFS4_OK);
      CHECK(t.c.run({LOOKUP4args{"f"}, CLOSE4args{0, open_sid}}).status == nfsstat4::NFS4_OK);
      CHECK(test_lock() == nfsstat4::NFS4_OK);
    }
  }
}

TEST_CASE("committed transactions leave exactly their changes", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  const auto dir = srv.export_dir() / wd;
  populate(dir);
  txn_client t(srv, wd);
  const auto data = pattern(3000, 21);
  auto r = t.run({open_args(t.c, "f", false), write_args(4000, data), failing_op()});
  REQUIRE(r.status == nfsstat4::NFS4ERR_BADHANDLE);
  CHECK(std::filesystem::file_size(dir / "f") == 5000);
  r = t.run({open_args(t.c, "f", false), write_args(4000, data)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(std::filesystem::file_size(dir / "f") == 7000);
  r = t.run({REMOVE4args{"f"}, SAVEFH4args{}, RENAME4args{"a", "f"}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(std::filesystem::file_size(dir / "f") == 100);
  CHECK(std::filesystem::hard_link_count(dir / "f2") == 1);
  CHECK_FALSE(std::filesystem::exists(dir / "a"));
  CHECK(vnfs::txn_test::state_leftovers(srv.export_dir(), false).empty());
}

TEST_CASE("overwrites deferred to the commit (redo) change nothing before it and exactly their bytes at it", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  const auto dir = srv.export_dir() / wd;
  populate(dir);
  txn_client t(srv, wd);
  t.next_id = 900'000;  // txnids no other test case of this server uses: journal_of() finds ours
  const auto journal_of = [&](std::uint64_t id) { return journal_of_txn(srv, id); };
  const auto fresh = pattern(3000, 41), tail = pattern(2500, 42);
  // "f" truncated by its OPEN and written from 0 (a vwrite overwriting it), "b" written past
  // its end: the planner sees the whole COMPOUND, no operation reads either file, so both
  // are deferred. Then a WRITE with a stateid no server made fails at run time.
  std::vector<nfs_argop4> ops{SAVEFH4args{},
                              open_args(t.c, "f", true, 0),
                              write_args(0, fresh),
                              CLOSE4args{0, stateid4{1, {}}},
                              RESTOREFH4args{},
                              open_args(t.c, "b", false),
                              write_args(6000, tail),
                              CLOSE4args{0, stateid4{1, {}}}};
  {
    INFO("failing at a later operation");
    const std::string before = settled_digest(dir);
    std::vector<nfs_argop4> failing = ops;
    failing.pop_back();
    WRITE4args bad = write_args(0, tail);
    bad.stateid = stateid4{1, {std::byte{7}, std::byte{7}, std::byte{7}}};
    failing.push_back(bad);
    const std::uint64_t id = t.next_id;
    const COMPOUND4res r = t.run(failing);
    REQUIRE(r.status != nfsstat4::NFS4_OK);
    CHECK(r.resarray.size() == t.at(failing.size() - 1) + 1);  // it failed at that WRITE
    CHECK(settled_digest(dir) == before);
    CHECK_FALSE(journal_of(id));  // nothing to undo: no record, no backup was ever written
  }
  const std::uint64_t id = t.next_id;
  REQUIRE(t.run(ops).status == nfsstat4::NFS4_OK);
  const auto read_all = [&](const char* n) {
    std::ifstream in(dir / n, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(in)), {});
    return std::vector<std::byte>(reinterpret_cast<const std::byte*>(s.data()),
                                  reinterpret_cast<const std::byte*>(s.data()) + s.size());
  };
  CHECK(read_all("f") == fresh);  // cut where the new bytes end
  std::vector<std::byte> b = pattern(7000, 3);
  b.resize(6000);
  b.insert(b.end(), tail.begin(), tail.end());
  CHECK(read_all("b") == b);
  const auto j = journal_of(id);
  REQUIRE(j);
  CHECK(j->committed());
  CHECK(count(*j, server::txn::rec_redo_write{}) == 2);
  CHECK(count(*j, server::txn::rec_range{}) == 0);  // no backups
  CHECK(count(*j, server::txn::rec_attrs{}) == 0);
  // Right after the commit, a plain READ sees the new bytes (its checkpoint may still run).
  COMPOUND4res rd = t.c.run({LOOKUP4args{"f"}, READ4args{stateid4{}, 0, 5000}});
  REQUIRE(rd.status == nfsstat4::NFS4_OK);
  const auto& got = result_at<READ4res>(rd, rd.resarray.size() - 1).resok4.data;
  CHECK(std::vector<std::byte>(got.begin(), got.end()) == fresh);

  // Whatever the size: 1 MiB written in one WRITE is deferred, in redo records of at most
  // max_redo_data bytes each.
  constexpr std::size_t big_size = 4 * server::txn::max_redo_data;
  const auto big = pattern(big_size, 43);
  write_local(dir / "big", pattern(big_size, 44));
  const std::uint64_t big_id = t.next_id;
  REQUIRE(t.run({open_args(t.c, "big", false), write_args(0, big), CLOSE4args{0, stateid4{1, {}}}}).status ==
          nfsstat4::NFS4_OK);
  CHECK(read_all("big") == big);
  const auto bj = journal_of(big_id);
  REQUIRE(bj);
  CHECK(count(*bj, server::txn::rec_redo_write{}) == 4);
  CHECK(count(*bj, server::txn::rec_range{}) == 0);

  // Two OPEN ... CLOSE groups of the same file in one COMPOUND (how a vwrite sends a file
  // larger than half a COMPOUND): both deferred.
  const auto half1 = pattern(2000, 46), half2 = pattern(2000, 47);
  const std::uint64_t groups_id = t.next_id;
  REQUIRE(t.run({SAVEFH4args{}, open_args(t.c, "big", false), write_args(0, half1), CLOSE4args{0, stateid4{1, {}}}, RESTOREFH4args{},
                 open_args(t.c, "big", false), write_args(2000, half2), CLOSE4args{0, stateid4{1, {}}}})
              .status == nfsstat4::NFS4_OK);
  auto expect = big;
  std::copy(half1.begin(), half1.end(), expect.begin());
  std::copy(half2.begin(), half2.end(), expect.begin() + 2000);
  CHECK(read_all("big") == expect);
  const auto gj = journal_of(groups_id);
  REQUIRE(gj);
  CHECK(count(*gj, server::txn::rec_redo_write{}) == 2);
  CHECK(count(*gj, server::txn::rec_range{}) == 0);

  // Truncated by its OPEN, then written in two WRITEs: one after the other from 0, the file
  // is cut once, where the second ends; with a gap between them, where the first ends (the
  // gap reads as zeros).
  const auto redo_cuts = [](const server::txn::journal_contents& j) {
    std::vector<bool> cuts;
    for (const auto& r : j.records)
      if (const auto* w = std::get_if<server::txn::rec_redo_write>(&r)) cuts.push_back(w->cut);
    return cuts;
  };
  const auto p1 = pattern(3000, 48), p2 = pattern(1000, 49);
  for (const bool gap : {false, true}) {
    INFO((gap ? "with a gap" : "one after the other"));
    write_local(dir / "long", pattern(10000, 50));
    const std::uint64_t cut_id = t.next_id;
    const std::uint64_t second_at = gap ? 5000 : 3000;
    REQUIRE(t.run({open_args(t.c, "long", true, 0), write_args(0, p1), write_args(second_at, p2),
                   CLOSE4args{0, stateid4{1, {}}}})
                .status == nfsstat4::NFS4_OK);
    std::vector<std::byte> want = p1;
    want.resize(second_at);
    want.insert(want.end(), p2.begin(), p2.end());
    CHECK(read_all("long") == want);
    const auto cj = journal_of(cut_id);
    REQUIRE(cj);
    CHECK(redo_cuts(*cj) == (gap ? std::vector<bool>{true, false} : std::vector<bool>{false, true}));
  }

  // A file the COMPOUND reads after writing it keeps undo (a range backup), and the READ
  // sees the COMPOUND's own bytes.
  const auto mine = pattern(3000, 45);
  const std::uint64_t undo_id = t.next_id;
  const COMPOUND4res ru =
      t.run({open_args(t.c, "f", false), write_args(0, mine), READ4args{stateid4{1, {}}, 0, 3000}, CLOSE4args{0, stateid4{1, {}}}});
  REQUIRE(ru.status == nfsstat4::NFS4_OK);
  const auto& seen = result_at<READ4res>(ru, t.at(2)).resok4.data;
  CHECK(std::vector<std::byte>(seen.begin(), seen.end()) == mine);
  CHECK(read_all("f") == mine);
  const auto u = journal_of(undo_id);
  REQUIRE(u);
  CHECK(count(*u, server::txn::rec_range{}) == 1);
  CHECK(count(*u, server::txn::rec_redo_write{}) == 0);

  // A COMPOUND that lists a directory keeps undo for every file (a listing shows the sizes
  // of the files in it), and the listing shows its own write: "f" grown to 6000 bytes.
  const auto grown = pattern(6000, 53);
  READDIR4args list;
  list.maxcount = 8192;
  list.attr_request = bitmap4::of({FATTR4_SIZE});
  const std::uint64_t listed_id = t.next_id;
  const COMPOUND4res rl = t.run({SAVEFH4args{}, open_args(t.c, "f", false), write_args(0, grown),
                                 CLOSE4args{0, stateid4{1, {}}}, RESTOREFH4args{}, list});
  REQUIRE(rl.status == nfsstat4::NFS4_OK);
  std::optional<std::uint64_t> listed_size;
  for (const auto& e : result_at<READDIR4res>(rl, t.at(5)).resok4.reply.entries)
    if (e.name == "f") listed_size = decode_attributes(e.attrs).size;
  CHECK(listed_size == std::optional<std::uint64_t>(6000));
  CHECK(read_all("f") == grown);
  const auto l = journal_of(listed_id);
  REQUIRE(l);
  CHECK(count(*l, server::txn::rec_redo_write{}) == 0);
  CHECK(count(*l, server::txn::rec_range{}) == 1);
}

TEST_CASE("a transaction's write ending past 1 TiB is not deferred: it runs before the commit", "[txn]") {
  // A deferred write must not fail when applied after the commit point, and one file can
  // allow less than the file system's largest (txn/planner.cpp, max_deferred_end).
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tt");
  const auto dir = srv.export_dir() / wd;
  write_local(dir / "huge", pattern(100, 51));
  txn_client t(srv, wd);
  t.next_id = 910'000;
  const auto bytes = pattern(10, 52);
  const std::uint64_t at = (std::uint64_t(1) << 40) - 5;  // ends 5 bytes past 1 TiB
  const std::uint64_t id = t.next_id;
  REQUIRE(t.run({open_args(t.c, "huge", false), write_args(at, bytes), CLOSE4args{0, stateid4{1, {}}}}).status ==
          nfsstat4::NFS4_OK);
  CHECK(std::filesystem::file_size(dir / "huge") == at + bytes.size());
  const auto j = journal_of_txn(srv, id);
  REQUIRE(j);
  CHECK(count(*j, server::txn::rec_redo_write{}) == 0);
  CHECK(count(*j, server::txn::rec_attrs{}) == 1);  // undo: the old size and times (no bytes were there)
  std::filesystem::remove(dir / "huge");  // a sparse file of 1 TiB: no later digest reads it
}

TEST_CASE("a deferred write past the largest file the file system allows is refused at the WRITE", "[txn]") {
  // Applied after the commit point, it would fail there (EFBIG): vnfsd would stop, and its
  // replay at start-up fail again. A vnfsd started under a file-size limit of 1 MiB (its
  // largest file then; it ignores SIGXFSZ) is asked to defer a write ending past it.
  struct ::rlimit was {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &was) == 0);
  struct ::rlimit one_mib = was;
  one_mib.rlim_cur = 1u << 20;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &one_mib) == 0);
  std::optional<test_server> limited;
  try {
    limited.emplace(server_kind::vnfsd);  // (spawned: it inherits the limit)
  } catch (...) {
    ::setrlimit(RLIMIT_FSIZE, &was);
    throw;
  }
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &was) == 0);
  test_server& srv = *limited;
  const std::string wd = new_workdir(srv, "tf");
  const auto dir = srv.export_dir() / wd;
  write_local(dir / "b", pattern(1000, 53));
  txn_client t(srv, wd);
  t.next_id = 920'000;
  const auto tail = pattern(100, 54);
  const std::string before = settled_digest(dir);
  const std::uint64_t id = t.next_id;
  const COMPOUND4res r =
      t.run({open_args(t.c, "b", false), write_args((1u << 20) - 10, tail), CLOSE4args{0, stateid4{1, {}}}});
  CHECK(r.status == nfsstat4::NFS4ERR_FBIG);
  CHECK(r.resarray.size() == t.at(1) + 1);  // at that WRITE
  CHECK(settled_digest(dir) == before);
  CHECK_FALSE(journal_of_txn(srv, id));  // deferred, so nothing was backed up: no journal
  // The server is still there, and the same write ending at the limit is deferred and done.
  REQUIRE(t.run({open_args(t.c, "b", false), write_args((1u << 20) - 100, tail), CLOSE4args{0, stateid4{1, {}}}})
              .status == nfsstat4::NFS4_OK);
  CHECK(std::filesystem::file_size(dir / "b") == 1u << 20);
}

TEST_CASE("a transaction's OPEN after a SETATTR looks its name up with the permissions it then has", "[txn]") {
  // The planner looks an OPEN's name up ahead and hands the object to the OPEN; not after a
  // SETATTR, which may take away the search permission the OPEN's own lookup needs.
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tp");
  const auto dir = srv.export_dir() / wd;
  std::filesystem::create_directory(dir / "d");
  write_local(dir / "d" / "f", pattern(100, 9));
  for (const char* n : {"d", "d/f"}) REQUIRE(::chown((dir / n).c_str(), 1000, 1000) == 0);
  REQUIRE(::chmod((dir / "d").c_str(), 0755) == 0);
  session_options o;
  o.uid = 1000;
  o.gid = 1000;
  txn_client t(srv, wd, o);
  attributes no_search;
  no_search.mode = 0600;
  for (const bool create : {false, true}) {
    INFO((create ? "OPEN with create" : "OPEN"));
    auto r = t.run({LOOKUP4args{"d"}, setattr_args(no_search), open_args(t.c, "f", create)});
    CHECK(r.status == nfsstat4::NFS4ERR_ACCESS);
    CHECK(r.resarray.size() == t.at(2) + 1);  // the OPEN failed
    struct ::stat st {};
    REQUIRE(::stat((dir / "d").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);  // rolled back
  }
  // The same OPEN with the permission kept goes through.
  attributes search;
  search.mode = 0700;
  auto r = t.run({LOOKUP4args{"d"}, setattr_args(search), open_args(t.c, "f", false)});
  CHECK(r.status == nfsstat4::NFS4_OK);
}

TEST_CASE("the state directory is invisible to clients", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  txn_client t(srv, wd);
  REQUIRE(t.run({create_dir("made")}).status == nfsstat4::NFS4_OK);  // the state directory exists now
  REQUIRE(std::filesystem::is_directory(srv.export_dir() / ".vnfsd-txn"));
  nfs_client& c = t.c;
  auto root = c.s.root_ops();
  auto with_root = [&](std::vector<nfs_argop4> ops) {
    auto all = root;
    all.insert(all.end(), ops.begin(), ops.end());
    return c.call(std::move(all));
  };
  CHECK(with_root({LOOKUP4args{".vnfsd-txn"}}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(with_root({REMOVE4args{".vnfsd-txn"}}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(with_root({create_dir(".vnfsd-txn")}).status == nfsstat4::NFS4ERR_ACCESS);
  CHECK(with_root({SAVEFH4args{}, RENAME4args{wd, ".vnfsd-txn"}}).status == nfsstat4::NFS4ERR_ACCESS);
  CHECK(with_root({SAVEFH4args{}, RENAME4args{".vnfsd-txn", "x"}}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(with_root({open_args(c, ".vnfsd-txn", false)}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(with_root({open_args(c, ".vnfsd-txn", true)}).status == nfsstat4::NFS4ERR_ACCESS);
  CHECK(with_root({SECINFO4args{".vnfsd-txn"}}).status == nfsstat4::NFS4ERR_NOENT);
  // Not listed: READDIR of the root, page by page.
  std::uint64_t cookie = 0;
  verifier4 verf{};
  bool eof = false, seen_wd = false;
  for (int pages = 0; !eof && pages < 1000; ++pages) {
    READDIR4args rd;
    rd.cookie = cookie;
    rd.cookieverf = verf;
    rd.dircount = 0;
    rd.maxcount = 4096;
    auto r = with_root({rd});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    const auto& ok = result_at<READDIR4res>(r, 1 + root.size()).resok4;
    for (const auto& e : ok.reply.entries) {
      CHECK(e.name != ".vnfsd-txn");
      seen_wd = seen_wd || e.name == wd;
      cookie = e.cookie;
    }
    verf = ok.cookieverf;
    eof = ok.reply.eof;
  }
  CHECK(seen_wd);
}

TEST_CASE("VNFS_TXN anywhere but right after SEQUENCE is NFS4ERR_INVAL", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  nfs_client c(srv, wd);
  auto r = c.run({VNFS_TXN4args{1, 7, 0}, create_dir("x")});
  CHECK(r.status == nfsstat4::NFS4ERR_INVAL);
  CHECK_FALSE(std::filesystem::exists(srv.export_dir() / wd / "x"));
  txn_client t(srv, wd);
  // Undefined flags, and TXN_RETRY with anything but TXN_BEGIN: refused, nothing runs.
  for (const VNFS_TXN4args bad : {VNFS_TXN4args{1, 8, 2}, VNFS_TXN4args{1, 9, TXN_RETRY, 8},
                                  VNFS_TXN4args{static_cast<std::uint32_t>(txn_action4::TXN_JOIN), 10, TXN_RETRY, 8}}) {
    std::vector<nfs_argop4> ops{bad};
    for (auto& o : t.to_wd()) ops.push_back(std::move(o));
    ops.push_back(create_dir("y"));
    auto bad_flags = t.c.call(std::move(ops));
    CHECK(bad_flags.status == nfsstat4::NFS4ERR_INVAL);
    CHECK(bad_flags.resarray.size() == 2);
  }
  CHECK_FALSE(std::filesystem::exists(srv.export_dir() / wd / "y"));
}

TEST_CASE("a server without the extension executes nothing of a transactional COMPOUND", "[txn][ganesha]") {
  auto kind = GENERATE(server_kind::ganesha, server_kind::vnfsd);
  INFO(name_of(kind));
  static std::unique_ptr<test_server> plain;
  test_server* srv = &server_of(kind);
  if (kind == server_kind::vnfsd) {
    if (!plain) plain = std::make_unique<test_server>(server_kind::vnfsd, std::vector<std::string>{"--no-transactions"});
    ::chmod(plain->export_dir().c_str(), 0755);
    srv = plain.get();
  }
  const std::string wd = new_workdir(*srv, "tx");
  txn_client t(*srv, wd);
  auto r = t.run({create_dir("must-not-exist")});
  CHECK(r.status == nfsstat4::NFS4ERR_OP_ILLEGAL);
  REQUIRE(r.resarray.size() == 2);  // SEQUENCE, then the refusal: nothing after it ran
  CHECK(opnum_of(r.resarray[1]) == nfs_opnum4::OP_ILLEGAL);
  CHECK_FALSE(std::filesystem::exists(srv->export_dir() / wd / "must-not-exist"));
  // The session goes on: a plain COMPOUND afterwards works.
  CHECK(t.c.run({create_dir("plain")}).status == nfsstat4::NFS4_OK);
  CHECK(std::filesystem::is_directory(srv->export_dir() / wd / "plain"));
}

TEST_CASE("TXN_STATUS answers a transaction that changed nothing without a durable outcome", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  populate(srv.export_dir() / wd);
  txn_client t(srv, wd);
  const auto status_of_txn = [&](std::uint64_t id) {
    auto r = t.c.call({VNFS_TXN4args{static_cast<std::uint32_t>(txn_action4::TXN_STATUS), id, 0}});
    REQUIRE(r.resarray.size() == 2);
    REQUIRE(std::get<VNFS_TXN4res>(r.resarray[1]).status == nfsstat4::NFS4_OK);
    return static_cast<txn_outcome4>(std::get<VNFS_TXN4res>(r.resarray[1]).outcome);
  };
  const auto log = srv.export_dir() / ".vnfsd-txn" / "outcomes";
  // A changing one first: the state directory and the log exist from then on.
  const std::uint64_t changing = t.next_id;
  REQUIRE(t.run({create_dir("made")}).status == nfsstat4::NFS4_OK);
  CHECK(status_of_txn(changing) == txn_outcome4::TXN_COMMITTED);
  const auto size = std::filesystem::file_size(log);
  // Read-only: committed, and its outcome answered, but nothing written to the log.
  const std::uint64_t reading = t.next_id;
  REQUIRE(t.run({LOOKUP4args{"f"}, GETATTR4args{bitmap4::of({FATTR4_SIZE})}}).status == nfsstat4::NFS4_OK);
  CHECK(status_of_txn(reading) == txn_outcome4::TXN_COMMITTED);
  // Failing before any change: rolled back, answered, nothing written either.
  const std::uint64_t failing = t.next_id;
  REQUIRE(t.run({LOOKUP4args{"missing"}}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(status_of_txn(failing) == txn_outcome4::TXN_ABORTED);
  CHECK(std::filesystem::file_size(log) == size);
  // Another changing one is durable: one more 16-byte entry.
  const std::uint64_t changing2 = t.next_id;
  REQUIRE(t.run({create_dir("made2")}).status == nfsstat4::NFS4_OK);
  CHECK(status_of_txn(changing2) == txn_outcome4::TXN_COMMITTED);
  CHECK(std::filesystem::file_size(log) == size + 16);
}

TEST_CASE("a change backs up only the bytes that no earlier record of its transaction saved", "[txn]") {
  test_server& srv = server_of(server_kind::vnfsd);
  const std::string wd = new_workdir(srv, "tx");
  const auto dir = srv.export_dir() / wd;
  populate(dir);
  txn_client t(srv, wd);
  const std::string before = settled_digest(dir);
  // Where the open transaction `id`'s range backups end in its data file (they lie at 4
  // KiB-aligned offsets), from the records of its journal: the one journal file of the state
  // directory whose records begin `id` and neither commit nor end it.
  const auto data_size = [&](std::uint64_t id) {
    const auto state = srv.export_dir() / ".vnfsd-txn";
    const int sfd = ::open(state.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(sfd >= 0);
    std::uint64_t end = 0;
    int journals = 0;
    for (const auto& e : std::filesystem::directory_iterator(state)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".j0" && ext != ".j1") continue;
      std::error_code ec;
      const server::txn::journal_contents j = server::txn::read_journal(sfd, e.path().filename().string(), ec);
      REQUIRE(!ec);
      if (j.records.empty() || j.committed() || j.ended() ||
          std::get<server::txn::rec_begin>(j.records.front()).client_txnid != id)
        continue;
      ++journals;
      for (const auto& r : j.records)
        if (const auto* range = std::get_if<server::txn::rec_range>(&r))
          end = std::max(end, range->data_offset + range->length);
    }
    ::close(sfd);
    CHECK(journals == 1);
    return end;
  };
  const auto in_open_txn = [&](std::uint32_t action, std::uint64_t id, std::vector<nfs_argop4> ops) {
    std::vector<nfs_argop4> all{VNFS_TXN4args{action, id, 0}};
    for (auto& o : t.to_wd()) all.push_back(std::move(o));
    for (auto& o : ops) all.push_back(std::move(o));
    return t.c.call(std::move(all));
  };
  const auto abort = [&](std::uint64_t id) {
    auto r = t.c.call({VNFS_TXN4args{static_cast<std::uint32_t>(txn_action4::TXN_ABORT), id, 0}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
  };
  const auto begin = static_cast<std::uint32_t>(txn_action4::TXN_BEGIN);
  const auto join = static_cast<std::uint32_t>(txn_action4::TXN_JOIN);
  const auto fresh = pattern(10000, 41);

  // OPEN with truncate, then a WRITE of the whole file: the old 10000 bytes of "src" once.
  REQUIRE(in_open_txn(begin, 901, {open_args(t.c, "src", true, 0), write_args(0, fresh)}).status == nfsstat4::NFS4_OK);
  CHECK(data_size(901) == 10000);
  // A later COMPOUND of it rewrites the file again: nothing more.
  REQUIRE(in_open_txn(join, 901, {open_args(t.c, "src", false), write_args(0, fresh)}).status == nfsstat4::NFS4_OK);
  CHECK(data_size(901) == 10000);
  abort(901);
  CHECK(tree_digest(dir) == before);

  // Overlapping WRITEs of "f" (5000 bytes): [1000, 3000), then [0, 5000) saves only [0, 1000)
  // and [3000, 5000): backups at 0 (2000 bytes), 4096 (1000), 8192 (2000).
  const auto part = pattern(2000, 42), whole = pattern(5000, 43);
  REQUIRE(in_open_txn(begin, 902, {open_args(t.c, "f", false), write_args(1000, part)}).status == nfsstat4::NFS4_OK);
  CHECK(data_size(902) == 2000);
  REQUIRE(in_open_txn(join, 902, {open_args(t.c, "f", false), write_args(0, whole)}).status == nfsstat4::NFS4_OK);
  CHECK(data_size(902) == 8192 + 2000);
  abort(902);
  CHECK(tree_digest(dir) == before);
}
