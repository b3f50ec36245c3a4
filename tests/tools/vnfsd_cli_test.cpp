// The vnfsd command line: help, argument errors, the ready line, clean stop on signals.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "vnfs/test/child_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs::test;
using namespace std::chrono_literals;

namespace {

spawn_options merged() {
  spawn_options o;
  o.merge_stderr = true;
  return o;
}

/// All output lines of a short-lived vnfsd run, and how it ended.
std::pair<std::string, exit_status> run_to_end(std::vector<std::string> args) {
  child_process p(vnfsd_process::binary(), std::move(args), merged());
  std::string out;
  try {
    for (;;) out += p.read_line(10s) + "\n";
  } catch (const process_error&) {  // end of output
  }
  return {out, p.wait()};
}

}  // namespace

TEST_CASE("vnfsd --help describes the command line and exits 0") {
  auto [out, st] = run_to_end({"--help"});
  CHECK(st.success());
  CHECK(out.find("Usage: vnfsd --export DIR --listen HOST:PORT") != std::string::npos);
  for (const char* opt : {"--export", "--listen", "--threads", "--lease", "--root-squash", "--max-connections",
                          "--max-record", "--idle-timeout", "--max-requests-in-flight", "--rdma-max-connections",
                          "--rdma-max-credits", "--rdma-inline-size", "--rdma-idle-timeout", "--recovery-dir",
                          "--grace", "--no-grace"})
    CHECK(out.find(opt) != std::string::npos);
}

TEST_CASE("vnfsd refuses bad arguments with a message and exit code 2") {
  temp_dir dir;
  std::vector<std::vector<std::string>> bad = {
      {},
      {"--export", dir.path().string()},
      {"--export", "/nonexistent/vnfs", "--listen", "127.0.0.1:0"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:70000"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--threads", "0"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--lease", "0"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--max-record", "4096"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--idle-timeout", "100000"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--rdma-max-credits", "0"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--rdma-max-credits", "1025"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--rdma-inline-size", "1000"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--rdma-inline-size", "3000"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--rdma-inline-size", "263168"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--rdma-idle-timeout", "100000"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--grace", "0"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--grace", "5", "--no-grace"},
      {"--export", dir.path().string(), "--listen", "127.0.0.1:0", "--recovery-dir", "/proc/self/status"},
      {"--frobnicate"},
  };
  for (const auto& args : bad) {
    auto [out, st] = run_to_end(args);
    INFO(out);
    CHECK(st.exited());
    CHECK(st.code() == 2);
    CHECK(out.rfind("vnfsd: ", 0) == 0);
    CHECK(out.find("Try 'vnfsd --help'.") != std::string::npos);
  }
}

TEST_CASE("vnfsd prints exactly one ready line and stops cleanly on SIGTERM and SIGINT") {
  for (int sig : {SIGTERM, SIGINT}) {
    temp_dir dir;
    child_process p(vnfsd_process::binary(),
                    {"--export", dir.path().string(), "--listen", "127.0.0.1:0"});
    std::string line = p.read_line(10s);
    CHECK(std::regex_match(line, std::regex(R"(vnfsd listening on tcp://127\.0\.0\.1:[1-9][0-9]*)")));
    p.send_signal(sig);
    auto st = p.wait_for(10s);
    REQUIRE(st.has_value());
    CHECK(st->success());
  }
}

TEST_CASE("vnfsd reports a port in use") {
  temp_dir dir;
  vnfsd_process first(dir.path());
  auto [out, st] = run_to_end({"--export", dir.path().string(), "--listen",
                               "127.0.0.1:" + std::to_string(first.port())});
  CHECK(st.code() == 1);
  CHECK(out.find("vnfsd: ") == 0);
}

TEST_CASE("vnfsd raises its soft limit of open files to the hard limit") {
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
  if (before.rlim_max <= 256) {
    WARN("skipped: the hard limit of open files is too low to lower the soft one under it");
    return;
  }
  // vnfsd inherits this process's limits: a soft limit under the hard one, for the spawn only.
  rlimit low = before;
  low.rlim_cur = 256;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  temp_dir dir;
  std::optional<vnfsd_process> server;
  try {
    server.emplace(dir.path());
  } catch (...) {
    ::setrlimit(RLIMIT_NOFILE, &before);
    throw;
  }
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &before) == 0);
  // "Max open files            SOFT                 HARD                 files"
  std::ifstream limits("/proc/" + std::to_string(server->pid()) + "/limits");
  std::string line, soft, hard;
  while (std::getline(limits, line))
    if (line.starts_with("Max open files")) {
      std::istringstream(line.substr(std::string_view("Max open files").size())) >> soft >> hard;
      break;
    }
  INFO("limits line: " << line);
  const std::string want = before.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(before.rlim_max);
  CHECK(hard == want);
  CHECK(soft == want);
}

TEST_CASE("vnfsd starts with a descriptor table of 8,192 slots (or its limit of open files)") {
  // Grown before its threads exist: growing it later, with threads, waits for an RCU grace
  // period each time (main.cpp). /proc/PID/status's FDSize is the table's size.
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  const unsigned long want = std::min<unsigned long>(lim.rlim_max, 8192);
  temp_dir dir;
  vnfsd_process server(dir.path());
  std::ifstream status("/proc/" + std::to_string(server.pid()) + "/status");
  std::string line;
  unsigned long fdsize = 0;
  while (std::getline(status, line))
    if (line.starts_with("FDSize:")) fdsize = std::stoul(line.substr(7));
  CHECK(fdsize >= want);
}
