// File data: read, write, append (concurrent), sync, copy.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <span>
#include <random>
#include <string>
#include <thread>

#include "fixture.hpp"
#include "server/fs/attributes.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/io.hpp"

using namespace vnfs::server::fs;
using vnfs::server::fs::test::export_fixture;

namespace {

std::error_code sys(int e) { return {e, std::system_category()}; }

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte(gen() & 0xff);
  return v;
}

std::vector<std::byte> read_all(const object& f) {
  std::error_code ec;
  auto size = stat(f, ec).size;
  REQUIRE_FALSE(ec);
  std::vector<std::byte> v(size);
  auto r = read(f, 0, v, ec);
  REQUIRE_FALSE(ec);
  REQUIRE(r.count == size);
  return v;
}

}  // namespace

TEST_CASE("write then read at offsets, with eof", "[fs][io]") {
  export_fixture f;
  std::error_code ec;
  auto file = create(f.exp.root(), "f", {}, ec).file;
  REQUIRE_FALSE(ec);
  auto data = random_bytes(100000, 1);
  CHECK(write(file, 0, data, stability::unstable, ec) == data.size());
  REQUIRE_FALSE(ec);
  CHECK(write(file, 200000, std::span(data).first(10), stability::file_sync, ec) == 10);
  REQUIRE_FALSE(ec);
  CHECK(stat(file, ec).size == 200010);

  std::vector<std::byte> buf(1000);
  auto r = read(file, 500, buf, ec);
  REQUIRE_FALSE(ec);
  CHECK(r.count == 1000);
  CHECK_FALSE(r.eof);
  CHECK(std::equal(buf.begin(), buf.end(), data.begin() + 500));

  r = read(file, 150000, buf, ec);  // the hole reads as zeros
  CHECK(r.count == 1000);
  CHECK(std::all_of(buf.begin(), buf.end(), [](std::byte b) { return b == std::byte{0}; }));

  r = read(file, 200005, buf, ec);  // short at end of file
  REQUIRE_FALSE(ec);
  CHECK(r.count == 5);
  CHECK(r.eof);
  CHECK(std::equal(buf.begin(), buf.begin() + 5, data.begin() + 5));

  r = read(file, 199010, buf, ec);  // ends exactly at end of file
  CHECK(r.count == 1000);
  CHECK(r.eof);

  r = read(file, 1 << 30, buf, ec);  // beyond
  REQUIRE_FALSE(ec);
  CHECK(r.count == 0);
  CHECK(r.eof);

  write(file, 0, data, stability::data_sync, ec);
  REQUIRE_FALSE(ec);
  sync(file, true, ec);
  CHECK_FALSE(ec);
  sync(file, false, ec);
  CHECK_FALSE(ec);
  sync(f.exp.root(), false, ec);
  CHECK_FALSE(ec);

  std::ifstream in(f.dir / "f", std::ios::binary);
  std::vector<char> disk(100000);
  in.read(disk.data(), 100000);
  CHECK(std::memcmp(disk.data(), data.data(), 100000) == 0);
}

TEST_CASE("append returns where the data landed", "[fs][io]") {
  export_fixture f;
  std::error_code ec;
  auto file = create(f.exp.root(), "log", {}, ec).file;
  auto a = append(file, std::as_bytes(std::span("abc", 3)), stability::unstable, ec);
  REQUIRE_FALSE(ec);
  CHECK(a.offset == 0);
  CHECK(a.count == 3);
  auto b = append(file, std::as_bytes(std::span("defgh", 5)), stability::file_sync, ec);
  REQUIRE_FALSE(ec);
  CHECK(b.offset == 3);
  CHECK(b.count == 5);
  auto all = read_all(file);
  CHECK(std::string(reinterpret_cast<const char*>(all.data()), all.size()) == "abcdefgh");
}

TEST_CASE("concurrent appends from 4 threads never overlap", "[fs][io]") {
  export_fixture f;
  std::error_code ec;
  auto file = create(f.exp.root(), "log", {}, ec).file;
  REQUIRE_FALSE(ec);
  constexpr int threads = 4, per_thread = 250;
  constexpr std::size_t rec = 97;  // odd size: records straddle page boundaries
  std::vector<std::vector<append_result>> results(threads);
  std::vector<std::error_code> errors(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        std::vector<std::byte> r(rec, std::byte(0x41 + t));
        r[0] = std::byte(t);
        r[1] = std::byte(i & 0xff);
        r[2] = std::byte(i >> 8);
        std::error_code e;
        auto res = append(file, r, stability::unstable, e);
        if (e) errors[t] = e;
        results[t].push_back(res);
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) CHECK_FALSE(e);

  auto content = read_all(file);
  REQUIRE(content.size() == threads * per_thread * rec);
  std::vector<std::uint64_t> offsets;
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < per_thread; ++i) {
      const auto& res = results[t][i];
      REQUIRE(res.count == rec);
      REQUIRE(res.offset % rec == 0);
      offsets.push_back(res.offset);
      const std::byte* p = content.data() + res.offset;
      CHECK(p[0] == std::byte(t));
      CHECK(p[1] == std::byte(i & 0xff));
      CHECK(p[2] == std::byte(i >> 8));
      CHECK(std::all_of(p + 3, p + rec, [&](std::byte b) { return b == std::byte(0x41 + t); }));
    }
  }
  std::sort(offsets.begin(), offsets.end());
  for (std::size_t k = 0; k < offsets.size(); ++k) CHECK(offsets[k] == k * rec);
}

TEST_CASE("copy of a 3 MiB file with copy_file_range", "[fs][io]") {
  export_fixture f;
  std::error_code ec;
  auto src = create(f.exp.root(), "src", {}, ec).file;
  auto dst = create(f.exp.root(), "dst", {}, ec).file;
  REQUIRE_FALSE(ec);
  auto data = random_bytes(3 << 20, 3);
  REQUIRE(write(src, 0, data, stability::unstable, ec) == data.size());

  CHECK(copy(src, 0, dst, 0, 0, ec) == data.size());  // 0: to the end
  REQUIRE_FALSE(ec);
  CHECK(read_all(dst) == data);

  // A range, into the middle of another file.
  auto part = create(f.exp.root(), "part", {}, ec).file;
  CHECK(copy(src, 1000, part, 10, 5000, ec) == 5000);
  REQUIRE_FALSE(ec);
  auto p = read_all(part);
  REQUIRE(p.size() == 5010);
  CHECK(std::equal(p.begin() + 10, p.end(), data.begin() + 1000));

  // Short at end of src.
  CHECK(copy(src, data.size() - 100, part, 0, 1000, ec) == 100);
  CHECK_FALSE(ec);
  CHECK(copy(src, data.size() + 5, part, 0, 1000, ec) == 0);
  CHECK_FALSE(ec);

  object d = mkdir(f.exp.root(), "d", 0755, ec);
  copy(src, 0, d, 0, 10, ec);
  CHECK(ec == sys(EISDIR));

  // Within one file: disjoint ranges copy, overlapping ones are refused.
  CHECK(copy(src, 0, src, data.size(), 4096, ec) == 4096);
  REQUIRE_FALSE(ec);
  CHECK(stat(src, ec).size == data.size() + 4096);
  copy(src, 0, src, 100, 200, ec);
  CHECK(ec == sys(EINVAL));
  copy(src, 0, src, 1 << 20, 0, ec);
  CHECK(ec == sys(EINVAL));
}

// vnfsd sends a READ payload from the page cache only when it is all there. A file just
// written is; after its pages are written back and dropped it is not (where the file
// system lets them go: tmpfs keeps its pages, the page cache being its storage).
TEST_CASE("in_page_cache: a file just written, and after its pages were dropped", "[fs][io]") {
  export_fixture f;
  std::error_code ec;
  auto file = create(f.exp.root(), "f", {}, ec).file;
  REQUIRE_FALSE(ec);
  const auto data = random_bytes(1u << 20, 7);
  REQUIRE(write(file, 0, data, stability::unstable, ec) == data.size());
  const int fd = reader(file, ec);
  REQUIRE(fd >= 0);
  CHECK(in_page_cache(fd, 0, data.size()));
  CHECK(in_page_cache(fd, 4095, 2));
  CHECK(in_page_cache(fd, 0, 0));
  struct statfs sf {};
  REQUIRE(::fstatfs(fd, &sf) == 0);
  if (sf.f_type == TMPFS_MAGIC) {
    WARN("the test tree is on tmpfs, which cannot drop its pages: the cold case is not checked");
    return;
  }
  REQUIRE(::fdatasync(fd) == 0);
  REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  CHECK_FALSE(in_page_cache(fd, 0, data.size()));
  CHECK(read_all(file) == data);  // read from the disk into memory, as before
  CHECK(in_page_cache(fd, 0, data.size()));
}

TEST_CASE("after fork(), data opens in the child reach the child's descriptors, not the parent's", "[fs][io]") {
  // open_data reopens a descriptor by its number through /proc/self/fd, opened once per
  // process: a child made by fork() must not go on using the parent's.
  export_fixture f;
  std::error_code ec;
  auto a = create(f.exp.root(), "a", {}, ec).file;
  REQUIRE_FALSE(ec);
  const std::string in_a = "the parent's file a", in_b = "the child's file b";
  write(a, 0, std::as_bytes(std::span(in_a)), stability::unstable, ec);  // reopens a's descriptor
  REQUIRE_FALSE(ec);
  std::ofstream(f.dir / "b", std::ios::binary) << in_b;
  const std::string b_path = (f.dir / "b").string();

  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // In the child, a's descriptor number now names b; in the parent it still names a. A
    // write (which opens the data afresh each time) must land in b.
    const int b = ::open(b_path.c_str(), O_PATH | O_CLOEXEC);
    if (b < 0 || ::dup2(b, a.fd()) < 0) ::_exit(2);
    ::close(b);
    std::error_code child_ec;
    const std::string mark = "THE";
    write(a, 0, std::as_bytes(std::span(mark)), stability::unstable, child_ec);
    ::_exit(child_ec ? 3 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK(slurp(f.dir / "a") == in_a);  // the parent's file: untouched
  CHECK(slurp(f.dir / "b") == "THE child's file b");
}
