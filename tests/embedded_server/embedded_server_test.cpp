// vnfs::embedded_server (include/vnfs/embedded_server.hpp): vnfsd in the test's own process,
// its URLs, its export directory, and how it starts and stops.
#include <fcntl.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"
#include "vnfs/test/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_local(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes `text` to `path` through a client of `url`.
void write_remote(const std::string& url, const std::string& path, const std::string& text) {
  vnfs::client c = vnfs::client::connect(url);
  vnfs::file f = c.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(c.pwrite(f, 0, std::as_bytes(std::span(text))) == text.size());
  c.close(f);
  c.close();
}

}  // namespace

TEST_CASE("embedded_server: a temporary export, served on 127.0.0.1 and removed at the end") {
  fs::path dir;
  {
    vnfs::embedded_server server;
    dir = server.export_dir();
    REQUIRE(fs::is_directory(dir));
    CHECK(server.options().export_dir == dir);
    CHECK(server.address() == "127.0.0.1");
    CHECK(server.port() != 0);
    CHECK(server.url() == "nfs://127.0.0.1:" + std::to_string(server.port()) + "/");
    CHECK(server.rdma_url().empty());
    CHECK(server.rdma_port() == 0);
    server.start();
    write_remote(server.url(), "hello.txt", "hello\n");
    CHECK(read_local(dir / "hello.txt") == "hello\n");
  }
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("embedded_server: a given export is served and kept") {
  vnfs::test::temp_dir dir("vnfs-embedded-test");
  {
    vnfs::embedded_server server(vnfs::server_options{.export_dir = dir.path()});
    CHECK(server.export_dir() == dir.path());
    server.start();
    write_remote(server.url(), "kept.txt", "kept\n");
  }
  CHECK(read_local(dir.path() / "kept.txt") == "kept\n");
}

TEST_CASE("embedded_server: run() serves on the calling thread until stop() from another") {
  vnfs::embedded_server server;
  std::thread client([&] {
    write_remote(server.url(), "from_thread.txt", "x");
    server.stop();
  });
  server.run();  // returns once the client thread stopped it
  client.join();
  CHECK(read_local(server.export_dir() / "from_thread.txt") == "x");
  server.stop();  // again: nothing happens
}

TEST_CASE("embedded_server: start() twice is refused") {
  vnfs::embedded_server server;
  server.start();
  CHECK_THROWS_AS(server.start(), std::logic_error);
}

TEST_CASE("embedded_server: a port in use is an error, and the temporary export goes") {
  vnfs::embedded_server first;
  // Temporary exports are made in $TMPDIR (std::filesystem::temp_directory_path()).
  vnfs::test::temp_dir tmp("vnfs-embedded-tmpdir");
  const char* old_tmpdir = getenv("TMPDIR");
  const std::string saved = old_tmpdir ? old_tmpdir : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  CHECK_THROWS_AS(vnfs::embedded_server(vnfs::server_options{.port = first.port()}), std::runtime_error);
  old_tmpdir ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR");
  CHECK(fs::is_empty(tmp.path()));
}

TEST_CASE("embedded_server: RPC-over-RDMA (cma) beside TCP, and its URL") {
  vnfs::embedded_server server(vnfs::server_options{.rdma_provider = "cma"});
  REQUIRE(server.rdma_port() != 0);
  CHECK(server.rdma_url() == "nfs+rdma://127.0.0.1:" + std::to_string(server.rdma_port()) + "/?provider=cma");
  server.start();
  write_remote(server.rdma_url(), "over_rdma.txt", "over rdma\n");
  CHECK(read_local(server.export_dir() / "over_rdma.txt") == "over rdma\n");
}

TEST_CASE("embedded_server: the client records go to recovery_dir, never inside the export; "
          "grace = false forgets them") {
  vnfs::test::temp_dir exp("vnfs-embedded-grace"), outside("vnfs-embedded-rec");
  const fs::path rec = outside.path() / "records";
  {
    vnfs::embedded_server server(vnfs::server_options{.export_dir = exp.path(), .recovery_dir = rec});
    server.start();
    vnfs::client c = vnfs::client::connect(server.url());
    vnfs::file f = c.open("f", O_WRONLY | O_CREAT, 0644);
    // The open client is recorded (its owner, in hex, after its principal).
    const std::string records = read_local(rec / "clients");
    CHECK(records.rfind("vnfsd-clients 1\n1 ", 0) == 0);
    CHECK(std::count(records.begin(), records.end(), '\n') == 2);
    CHECK_FALSE(fs::exists(exp.path() / ".vnfsd-recovery"));
    c.close(f);
    c.close();  // DESTROY_CLIENTID: no longer recorded
    CHECK(read_local(rec / "clients") == "vnfsd-clients 1\n");
  }
  CHECK_THROWS_AS(vnfs::embedded_server(vnfs::server_options{.export_dir = exp.path(),
                                                             .recovery_dir = exp.path() / "r"}),
                  std::runtime_error);
  {
    std::ofstream(rec / "clients") << "vnfsd-clients 1\n1 0 0 6f6c64\n";  // a client of before
    vnfs::embedded_server server(vnfs::server_options{.export_dir = exp.path(), .recovery_dir = rec,
                                                      .grace = false});
    CHECK(read_local(rec / "clients") == "vnfsd-clients 1\n");
  }
}
