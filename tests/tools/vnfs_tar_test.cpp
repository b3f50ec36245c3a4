// vnfs tar, end to end: archives written by vnfs tar -c read back by GNU tar and bsdtar,
// archives written by them extracted by vnfs tar -x, over vnfsd (TCP and RPC-over-RDMA/cma),
// NFS-Ganesha and local files (file://); compressed archives; a damaged archive; owners; the
// COMPOUNDs of a small extraction; the command line's own errors; the progress bar;
// unmodified bsdtar -x through vnfs with the preload library. Trees are compared with
// diff -r and tree_signature (type, mode, size, mtime to the nanosecond, symlink contents),
// hard links by inode.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

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

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file_text(const fs::path& p, const std::string& data) { std::ofstream(p, std::ios::binary) << data; }

struct stat lstat_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st;
}

const std::string long_name = std::string(120, 'L') + ".txt";  // over ustar's 100 bytes

/// The sample tree, plus a hard link (two names, one inode) and a long name, under dir/t.
void make_tree(const fs::path& dir) {
  fs::create_directories(dir / "t");
  make_sample_tree(dir / "t");
  shell("set -e; cd " + quoted((dir / "t").string()) + "; ln hello.txt a/hard; printf 'long' > a/" + long_name +
        "; touch -d '2020-01-02 03:04:05.5' a/" + long_name + " a; touch -d '2021-03-04 05:06:07.000000001' .");
}

/// dir/t has the tree make_tree made under ref/t: same signature, same bytes, and the hard
/// link is one.
void check_tree(const fs::path& ref, const fs::path& dir, bool symlink_times = true) {
  CHECK(tree_signature(dir / "t", symlink_times) == tree_signature(ref / "t", symlink_times));
  shell("diff -r --no-dereference " + quoted((ref / "t").string()) + " " + quoted((dir / "t").string()));
  struct stat a = lstat_of(dir / "t/hello.txt"), b = lstat_of(dir / "t/a/hard");
  CHECK(a.st_ino == b.st_ino);
  CHECK(a.st_nlink == 2);
  CHECK(read_file(dir / "t/a" / long_name) == "long");
}

const std::regex stats_line(R"(\{"compounds":([0-9]+),"ops":([0-9]+),.*\}\n$)");

std::uint64_t compounds_of(const std::string& out) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, stats_line));
  return std::stoull(m[1]);
}

}  // namespace

TEST_CASE("vnfs tar -c over vnfsd, read by GNU tar and bsdtar") {
  temp_dir exp, local;
  make_tree(exp / "in");
  vnfsd_process server(exp.path());
  const std::string a = (local / "a.tar").string();
  run_result r = vnfs_cli({"tar", "-c", "-f", a, url(server, "in")});
  CHECK(r.out == "");
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  // Hard links once: the second name is a link entry.
  std::string listing = shell("tar -tvf " + quoted(a) + " | grep -c ' link to '");
  CHECK(listing == "1\n");
  fs::create_directory(local / "gnu");
  shell("tar -xf " + quoted(a) + " -C " + quoted((local / "gnu").string()));
  check_tree(exp / "in", local / "gnu");
  fs::create_directory(local / "bsd");
  shell("bsdtar -xpf " + quoted(a) + " -C " + quoted((local / "bsd").string()));
  check_tree(exp / "in", local / "bsd");
}

TEST_CASE("vnfs tar -x over vnfsd of archives by GNU tar and bsdtar") {
  temp_dir exp, local;
  make_tree(local / "in");
  vnfsd_process server(exp.path());
  const std::string in = quoted((local / "in").string());
  shell("tar --format=pax -cf " + quoted((local / "gnu.tar").string()) + " -C " + in + " t");
  shell("bsdtar --format=pax -cf " + quoted((local / "bsd.tar").string()) + " -C " + in + " t");
  CHECK_FALSE(vnfs_cli({"tar", "-x", "-f", (local / "gnu.tar").string(), url(server, "gnu")}).code);
  check_tree(local / "in", exp / "gnu");
  CHECK_FALSE(vnfs_cli({"tar", "-x", "-f", (local / "bsd.tar").string(), url(server, "bsd/deeper")}).code);
  check_tree(local / "in", exp / "bsd/deeper");
  // Again onto what is there: directories merged, files overwritten, links replaced.
  CHECK_FALSE(vnfs_cli({"tar", "-x", "-f", (local / "gnu.tar").string(), url(server, "gnu")}).code);
  check_tree(local / "in", exp / "gnu");
}

TEST_CASE("vnfs tar: compressed round trips, standard input and output") {
  temp_dir exp, local;
  make_tree(exp / "in");
  vnfsd_process server(exp.path());
  for (std::string opt : {"-z", "-J", "--zstd"}) {
    INFO(opt);
    const std::string a = (local / ("a" + opt)).string();
    REQUIRE(vnfs_cli({"tar", "-c", opt, "-f", a, url(server, "in")}).code == 0);
    std::string expect = opt == "-z" ? "gzip" : opt == "-J" ? "XZ" : "Zstandard";
    CHECK(shell("file -b " + quoted(a) + " | cut -d' ' -f1").find(expect) != std::string::npos);
    fs::create_directories(local / ("bsd" + opt));
    shell("bsdtar -xpf " + quoted(a) + " -C " + quoted((local / ("bsd" + opt)).string()));
    check_tree(exp / "in", local / ("bsd" + opt));
    REQUIRE(vnfs_cli({"tar", "-x", "-f", a, url(server, "out" + opt)}).code == 0);
    check_tree(exp / "in", exp / ("out" + opt));
  }
  // '-' both ways, through a pipe.
  const std::string vnfs = quoted(VNFS_CLI_PATH);
  shell(vnfs + " tar -c -f - " + quoted(url(server, "in")) + " | " + vnfs + " tar -x -f - " +
        quoted(url(server, "piped")));
  check_tree(exp / "in", exp / "piped");
}

TEST_CASE("vnfs tar over local files (file://)") {
  temp_dir local;
  make_tree(local / "in");
  const std::string a = (local / "a.tar").string();
  REQUIRE(vnfs_cli({"tar", "-c", "-f", a, (local / "in").string()}).code == 0);
  fs::create_directory(local / "gnu");
  shell("tar -xf " + quoted(a) + " -C " + quoted((local / "gnu").string()));
  check_tree(local / "in", local / "gnu");
  shell("bsdtar --format=pax -cf " + quoted((local / "bsd.tar").string()) + " -C " +
        quoted((local / "in").string()) + " t");
  REQUIRE(vnfs_cli({"tar", "-x", "-f", (local / "bsd.tar").string(), "file://" + (local / "out").string()}).code == 0);
  check_tree(local / "in", local / "out");
}

TEST_CASE("vnfs tar -x of a damaged archive stops with a message and leaves whole files") {
  temp_dir exp, local;
  vnfsd_process server(exp.path());
  fs::create_directory(local / "src");
  shell("set -e; cd " + quoted((local / "src").string()) +
        "; printf 'first' > a; head -c 3000000 /dev/urandom > big; printf 'third' > c");
  const std::string whole = (local / "whole.tar").string(), cut = (local / "cut.tar").string();
  shell("tar -cf " + quoted(whole) + " -C " + quoted((local / "src").string()) + " a big c");
  shell("head -c 2000000 " + quoted(whole) + " > " + quoted(cut));  // in the middle of big
  run_result r = vnfs_cli({"tar", "-x", "-f", cut, url(server, "x")});
  CHECK(r.out == "");
  CHECK(r.err == "vnfs: tar: " + url(server, "x") + ": archive damaged in 'big': Truncated tar archive\n");
  CHECK(r.code == 1);
  CHECK(read_file(exp / "x/a") == "first");
  CHECK_FALSE(fs::exists(exp / "x/big"));
  CHECK_FALSE(fs::exists(exp / "x/c"));
  // Cut in the header after a (tests/adapters/archive cuts a file that spans batches).
  shell("head -c 700 " + quoted(whole) + " > " + quoted(cut));
  r = vnfs_cli({"tar", "-x", "-f", cut, url(server, "y")});
  CHECK(r.err == "vnfs: tar: " + url(server, "y") + ": archive damaged after 'a': Truncated input file (needed 512 bytes, only 188 available)\n");
  CHECK(r.code == 1);
  CHECK(read_file(exp / "y/a") == "first");
  r = vnfs_cli({"tar", "-c", "-f", (local / "o.tar").string(), url(server, "nothing")});
  CHECK(r.err == "vnfs: tar: " + url(server, "nothing") + ": cannot stat: No such file or directory\n");
  CHECK(r.code == 1);
  r = vnfs_cli({"tar", "-c", "-f", (local / "o.tar").string(), url(server, "x/a")});
  CHECK(r.err == "vnfs: tar: " + url(server, "x/a") + ": not a directory\n");
  CHECK(r.code == 1);
  r = vnfs_cli({"tar", "-x", "-f", (local / "missing.tar").string(), url(server, "z")});
  CHECK(r.err == "vnfs: tar: cannot open '" + (local / "missing.tar").string() + "': No such file or directory\n");
  CHECK(r.code == 1);
}

TEST_CASE("vnfs tar -x: the COMPOUNDs of a small extraction") {
  temp_dir exp, local;
  vnfsd_process server(exp.path());
  fs::create_directories(local / "src/d/e");
  shell("set -e; cd " + quoted((local / "src").string()) +
        "; printf 1 > d/f1; printf 22 > d/e/f2; : > zero; ln -s d/f1 s; ln d/f1 h");
  const std::string a = (local / "a.tar").string();
  shell("tar -cf " + quoted(a) + " -C " + quoted((local / "src").string()) + " d zero s h");
  run_result r = vnfs_cli({"--stats", "tar", "-x", "-f", a, url(server, "x")});
  REQUIRE(r.code == 0);
  // 2 for the session's set-up (EXCHANGE_ID, CREATE_SESSION; RECLAIM_COMPLETE and the
  // lease time ride on the first COMPOUND);
  // ensure_directory of x (a vgetattrs and a vmkdir), then one batch: vmkdir (d, d/e),
  // vwrite (d/f1, d/e/f2, zero), vsymlink (s), vhardlink (h); then one vsetattrs, and run
  // by root one more before it for the owners.
  const bool root = ::geteuid() == 0;
  CHECK(compounds_of(r.out) == 2 + 2 + 5 + (root ? 1 : 0));
  shell("diff -r --no-dereference " + quoted((local / "src").string()) + " " + quoted((exp / "x").string()));
  // The same with every item as the scalar calls, which cost what a cold-cache kernel client
  // sends: a walk of k path components is k LOOKUP COMPOUNDs (the root alone is one PUTFH,
  // GETATTR), an operation in a directory walks to it first and then takes one COMPOUND,
  // an open file takes one more per WRITE (none for an empty file) and one for its CLOSE.
  //   session set-up                                                    2
  //   ensure_directory: stat y (1); mkdir y (root walk 1 + CREATE 1)   3
  //   vmkdir y/d (1 + 1), y/d/e (2 + 1)                                 5
  //   vwrite y/d/f1 (walk 2 + OPEN + WRITE + CLOSE = 5),
  //          y/d/e/f2 (3 + 3 = 6), y/zero (1 + OPEN + CLOSE = 3)       14
  //   vsymlink y/s (1 + 1)                                              2
  //   vhardlink y/h to y/d/f1 (walk 3 + walk y 1 + LINK 1)              5
  //   vsetattrs of d, d/f1, d/e, d/e/f2, zero, s (walk + SETATTR:
  //          3 + 4 + 4 + 5 + 3 + 3)                                    22
  // and run by root, the owners in a second vsetattrs of the same items: 22 more.
  r = vnfs_cli({"--scalar", "--stats", "tar", "-x", "-f", a, url(server, "y")});
  REQUIRE(r.code == 0);
  CHECK(compounds_of(r.out) == 2 + 3 + 5 + 14 + 2 + 5 + 22 + (root ? 22 : 0));
  shell("diff -r --no-dereference " + quoted((local / "src").string()) + " " + quoted((exp / "x").string()));
}

TEST_CASE("vnfs tar: command line errors and help") {
  run_result r = vnfs_cli({"tar", "-c", "-x", "-f", "a", "b"});
  CHECK(r.err == "vnfs: tar: give exactly one of -c and -x\nTry 'vnfs tar --help'.\n");
  CHECK(r.code == 2);
  r = vnfs_cli({"tar", "-c", "a", "b"});
  CHECK(r.err == "vnfs: tar: -f ARCHIVE is required\nTry 'vnfs tar --help'.\n");
  CHECK(r.code == 2);
  r = vnfs_cli({"tar", "-x", "--zstd", "-f", "a", "b"});
  CHECK(r.err == "vnfs: tar: -z, -J and --zstd go with -c (-x detects the compression)\nTry 'vnfs tar --help'.\n");
  CHECK(r.code == 2);
  r = vnfs_cli({"tar", "-c", "-Z", "-f", "a", "b"});  // --zstd has no short form
  CHECK(r.err == "vnfs: tar: invalid option -- 'Z'\nTry 'vnfs tar --help'.\n");
  CHECK(r.code == 2);
  r = vnfs_cli({"tar", "--help"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("Usage: vnfs [--stats] [--scalar] tar -c [-z|-J|--zstd] -f ARCHIVE LOCATION", 0) == 0);
}

TEST_CASE("unmodified bsdtar -x through vnfs with the preload library") {
  temp_dir exp, local;
  make_tree(local / "in");
  vnfsd_process server(exp.path());
  const std::string a = (local / "a.tar").string();
  shell("bsdtar --format=pax -cf " + quoted(a) + " -C " + quoted((local / "in").string()) + " t");
  // The child runs `vnfs --stats tar -x -f - URL`: its JSON line lands on bsdtar's stdout.
  write_file_text(local / "vnfs-stats", std::string("#!/bin/sh\nexec ") + VNFS_CLI_PATH + " --stats \"$@\"\n");
  shell("chmod +x " + quoted((local / "vnfs-stats").string()));
  fs::create_directories(local / "mnt/sub");
  fs::create_directories(local / "plain");
  const std::string env = "VNFS_CLI=" + quoted((local / "vnfs-stats").string()) + " VNFS_MAP=" +
                          quoted((local / "mnt").string() + "=" + url(server, "export_dir")) +
                          " LD_PRELOAD=" + quoted(VNFS_PRELOAD_PATH) + " ";
  std::string out = shell(env + "bsdtar -xf " + quoted(a) + " -C " + quoted((local / "mnt/sub").string()));
  check_tree(local / "in", exp / "export_dir/sub");
  CHECK(fs::is_empty(local / "mnt/sub"));  // nothing went to the local disk
  // The same COMPOUNDs as vnfs tar -x of the archive: the entries went through vnfs.
  run_result direct = vnfs_cli({"--stats", "tar", "-x", "-f", a, url(server, "direct")});
  REQUIRE(direct.code == 0);
  CHECK(compounds_of(out) == compounds_of(direct.out));
  // Outside the mapping bsdtar extracts to disk as ever.
  shell(env + "bsdtar -xpf " + quoted(a) + " -C " + quoted((local / "plain").string()));
  check_tree(local / "in", local / "plain");
  // A damaged archive: bsdtar fails, the entries before the damage are in, the cut one is not.
  fs::create_directories(local / "mnt/cut");
  shell("cd " + quoted((local / "in").string()) + " && printf first > t0 && head -c 3000000 /dev/urandom > t1 && tar -cf " +
        quoted((local / "c.tar").string()) + " t0 t1 && head -c 2000000 " + quoted((local / "c.tar").string()) +
        " > " + quoted((local / "cut.tar").string()));
  run_result r = run_program("/bin/sh", {"-c", env + "bsdtar -xf " + quoted((local / "cut.tar").string()) + " -C " +
                                                   quoted((local / "mnt/cut").string())});
  CHECK(r.code == 1);
  CHECK(r.err.find("vnfs: tar: " + url(server, "export_dir/cut") + ": archive damaged in 't1': Truncated tar archive\n") !=
        std::string::npos);
  CHECK(read_file(exp / "export_dir/cut/t0") == "first");
  CHECK_FALSE(fs::exists(exp / "export_dir/cut/t1"));
}

TEST_CASE("vnfs tar shows a progress bar on a terminal only") {
  temp_dir exp, local;
  make_tree(exp / "in");
  vnfsd_process server(exp.path());
  const std::string vnfs = quoted(VNFS_CLI_PATH), a = quoted((local / "a.tar").string());
  auto on_terminal = [](const std::string& command) {
    return shell("VNFS_PROGRESS_DELAY_MS=0 script -qec " + quoted(command) + " /dev/null");
  };
  std::string screen = on_terminal(vnfs + " tar -c -f " + a + " " + quoted(url(server, "in")));
  INFO(screen);
  CHECK(screen.rfind("\rarchiving ", 0) == 0);
  // 19 entries (6 directories, 8 files, 4 symlinks, 1 hard link) and their data.
  CHECK(screen.find("\rarchiving 19/19 files, 3.0 MiB/3.0 MiB, ") != std::string::npos);
  CHECK(screen.substr(screen.size() - 4) == "\r\033[K");
  screen = on_terminal(vnfs + " tar -x -f " + a + " " + quoted(url(server, "out")));
  CHECK(screen.find("\rextracting 19/19 files, 3.0 MiB/3.0 MiB, ") != std::string::npos);
  CHECK(screen.substr(screen.size() - 4) == "\r\033[K");
  check_tree(exp / "in", exp / "out");
  run_result r = vnfs_cli({"tar", "-x", "-f", (local / "a.tar").string(), url(server, "out2")});
  CHECK(r.out == "");
  CHECK(r.err == "");
  CHECK(r.code == 0);
}

TEST_CASE("vnfs tar against NFS-Ganesha: GNU tar archive in, vnfs archive out to bsdtar") {
  ganesha_process ganesha;
  temp_dir local;
  make_tree(local / "in");
  // Ganesha 4.3 keeps a symlink's times whatever SETATTR says (nfs-ganesha/nfs-ganesha#983):
  // symlink times are compared against vnfsd and file:// only.
  const std::string base = "nfs://127.0.0.1:" + std::to_string(ganesha.port()) + ganesha.pseudo_path() + "/";
  const std::string a = (local / "gnu.tar").string();
  shell("tar --format=pax -cf " + quoted(a) + " -C " + quoted((local / "in").string()) + " t");
  run_result r = vnfs_cli({"tar", "-x", "-f", a, base + "x"});
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  check_tree(local / "in", ganesha.export_dir() / "x", false);
  const std::string b = (local / "vnfs.tar").string();
  REQUIRE(vnfs_cli({"tar", "-c", "-J", "-f", b, base + "x"}).code == 0);
  fs::create_directory(local / "bsd");
  shell("bsdtar -xpf " + quoted(b) + " -C " + quoted((local / "bsd").string()));
  check_tree(local / "in", local / "bsd", false);
}

TEST_CASE("vnfs tar -x run by root restores numeric owners, also of symlinks") {
  if (::geteuid() != 0) {
    WARN("not root: owners are not restored, nothing to check");
    return;
  }
  temp_dir exp, local;
  vnfsd_process server(exp.path());
  fs::create_directories(local / "src/d");
  shell("set -e; cd " + quoted((local / "src").string()) +
        "; printf x > d/f; ln -s f d/s; chown -h 1234:2345 d/f d/s; chown 4321:5432 d");
  const std::string a = (local / "a.tar").string();
  shell("tar --format=pax -cf " + quoted(a) + " -C " + quoted((local / "src").string()) + " d");
  REQUIRE(vnfs_cli({"tar", "-x", "-f", a, url(server, "x")}).code == 0);
  REQUIRE(vnfs_cli({"tar", "-x", "-f", a, (local / "y").string()}).code == 0);
  for (const fs::path& root : {exp / "x", local / "y"}) {
    INFO(root);
    CHECK(lstat_of(root / "d").st_uid == 4321);
    CHECK(lstat_of(root / "d").st_gid == 5432);
    CHECK(lstat_of(root / "d/f").st_uid == 1234);
    CHECK(lstat_of(root / "d/f").st_gid == 2345);
    CHECK(lstat_of(root / "d/s").st_uid == 1234);
    CHECK(lstat_of(root / "d/s").st_gid == 2345);
  }
}

TEST_CASE("vnfs tar -x names the entry that cannot be written and the reason") {
  temp_dir exp, local;
  vnfsd_process server(exp.path());
  fs::create_directories(local / "src/d");
  shell("printf x > " + quoted((local / "src/d/f").string()));
  const std::string a = (local / "a.tar").string();
  shell("tar -cf " + quoted(a) + " -C " + quoted((local / "src").string()) + " d");
  fs::create_directories(exp / "x/d/f");  // a directory where the archive has a file
  run_result r = vnfs_cli({"tar", "-x", "-f", a, url(server, "x")});
  CHECK(r.out == "");
  CHECK(r.err == "vnfs: tar: " + url(server, "x") + ": d/f: cannot write: Is a directory\n");
  CHECK(r.code == 1);
}

TEST_CASE("vnfs tar over RPC-over-RDMA (nfs+rdma://, cma provider)") {
  temp_dir exp, local;
  make_tree(local / "in");
  vnfsd_process server(exp.path(), {"--rdma", "cma:127.0.0.1:0"});
  const std::string base = "nfs+rdma://127.0.0.1:" + std::to_string(server.rdma_port()) + "/";
  const std::string a = (local / "gnu.tar").string();
  shell("tar --format=pax -cf " + quoted(a) + " -C " + quoted((local / "in").string()) + " t");
  REQUIRE(vnfs_cli({"tar", "-x", "-f", a, base + "x?provider=cma"}).code == 0);
  check_tree(local / "in", exp / "x");
  const std::string b = (local / "vnfs.tar").string();
  REQUIRE(vnfs_cli({"tar", "-c", "-f", b, base + "x?provider=cma"}).code == 0);
  fs::create_directory(local / "bsd");
  shell("bsdtar -xpf " + quoted(b) + " -C " + quoted((local / "bsd").string()));
  check_tree(local / "in", local / "bsd");
}

TEST_CASE("vnfs tar -x --atomic and cp -r --atomic: the tree appears whole or not at all") {
  temp_dir exp, local;
  make_tree(local / "in");
  vnfsd_process server(exp.path());
  const std::string gnu = (local / "gnu.tar").string();
  shell("tar --format=pax -cf " + quoted(gnu) + " -C " + quoted((local / "in").string()) + " t");
  run_result r = vnfs_cli({"tar", "-x", "--atomic", "-f", gnu, url(server, "whole")});
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  check_tree(local / "in", exp / "whole");
  r = vnfs_cli({"cp", "-r", "--atomic", (local / "in").string(), url(server, "copied")});
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  CHECK(tree_signature(exp / "copied/t") == tree_signature(local / "in/t"));  // cp copies hard links as files
  // On one server: the reads of SRC run inside the transaction too.
  r = vnfs_cli({"cp", "-r", "--atomic", url(server, "copied/t"), url(server, "again")});
  CHECK(r.err == "");
  REQUIRE(r.code == 0);
  CHECK(tree_signature(exp / "again") == tree_signature(local / "in/t"));

  // A damaged archive: the entries before the damage were written inside the transaction,
  // which is rolled back: nothing is left, not even the destination directory.
  fs::create_directory(local / "src");
  shell("set -e; cd " + quoted((local / "src").string()) +
        "; printf 'first' > a; head -c 3000000 /dev/urandom > big; printf 'third' > c");
  const std::string whole = (local / "w.tar").string(), cut = (local / "cut.tar").string();
  shell("tar -cf " + quoted(whole) + " -C " + quoted((local / "src").string()) + " a big c");
  shell("head -c 2000000 " + quoted(whole) + " > " + quoted(cut));
  r = vnfs_cli({"tar", "-x", "--atomic", "-f", cut, url(server, "x")});
  CHECK(r.err == "vnfs: tar: " + url(server, "x") + ": archive damaged in 'big': Truncated tar archive\n");
  CHECK(r.code == 1);
  CHECK_FALSE(fs::exists(exp / "x"));

  r = vnfs_cli({"tar", "-c", "--atomic", "-f", cut, url(server, "whole")});
  CHECK(r.err.find("tar: --atomic goes with -x") != std::string::npos);
  CHECK(r.code == 2);
  r = vnfs_cli({"tar", "--help"});
  CHECK(r.out.find("--atomic with -x: extract as one transaction") != std::string::npos);
  r = vnfs_cli({"cp", "--help"});
  CHECK(r.out.find("--atomic   make the copy one transaction") != std::string::npos);
}

TEST_CASE("vnfs tar -x --atomic and cp -r --atomic against NFS-Ganesha: refused before anything changes") {
  ganesha_process ganesha;
  temp_dir local;
  make_tree(local / "in");
  const std::string base = "nfs://127.0.0.1:" + std::to_string(ganesha.port()) + ganesha.pseudo_path() + "/";
  const std::string a = (local / "gnu.tar").string();
  shell("tar --format=pax -cf " + quoted(a) + " -C " + quoted((local / "in").string()) + " t");
  run_result r = vnfs_cli({"tar", "-x", "--atomic", "-f", a, base + "x"});
  CHECK(r.err == "vnfs: tar: --atomic: the server does not support vnfs transactions; nothing was changed\n");
  CHECK(r.code == 1);
  CHECK_FALSE(fs::exists(ganesha.export_dir() / "x"));
  r = vnfs_cli({"cp", "-r", "--atomic", (local / "in").string(), base + "y"});
  CHECK(r.err == "vnfs: cp: --atomic: the server does not support vnfs transactions; nothing was changed\n");
  CHECK(r.code == 1);
  CHECK_FALSE(fs::exists(ganesha.export_dir() / "y"));
}
