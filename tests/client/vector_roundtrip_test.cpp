// Round trips of the vectorized calls against vnfsd (client::stats before and after): the
// packing the planner must reach (papers/000: 1,000 small files in a handful of COMPOUNDs),
// path compression, and failure indices across COMPOUND splits.
#include <fcntl.h>

#include <fstream>
#include <set>

#include "client_fixture.hpp"

using namespace vnfs;
using namespace vnfs::client_test;

namespace {

/// A session of at most 256 operations per COMPOUND (SEQUENCE included), as in the issue.
client_options ops256() {
  client_options o;
  o.max_operations = 256;
  return o;
}

std::string name(std::size_t i) { return "d/f" + std::to_string(i); }

}  // namespace

TEST_CASE("1,000 files of 1 KiB: each vectorized call in at most 25 COMPOUNDs", "[client][vector][roundtrip]") {
  if (skipped(target::vnfsd)) return;
  client_env env(target::vnfsd, ops256());
  client& c = env.c();
  const std::size_t n = 1000;
  std::filesystem::create_directory(env / "d");
  auto data = pattern(1024);

  std::vector<vio> w;
  for (std::size_t i = 0; i < n; ++i) w.emplace_back(name(i), 0, std::span<const std::byte>(data), vio_flags::create);
  cost k = cost_of(c, [&] { REQUIRE_OK(c.vwrite(w)); });
  INFO("vwrite: " << k.compounds << " COMPOUNDs, " << k.operations << " operations");
  // PUTFH, LOOKUP d, SAVEFH once per COMPOUND; then OPEN, WRITE, CLOSE, RESTOREFH per file
  // (no RESTOREFH before the first): 63 files fill 256 operations.
  CHECK(k.compounds == 16);
  CHECK(k.operations == n * 4 + 16 * (1 + 3 - 1));
  CHECK(k.operations >= 200 * k.compounds);

  std::vector<std::vector<std::byte>> back(n, std::vector<std::byte>(1024));
  std::vector<vio> rd;
  for (std::size_t i = 0; i < n; ++i) rd.emplace_back(name(i), 0, std::span<std::byte>(back[i]));
  k = cost_of(c, [&] { REQUIRE_OK(c.vread(rd)); });
  CHECK(k.compounds == 16);
  CHECK(k.operations >= 200 * k.compounds);
  for (std::size_t i = 0; i < n; i += 97) CHECK(back[i] == data);

  std::vector<vattr> attrs;
  for (std::size_t i = 0; i < n; ++i) attrs.emplace_back(name(i));
  k = cost_of(c, [&] { REQUIRE_OK(c.vgetattrs(attrs)); });
  INFO("vgetattrs: " << k.compounds << " COMPOUNDs, " << k.operations << " operations");
  CHECK(k.compounds <= 25);
  CHECK(k.operations >= 200 * k.compounds);
  CHECK(attrs[999].stat.size == 1024);

  std::vector<std::string> paths;
  for (std::size_t i = 0; i < n; ++i) paths.push_back(name(i));
  k = cost_of(c, [&] { REQUIRE_OK(c.vremove(paths)); });
  INFO("vremove: " << k.compounds << " COMPOUNDs, " << k.operations << " operations");
  CHECK(k.compounds == 4);  // PUTFH, LOOKUP d, then up to 253 REMOVEs
  CHECK(k.operations == n + 4 * 3);
  CHECK(std::filesystem::is_empty(env / "d"));
}

TEST_CASE("path compression: relative LOOKUPs from the previous path", "[client][vector][roundtrip]") {
  if (skipped(target::vnfsd)) return;
  client_env env(target::vnfsd);
  client& c = env.c();
  std::filesystem::create_directories(env / "1/2/3/4/5/6/7");
  std::ofstream(env / "1/2/3/4/5/6/7/a");
  std::ofstream(env / "1/2/3/4/5/6/7/b");
  std::filesystem::create_directories(env / "1/2/3/4/5/6/8");
  std::vector<vattr> attrs{vattr("1/2/3/4/5/6/7/a"), vattr("1/2/3/4/5/6/7/b")};
  // SEQUENCE, PUTFH, 7 LOOKUPs, SAVEFH, LOOKUP a, GETATTR, RESTOREFH, LOOKUP b, GETATTR.
  cost k = cost_of(c, [&] { REQUIRE_OK(c.vgetattrs(attrs)); });
  CHECK(k.compounds == 1);
  CHECK(k.operations == 15);

  // Directories: LOOKUPP and LOOKUP from the current one (READDIR keeps it current).
  std::vector<std::string> dirs{"1/2/3/4/5/6/7", "1/2/3/4/5/6/8", "1/2/3/4/5/6"};
  k = cost_of(c, [&] { REQUIRE_OK(c.vlistdir(dirs, {})); });
  // SEQUENCE, PUTFH, 7 LOOKUPs, READDIR, LOOKUPP, LOOKUP 8, READDIR, LOOKUPP, READDIR.
  CHECK(k.compounds == 1);
  CHECK(k.operations == 15);

  // A chain of new directories: each CREATE leaves the new one current: one operation each.
  std::vector<vmkdir_item> chain;
  std::string p = "c";
  for (int i = 0; i < 50; ++i, p += "/c") chain.push_back({p, 0755});
  k = cost_of(c, [&] { REQUIRE_OK(c.vmkdir(chain)); });
  CHECK(k.compounds == 1);
  CHECK(k.operations == 1 + 1 + 50);  // SEQUENCE, PUTFH, 50 CREATEs

  // Renames between two directories: the source directory stays saved, the target current.
  std::filesystem::create_directory(env / "from");
  std::filesystem::create_directory(env / "to");
  for (int i = 0; i < 20; ++i) std::ofstream(env / ("from/r" + std::to_string(i)));
  std::vector<vrename_item> moves;
  for (int i = 0; i < 20; ++i) moves.push_back({"from/r" + std::to_string(i), "to/r" + std::to_string(i)});
  k = cost_of(c, [&] { REQUIRE_OK(c.vrename(moves)); });
  // SEQUENCE, PUTFH, LOOKUP from, SAVEFH, PUTFH, LOOKUP to, 20 RENAMEs.
  CHECK(k.compounds == 1);
  CHECK(k.operations == 6 + 20);
}

namespace {

struct paged_listing {
  client* c = nullptr;
  std::uint64_t compounds_before = 0;
  std::filesystem::path from, to;  ///< renamed while the second page is delivered
  bool renamed = false;
  std::set<std::string> names;
  std::size_t duplicates = 0;
};

void on_paged_entry(const std::string&, const dir_entry& e, std::size_t, void* user) {
  auto* l = static_cast<paged_listing*>(user);
  if (!l->names.insert(e.name).second) ++l->duplicates;
  if (!l->renamed && l->c->stats().compounds - l->compounds_before == 2) {
    std::filesystem::rename(l->from, l->to);
    l->renamed = true;
  }
}

}  // namespace

TEST_CASE("a directory of many pages: later pages start from its handle, not its path", "[client][vector][roundtrip]") {
  if (skipped(target::vnfsd)) return;
  client_env env(target::vnfsd);
  client& c = env.c();
  const std::size_t n = 1200;
  std::filesystem::create_directories(env / "a/b/d");
  for (std::size_t i = 0; i < n; ++i) std::ofstream(env / ("a/b/d/entry-" + std::to_string(i)));

  // The directory is renamed while its second page is delivered: the pages after it still
  // list it, because they name it by the handle the second page learned.
  paged_listing l;
  l.c = &c;
  l.compounds_before = c.stats().compounds;
  l.from = env / "a/b/d";
  l.to = env / "a/b/renamed";
  vlistdir_options o;
  o.callback = on_paged_entry;
  o.user = &l;
  std::vector<std::string> dirs{"a/b/d"};
  cost k = cost_of(c, [&] { REQUIRE_OK(c.vlistdir(dirs, o)); });
  INFO(k.compounds << " COMPOUNDs, " << k.operations << " operations");
  CHECK(l.renamed);
  CHECK(l.names.size() == n);
  CHECK(l.duplicates == 0);
  // One page per COMPOUND. First: SEQUENCE, PUTFH, 3 LOOKUPs, READDIR; second: the same and
  // GETFH; every later one: SEQUENCE, PUTFH, READDIR.
  REQUIRE(k.compounds >= 3);
  CHECK(k.operations == 6 + 7 + 3 * (k.compounds - 2));
}

TEST_CASE("a failure in a later COMPOUND reports the caller's index", "[client][vector][roundtrip]") {
  if (skipped(target::vnfsd)) return;
  client_env env(target::vnfsd, ops256());
  client& c = env.c();
  std::filesystem::create_directory(env / "d");
  const std::size_t n = 300;
  for (std::size_t i = 0; i < n; ++i)
    if (i != 200) std::ofstream(env / name(i));
  std::vector<vattr> attrs;
  for (std::size_t i = 0; i < n; ++i) attrs.emplace_back(name(i));
  client_stats before = c.stats();
  vresult r = c.vgetattrs(attrs);
  CHECK((c.stats() - before).compounds >= 3);  // item 200 is past the first two COMPOUNDs
  CHECK(r.error == std::errc::no_such_file_or_directory);
  CHECK(r.failed_index == 200);
  for (std::size_t i = 0; i < 200; ++i) CHECK_FALSE(r.status[i]);
  CHECK(r.status[201] == errc::not_executed);  // after the failure in its COMPOUND
  CHECK(r.ok_count >= 200);

  // The removals of unrelated names are not ordered: the COMPOUND after the failed one may
  // have run. Every status says what happened to its file.
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < n; ++i) paths.push_back(name(i));
  r = c.vremove(paths);
  CHECK(r.failed_index == 200);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("item " << i);
    if (i < 200) CHECK_FALSE(r.status[i]);
    if (i > 200 && i < 253) CHECK(r.status[i] == errc::not_executed);  // after the failure, in its COMPOUND
    if (i != 200) CHECK(std::filesystem::exists(env / name(i)) == (r.status[i] == errc::not_executed));
  }
  CHECK(r.ok_count >= 200);
}

TEST_CASE("related names are changed in the caller's order across COMPOUNDs", "[client][vector][roundtrip]") {
  if (skipped(target::vnfsd)) return;
  client_env env(target::vnfsd, ops256());
  client& c = env.c();
  // 300 directories, each with a file: removing files before their directories spans
  // several COMPOUNDs, and a directory's REMOVE must wait for its file's.
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < 300; ++i) {
    std::filesystem::create_directory(env / ("t" + std::to_string(i)));
    std::ofstream(env / ("t" + std::to_string(i) + "/f"));
    paths.push_back("t" + std::to_string(i) + "/f");
  }
  for (std::size_t i = 0; i < 300; ++i) paths.push_back("t" + std::to_string(i));
  client_stats before = c.stats();
  REQUIRE_OK(c.vremove(paths));
  CHECK((c.stats() - before).compounds >= 3);
  for (std::size_t i = 0; i < 300; ++i) CHECK_FALSE(std::filesystem::exists(env / ("t" + std::to_string(i))));
}

TEST_CASE("the scalar baseline: compound_vectors off sends one item at a time", "[client][vector][roundtrip]") {
  if (skipped(target::vnfsd)) return;
  client_options o;
  o.compound_vectors = false;
  client_env env(target::vnfsd, o);
  client& c = env.c();
  std::filesystem::create_directory(env / "d");
  auto data = pattern(100);
  std::vector<vio> w;
  for (std::size_t i = 0; i < 10; ++i) w.emplace_back(name(i), 0, std::span<const std::byte>(data), vio_flags::create);
  cost k = cost_of(c, [&] { REQUIRE_OK(c.vwrite(w)); });
  // Per file, as the scalar calls: open (a LOOKUP COMPOUND for d, then OPEN), WRITE, CLOSE.
  CHECK(k.compounds == 10 * 4);
  // attrs_after: the scalar setattr after the CLOSE (a LOOKUP COMPOUND per component of
  // d/f0, then SETATTR).
  w.resize(1);
  w[0].attrs_after = attr::mode | attr::mtime;
  w[0].attrs.mode = 0604;
  w[0].attrs.mtime = {1'400'000'000, 0};
  k = cost_of(c, [&] { REQUIRE_OK(c.vwrite(w)); });
  CHECK(k.compounds == 4 + 3);
  struct ::stat st {};
  REQUIRE(::stat((env / name(0)).c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0604);
  CHECK(st.st_mtim.tv_sec == 1'400'000'000);
}
