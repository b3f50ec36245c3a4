// The vectorized calls against vnfsd (over TCP and over RPC-over-RDMA/cma), NFS-Ganesha and
// file://, with the same expectations:
// bytes, attributes, per-item statuses, the index of the first failure and the state of the
// items before and after it. Over file:// each item makes the POSIX calls of the scalar
// calls, so agreement here is agreement between the COMPOUND planner and POSIX.
#include <fcntl.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "client_fixture.hpp"

using namespace vnfs;
using namespace vnfs::client_test;

namespace {

std::string name(const char* prefix, std::size_t i) { return prefix + std::to_string(i); }

std::string read_local(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string as_string(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

const std::error_code not_executed = make_error_code(errc::not_executed);

/// Entries a vlistdir delivers, as "dir/name" → type.
void collect(const std::string& dir, const dir_entry& e, std::size_t, void* user) {
  (*static_cast<std::map<std::string, file_type>*>(user))[dir.empty() ? e.name : dir + "/" + e.name] = e.stat.type;
}

}  // namespace

TEST_CASE("vwrite creates and vread reads many files", "[client][vector]") {
  FOR_EACH_TARGET();
  const std::size_t n = 40;
  std::vector<std::vector<std::byte>> data;
  std::vector<vio> w;
  for (std::size_t i = 0; i < n; ++i) data.push_back(pattern(100 + 37 * i, static_cast<unsigned>(i)));
  for (std::size_t i = 0; i < n; ++i)
    w.emplace_back(name("f", i), 0, std::span<const std::byte>(data[i]), vio_flags::create);
  vresult r = c.vwrite(w);
  REQUIRE_OK(r);
  CHECK(r.ok_count == n);
  CHECK(r.failed_index == vresult::npos);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(w[i].bytes == data[i].size());
    CHECK(read_local(env / name("f", i)) == as_string(data[i]));
  }

  // Reads: whole files, a part, past the end, and twice from one file (one OPEN for both).
  std::vector<std::vector<std::byte>> back(n + 2, std::vector<std::byte>(2048));
  std::vector<vio> rd;
  for (std::size_t i = 0; i < n; ++i) rd.emplace_back(name("f", i), 0, std::span<std::byte>(back[i]));
  rd.emplace_back("f3", 10, std::span<std::byte>(back[n]).first(5));
  rd.emplace_back("f3", 5000, std::span<std::byte>(back[n + 1]).first(5));
  r = c.vread(rd);
  REQUIRE_OK(r);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(rd[i].bytes == data[i].size());
    CHECK(rd[i].eof);
    CHECK(as_string(std::span(back[i]).first(data[i].size())) == as_string(data[i]));
  }
  CHECK(rd[n].bytes == 5);
  CHECK_FALSE(rd[n].eof);
  CHECK(as_string(std::span(back[n]).first(5)) == as_string(std::span(data[3]).subspan(10, 5)));
  CHECK(rd[n + 1].bytes == 0);
  CHECK(rd[n + 1].eof);
}

TEST_CASE("vwrite flags: truncate, exclusive, append at the end, stable", "[client][vector]") {
  FOR_EACH_TARGET();
  auto ten = pattern(10), three = pattern(3, 7);
  std::vector<vio> w{vio("t", 0, std::span<const std::byte>(ten), vio_flags::create)};
  REQUIRE_OK(c.vwrite(w));
  w = {vio("t", 0, std::span<const std::byte>(three), vio_flags::create | vio_flags::truncate | vio_flags::stable)};
  REQUIRE_OK(c.vwrite(w));
  CHECK(read_local(env / "t") == as_string(three));
  w = {vio("t", 0, std::span<const std::byte>(three), vio_flags::create | vio_flags::exclusive)};
  vresult r = c.vwrite(w);
  CHECK(r.error == std::errc::file_exists);
  CHECK(r.failed_index == 0);
  if (env.kind() != target::ganesha) {  // the append extension is vnfsd's
    w = {vio("t", 0, std::span<const std::byte>(ten), vio_flags::append)};
    REQUIRE_OK(c.vwrite(w));
    CHECK(read_local(env / "t") == as_string(three) + as_string(ten));
  }
}

TEST_CASE("vwrite with truncate and vcopy onto longer files leave exactly the new bytes", "[client][vector]") {
  // vnfsd and file:// write over the old bytes and then cut the file where the new ones end.
  FOR_EACH_TARGET();
  auto ten = pattern(10), three = pattern(3, 7), four = pattern(4, 8);
  std::vector<vio> w{vio("t", 0, std::span<const std::byte>(ten), vio_flags::create),
                     vio("e", 0, std::span<const std::byte>(ten), vio_flags::create),
                     vio("d", 0, std::span<const std::byte>(ten), vio_flags::create),
                     vio("o", 0, std::span<const std::byte>(ten), vio_flags::create),
                     vio("src", 0, std::span<const std::byte>(three), vio_flags::create)};
  REQUIRE_OK(c.vwrite(w));
  w = {vio("t", 0, std::span<const std::byte>(three), vio_flags::create | vio_flags::truncate),
       vio("e", 0, std::span<const std::byte>(), vio_flags::truncate)};
  REQUIRE_OK(c.vwrite(w));
  CHECK(read_local(env / "t") == as_string(three));
  CHECK(read_local(env / "e").empty());
  // Longer than the file: it grows.
  w = {vio("t", 0, std::span<const std::byte>(four), vio_flags::truncate)};
  REQUIRE_OK(c.vwrite(w));
  CHECK(read_local(env / "t") == as_string(four));

  std::vector<vcopy_item> items(2);
  items[0].src = "src", items[0].dst = "d";
  items[1].src = "src", items[1].dst = "o", items[1].dst_offset = 5;  // truncated, then written at 5
  REQUIRE_OK(c.vcopy(items));
  CHECK(read_local(env / "d") == as_string(three));
  CHECK(read_local(env / "o") == std::string(5, '\0') + as_string(three));
}

TEST_CASE("a failure in the middle of a vector: its index, and the items before and after", "[client][vector]") {
  FOR_EACH_TARGET();
  std::vector<vmkdir_item> dirs;
  for (std::size_t i = 0; i < 10; ++i) dirs.push_back({name("d", i), 0755});
  dirs[6].path = "missing/d6";  // its parent does not exist
  vresult r = c.vmkdir(dirs);
  CHECK(r.error == std::errc::no_such_file_or_directory);
  CHECK(r.failed_index == 6);
  CHECK(r.ok_count == 6);
  REQUIRE(r.status.size() == 10);
  for (std::size_t i = 0; i < 6; ++i) CHECK_FALSE(r.status[i]);
  for (std::size_t i = 7; i < 10; ++i) CHECK(r.status[i] == not_executed);
  for (std::size_t i = 0; i < 10; ++i) CHECK(std::filesystem::exists(env / name("d", i)) == (i < 6));

  std::vector<vattr> attrs{vattr("d0"), vattr("nope"), vattr("d1")};
  r = c.vgetattrs(attrs);
  CHECK(r.failed_index == 1);
  CHECK(r.status[0] == std::error_code());
  CHECK(r.status[2] == not_executed);
  CHECK(attrs[0].stat.type == file_type::directory);
}

TEST_CASE("vgetattrs and vsetattrs: masks, handles, several attributes at once", "[client][vector]") {
  FOR_EACH_TARGET();
  auto data = pattern(1000);
  std::vector<vio> w{vio("a", 0, std::span<const std::byte>(data), vio_flags::create),
                     vio("b", 0, std::span<const std::byte>(data).first(10), vio_flags::create)};
  REQUIRE_OK(c.vwrite(w));
  REQUIRE_OK(c.vmkdir(std::vector<vmkdir_item>{{"sub", 0700}}));

  std::vector<vattr> set(2);
  set[0].file = "a";
  set[0].mask = attr::mode | attr::mtime | attr::size;
  set[0].stat.mode = 0640;
  set[0].stat.mtime = {1'000'000'000, 500};
  set[0].stat.size = 123;
  set[1].file = "sub";
  set[1].mask = attr::mode | attr::atime | attr::mtime;
  set[1].stat.mode = 0751;
  set[1].stat.atime = {1'100'000'000, 0};
  set[1].stat.mtime = {1'200'000'000, 0};
  REQUIRE_OK(c.vsetattrs(set));

  std::vector<vattr> get{vattr("a", attr::stat | attr::handle), vattr("b", attr::size), vattr("sub"), vattr("")};
  get[1].stat.mode = 0111;  // outside the mask: left as it was
  REQUIRE_OK(c.vgetattrs(get));
  CHECK(get[0].stat.type == file_type::regular);
  CHECK(get[0].stat.mode == 0640);
  CHECK(get[0].stat.size == 123);
  CHECK(get[0].stat.mtime.tv_sec == 1'000'000'000);
  CHECK(get[0].stat.mtime.tv_nsec == 500);
  CHECK_FALSE(get[0].handle.bytes.empty());
  CHECK(get[1].stat.size == 10);
  CHECK(get[1].stat.mode == 0111);
  CHECK(get[2].stat.type == file_type::directory);
  CHECK(get[2].stat.mode == 0751);
  CHECK(get[2].stat.atime.tv_sec == 1'100'000'000);
  CHECK(get[2].stat.mtime.tv_sec == 1'200'000'000);
  CHECK(get[3].stat.type == file_type::directory);
  struct ::stat st {};
  REQUIRE(::stat((env / "a").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(st.st_size == 123);

  // A file handle names the object: read through it.
  std::vector<std::byte> back(200);
  std::vector<vio> rd{vio(get[0].handle, 0, std::span<std::byte>(back))};
  REQUIRE_OK(c.vread(rd));
  CHECK(rd[0].bytes == 123);
  CHECK(as_string(std::span(back).first(123)) == as_string(std::span(data).first(123)));

  std::vector<vattr> bad(1);
  bad[0].file = "a";
  bad[0].mask = attr::type;  // not settable
  CHECK(c.vsetattrs(bad).error == errc::bad_argument);
}

TEST_CASE("vwrite's attrs_after: mode and times given with the data, in the same COMPOUND", "[client][vector]") {
  FOR_EACH_TARGET();
  auto data = pattern(5000), more = pattern(100, 3);
  REQUIRE_OK(c.vmkdir(std::vector<vmkdir_item>{{"s", 0755}}));
  std::vector<vio> w{vio("s/a", 0, std::span<const std::byte>(data), vio_flags::create),
                     vio("s/b", 0, std::span<const std::byte>(more), vio_flags::create)};
  w[0].attrs_after = attr::mode | attr::atime | attr::mtime;  // read-only: the data went first
  w[0].attrs.mode = 0444;
  w[0].attrs.atime = {1'100'000'000, 7};
  w[0].attrs.mtime = {1'200'000'000, 9};
  w[1].mode = 0600;
  w[1].attrs_after = attr::mtime;
  w[1].attrs.mtime = {1'300'000'000, 0};
  const std::uint64_t before = c.stats().compounds;
  REQUIRE_OK(c.vwrite(w));
  if (env.kind() != target::local) CHECK(c.stats().compounds - before == 1);
  CHECK(w[0].bytes == data.size());
  struct ::stat st {};
  REQUIRE(::stat((env / "s" / "a").c_str(), &st) == 0);  // before reading it sets the atime
  CHECK((st.st_mode & 07777) == 0444);
  CHECK(st.st_atim.tv_sec == 1'100'000'000);
  CHECK(st.st_atim.tv_nsec == 7);
  CHECK(st.st_mtim.tv_sec == 1'200'000'000);
  CHECK(st.st_mtim.tv_nsec == 9);
  CHECK(read_local(env / "s" / "a") == as_string(data));
  REQUIRE(::stat((env / "s" / "b").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_mtim.tv_sec == 1'300'000'000);

  // Only mode and times, and only in vwrite: refused before anything runs.
  std::vector<vio> bad{vio("s/c", 0, std::span<const std::byte>(more), vio_flags::create)};
  bad[0].attrs_after = attr::uid;
  CHECK(c.vwrite(bad).error == errc::bad_argument);
  CHECK_FALSE(std::filesystem::exists(env / "s" / "c"));
  std::vector<std::byte> back(10);
  std::vector<vio> rd{vio("s/b", 0, std::span<std::byte>(back))};
  rd[0].attrs_after = attr::mtime;
  CHECK(c.vread(rd).error == errc::bad_argument);
}

TEST_CASE("names: vmkdir, vsymlink, vreadlink, vhardlink, vrename, vremove", "[client][vector]") {
  FOR_EACH_TARGET();
  std::vector<vmkdir_item> dirs{{"p", 0755}, {"p/q", 0700}, {"p/q/r", 0755}, {"s", 0755}};
  REQUIRE_OK(c.vmkdir(dirs));
  CHECK(std::filesystem::is_directory(env / "p/q/r"));
  struct ::stat st {};
  REQUIRE(::stat((env / "p/q").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);

  auto data = pattern(50);
  std::vector<vio> w{vio("p/q/file", 0, std::span<const std::byte>(data), vio_flags::create)};
  REQUIRE_OK(c.vwrite(w));
  std::vector<vlink> links{{"q/file", "p/l1"}, {"../../elsewhere", "p/q/r/l2"}};
  REQUIRE_OK(c.vsymlink(links));
  std::vector<std::string> targets;
  std::vector<std::string> paths{"p/l1", "p/q/r/l2"};
  REQUIRE_OK(c.vreadlink(paths, &targets));
  CHECK(targets == std::vector<std::string>{"q/file", "../../elsewhere"});

  std::vector<vlink> hard{{"p/q/file", "s/h1"}, {"p/q/file", "p/h2"}};
  REQUIRE_OK(c.vhardlink(hard));
  REQUIRE(::stat((env / "s/h1").c_str(), &st) == 0);
  CHECK(st.st_nlink == 3);

  std::vector<vrename_item> moves{{"s/h1", "s/h1b"}, {"p/h2", "s/h2"}, {"p/q/r", "s/r"}};
  REQUIRE_OK(c.vrename(moves));
  CHECK(std::filesystem::exists(env / "s/h1b"));
  CHECK(std::filesystem::exists(env / "s/h2"));
  CHECK(std::filesystem::is_symlink(env / "s/r/l2"));
  CHECK_FALSE(std::filesystem::exists(env / "p/q/r"));

  std::vector<std::string> gone{"s/h1b", "s/h2", "s/r/l2", "s/r", "p/l1"};
  vresult r = c.vremove(gone);
  REQUIRE_OK(r);
  CHECK(r.ok_count == 5);
  for (const auto& g : gone) CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(env / g)));
  std::vector<std::string> not_empty{"p"};
  CHECK(c.vremove(not_empty).error == std::errc::directory_not_empty);
}

TEST_CASE("vlistdir: many directories, recursion, attributes, continuation", "[client][vector]") {
  FOR_EACH_TARGET();
  std::filesystem::create_directories(env / "t/a/b");
  std::filesystem::create_directories(env / "u");
  for (int i = 0; i < 700; ++i) std::ofstream(env / ("t/a/n" + std::to_string(i)));  // several READDIR pages
  std::ofstream(env / "t/a/b/deep") << "x";
  std::filesystem::create_symlink("a", env / "t/link");
  std::ofstream(env / "u/one");

  std::map<std::string, file_type> seen;
  vlistdir_options o;
  o.recursive = true;
  o.callback = collect;
  o.user = &seen;
  std::vector<std::string> roots{"t", "u"};
  vresult r = c.vlistdir(roots, o);
  REQUIRE_OK(r);
  CHECK(r.ok_count == 2);
  CHECK(seen.size() == 700 + 5);
  CHECK(seen["t/a"] == file_type::directory);
  CHECK(seen["t/a/b/deep"] == file_type::regular);
  CHECK(seen["t/link"] == file_type::symlink);
  CHECK(seen["t/a/n699"] == file_type::regular);
  CHECK(seen["u/one"] == file_type::regular);

  seen.clear();
  o.recursive = false;
  std::vector<std::string> bad{"u", "nope"};
  r = c.vlistdir(bad, o);
  CHECK(r.failed_index == 1);
  CHECK(r.error == std::errc::no_such_file_or_directory);
}

TEST_CASE("vopen, I/O through open files, vclose", "[client][vector]") {
  FOR_EACH_TARGET();
  std::vector<vopen_item> opens{{"x", O_RDWR | O_CREAT, 0600, {}}, {"y", O_WRONLY | O_CREAT | O_TRUNC, 0644, {}}};
  REQUIRE_OK(c.vopen(opens));
  auto data = pattern(3000);
  std::vector<vio> w{vio(opens[0].result, 0, std::span<const std::byte>(data)),
                     vio(opens[1].result, 100, std::span<const std::byte>(data).first(10))};
  REQUIRE_OK(c.vwrite(w));
  std::vector<std::byte> back(3000);
  std::vector<vio> rd{vio(opens[0].result, 0, std::span<std::byte>(back))};
  REQUIRE_OK(c.vread(rd));
  CHECK(as_string(back) == as_string(data));
  std::vector<file> files{opens[0].result, opens[1].result};
  REQUIRE_OK(c.vclose(files));
  CHECK(std::filesystem::file_size(env / "y") == 110);

  std::vector<std::string> simple{"x", "missing"};
  std::vector<file> got;
  vresult r = c.vopen_simple(simple, O_RDONLY, 0, &got);
  CHECK(r.failed_index == 1);
  REQUIRE(got.size() == 2);
  REQUIRE(got[0]);
  REQUIRE_OK(c.vclose(std::span<const file>(got).first(1)));
}

TEST_CASE("vcopy and vscopy copy files whole and in part", "[client][vector]") {
  FOR_EACH_TARGET();
  auto big = pattern(3 << 20, 5), small = pattern(777, 9);
  std::vector<vio> w{vio("big", 0, std::span<const std::byte>(big), vio_flags::create),
                     vio("small", 0, std::span<const std::byte>(small), vio_flags::create),
                     vio("empty", 0, std::span<const std::byte>(), vio_flags::create)};
  REQUIRE_OK(c.vwrite(w));
  CHECK(std::filesystem::file_size(env / "big") == big.size());
  ::chmod((env / "small").c_str(), 0604);
  for (bool server_side : {false, true}) {
    INFO("server side " << server_side);
    std::string s = server_side ? "S" : "C";
    std::vector<vcopy_item> items(4);
    items[0].src = "big", items[0].dst = "big" + s;
    items[1].src = "small", items[1].dst = "small" + s;
    items[2].src = "empty", items[2].dst = "empty" + s;
    items[3].src = "small", items[3].dst = "part" + s, items[3].src_offset = 100, items[3].length = 50;
    vresult r = server_side ? c.vscopy(items) : c.vcopy(items);
    REQUIRE_OK(r);
    CHECK(items[0].bytes == big.size());
    CHECK(items[3].bytes == 50);
    CHECK(read_local(env / ("big" + s)) == as_string(big));
    CHECK(read_local(env / ("small" + s)) == as_string(small));
    CHECK(read_local(env / ("empty" + s)).empty());
    CHECK(read_local(env / ("part" + s)) == as_string(std::span(small).subspan(100, 50)));
    struct ::stat st {};
    REQUIRE(::stat((env / ("small" + s)).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0604);
  }
  std::vector<vcopy_item> missing(1);
  missing[0].src = "nope", missing[0].dst = "x";
  CHECK(c.vcopy(missing).error == std::errc::no_such_file_or_directory);
}

TEST_CASE("ensure_directory and remove_tree", "[client][vector]") {
  FOR_EACH_TARGET();
  std::filesystem::create_directories(env / "e/f");
  vresult r = c.ensure_directory("e/f/g/h/i", 0750);
  REQUIRE_OK(r);
  CHECK(r.ok_count == 3);  // g, h, i
  CHECK(std::filesystem::is_directory(env / "e/f/g/h/i"));
  r = c.ensure_directory("e/f/g", 0750);
  REQUIRE_OK(r);
  CHECK(r.ok_count == 0);
  std::ofstream(env / "e/file");
  CHECK(c.ensure_directory("e/file/x", 0755).error == std::errc::not_a_directory);

  for (int i = 0; i < 30; ++i) std::ofstream(env / ("e/f/g/h/n" + std::to_string(i)));
  std::filesystem::create_symlink("/etc", env / "e/f/sym");
  r = c.remove_tree("e");
  REQUIRE_OK(r);
  CHECK(r.ok_count == 30 + 7);  // the files, e/file, sym, and e, f, g, h, i
  CHECK_FALSE(std::filesystem::exists(env / "e"));
  CHECK(std::filesystem::exists("/etc"));
}

TEST_CASE("bad arguments are refused before anything runs", "[client][vector]") {
  FOR_EACH_TARGET();
  std::vector<vmkdir_item> dirs{{"ok", 0755}, {"../escape", 0755}};
  vresult r = c.vmkdir(dirs);
  CHECK(r.failed_index == 1);
  CHECK(r.error == errc::bad_argument);
  CHECK(r.status[0] == not_executed);
  CHECK_FALSE(std::filesystem::exists(env / "ok"));
  std::vector<std::byte> buf(10);
  std::vector<vio> rd{vio("f", 0, std::span<std::byte>(buf), vio_flags::create)};  // flags are vwrite's
  CHECK(c.vread(rd).error == errc::bad_argument);
  std::vector<vio> none;
  CHECK(c.vread(none).ok());
}

TEST_CASE("vgetattrs and vsetattrs follow symlinks only when asked", "[client][vector]") {
  FOR_EACH_TARGET();
  std::filesystem::create_directories(env / "real/dir");
  std::ofstream(env / "real/dir/file") << "12345";
  std::filesystem::create_symlink("dir/file", env / "real/l1");   // relative
  std::filesystem::create_symlink("../l1", env / "real/dir/l2");  // a chain through ..
  std::filesystem::create_symlink("/etc/passwd", env / "abs");      // absolute: not followed
  std::filesystem::create_symlink("loop", env / "loop");

  std::vector<vattr> a{vattr("real/dir/l2", attr::type | attr::size), vattr("real/dir/l2", attr::type | attr::size)};
  a[1].follow = true;
  REQUIRE_OK(c.vgetattrs(a));
  CHECK(a[0].stat.type == file_type::symlink);
  CHECK(a[1].stat.type == file_type::regular);
  CHECK(a[1].stat.size == 5);

  std::vector<vattr> bad{vattr("real/l1"), vattr("abs"), vattr("real/l1")};
  for (auto& b : bad) b.follow = true;
  vresult r = c.vgetattrs(bad);
  CHECK(r.failed_index == 1);
  CHECK(r.error == std::errc::invalid_argument);
  CHECK(r.status[0] == errc::not_executed);  // nothing ran
  std::vector<vattr> looping{vattr("loop")};
  looping[0].follow = true;
  CHECK(c.vgetattrs(looping).error == std::errc::too_many_symbolic_link_levels);

  std::vector<vattr> set(1);
  set[0].file = "real/l1";
  set[0].follow = true;
  set[0].mask = attr::mode;
  set[0].stat.mode = 0600;
  REQUIRE_OK(c.vsetattrs(set));
  struct ::stat st {};
  REQUIRE(::stat((env / "real/dir/file").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
}
