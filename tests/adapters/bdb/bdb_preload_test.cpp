// The drop-in (libvnfs_bdb_preload.so) with the unmodified db5.3 utilities and an ordinary
// transactional program, against vnfsd: load/dump round trips identical to local disk,
// db5.3_stat and db5.3_verify, DB_CONFIG, crash consistency with SIGKILL and db5.3_recover
// (then db5.3_checkpoint and db5.3_archive), and the faults (unreachable server, missing export, refused permission, malformed VNFS_MAP).
// The mapped prefix never exists on local disk: nothing can have been written under it.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "vnfs/test/child_process.hpp"
#include "vnfs/test/free_port.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using vnfs::test::child_process;
using vnfs::test::temp_dir;
using vnfs::test::vnfsd_process;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// LD_PRELOAD for the drop-in (with the sanitizer runtimes first in an instrumented build).
std::string preload() { return std::string(VNFS_BDB_PRELOAD_LIBS); }

/// The environment a command runs with through the drop-in.
std::string with_map(const std::string& map) {
  return "ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD='" + preload() + "' VNFS_MAP='" + map + "' ";
}

/// Runs a shell command in `dir`; its exit code.
int sh(const temp_dir& dir, const std::string& cmd) {
  int st = std::system(("cd '" + dir.path().string() + "' && " + cmd).c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/// A dump in db5.3_load's printable format: `n` records, every 97th larger than a page.
void write_dump(const fs::path& p, const char* type, int n) {
  std::ofstream out(p);
  out << "VERSION=3\nformat=print\ntype=" << type << "\ndb_pagesize=4096\nHEADER=END\n";
  for (int i = 0; i < n; ++i) {
    out << " key" << i * 7919 % 1000003 << "\n value" << i;
    if (i % 97 == 0) out << std::string(6000 + i % 1000, static_cast<char>('a' + i % 26));
    out << "\n";
  }
  out << "DATA=END\n";
}

/// Lines of `text` that start with `prefix`.
int count_lines(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) ++n;
  return n;
}

struct server {
  temp_dir exp;
  vnfsd_process vnfsd;
  explicit server(std::vector<std::string> args = {}) : vnfsd(exp.path(), std::move(args)) {}
  std::string url() const { return "nfs://127.0.0.1:" + std::to_string(vnfsd.port()) + "/"; }
};

}  // namespace

TEST_CASE("db5.3_load, db5.3_dump, db5.3_stat and db5.3_verify through the drop-in") {
  server s;
  temp_dir work;
  const fs::path prefix = work / "mapped";  // never created locally
  const std::string env = with_map(prefix.string() + "=" + s.url());
  for (const char* type : {"btree", "hash"}) {
    INFO(type);
    write_dump(work / "in.txt", type, 3000);
    const std::string db = std::string(type) + ".db";
    fs::create_directory(work / "local");
    REQUIRE(sh(work, "db5.3_load -f in.txt local/" + db) == 0);
    REQUIRE(sh(work, "db5.3_dump -p local/" + db + " > local.txt") == 0);

    REQUIRE(sh(work, env + "db5.3_load -f in.txt " + (prefix / db).string() + " 2> err.txt") == 0);
    CHECK(fs::file_size(s.exp / db) == fs::file_size(work / "local" / db));
    REQUIRE(sh(work, env + "db5.3_dump -p " + (prefix / db).string() + " > vnfs.txt") == 0);
    CHECK(read_file(work / "vnfs.txt") == read_file(work / "local.txt"));
    REQUIRE(sh(work, env + "db5.3_verify " + (prefix / db).string()) == 0);
    REQUIRE(sh(work, env + "db5.3_stat -d " + (prefix / db).string() + " > stat.txt") == 0);
    const std::string stat = read_file(work / "stat.txt");
    CHECK(stat.find(std::string(type) == "btree" ? "3000\tNumber of unique keys in the tree"
                                                  : "3000\tNumber of keys in the database") != std::string::npos);
    CHECK(count_lines(read_file(work / "err.txt"), "vnfs bdb:") == 0);
  }
  CHECK_FALSE(fs::exists(prefix));
  CHECK_FALSE(fs::exists(work / "__db.001"));
}

TEST_CASE("DB_CONFIG in a mapped environment home is read from the server") {
  server s;
  temp_dir work;
  const fs::path prefix = work / "mapped";
  fs::create_directories(s.exp / "env" / "data");
  std::ofstream(s.exp / "env" / "DB_CONFIG") << "set_data_dir data\n";
  write_dump(work / "in.txt", "btree", 100);
  REQUIRE(sh(work, with_map(prefix.string() + "=" + s.url()) + "db5.3_load -h " + (prefix / "env").string() +
                       " -f in.txt a.db") == 0);
  CHECK(fs::exists(s.exp / "env" / "data" / "a.db"));
  CHECK_FALSE(fs::exists(s.exp / "env" / "a.db"));
  CHECK_FALSE(fs::exists(prefix));
}

TEST_CASE("a transactional program killed with SIGKILL, then db5.3_recover: committed and consistent") {
  server s;
  temp_dir work;
  const fs::path prefix = work / "mapped";
  const std::string map = prefix.string() + "=" + s.url();
  fs::create_directory(s.exp / "env");
  constexpr long accounts = 50;
  std::mt19937 rng(std::random_device{}());
  long last_seen = 0;
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    vnfs::test::spawn_options o;
    o.env = {{"VNFS_MAP", map}, {"LD_PRELOAD", preload()}, {"ASAN_OPTIONS", "detect_leaks=0"}};
    child_process w(BDB_TXN_WORKLOAD, {"run", (prefix / "env").string(), std::to_string(accounts)}, o);
    REQUIRE(w.read_line(std::chrono::seconds(20)) == "ready");
    // A random moment: after 1 to 40 commits the program reported.
    int commits = std::uniform_int_distribution<int>(1, 40)(rng);
    for (int i = 0; i < commits; ++i) last_seen = std::stol(w.read_line(std::chrono::seconds(20)));
    w.send_signal(SIGKILL);
    CHECK(w.wait().signal() == SIGKILL);
    // The program runs ahead of this test: the commits it reported before it died and that
    // were not read yet count too (each report is one write(2) below PIPE_BUF: whole lines).
    for (;;) {
      try {
        last_seen = std::stol(w.read_line(std::chrono::seconds(5)));
      } catch (const vnfs::test::process_error&) {
        break;  // end of its output
      }
    }

    REQUIRE(sh(work, with_map(map) + "db5.3_recover -h " + (prefix / "env").string()) == 0);
    REQUIRE(sh(work, with_map(map) + "'" BDB_TXN_WORKLOAD "' check " + (prefix / "env").string() + " > check.txt") == 0);
    std::istringstream check(read_file(work / "check.txt"));
    std::string w1, w2, w3;
    long sum = 0, seq = 0, count = 0;
    check >> w1 >> sum >> w2 >> seq >> w3 >> count;
    CHECK(sum == accounts * 1000);
    CHECK(count == accounts);
    CHECK(seq >= last_seen);       // every commit the program saw is there
    CHECK(seq <= last_seen + 1);   // at most the one in flight when it was killed
    last_seen = seq;
    REQUIRE(sh(work, with_map(map) + "db5.3_verify -h " + (prefix / "env").string() + " accounts.db") == 0);
  }
  CHECK(fs::exists(s.exp / "env" / "log.0000000001"));
  // The environment's other utilities: a checkpoint, and the log files listed by archive.
  REQUIRE(sh(work, with_map(map) + "db5.3_checkpoint -1 -h " + (prefix / "env").string()) == 0);
  REQUIRE(sh(work, with_map(map) + "db5.3_archive -l -h " + (prefix / "env").string() + " > logs.txt") == 0);
  CHECK(read_file(work / "logs.txt") == "log.0000000001\n");
  CHECK_FALSE(fs::exists(prefix));
}

TEST_CASE("faults through the drop-in: an errno Berkeley DB reports and one line naming path and URL") {
  temp_dir work;
  const fs::path prefix = work / "mapped";
  write_dump(work / "in.txt", "btree", 10);

  SECTION("unreachable server") {
    const std::string url = "nfs://127.0.0.1:" + std::to_string(vnfs::test::free_port()) + "/";
    CHECK(sh(work, with_map(prefix.string() + "=" + url) + "db5.3_load -f in.txt " + (prefix / "a.db").string() +
                       " 2> err.txt") != 0);
    const std::string err = read_file(work / "err.txt");
    INFO(err);
    CHECK(count_lines(err, "vnfs bdb: cannot connect for " + (prefix / "a.db").string() + " (" + url + "): ") == 1);
    CHECK(count_lines(err, "vnfs bdb:") == 1);
    CHECK(err.find("Input/output error") != std::string::npos);
  }
  SECTION("missing export") {
    server s;
    const std::string url = s.url() + "no/such/dir";
    CHECK(sh(work, with_map(prefix.string() + "=" + url) + "db5.3_load -f in.txt " + (prefix / "a.db").string() +
                       " 2> err.txt") != 0);
    const std::string err = read_file(work / "err.txt");
    INFO(err);
    CHECK(count_lines(err, "vnfs bdb: cannot connect for " + (prefix / "a.db").string() + " (" + url + "): ") == 1);
    CHECK(err.find("No such file or directory") != std::string::npos);
  }
  SECTION("refused permission") {
    server s({"--root-squash"});
    REQUIRE(sh(work, "db5.3_load -f in.txt '" + (s.exp / "a.db").string() + "'") == 0);
    fs::permissions(s.exp / "a.db", fs::perms::owner_read | fs::perms::owner_write);
    CHECK(sh(work, with_map(prefix.string() + "=" + s.url()) + "db5.3_dump " + (prefix / "a.db").string() +
                       " > out.txt 2> err.txt") != 0);
    const std::string err = read_file(work / "err.txt");
    INFO(err);
    CHECK(count_lines(err, "vnfs bdb:") == 1);
    CHECK(err.find(" " + (prefix / "a.db").string() + " (" + s.url() + "): ") != std::string::npos);
    CHECK(err.find("Permission denied") != std::string::npos);
  }
  SECTION("malformed VNFS_MAP") {
    CHECK(sh(work, with_map("relative/path=nfs://127.0.0.1:1/") + "db5.3_load -f in.txt " +
                       (prefix / "a.db").string() + " 2> err.txt") != 0);
    const std::string err = read_file(work / "err.txt");
    INFO(err);
    CHECK(count_lines(err, "vnfs bdb: VNFS_MAP: entry 'relative/path=nfs://127.0.0.1:1/': the prefix is not an absolute path") == 1);
    CHECK(err.find("Invalid argument") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(prefix));
  CHECK_FALSE(fs::exists(work / "__db.001"));
}
