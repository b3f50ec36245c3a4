// The archive adapter's calls with batches small enough that a file spans several: the
// archive they write is the tree (bsdtar reads it back), the tree they extract is the
// archive, and an archive cut inside a file that spans batches leaves the files before it
// whole and that file absent. Over file:// and vnfsd.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "vnfs/archive/archive_error.hpp"
#include "vnfs/archive/create_archive.hpp"
#include "vnfs/archive/extract_archive.hpp"
#include "vnfs/client.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs;
using vnfs::test::temp_dir;
using vnfs::test::vnfsd_process;
namespace fs = std::filesystem;

namespace {

void sh(const std::string& script) { REQUIRE(std::system(script.c_str()) == 0); }

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// a (5 bytes), big (3,000,000 random bytes), c (5 bytes), d/e (0 bytes) under dir.
void make_files(const fs::path& dir) {
  fs::create_directories(dir / "d");
  sh("cd '" + dir.string() + "' && printf first > a && head -c 3000000 /dev/urandom > big && printf third > c && : > d/e");
}

struct fd_holder {
  int fd;
  explicit fd_holder(const fs::path& p, int flags) : fd(::open(p.c_str(), flags | O_CLOEXEC, 0644)) { REQUIRE(fd >= 0); }
  ~fd_holder() { ::close(fd); }
};

constexpr std::uint64_t small_batch = 1 << 20;

void round_trip(client& c, const fs::path& root, const std::string& prefix) {
  temp_dir local;
  make_files(root / "src");
  archive::create_options co;
  co.batch_bytes = small_batch;
  co.batch_items = 2;
  {
    fd_holder out(local / "a.tar", O_WRONLY | O_CREAT | O_TRUNC);
    archive::archive_stats s = archive::create_archive(c, prefix + "src", out.fd, co);
    CHECK(s.files == 4);
    CHECK(s.directories == 1);
    CHECK(s.bytes == 3000010);
  }
  fs::create_directory(local / "bsd");
  sh("bsdtar -xpf '" + (local / "a.tar").string() + "' -C '" + (local / "bsd").string() + "'");
  sh("diff -r '" + (root / "src").string() + "' '" + (local / "bsd").string() + "'");

  archive::extract_options xo;
  xo.batch_bytes = small_batch;
  xo.batch_items = 2;
  xo.read_block = 4096;
  fd_holder in(local / "a.tar", O_RDONLY);
  archive::archive_stats s = archive::extract_archive(c, prefix + "out", in.fd, xo);
  CHECK(s.files == 4);
  CHECK(s.bytes == 3000010);
  sh("diff -r '" + (root / "src").string() + "' '" + (root / "out").string() + "'");
}

void cut_in_a_spanning_file(client& c, const fs::path& root, const std::string& prefix) {
  temp_dir local;
  make_files(local / "src");
  sh("tar -cf '" + (local / "a.tar").string() + "' -C '" + (local / "src").string() + "' a big c");
  sh("head -c 2500000 '" + (local / "a.tar").string() + "' > '" + (local / "cut.tar").string() + "'");
  archive::extract_options xo;
  xo.batch_bytes = small_batch;  // big's first two MiB are written before the cut shows
  fd_holder in(local / "cut.tar", O_RDONLY);
  try {
    archive::extract_archive(c, prefix + "x", in.fd, xo);
    FAIL("no error");
  } catch (const archive::archive_error& e) {
    CHECK(e.entry() == "big");
    CHECK(std::string(e.what()) == "archive damaged in 'big': Truncated tar archive");
  }
  CHECK(read_file(root / "x/a") == "first");
  CHECK_FALSE(fs::exists(root / "x/big"));
  CHECK_FALSE(fs::exists(root / "x/c"));
}

}  // namespace

TEST_CASE("archive adapter over file://: small batches, a cut archive") {
  temp_dir root;
  client c = client::connect("file://" + root.path().string());
  round_trip(c, root.path(), "");
  cut_in_a_spanning_file(c, root.path(), "");
}

TEST_CASE("archive adapter over vnfsd: small batches, a cut archive") {
  temp_dir root;
  vnfsd_process server(root.path());
  client c = client::connect("nfs://127.0.0.1:" + std::to_string(server.port()) + "/");
  round_trip(c, root.path(), "");
  cut_in_a_spanning_file(c, root.path(), "");
}

TEST_CASE("archive adapter refuses names with '..' and a root that is not a directory") {
  temp_dir root, local;
  client c = client::connect("file://" + root.path().string());
  fs::create_directory(local / "s");
  sh("cd '" + (local / "s").string() + "' && printf x > f && bsdtar -cf ../evil.tar -s ',^,../,' f");
  fd_holder in(local / "evil.tar", O_RDONLY);
  try {
    archive::extract_archive(c, "x", in.fd);
    FAIL("no error");
  } catch (const archive::archive_error& e) {
    CHECK(std::string(e.what()) == "../f: refusing a name with '..'");
  }
  CHECK_FALSE(fs::exists(root / "f"));
  sh("printf x > '" + (root / "plain").string() + "'");
  fd_holder out(local / "o.tar", O_WRONLY | O_CREAT | O_TRUNC);
  CHECK_THROWS_WITH(archive::create_archive(c, "plain", out.fd), "not a directory");
}
