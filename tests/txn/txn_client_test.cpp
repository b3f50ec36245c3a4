// The client's atomic vectorized calls (client_options::atomic_vectors): all items take
// effect or none, with exact outcomes, in the synchronous and completion-group forms;
// refused before anything runs by a server without the extension (NFS-Ganesha) and for
// calls that need more than one COMPOUND.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "client/nfs/session_call.hpp"
#include "client_fixture.hpp"
#include "tree_digest.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/transaction.hpp"
#include "vnfs/test/vnfsd_process.hpp"
#include "vnfs/nfs4/status.hpp"

using namespace vnfs;
using namespace vnfs::client_test;
using vnfs::txn_test::settled_digest;
using vnfs::txn_test::tree_digest;

namespace {

client_options atomic() {
  client_options o;
  o.atomic_vectors = true;
  return o;
}

void write_local(const std::filesystem::path& p, std::string_view text) { std::ofstream(p) << text; }

void populate(const std::filesystem::path& d) {
  write_local(d / "a", "aaaaaaaaaaaaaaaaaaaa");
  write_local(d / "b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  write_local(d / "c", "cc");
  std::filesystem::create_directory(d / "sub");
  std::int64_t t = 1'500'000'000;
  for (const char* n : {"a", "b", "c", "sub", "."}) {
    struct timespec ts[2] = {{t, 1}, {t + 1, 2}};
    REQUIRE(::utimensat(AT_FDCWD, (d / n).c_str(), ts, AT_SYMLINK_NOFOLLOW) == 0);
    t += 10;
  }
}

/// The outcome of an aborted transaction whose item `failed` failed with `ec`.
void check_aborted(const vresult& r, std::size_t failed, std::error_code ec) {
  CHECK(r.error == ec);
  CHECK(r.failed_index == failed);
  CHECK(r.ok_count == 0);
  REQUIRE(r.status.size() > failed);
  for (std::size_t i = 0; i < failed; ++i) CHECK(r.status[i] == errc::rolled_back);
  CHECK(r.status[failed] == ec);
  for (std::size_t i = failed + 1; i < r.status.size(); ++i) CHECK(r.status[i] == errc::not_executed);
}

const std::error_code noent = nfs4::nfsstat4::NFS4ERR_NOENT;

}  // namespace

TEST_CASE("atomic vectorized calls: a failing item undoes every item before it", "[txn][client]") {
  client_env env(target::vnfsd, atomic());
  populate(env.dir());
  const std::string before = settled_digest(env.dir());
  client& c = env.c();

  std::vector<vmkdir_item> dirs{{"m1", 0755}, {"m1/m2", 0700}, {"missing/m3", 0755}};
  check_aborted(c.vmkdir(dirs), 2, noent);

  const std::string data = "new data, longer than the old";
  std::vector<vio> writes;
  writes.emplace_back(vfile("w1"), 0, std::as_bytes(std::span(data)), vio_flags::create);
  writes.emplace_back(vfile("a"), 5, std::as_bytes(std::span(data)));
  writes.emplace_back(vfile("b"), 0, std::as_bytes(std::span(data)), vio_flags::truncate);
  writes.emplace_back(vfile("missing/x"), 0, std::as_bytes(std::span(data)), vio_flags::create);
  check_aborted(c.vwrite(writes), 3, noent);

  std::vector<std::string> removals{"a", "sub", "nonexistent"};
  check_aborted(c.vremove(removals), 2, noent);

  std::vector<vrename_item> renames{{"a", "a2"}, {"b", "c"}, {"nonexistent", "z"}};
  check_aborted(c.vrename(renames), 2, noent);

  std::vector<vlink> symlinks{{"a", "s1"}, {"../b", "sub/s2"}, {"x", "missing/s3"}};
  check_aborted(c.vsymlink(symlinks), 2, noent);

  std::vector<vlink> links{{"a", "h1"}, {"b", "sub/h2"}, {"nonexistent", "h3"}};
  check_aborted(c.vhardlink(links), 2, noent);

  std::vector<vattr> attrs(3);
  attrs[0] = vattr(vfile("a"), attr::mode | attr::size);
  attrs[0].stat.mode = 0600;
  attrs[0].stat.size = 3;
  attrs[1] = vattr(vfile("b"), attr::mtime);
  attrs[1].stat.mtime = {1'000'000'000, 0};
  attrs[2] = vattr(vfile("nonexistent"), attr::mode);
  attrs[2].stat.mode = 0600;
  check_aborted(c.vsetattrs(attrs), 2, noent);

  CHECK(tree_digest(env.dir()) == before);
}

TEST_CASE("atomic vectorized calls commit when every item succeeds", "[txn][client]") {
  client_env env(target::vnfsd, atomic());
  populate(env.dir());
  client& c = env.c();
  std::vector<vmkdir_item> dirs{{"m1", 0755}, {"m1/m2", 0700}};
  vresult r = c.vmkdir(dirs);
  CHECK(r.ok());
  CHECK(r.ok_count == 2);
  CHECK(std::filesystem::is_directory(env / "m1/m2"));
  std::vector<vrename_item> renames{{"a", "m1/a"}, {"b", "c"}};
  r = c.vrename(renames);
  CHECK(r.ok());
  CHECK(std::filesystem::file_size(env / "c") == 30);
  CHECK(std::filesystem::exists(env / "m1/a"));
}

TEST_CASE("atomic vectorized calls in the completion-group form", "[txn][client]") {
  client_env env(target::vnfsd, atomic());
  populate(env.dir());
  const std::string before = settled_digest(env.dir());
  completion_group g;
  std::vector<std::string> removals{"a", "b", "nonexistent"};
  vresult r;
  env.c().async_vremove(removals, &r, g, 7);
  completion e = g.wait();
  CHECK(e.tag == 7);
  CHECK(e.status == noent);
  check_aborted(r, 2, noent);
  CHECK(tree_digest(env.dir()) == before);
}

TEST_CASE("an atomic call that needs more than one COMPOUND is refused before anything is sent", "[txn][client]") {
  client_env env(target::vnfsd, atomic());
  std::vector<vmkdir_item> dirs;
  for (int i = 0; i < 1100; ++i) dirs.push_back({"d" + std::to_string(i), 0755});  // > 1024 operations
  const auto sent = env.c().stats().compounds;
  vresult r = env.c().vmkdir(dirs);
  CHECK(r.error == errc::transaction_too_large);
  CHECK(r.failed_index == vresult::npos);
  CHECK(r.ok_count == 0);
  CHECK(env.c().stats().compounds == sent);
  CHECK(std::filesystem::is_empty(env.dir()));
}

TEST_CASE("atomic calls against NFS-Ganesha fail with transactions_unsupported and execute nothing", "[txn][client][ganesha]") {
  if (skipped(target::ganesha)) return;
  client_env env(target::ganesha, atomic());
  std::vector<vmkdir_item> dirs{{"g1", 0755}, {"g2", 0755}};
  vresult r = env.c().vmkdir(dirs);
  CHECK(r.error == errc::transactions_unsupported);
  CHECK(r.error == std::errc::not_supported);
  CHECK(r.failed_index == vresult::npos);
  CHECK(r.ok_count == 0);
  CHECK(r.status == std::vector<std::error_code>(2, make_error_code(errc::not_executed)));
  CHECK_FALSE(std::filesystem::exists(env / "g1"));
  // Plain calls on the same server are unaffected.
  client plain = client::connect(env.url());
  CHECK(plain.vmkdir(dirs).ok());
  CHECK(std::filesystem::is_directory(env / "g2"));
}

TEST_CASE("atomic_vectors needs nfs:// with compound_vectors", "[txn][client]") {
  client_env env(target::vnfsd);
  client_options o = atomic();
  CHECK(error_of([&] { client::connect("file://" + env.dir().string(), o); }) == errc::bad_argument);
  o.compound_vectors = false;
  CHECK(error_of([&] { client::connect(env.url(), o); }) == errc::bad_argument);
}

TEST_CASE("a fresh vnfsd's first transactions may come from a caller other than root", "[txn][client]") {
  // The first transaction creates the server's state (the state directory, the outcome log)
  // as the server, whoever asked: the caller here may not even read that directory.
  const std::string data(5000, 'u');
  for (const bool spanning : {false, true}) {
    INFO((spanning ? "first: transaction::begin" : "first: an atomic vwrite"));
    test::temp_dir d("vnfs-txn-user");
    ::chmod(d.path().c_str(), 0755);
    std::filesystem::create_directory(d.path() / "w");
    REQUIRE(::chown((d.path() / "w").c_str(), 1000, 1000) == 0);
    test::vnfsd_process p(d.path());
    client_options o = atomic();
    o.uid = 1000;
    o.gid = 1000;
    client c = client::connect("nfs://" + p.host() + ":" + std::to_string(p.port()) + "/w", o);
    std::vector<vio> w;
    w.emplace_back(vfile("a"), 0, std::as_bytes(std::span(data)), vio_flags::create);
    w.emplace_back(vfile("b"), 0, std::as_bytes(std::span(data)), vio_flags::create);
    if (spanning) {
      transaction t = transaction::begin(c);
      CHECK(t.view().vwrite(w).ok());
      CHECK_FALSE(t.commit());
    } else {
      CHECK(c.vwrite(w).ok());
    }
    struct ::stat st {};
    REQUIRE(::stat((d.path() / "w/a").c_str(), &st) == 0);
    CHECK(st.st_uid == 1000u);
    CHECK(st.st_size == 5000);
    // One that fails at its last item: rolled back, and the server serves on.
    w.clear();
    w.emplace_back(vfile("c"), 0, std::as_bytes(std::span(data)), vio_flags::create);
    w.emplace_back(vfile("missing/d"), 0, std::as_bytes(std::span(data)), vio_flags::create);
    CHECK(c.vwrite(w).failed_index == 1);
    CHECK_FALSE(std::filesystem::exists(d.path() / "w/c"));
    CHECK(p.running());
    std::vector<vmkdir_item> dirs{{"m", 0755}};
    CHECK(c.vmkdir(dirs).ok());
  }
}

TEST_CASE("a transaction past the server's backup limit fails with NFS4ERR_NOSPC and changes nothing", "[txn][client]") {
  test::temp_dir d("vnfs-txn-limit");
  ::chmod(d.path().c_str(), 0755);
  const std::string old(3u << 20, 'o');
  write_local(d.path() / "big", old);
  test::vnfsd_process p(d.path(), {"--txn-max-backup-mib", "1"});
  client c = client::connect("nfs://" + p.host() + ":" + std::to_string(p.port()) + "/", atomic());
  const std::string fresh(1u << 20, 'n');
  std::vector<vio> w;  // two overwrites of 1 MiB each: the second passes the limit
  w.emplace_back(vfile("big"), 0, std::as_bytes(std::span(fresh)));
  w.emplace_back(vfile("big"), 1u << 20, std::as_bytes(std::span(fresh)));
  vresult r = c.vwrite(w);
  CHECK(r.error == nfs4::nfsstat4::NFS4ERR_NOSPC);
  CHECK(r.failed_index == 1);
  CHECK(r.ok_count == 0);
  std::ifstream in(d.path() / "big");
  const std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(now == old);
  // Within the limit, the same server commits.
  w.pop_back();
  CHECK(c.vwrite(w).ok());
}

TEST_CASE("TXN_UNKNOWN after a lost reply is aborted only within txn_outcome_kept_seconds of sending", "[txn][client]") {
  using std::chrono::seconds;
  const seconds kept(nfs4::txn_outcome_kept_seconds);
  CHECK(detail::unknown_outcome(seconds(0)) == errc::transaction_aborted);
  CHECK(detail::unknown_outcome(kept - seconds(1)) == errc::transaction_aborted);
  // From then on the server may have forgotten a commit: the client cannot tell.
  CHECK(detail::unknown_outcome(kept) == errc::outcome_unknown);
  CHECK(detail::unknown_outcome(kept + seconds(3600)) == errc::outcome_unknown);
}
