// The scalar API against three targets — vnfsd, NFS-Ganesha and file:// — with the same
// expectations, except where RFC 8881 leaves the server a choice (named where it happens).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "client_fixture.hpp"

using namespace vnfs;
using namespace vnfs::client_test;

namespace {

/// pwrite until everything is written: a server may write less than asked (RFC 8881
/// §18.32.3), as POSIX pwrite may.
void write_all(client& c, const file& f, std::uint64_t off, std::span<const std::byte> data) {
  std::size_t done = 0;
  do {
    std::size_t n = c.pwrite(f, off + done, data.subspan(done));
    if (data.size() != 0) REQUIRE(n > 0);
    done += n;
  } while (done < data.size());
}

/// pread until end of file or `out` is full; returns the bytes read.
std::size_t read_all(client& c, const file& f, std::uint64_t off, std::span<std::byte> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    std::size_t n = c.pread(f, off + done, out.subspan(done));
    if (n == 0) break;
    done += n;
  }
  return done;
}

std::vector<std::byte> local_contents(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::byte> v(s.size());
  if (!s.empty()) std::memcpy(v.data(), s.data(), s.size());
  return v;
}

void create_file(client& c, const std::string& path, std::span<const std::byte> data, std::uint32_t mode = 0644) {
  file f = c.open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  write_all(c, f, 0, data);
  c.close(f);
}

}  // namespace

TEST_CASE("bytes read back equal bytes written", "[client][conformance]") {
  FOR_EACH_TARGET();
  const std::size_t size = GENERATE(std::size_t(0), std::size_t(1), std::size_t(4095), std::size_t(1) << 20);
  INFO("size " << size);
  auto data = pattern(size, 3);

  file f = c.open("f", O_CREAT | O_RDWR | O_TRUNC, 0644);
  REQUIRE(f);
  CHECK(f.path() == "f");
  write_all(c, f, 0, data);
  CHECK(c.fstat(f).size == size);

  // Ask for more than there is: the read stops at end of file.
  std::vector<std::byte> back(size + 100, std::byte{0xEE});
  REQUIRE(read_all(c, f, 0, back) == size);
  CHECK(std::equal(data.begin(), data.end(), back.begin()));
  CHECK(back[size] == std::byte{0xEE});
  // At and beyond end of file: 0 bytes.
  std::byte one[1];
  CHECK(c.pread(f, size, std::span<std::byte>(one)) == 0);
  CHECK(c.pread(f, size + 12345, std::span<std::byte>(one)) == 0);

  // Into registered memory too.
  std::vector<std::byte> reg_buf(size + 1);
  memory_region mr = c.register_memory(reg_buf.data(), reg_buf.size());
  std::size_t got = 0;
  while (got < size) {
    std::size_t n = c.pread(f, got, mr.slice(got, size - got));
    REQUIRE(n > 0);
    got += n;
  }
  CHECK(std::equal(data.begin(), data.end(), reg_buf.begin()));

  c.fsync(f);
  c.close(f);
  CHECK(local_contents(env / "f") == data);
  CHECK(c.stat("f").size == size);
}

TEST_CASE("writes at offsets leave holes of zeros and overwrite in place", "[client][conformance]") {
  FOR_EACH_TARGET();
  file f = c.open("sparse", O_CREAT | O_RDWR, 0600);
  auto a = pattern(100, 1), b = pattern(10, 2);
  write_all(c, f, 5000, a);
  write_all(c, f, 5010, b);
  CHECK(c.fstat(f).size == 5100);
  std::vector<std::byte> back(5100);
  REQUIRE(read_all(c, f, 0, back) == 5100);
  CHECK(std::all_of(back.begin(), back.begin() + 5000, [](std::byte x) { return x == std::byte{0}; }));
  CHECK(std::equal(a.begin(), a.begin() + 10, back.begin() + 5000));
  CHECK(std::equal(b.begin(), b.end(), back.begin() + 5010));
  CHECK(std::equal(a.begin() + 20, a.end(), back.begin() + 5020));
  c.close(f);
}

TEST_CASE("stat reports type, mode, size, nlink and owner", "[client][conformance]") {
  FOR_EACH_TARGET();
  c.mkdir("d", 0750);
  create_file(c, "f", pattern(5), 0640);
  c.symlink("some/where", "l");

  file_stat d = c.stat("d");
  CHECK(d.type == file_type::directory);
  CHECK(d.mode == 0750);
  CHECK(d.nlink == 2);  // "." and its entry in the parent (ext4 under every target)
  CHECK(d.uid == ::getuid());
  CHECK(d.gid == ::getgid());

  file_stat f = c.stat("f");
  CHECK(f.type == file_type::regular);
  CHECK(f.mode == 0640);
  CHECK(f.size == 5);
  CHECK(f.nlink == 1);
  CHECK(f.uid == ::getuid());
  CHECK(f.fileid != 0);
  CHECK(f.fileid != d.fileid);

  file_stat l = c.stat("l");
  CHECK(l.type == file_type::symlink);
  CHECK(l.size == std::strlen("some/where"));

  // A subdirectory adds a link to its parent.
  c.mkdir("d/sub", 0700);
  CHECK(c.stat("d").nlink == 3);
  CHECK(c.stat("d/sub").mode == 0700);

  file_stat root = c.stat("");
  CHECK(root.type == file_type::directory);
  CHECK(root.mode == 0777);  // the fixture's chmod

  // fstat agrees with stat on an open file.
  file of = c.open("f", O_RDONLY);
  file_stat fs = c.fstat(of);
  CHECK(fs.fileid == f.fileid);
  CHECK(fs.size == 5);
  CHECK(fs.mode == 0640);
  c.close(of);
}

TEST_CASE("errors of the scalar calls", "[client][conformance]") {
  FOR_EACH_TARGET();
  c.mkdir("d");
  c.mkdir("full");
  create_file(c, "full/x", pattern(1));
  create_file(c, "f", pattern(3));
  c.symlink("d", "l");

  SECTION("missing names") {
    CHECK(error_of([&] { c.stat("missing"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.stat("d/missing"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.stat("missing/x"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.open("missing", O_RDONLY); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.open("missing/f", O_CREAT | O_RDWR); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.unlink("missing"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.rmdir("missing"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.rename("missing", "x"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.link("missing", "x"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.readlink("missing"); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.truncate("missing", 0); }) == std::errc::no_such_file_or_directory);
    CHECK(error_of([&] { c.mkdir("missing/x"); }) == std::errc::no_such_file_or_directory);
    CHECK_NOTHROW(c.opendir("missing"));  // opendir only names it; readdir looks
    dir_stream ds = c.opendir("missing");
    CHECK(error_of([&] { c.readdir(ds); }) == std::errc::no_such_file_or_directory);
  }
  SECTION("existing names") {
    CHECK(error_of([&] { c.open("f", O_CREAT | O_EXCL | O_WRONLY); }) == std::errc::file_exists);
    CHECK(error_of([&] { c.open("d", O_CREAT | O_EXCL | O_WRONLY); }) == std::errc::file_exists);
    CHECK(error_of([&] { c.mkdir("d"); }) == std::errc::file_exists);
    CHECK(error_of([&] { c.mkdir("f"); }) == std::errc::file_exists);
    CHECK(error_of([&] { c.symlink("x", "f"); }) == std::errc::file_exists);
    CHECK(error_of([&] { c.link("f", "d"); }) == std::errc::file_exists);
    // Nothing was changed by the failed calls.
    CHECK(c.stat("f").size == 3);
    CHECK(c.stat("d").type == file_type::directory);
  }
  SECTION("wrong types") {
    CHECK(error_of([&] { c.unlink("d"); }) == std::errc::is_a_directory);
    CHECK(error_of([&] { c.rmdir("f"); }) == std::errc::not_a_directory);
    CHECK(error_of([&] { c.rmdir("full"); }) == std::errc::directory_not_empty);
    CHECK(error_of([&] { c.stat("f/x"); }) == std::errc::not_a_directory);
    CHECK(error_of([&] { c.open("f/x", O_CREAT | O_RDWR); }) == std::errc::not_a_directory);
    // READLINK of a non-symlink: NFS4ERR_INVAL (RFC 8881 §18.24.3); readlinkat: EINVAL.
    CHECK(error_of([&] { c.readlink("f"); }) == std::errc::invalid_argument);
    dir_stream ds = c.opendir("f");
    CHECK(error_of([&] { c.readdir(ds); }) == std::errc::not_a_directory);
    CHECK(c.stat("full/x").size == 1);
    CHECK(c.stat("d").type == file_type::directory);
  }
  SECTION("symlinks are never followed") {
    // open refuses a symlink: NFS4ERR_SYMLINK (RFC 8881 §18.16.3) = ELOOP.
    CHECK(error_of([&] { c.open("l", O_RDONLY); }) == std::errc::too_many_symbolic_link_levels);
    CHECK(error_of([&] { c.open("l", O_RDWR | O_CREAT); }) == std::errc::too_many_symbolic_link_levels);
    // A symlink in the middle of a path: LOOKUP with a symlink as current filehandle is
    // NFS4ERR_SYMLINK (§18.15.3).
    CHECK(error_of([&] { c.stat("l/x"); }) == std::errc::too_many_symbolic_link_levels);
    // The link itself can be stat'ed, read and removed.
    CHECK(c.stat("l").type == file_type::symlink);
    CHECK(c.readlink("l") == "d");
    c.unlink("l");
    CHECK(c.stat("d").type == file_type::directory);
  }
  SECTION("the root cannot be removed or created") {
    CHECK(error_of([&] { c.mkdir(""); }) == std::errc::invalid_argument);
    CHECK(error_of([&] { c.rmdir("/"); }) == std::errc::invalid_argument);
  }
}

TEST_CASE("readdir of 1000 entries returns every name exactly once", "[client][conformance]") {
  FOR_EACH_TARGET();
  c.mkdir("big");
  std::set<std::string> expected;
  completion_group g = c.make_group();
  // Names of varied lengths, so that pages end at different places.
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("e" + std::to_string(i) + std::string(i % 37, 'x'));
  std::vector<file> files(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    c.open("big/" + names[i], O_CREAT | O_EXCL | O_WRONLY, 0600, &files[i], g, i);
    expected.insert(names[i]);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto e = g.wait();
    REQUIRE(!e.status);
  }
  for (auto& f : files) c.close(f, g, 0);
  for (std::size_t i = 0; i < names.size(); ++i) REQUIRE(!g.wait().status);

  std::map<std::string, int> seen;
  dir_stream d = c.opendir("big");
  int guard = 0;
  while (auto e = c.readdir(d)) {
    seen[e->name]++;
    CHECK(e->stat.type == file_type::regular);
    CHECK(e->stat.size == 0);
    CHECK(e->stat.mode == 0600);
    REQUIRE(++guard <= 1000);
  }
  CHECK(seen.size() == 1000);
  for (const auto& [name, n] : seen) {
    INFO(name);
    CHECK(n == 1);
    CHECK(expected.count(name) == 1);
  }
  CHECK(!c.readdir(d));  // stays at the end

  // Page by page (the group form): 1000 entries with attributes do not fit one reply, and
  // over nfs:// each page costs a walk of the directory and a READDIR.
  std::map<std::string, int> paged;
  dir_stream p = c.opendir("big");
  std::size_t pages = 0;
  const client_stats before = c.stats();
  while (!p.eof) {
    c.readdir(&p, g, pages);
    auto e = g.wait();
    REQUIRE(!e.status);
    REQUIRE(e.tag == pages);
    REQUIRE(++pages <= 1000);
    for (const auto& entry : p.entries) paged[entry.name]++;
  }
  CHECK(paged == seen);
  if (env.is_nfs()) {
    CHECK(pages >= 2);
    CHECK((c.stats() - before).compounds == 2 * pages);
  }

  // An empty directory lists nothing ("." and ".." are not entries).
  c.mkdir("empty");
  dir_stream e = c.opendir("empty");
  CHECK(!c.readdir(e));
}

TEST_CASE("rename and link", "[client][conformance]") {
  FOR_EACH_TARGET();
  auto data = pattern(300, 7);
  create_file(c, "f", data);
  c.mkdir("d");
  const std::uint64_t id = c.stat("f").fileid;

  SECTION("rename moves the object") {
    c.rename("f", "g");
    CHECK(error_of([&] { c.stat("f"); }) == std::errc::no_such_file_or_directory);
    CHECK(c.stat("g").fileid == id);
    c.rename("g", "d/h");
    CHECK(c.stat("d/h").fileid == id);
    file h = c.open("d/h", O_RDONLY);
    std::vector<std::byte> back(300);
    CHECK(read_all(c, h, 0, back) == 300);
    CHECK(back == data);
    c.close(h);
    // Directories move with their contents.
    c.rename("d", "d2");
    CHECK(c.stat("d2/h").fileid == id);
  }
  SECTION("rename replaces an existing file") {
    create_file(c, "other", pattern(10));
    c.rename("f", "other");
    CHECK(c.stat("other").fileid == id);
    CHECK(c.stat("other").size == 300);
    CHECK(error_of([&] { c.stat("f"); }) == std::errc::no_such_file_or_directory);
  }
  SECTION("rename onto itself changes nothing") {
    c.rename("f", "f");
    CHECK(c.stat("f").fileid == id);
  }
  SECTION("link adds a name for the same file") {
    c.link("f", "d/f2");
    CHECK(c.stat("f").nlink == 2);
    CHECK(c.stat("d/f2").nlink == 2);
    CHECK(c.stat("d/f2").fileid == id);
    // A write through one name shows through the other.
    file w = c.open("d/f2", O_WRONLY);
    auto z = pattern(4, 9);
    write_all(c, w, 0, z);
    c.close(w);
    file r = c.open("f", O_RDONLY);
    std::vector<std::byte> back(4);
    CHECK(read_all(c, r, 0, back) == 4);
    CHECK(back == z);
    c.close(r);
    c.unlink("f");
    CHECK(c.stat("d/f2").nlink == 1);
  }
}

TEST_CASE("truncate", "[client][conformance]") {
  FOR_EACH_TARGET();
  auto data = pattern(10000, 4);
  create_file(c, "f", data);

  c.truncate("f", 100);
  CHECK(c.stat("f").size == 100);
  c.truncate("f", 5000);
  CHECK(c.stat("f").size == 5000);
  file f = c.open("f", O_RDONLY);
  std::vector<std::byte> back(6000);
  REQUIRE(read_all(c, f, 0, back) == 5000);
  CHECK(std::equal(data.begin(), data.begin() + 100, back.begin()));
  CHECK(std::all_of(back.begin() + 100, back.begin() + 5000, [](std::byte b) { return b == std::byte{0}; }));
  c.close(f);

  // O_TRUNC on open empties an existing file; without it the data stays.
  file keep = c.open("f", O_RDWR);
  CHECK(c.fstat(keep).size == 5000);
  c.close(keep);
  file t = c.open("f", O_RDWR | O_TRUNC);
  CHECK(c.fstat(t).size == 0);
  c.close(t);
  file t2 = c.open("f", O_RDWR | O_CREAT | O_TRUNC, 0600);
  write_all(c, t2, 0, pattern(10));
  c.close(t2);
  file t3 = c.open("f", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(c.fstat(t3).size == 0);
  c.close(t3);
  CHECK(c.stat("f").mode == 0644);  // an existing file keeps its mode
}

TEST_CASE("directories, symlinks and removal", "[client][conformance]") {
  FOR_EACH_TARGET();
  c.mkdir("a", 0755);
  c.mkdir("a/b", 0755);
  c.mkdir("/a//b/c/", 0711);  // paths are normalized
  CHECK(c.stat("a/b/c").type == file_type::directory);
  CHECK(c.stat("a/b/c").mode == 0711);
  CHECK(std::filesystem::is_directory(env / "a/b/c"));

  c.symlink("../../target with spaces", "a/b/link");
  CHECK(c.readlink("a/b/link") == "../../target with spaces");
  CHECK(std::filesystem::read_symlink(env / "a/b/link") == "../../target with spaces");

  create_file(c, "a/b/c/f", pattern(1));
  c.unlink("a/b/c/f");
  CHECK(error_of([&] { c.stat("a/b/c/f"); }) == std::errc::no_such_file_or_directory);
  c.rmdir("a/b/c");
  c.unlink("a/b/link");
  c.rmdir("a/b");
  c.rmdir("a");
  CHECK(error_of([&] { c.stat("a"); }) == std::errc::no_such_file_or_directory);
  CHECK(!std::filesystem::exists(env / "a"));
  dir_stream root = c.opendir("");
  CHECK(!c.readdir(root));
}
