// The vnfs command line, end to end: every command's success and failure paths with exact
// output and exit codes, against vnfsd (started per test), file:// and local paths; cp -r
// there and back; ls -l against GNU ls -l; --stats; and NFS-Ganesha.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "vnfs/test/ganesha_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"
#include "vnfs_cli_support.hpp"

using namespace vnfs::test;
namespace fs = std::filesystem;

namespace {

std::string url(const vnfsd_process& s, const std::string& path = "") {
  return "nfs://127.0.0.1:" + std::to_string(s.port()) + "/" + path;
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

/// GNU ls in the C locale, run in `cwd` on `args`.
std::string gnu_ls(const fs::path& cwd, const std::string& args) {
  return shell("cd " + quoted(cwd.string()) + " && LC_ALL=C ls " + args);
}

const run_result ok_empty{"", "", 0};

#define CHECK_RUN(r, expected_out, expected_err, expected_code) \
  do {                                                          \
    auto&& rr_ = (r);                                           \
    CHECK(rr_.out == (expected_out));                           \
    CHECK(rr_.err == (expected_err));                           \
    CHECK(rr_.code == (expected_code));                         \
  } while (0)

const std::regex stats_line(
    R"(\{"compounds":([0-9]+),"ops":([0-9]+),"bytes_out":([0-9]+),"bytes_in":([0-9]+),"clients":([0-9]+),"seconds":[0-9]+\.[0-9]{3}\})");

/// The --stats line of an output: it must be the last line; returns {compounds, ops}.
std::pair<std::uint64_t, std::uint64_t> stats_of(const std::string& out) {
  REQUIRE(!out.empty());
  REQUIRE(out.back() == '\n');
  auto start = out.rfind('\n', out.size() - 2);
  std::string last = out.substr(start == std::string::npos ? 0 : start + 1);
  last.pop_back();
  std::smatch m;
  INFO(last);
  REQUIRE(std::regex_match(last, m, stats_line));
  return {std::stoull(m[1]), std::stoull(m[2])};
}

}  // namespace

TEST_CASE("vnfs --help and COMMAND --help describe the commands and exit 0") {
  run_result r = vnfs_cli({"--help"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.rfind("Usage: vnfs [--stats] [--scalar] COMMAND [ARGS...]\n", 0) == 0);
  for (const char* c : {"ls [-l] [-R] [-A] LOCATION", "stat LOCATION...", "cat LOCATION...", "get LOCATION LOCAL",
                        "put LOCAL LOCATION", "cp [-r] [--atomic] SRC DST", "mv SRC DST", "rm [-r] [-f] LOCATION...",
                        "mkdir [-p] LOCATION...", "ln [-s] TARGET LOCATION", "--stats", "--scalar", "nfs+rdma://"})
    CHECK(r.out.find(c) != std::string::npos);
  for (const char* c : {"ls", "stat", "cat", "get", "put", "cp", "mv", "rm", "mkdir", "ln"}) {
    run_result h = vnfs_cli({c, "--help"});
    INFO(c);
    CHECK(h.code == 0);
    CHECK(h.err.empty());
    CHECK(h.out.rfind("Usage: vnfs [--stats] [--scalar] " + std::string(c) + " ", 0) == 0);
  }
  CHECK(vnfs_cli({"--stats", "cp", "--help"}).code == 0);
}

TEST_CASE("vnfs refuses a wrong command line with a message, a hint and exit code 2") {
  CHECK_RUN(vnfs_cli({}), "", "vnfs: missing command\nTry 'vnfs --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"frob"}), "", "vnfs: unknown command 'frob'\nTry 'vnfs --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"--frob", "ls", "x"}), "", "vnfs: unknown option '--frob'\nTry 'vnfs --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls", "-lx", "."}), "", "vnfs: ls: invalid option -- 'x'\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls", "--long", "."}), "", "vnfs: ls: unrecognized option '--long'\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls"}), "", "vnfs: ls: missing operand\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls", "a", "b"}), "", "vnfs: ls: extra operand 'b'\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"cp", "a"}), "", "vnfs: cp: missing operand after 'a'\nTry 'vnfs cp --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"mv", "a", "b", "c"}), "", "vnfs: mv: extra operand 'c'\nTry 'vnfs mv --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"rm", "-s", "a"}), "", "vnfs: rm: invalid option -- 's'\nTry 'vnfs rm --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls", "ftp://host/x"}), "",
            "vnfs: bad location 'ftp://host/x': unknown scheme 'ftp' (nfs, nfs+rdma or file)\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls", "nfs:///x"}), "", "vnfs: bad location 'nfs:///x': no host\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls", "nfs://h:99999/"}), "",
            "vnfs: bad location 'nfs://h:99999/': port '99999' is out of range\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"ls", "nfs://h/a/../b"}), "",
            "vnfs: bad location 'nfs://h/a/../b': '..' in the path\nTry 'vnfs ls --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"stat", "file://elsewhere/x"}), "",
            "vnfs: bad location 'file://elsewhere/x': a file URL names no host (file:///PATH)\nTry 'vnfs stat --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"get", "x", "nfs://h/y"}), "",
            "vnfs: get: LOCAL must be a local path or a file:// URL, not 'nfs://h/y'\nTry 'vnfs get --help'.\n", 2);
  CHECK_RUN(vnfs_cli({"put", "nfs://h/y", "x"}), "",
            "vnfs: put: LOCAL must be a local path or a file:// URL, not 'nfs://h/y'\nTry 'vnfs put --help'.\n", 2);
}

TEST_CASE("vnfs reports servers it cannot reach with exit code 1") {
  // A port nobody listens on: bind one, learn it, close it.
  temp_dir dir;
  std::uint16_t port;
  {
    vnfsd_process s(dir.path());
    port = s.port();
  }
  std::string u = "nfs://127.0.0.1:" + std::to_string(port) + "/x";
  CHECK_RUN(vnfs_cli({"ls", u}), "",
            "vnfs: cannot connect to 'nfs://127.0.0.1:" + std::to_string(port) + "/': Connection refused\n", 1);
  CHECK_RUN(vnfs_cli({"ls", "nfs+rdma://127.0.0.1:" + std::to_string(port) + "/x?provider=cma"}), "",
            "vnfs: cannot connect to 'nfs+rdma://127.0.0.1:" + std::to_string(port) +
                "/?provider=cma': Connection refused\n",
            1);
  // Commands with many operands go on with the next one.
  write_file(dir / "f", "abc");
  run_result r = vnfs_cli({"cat", u, (dir / "f").string()});
  CHECK_RUN(r, "abc", "vnfs: cannot connect to 'nfs://127.0.0.1:" + std::to_string(port) + "/': Connection refused\n", 1);
  r = vnfs_cli({"stat", u, (dir / "f").string()});
  CHECK(r.code == 1);
  CHECK(r.out.rfind("  File: " + (dir / "f").string() + "\n  Type: regular file\n  Size: 3\n", 0) == 0);
}

TEST_CASE("vnfs ls -l, -lR and -la print what GNU ls prints (local paths and file://)") {
  temp_dir dir;
  fs::create_directory(dir / "t");
  make_sample_tree(dir / "t");
  const std::string t = (dir / "t").string();
  auto ls_args = [](const std::string& flags, const std::string& operand) {
    std::vector<std::string> args{"ls"};
    if (!flags.empty()) args.push_back(flags);
    args.push_back(operand);
    return args;
  };
  for (std::string flags : {"-l", "-lR", "-lA", "-lRA", "-R", ""}) {
    INFO(flags);
    // Relative to the working directory, as ls is usually run.
    run_result r = run_program("/bin/sh", {"-c", "cd " + quoted(dir.path().string()) + " && exec " +
                                                     quoted(VNFS_CLI_PATH) + " ls " + flags + " t"});
    CHECK(r.err.empty());
    CHECK(r.code == 0);
    CHECK(r.out == gnu_ls(dir.path(), flags + " t"));
    // An absolute path, and the file:// URL of it, name the same objects.
    run_result abs = vnfs_cli(ls_args(flags, t));
    CHECK(abs.code == 0);
    CHECK(abs.out == gnu_ls(dir.path(), flags + " " + quoted(t)));
    run_result u = vnfs_cli(ls_args(flags, "file://" + t));
    CHECK(u.code == 0);
    if (flags.find('R') == std::string::npos) CHECK(u.out == abs.out);
    else CHECK(u.out.rfind("file://" + t + ":\n", 0) == 0);
  }
  // An object that is not a directory: shown itself, under the name given.
  CHECK(vnfs_cli({"ls", "-l", t + "/hello.txt"}).out == gnu_ls(dir.path(), "-l " + quoted(t + "/hello.txt")));
  CHECK(vnfs_cli({"ls", "-l", t + "/link_to_file"}).out == gnu_ls(dir.path(), "-l " + quoted(t + "/link_to_file")));
  CHECK(vnfs_cli({"ls", "-l", t + "/a/b/dangling"}).out == gnu_ls(dir.path(), "-l " + quoted(t + "/a/b/dangling")));
  CHECK_RUN(vnfs_cli({"ls", t + "/hello.txt"}), t + "/hello.txt\n", "", 0);
  CHECK_RUN(vnfs_cli({"ls", "-l", t + "/empty_dir"}), "total 0\n", "", 0);
  CHECK_RUN(vnfs_cli({"ls", t + "/missing"}), "", "vnfs: cannot access '" + t + "/missing': No such file or directory\n", 1);
  CHECK_RUN(vnfs_cli({"ls", t + "/hello.txt/x"}), "", "vnfs: cannot access '" + t + "/hello.txt/x': Not a directory\n", 1);
}

TEST_CASE("vnfs cp -r of a tree to vnfsd and back keeps content, modes, symlinks and times") {
  temp_dir local, exp;
  fs::create_directory(local / "src");
  make_sample_tree(local / "src");
  const std::string before = tree_signature(local / "src");
  vnfsd_process server(exp.path());
  for (const char* mode : {"vectorized", "scalar"}) {
    SECTION(mode) {
      std::vector<std::string> global;
      if (std::string(mode) == "scalar") global.push_back("--scalar");
      auto with = [&global](std::vector<std::string> args) {
        args.insert(args.begin(), global.begin(), global.end());
        return vnfs_cli(args);
      };
      // There: the server's export holds the same tree. Not on a terminal: no progress output.
      CHECK_RUN(with({"cp", "-r", (local / "src").string(), url(server, "tree")}), "", "", 0);
      CHECK(tree_signature(exp / "tree") == before);
      // And back, into a directory that does not exist yet.
      CHECK_RUN(with({"cp", "-r", url(server, "tree"), (local / "back").string()}), "", "", 0);
      CHECK(tree_signature(local / "back") == before);
      shell("diff -r --no-dereference " + quoted((local / "src").string()) + " " + quoted((local / "back").string()));
      // Into an existing directory: copied inside it under the source's name.
      fs::create_directory(local / "into");
      CHECK_RUN(with({"cp", "-r", url(server, "tree"), (local / "into").string()}), "", "", 0);
      CHECK(tree_signature(local / "into" / "tree") == before);
      // Again over the copy: files are overwritten, the tree merged, nothing changes.
      CHECK_RUN(with({"cp", "-r", url(server, "tree"), (local / "into").string()}), "", "", 0);
      CHECK(tree_signature(local / "into" / "tree") == before);
      // Server to the same server (one client: vscopy).
      CHECK_RUN(with({"cp", "-r", url(server, "tree"), url(server, "tree2")}), "", "", 0);
      CHECK(tree_signature(exp / "tree2") == before);
    }
  }
}

TEST_CASE("vnfs --stats prints one JSON object as the last line of stdout") {
  temp_dir local, exp;
  vnfsd_process server(exp.path());
  write_file(exp / "f", "no newline at the end");
  run_result r = vnfs_cli({"--stats", "cat", url(server, "f")});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  auto [compounds, ops] = stats_of(r.out);
  CHECK(r.out.rfind("no newline at the end\n{\"compounds\":", 0) == 0);  // on a line of its own
  // The session's set-up (EXCHANGE_ID, CREATE_SESSION), then one COMPOUND for a file that
  // fits in cat's first read (the next test case counts its operations). The teardown comes
  // after the line is printed.
  CHECK(compounds == 2 + 1);
  CHECK(ops > compounds);
  // Local files only: no COMPOUNDs; a failing command still prints it.
  r = vnfs_cli({"--stats", "ls", (local / "missing").string()});
  CHECK(r.code == 1);
  CHECK(stats_of(r.out) == std::pair<std::uint64_t, std::uint64_t>(0, 0));
  CHECK(r.out.rfind("{\"compounds\":0,\"ops\":0,\"bytes_out\":0,\"bytes_in\":0,\"clients\":1,\"seconds\":", 0) == 0);
  // The same copy vectorized and scalar moves the same files either way.
  fs::create_directory(local / "src");
  make_sample_tree(local / "src");
  r = vnfs_cli({"--stats", "cp", "-r", (local / "src").string(), url(server, "v")});
  CHECK(r.code == 0);
  // 2 for the session's set-up; 1 to stat the destination (is it a directory to copy
  // into? It is missing, so there is nothing there to merge with and no second look); then
  // one COMPOUND per vectorized call: vmkdir (v and its 5 directories), vsymlink (4 links),
  // vwrite (6 files, 3 MiB in all, under vnfsd's 4 MiB + 64 KiB request limit) and
  // vsetattrs (modes and times).
  const std::uint64_t vectorized = stats_of(r.out).first;
  CHECK(vectorized == 2 + 1 + 4);
  r = vnfs_cli({"--stats", "--scalar", "cp", "-r", (local / "src").string(), url(server, "s")});
  CHECK(r.code == 0);
  // Item by item, one LOOKUP COMPOUND per path component, then the operation.
  CHECK(stats_of(r.out).first > vectorized);
  CHECK(tree_signature(exp / "v") == tree_signature(exp / "s"));
}

TEST_CASE("vnfs --stats cat and stat of one file: the session's set-up, then one COMPOUND (vnfsd, NFS-Ganesha)") {
  temp_dir exp;
  vnfsd_process server(exp.path());
  ganesha_process ganesha;
  const std::string data(1024, 'x');
  // Both URLs name the server's root and a path under it: the client looks nothing up at
  // connect. Set-up: EXCHANGE_ID, CREATE_SESSION (2 COMPOUNDs, 2 operations). The first
  // COMPOUND then carries, after its SEQUENCE, the new client ID's RECLAIM_COMPLETE and
  // PUTROOTFH + GETATTR of the lease time (3 operations), then the command's own:
  //   cat:  PUTROOTFH, LOOKUP of each directory, SAVEFH, OPEN, READ, CLOSE (the file is read
  //         by its path: it fits in cat's first read)
  //   stat: PUTROOTFH, LOOKUP of each directory, SAVEFH, LOOKUP f00001, GETATTR
  // Ganesha's path has one component more (its pseudo path, /export). The teardown
  // (DESTROY_SESSION, then DESTROY_CLIENTID: RFC 8881 allows no fewer round trips) comes
  // after the line is printed.
  struct target {
    std::string base;
    fs::path dir;
    std::uint64_t depth;  // directories from the server's root to d
  };
  for (const target& t : {target{url(server), exp.path(), 1},
                          target{"nfs://127.0.0.1:" + std::to_string(ganesha.port()) + ganesha.pseudo_path() + "/",
                                 ganesha.export_dir(), 2}}) {
    INFO(t.base);
    fs::create_directories(t.dir / "d");
    write_file(t.dir / "d" / "f00001", data);
    run_result r = vnfs_cli({"--stats", "cat", t.base + "d/f00001"});
    CHECK(r.code == 0);
    CHECK(r.out.substr(0, data.size()) == data);
    CHECK(stats_of(r.out) == std::pair<std::uint64_t, std::uint64_t>(2 + 1, 2 + 1 + 3 + (1 + t.depth + 4)));
    r = vnfs_cli({"--stats", "stat", t.base + "d/f00001"});
    CHECK(r.code == 0);
    CHECK(r.out.find("  Size: 1024\n") != std::string::npos);
    CHECK(stats_of(r.out) == std::pair<std::uint64_t, std::uint64_t>(2 + 1, 2 + 1 + 3 + (1 + t.depth + 3)));
  }
}

TEST_CASE("vnfs ls over vnfsd prints what GNU ls -l prints for the exported directory") {
  temp_dir exp;
  fs::create_directory(exp / "t");
  make_sample_tree(exp / "t");
  vnfsd_process server(exp.path());
  for (std::string flags : {"-l", "-lA", ""}) {
    INFO(flags);
    std::vector<std::string> args{"ls"};
    if (!flags.empty()) args.push_back(flags);
    args.push_back(url(server, "t"));
    run_result r = vnfs_cli(args);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == gnu_ls(exp.path(), flags + " t"));
  }
  // -R: the same, with the headers naming the URL.
  std::string gnu = gnu_ls(exp.path(), "-lR t");
  std::string expected = std::regex_replace(gnu, std::regex("(^|\n)t(/[^\n]*)?:\n"), "$1" + url(server, "t") + "$2:\n");
  CHECK(vnfs_cli({"ls", "-lR", url(server, "t")}).out == expected);
  CHECK(vnfs_cli({"ls", "-l", url(server, "t/a/b/dangling")}).out ==
        std::regex_replace(gnu_ls(exp.path(), "-l t/a/b/dangling"), std::regex(" t/a/b/dangling"),
                           " " + url(server, "t/a/b/dangling")));
  CHECK_RUN(vnfs_cli({"ls", url(server, "t/missing")}), "",
            "vnfs: cannot access '" + url(server, "t/missing") + "': No such file or directory\n", 1);
}

TEST_CASE("vnfs stat prints the attributes of each location") {
  temp_dir exp;
  vnfsd_process server(exp.path());
  write_file(exp / "f", "12345");
  ::chmod((exp / "f").c_str(), 0640);
  shell("touch -d '2020-01-02 03:04:05.5' " + quoted((exp / "f").string()) + " && ln -s f " +
        quoted((exp / "l").string()));
  struct stat st {};
  REQUIRE(::stat((exp / "f").c_str(), &st) == 0);
  run_result r = vnfs_cli({"stat", url(server, "f"), url(server, "nope"), url(server, "l")});
  CHECK(r.code == 1);
  CHECK(r.err == "vnfs: cannot stat '" + url(server, "nope") + "': No such file or directory\n");
  std::string expect_f = "  File: " + url(server, "f") +
                         "\n"
                         "  Type: regular file\n"
                         "  Size: 5\n"
                         "Blocks: " + std::to_string(st.st_blocks) + "\n"
                         "  Mode: 0640 (-rw-r-----)\n"
                         " Links: 1\n"
                         " Owner: 0 (root)\n"
                         " Group: 0 (root)\n"
                         " Inode: " + std::to_string(st.st_ino) + "\n";
  CHECK(r.out.rfind(expect_f, 0) == 0);
  CHECK(r.out.find("Modify: " + shell("date -d @1577934245 '+%Y-%m-%d %H:%M:%S'").substr(0, 19) + ".500000000 ") !=
        std::string::npos);
  CHECK(r.out.find("  File: " + url(server, "l") + " -> f\n  Type: symbolic link\n  Size: 1\n") != std::string::npos);
}

TEST_CASE("vnfs cat, get and put move file contents") {
  temp_dir local, exp;
  vnfsd_process server(exp.path());
  std::string big(5 * 1024 * 1024 + 3, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + i / 4096);
  write_file(exp / "big", big);
  write_file(exp / "small", "small\n");
  fs::create_directory(exp / "dir");
  CHECK_RUN(vnfs_cli({"cat", url(server, "small"), url(server, "big"), url(server, "small")}), "small\n" + big + "small\n",
            "", 0);
  CHECK_RUN(vnfs_cli({"cat", url(server, "small"), url(server, "dir"), url(server, "nope"), url(server, "small")}),
            "small\nsmall\n",
            "vnfs: cannot open '" + url(server, "dir") + "': Is a directory\nvnfs: cannot open '" + url(server, "nope") +
                "': No such file or directory\n",
            1);
  // get: to a new name, into a directory, over an existing file.
  CHECK_RUN(vnfs_cli({"get", url(server, "big"), (local / "b").string()}), "", "", 0);
  CHECK(read_file(local / "b") == big);
  CHECK_RUN(vnfs_cli({"get", url(server, "small"), local.path().string()}), "", "", 0);
  CHECK(read_file(local / "small") == "small\n");
  CHECK_RUN(vnfs_cli({"get", url(server, "small"), (local / "b").string()}), "", "", 0);
  CHECK(read_file(local / "b") == "small\n");
  CHECK_RUN(vnfs_cli({"get", url(server, "dir"), (local / "d").string()}), "",
            "vnfs: '" + url(server, "dir") + "' is a directory (use cp -r)\n", 1);
  CHECK_RUN(vnfs_cli({"get", url(server, "nope"), (local / "d").string()}), "",
            "vnfs: cannot stat '" + url(server, "nope") + "': No such file or directory\n", 1);
  // put: the mode comes along.
  write_file(local / "p", "put me");
  ::chmod((local / "p").c_str(), 0604);
  CHECK_RUN(vnfs_cli({"put", (local / "p").string(), url(server, "dir")}), "", "", 0);
  CHECK(read_file(exp / "dir" / "p") == "put me");
  CHECK(mode_of(exp / "dir" / "p") == 0604);
  CHECK_RUN(vnfs_cli({"put", (local / "p").string(), url(server, "no/such/dir/p")}), "",
            "vnfs: cannot write '" + url(server, "no/such/dir/p") + "': No such file or directory\n", 1);
}

TEST_CASE("vnfs cp -r between local locations (one file:// client) keeps content, modes, symlinks and times") {
  temp_dir local;
  fs::create_directory(local / "src");
  make_sample_tree(local / "src");
  const std::string before = tree_signature(local / "src");
  // A umask that would take bits away: the copies have their source's modes all the same.
  const mode_t old_mask = ::umask(077);
  // Local paths, and file:// URLs.
  CHECK_RUN(vnfs_cli({"cp", "-r", (local / "src").string(), (local / "a").string()}), "", "", 0);
  CHECK(tree_signature(local / "a") == before);
  CHECK_RUN(vnfs_cli({"cp", "-r", "file://" + (local / "src").string(), "file://" + (local / "b").string()}), "", "", 0);
  CHECK(tree_signature(local / "b") == before);
  shell("diff -r --no-dereference " + quoted((local / "src").string()) + " " + quoted((local / "b").string()));
  // Access times too (make_sample_tree set them equal to the modification times).
  for (const char* f : {"hello.txt", "big.bin", "a/b/c/deep.txt"}) {
    struct stat st {};
    REQUIRE(::lstat((local / "a" / f).c_str(), &st) == 0);
    CHECK(st.st_atim.tv_sec == st.st_mtim.tv_sec);
    CHECK(st.st_atim.tv_nsec == st.st_mtim.tv_nsec);
  }
  // Into an existing directory, then again over that copy after its files and directories
  // were given other modes and times: merged, everything with its source's attributes again.
  fs::create_directory(local / "into");
  CHECK_RUN(vnfs_cli({"cp", "-r", (local / "src").string(), (local / "into").string()}), "", "", 0);
  CHECK(tree_signature(local / "into" / "src") == before);
  shell("cd " + quoted((local / "into" / "src").string()) + " && chmod -R u=rwx,go= . && find . ! -type l -exec touch {} +");
  CHECK(tree_signature(local / "into" / "src") != before);
  CHECK_RUN(vnfs_cli({"cp", "-r", (local / "src").string(), (local / "into").string()}), "", "", 0);
  ::umask(old_mask);
  CHECK(tree_signature(local / "into" / "src") == before);
}

TEST_CASE("vnfs cp -r between local locations as an unprivileged user: set-id bits kept, an unreadable file named") {
  // Writing a file clears its set-user-ID bit for a user without CAP_FSETID: the copy gets
  // it back at the end. A file the user may not read fails the copy with its path.
  temp_dir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string d = dir.path().string();
  shell("cd " + quoted(d) + " && mkdir src out && printf x > src/suid && printf y > src/plain && chown -R 65534:65534 src out" +
        " && chmod 04755 src/suid && chmod 0640 src/plain");
  auto as_nobody = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"--reuid", "65534", "--regid", "65534", "--clear-groups", VNFS_CLI_PATH});
    return run_program("/usr/bin/setpriv", args);
  };
  CHECK_RUN(as_nobody({"cp", "-r", d + "/src", d + "/out/a"}), "", "", 0);
  CHECK(mode_of(d + "/out/a/suid") == 04755);
  CHECK(mode_of(d + "/out/a/plain") == 0640);
  CHECK(read_file(d + "/out/a/suid") == "x");
  shell("cd " + quoted(d) + " && printf z > src/secret && chown 65534:65534 src/secret && chmod 0200 src/secret");
  CHECK_RUN(as_nobody({"cp", "-r", "file://" + d + "/src", "file://" + d + "/out/b"}), "",
            "vnfs: cannot copy 'file://" + d + "/src/secret' to 'file://" + d + "/out/b/secret': Permission denied\n", 1);
}

TEST_CASE("vnfs cp copies files and refuses what cp refuses") {
  temp_dir local, exp;
  vnfsd_process server(exp.path());
  write_file(exp / "f", "data");
  fs::create_directory(exp / "d");
  write_file(exp / "d" / "x", "x");
  CHECK_RUN(vnfs_cli({"cp", url(server, "f"), url(server, "g")}), "", "", 0);
  CHECK(read_file(exp / "g") == "data");
  CHECK_RUN(vnfs_cli({"cp", url(server, "f"), url(server, "d")}), "", "", 0);
  CHECK(read_file(exp / "d" / "f") == "data");
  CHECK_RUN(vnfs_cli({"cp", url(server, "d"), url(server, "e")}), "",
            "vnfs: -r not specified; omitting directory '" + url(server, "d") + "'\n", 1);
  CHECK_RUN(vnfs_cli({"cp", url(server, "f"), url(server, "f")}), "",
            "vnfs: '" + url(server, "f") + "' and '" + url(server, "f") + "' are the same file\n", 1);
  CHECK_RUN(vnfs_cli({"cp", "-r", url(server, "d"), url(server, "d/sub")}), "",
            "vnfs: cannot copy a directory, '" + url(server, "d") + "', into itself, '" + url(server, "d/sub") + "'\n", 1);
  CHECK_RUN(vnfs_cli({"cp", "-r", url(server, "d"), url(server, "f")}), "",
            "vnfs: cannot overwrite non-directory '" + url(server, "f") + "' with directory '" + url(server, "d") + "'\n", 1);
  fs::create_directories(local / "t" / "f");
  CHECK_RUN(vnfs_cli({"cp", url(server, "f"), (local / "t").string()}), "",
            "vnfs: cannot overwrite directory '" + (local / "t" / "f").string() + "' with non-directory '" +
                url(server, "f") + "'\n",
            1);
  CHECK_RUN(vnfs_cli({"cp", url(server, "nope"), (local / "t").string()}), "",
            "vnfs: cannot stat '" + url(server, "nope") + "': No such file or directory\n", 1);
  // A symlink is copied as a symlink.
  fs::create_symlink("f", exp / "l");
  CHECK_RUN(vnfs_cli({"cp", url(server, "l"), (local / "l").string()}), "", "", 0);
  CHECK(fs::read_symlink(local / "l") == "f");
}

TEST_CASE("vnfs mv renames on one server and moves between locations") {
  temp_dir local, exp;
  vnfsd_process server(exp.path());
  write_file(exp / "f", "data");
  fs::create_directory(exp / "d");
  CHECK_RUN(vnfs_cli({"mv", url(server, "f"), url(server, "g")}), "", "", 0);
  CHECK(!fs::exists(exp / "f"));
  CHECK(read_file(exp / "g") == "data");
  CHECK_RUN(vnfs_cli({"mv", url(server, "g"), url(server, "d")}), "", "", 0);
  CHECK(read_file(exp / "d" / "g") == "data");
  CHECK_RUN(vnfs_cli({"mv", url(server, "d"), url(server, "d/inner")}), "",
            "vnfs: cannot move '" + url(server, "d") + "' to a subdirectory of itself, '" + url(server, "d/inner") + "'\n",
            1);
  CHECK_RUN(vnfs_cli({"mv", url(server, "nope"), url(server, "x")}), "",
            "vnfs: cannot stat '" + url(server, "nope") + "': No such file or directory\n", 1);
  // Between the server and local files: a copy, then the source goes.
  fs::create_directory(local / "src");
  make_sample_tree(local / "src");
  const std::string sig = tree_signature(local / "src");
  CHECK_RUN(vnfs_cli({"mv", (local / "src").string(), url(server, "moved")}), "", "", 0);
  CHECK(!fs::exists(local / "src"));
  CHECK(tree_signature(exp / "moved") == sig);
  CHECK_RUN(vnfs_cli({"mv", url(server, "d/g"), (local / "g").string()}), "", "", 0);
  CHECK(!fs::exists(exp / "d" / "g"));
  CHECK(read_file(local / "g") == "data");
}

TEST_CASE("vnfs rm removes files and, with -r, trees") {
  temp_dir exp;
  vnfsd_process server(exp.path());
  write_file(exp / "f", "x");
  fs::create_directory(exp / "t");
  make_sample_tree(exp / "t");
  fs::create_directory(exp / "e");
  CHECK_RUN(vnfs_cli({"rm", url(server, "t")}), "", "vnfs: cannot remove '" + url(server, "t") + "': Is a directory\n", 1);
  CHECK(fs::exists(exp / "t"));
  // Every operand is tried; the failures are reported in order.
  CHECK_RUN(vnfs_cli({"rm", url(server, "nope"), url(server, "f"), url(server, "e")}), "",
            "vnfs: cannot remove '" + url(server, "nope") + "': No such file or directory\nvnfs: cannot remove '" +
                url(server, "e") + "': Is a directory\n",
            1);
  CHECK(!fs::exists(exp / "f"));
  CHECK_RUN(vnfs_cli({"rm", "-r", url(server, "t"), url(server, "e")}), "", "", 0);
  CHECK(!fs::exists(exp / "t"));
  CHECK(!fs::exists(exp / "e"));
  CHECK_RUN(vnfs_cli({"rm", "-f", url(server, "nope")}), "", "", 0);
  CHECK_RUN(vnfs_cli({"rm", "-rf", url(server, "")}), "",
            "vnfs: refusing to remove '" + url(server, "") + "': it is the root of its file system\n", 1);
  fs::create_directory(exp / "keep");
  // Every operand is parsed before anything is removed.
  CHECK_RUN(vnfs_cli({"rm", "-r", url(server, "keep"), "ftp://x/y"}), "",
            "vnfs: bad location 'ftp://x/y': unknown scheme 'ftp' (nfs, nfs+rdma or file)\nTry 'vnfs rm --help'.\n", 2);
  CHECK(fs::exists(exp / "keep"));
  CHECK_RUN(vnfs_cli({"rm", "-r", url(server, "keep/..")}), "",
            "vnfs: bad location '" + url(server, "keep/..") + "': '..' in the path\nTry 'vnfs rm --help'.\n", 2);
  CHECK(fs::exists(exp / "keep"));
}

TEST_CASE("vnfs mkdir creates directories; -p creates parents") {
  temp_dir exp;
  vnfsd_process server(exp.path());
  CHECK_RUN(vnfs_cli({"mkdir", url(server, "a"), url(server, "b")}), "", "", 0);
  CHECK(fs::is_directory(exp / "a"));
  CHECK(fs::is_directory(exp / "b"));
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK(mode_of(exp / "a") == (0777u & ~static_cast<unsigned>(mask)));
  CHECK_RUN(vnfs_cli({"mkdir", url(server, "a"), url(server, "c"), url(server, "x/y"), url(server, "d")}), "",
            "vnfs: cannot create directory '" + url(server, "a") +
                "': File exists\nvnfs: cannot create directory '" + url(server, "x/y") +
                "': No such file or directory\n",
            1);
  CHECK(fs::is_directory(exp / "c"));
  CHECK(fs::is_directory(exp / "d"));
  CHECK_RUN(vnfs_cli({"mkdir", "-p", url(server, "x/y/z"), url(server, "a")}), "", "", 0);
  CHECK(fs::is_directory(exp / "x" / "y" / "z"));
  write_file(exp / "file", "");
  CHECK_RUN(vnfs_cli({"mkdir", "-p", url(server, "file/sub")}), "",
            "vnfs: cannot create directory '" + url(server, "file/sub") + "': Not a directory\n", 1);
}

TEST_CASE("vnfs ln makes symlinks and hard links") {
  temp_dir local, exp;
  vnfsd_process server(exp.path());
  write_file(exp / "f", "data");
  fs::create_directory(exp / "d");
  CHECK_RUN(vnfs_cli({"ln", "-s", "some/where", url(server, "s")}), "", "", 0);
  CHECK(fs::read_symlink(exp / "s") == "some/where");
  CHECK_RUN(vnfs_cli({"ln", "-s", "../f", url(server, "d")}), "", "", 0);  // into the directory, named "f"
  CHECK(fs::read_symlink(exp / "d" / "f") == "../f");
  CHECK_RUN(vnfs_cli({"ln", "-s", "x", url(server, "s")}), "",
            "vnfs: failed to create symbolic link '" + url(server, "s") + "': File exists\n", 1);
  CHECK_RUN(vnfs_cli({"ln", url(server, "f"), url(server, "h")}), "", "", 0);
  CHECK(fs::hard_link_count(exp / "f") == 2);
  CHECK(fs::equivalent(exp / "f", exp / "h"));
  CHECK_RUN(vnfs_cli({"ln", url(server, "nope"), url(server, "h2")}), "",
            "vnfs: failed to create hard link '" + url(server, "h2") + "' => '" + url(server, "nope") +
                "': No such file or directory\n",
            1);
  CHECK_RUN(vnfs_cli({"ln", url(server, "f"), (local / "h").string()}), "",
            "vnfs: failed to create hard link '" + (local / "h").string() + "' => '" + url(server, "f") +
                "': Invalid cross-device link\n",
            1);
}

TEST_CASE("vnfs against NFS-Ganesha: cp -r there and back, ls -l") {
  ganesha_process ganesha;
  temp_dir local;
  fs::create_directory(local / "src");
  make_sample_tree(local / "src");
  // Ganesha 4.3 answers NFS4_OK to a SETATTR of a symlink's times but leaves them as they
  // were (nfs-ganesha/nfs-ganesha#983): everything else must match, symlink times too
  // against vnfsd (above).
  const std::string sig = tree_signature(local / "src", false);
  const std::string base = "nfs://127.0.0.1:" + std::to_string(ganesha.port()) + ganesha.pseudo_path() + "/";
  CHECK_RUN(vnfs_cli({"cp", "-r", (local / "src").string(), base + "tree"}), "", "", 0);
  CHECK(tree_signature(ganesha.export_dir() / "tree", false) == sig);
  CHECK_RUN(vnfs_cli({"cp", "-r", base + "tree", (local / "back").string()}), "", "", 0);
  CHECK(tree_signature(local / "back", false) == sig);
  shell("diff -r --no-dereference " + quoted((local / "src").string()) + " " + quoted((local / "back").string()));
  run_result r = vnfs_cli({"ls", "-l", base + "tree"});
  CHECK(r.code == 0);
  CHECK(r.out == gnu_ls(ganesha.export_dir(), "-l tree"));
  // Server to server: Ganesha to vnfsd, through this client.
  temp_dir exp;
  vnfsd_process server(exp.path());
  CHECK_RUN(vnfs_cli({"cp", "-r", base + "tree", url(server, "tree")}), "", "", 0);
  CHECK(tree_signature(exp / "tree", false) == sig);
  CHECK_RUN(vnfs_cli({"rm", "-r", base + "tree"}), "", "", 0);
  CHECK(!fs::exists(ganesha.export_dir() / "tree"));
}

TEST_CASE("vnfs shows a progress bar on a terminal only") {
  temp_dir local, exp;
  vnfsd_process server(exp.path());
  write_file(local / "f", std::string(3 << 20, 'x'));
  fs::create_directories(local / "t" / "a");
  write_file(local / "t" / "a" / "g", "g");
  // A terminal (script(1) gives the command a pseudo-terminal), the bar shown at once.
  auto on_terminal = [](const std::string& command) {
    return shell("VNFS_PROGRESS_DELAY_MS=0 script -qec " + quoted(command) + " /dev/null");
  };
  std::string vnfs = quoted(VNFS_CLI_PATH);
  std::string screen = on_terminal(vnfs + " cp " + quoted((local / "f").string()) + " " + quoted(url(server, "f")));
  INFO(screen);
  CHECK(screen.rfind("\rcopying ", 0) == 0);
  CHECK(screen.find("\rcopying 1/1 files, 3.0 MiB/3.0 MiB, ") != std::string::npos);
  CHECK(screen.size() >= 4);
  CHECK(screen.substr(screen.size() - 4) == "\r\033[K");  // erased at the end
  CHECK(read_file(exp / "f") == std::string(3 << 20, 'x'));
  screen = on_terminal(vnfs + " rm -r " + quoted((local / "t").string()));
  CHECK(screen.find("\rremoving 3/3 files, 0 B/0 B, ") != std::string::npos);
  CHECK(screen.substr(screen.size() - 4) == "\r\033[K");
  CHECK(!fs::exists(local / "t"));
  // Not a terminal: nothing, whatever the delay.
  run_result r = run_program("/bin/sh", {"-c", "VNFS_PROGRESS_DELAY_MS=0 exec " + vnfs + " cp " +
                                                   quoted((local / "f").string()) + " " + quoted(url(server, "g"))});
  CHECK_RUN(r, "", "", 0);
}

TEST_CASE("vnfs cp of a read-only file over 64 MiB works for a user who may not write it") {
  // As an unprivileged user the copy cannot reopen a file it made read-only: the tool
  // creates it writable and gives it its mode at the end.
  temp_dir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string d = dir.path().string();
  shell("head -c 70000003 /dev/urandom > " + quoted(d + "/big") + " && chmod 0444 " + quoted(d + "/big") +
        " && mkdir " + quoted(d + "/out") + " && chown 65534:65534 " + quoted(d + "/out"));
  for (const char* dst : {"/out/same_client", "/out/file_url"}) {
    INFO(dst);
    std::string to = std::string(dst) == "/out/file_url" ? "file://" + d + dst : d + dst;
    run_result r = run_program("/usr/bin/setpriv", {"--reuid", "65534", "--regid", "65534", "--clear-groups",
                                                    VNFS_CLI_PATH, "cp", d + "/big", to});
    CHECK_RUN(r, "", "", 0);
    CHECK(mode_of(d + dst) == 0444);
    shell("cmp " + quoted(d + "/big") + " " + quoted(d + dst));
  }
}
