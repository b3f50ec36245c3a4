// Test helpers for the vnfs command line.
#include "vnfs_cli_support.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <sstream>

#include "vnfs/test/child_process.hpp"
#include "vnfs/test/temp_dir.hpp"

namespace vnfs::test {

namespace {
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
}  // namespace

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

run_result run_program(const std::filesystem::path& program, const std::vector<std::string>& args) {
  temp_dir io("vnfs-cli-io");
  std::vector<std::string> sh_args{"-c", "exec \"$0\" \"$@\" </dev/null >\"$VNFS_TEST_OUT\" 2>\"$VNFS_TEST_ERR\"",
                                   program.string()};
  sh_args.insert(sh_args.end(), args.begin(), args.end());
  spawn_options o;
  o.capture_stdout = false;
  o.env = {{"VNFS_TEST_OUT", (io / "out").string()}, {"VNFS_TEST_ERR", (io / "err").string()}};
  child_process p("/bin/sh", sh_args, o);
  auto st = p.wait_for(std::chrono::minutes(2));
  if (!st) {
    p.terminate();
    FAIL("timed out: " << program.string());
  }
  return {slurp(io / "out"), slurp(io / "err"), st->exited() ? st->code() : -1};
}

run_result vnfs_cli(const std::vector<std::string>& args) { return run_program(VNFS_CLI_PATH, args); }

std::string shell(const std::string& script) {
  run_result r = run_program("/bin/sh", {"-c", script});
  INFO(script << "\n" << r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

void make_sample_tree(const std::filesystem::path& dir) {
  shell("set -e; cd " + quoted(dir.string()) + R"(
    mkdir -p a/b/c empty_dir private
    : > zero
    printf 'hello\n' > hello.txt
    head -c 3145745 /dev/urandom > big.bin
    printf 'secret' > private/key
    printf 'nested' > a/b/c/deep.txt
    printf 'x' > a/one
    printf '.' > .hidden
    ln -s hello.txt link_to_file
    ln -s a/b link_to_dir
    ln -s ../../nowhere a/b/dangling
    ln -s /absolute/looking a/abs
    chmod 0600 private/key
    chmod 0640 hello.txt
    chmod 0755 big.bin
    chmod 04755 a/one
    chmod 0700 private
    chmod 0750 a/b
    touch -h -d '2020-01-02 03:04:05.123456789' hello.txt link_to_file a/b/dangling
    touch -d '2020-06-30 23:59:59.5' big.bin zero a/b/c/deep.txt
    touch -d '2 days ago' a/one private/key
    touch -d '2020-02-29 12:00:00' a/b/c a/b empty_dir private
    touch -d '2021-03-04 05:06:07.000000001' a .
  )");
}

std::string tree_signature(const std::filesystem::path& dir, bool symlink_times) {
  return shell("cd " + quoted(dir.string()) + " && find . \\( -type d -printf '%p d %m %T@\\n' \\) -o \\( -type l -printf '%p l %m " +
               (symlink_times ? "%T@ " : "") + "%l\\n' \\)"
               " -o \\( -type f -printf '%p f %m %s %T@\\n' \\) | LC_ALL=C sort");
}

}  // namespace vnfs::test
