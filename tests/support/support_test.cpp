#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "vnfs/test/child_process.hpp"
#include "vnfs/test/free_port.hpp"
#include "vnfs/test/ganesha_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

child_process sh(const std::string& script, spawn_options options = {}) {
  return child_process("/bin/sh", {"-c", script}, std::move(options));
}

// Gone = no such pid, or a zombie that nobody has reaped yet (in a container, pid 1 may
// reap orphans late or never): either way it runs no more.
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_script(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all);
}

// Sets an environment variable for one scope (tests run one at a time).
struct scoped_env {
  std::string name;
  std::optional<std::string> old;
  scoped_env(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~scoped_env() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

}  // namespace

// ---- temp_dir --------------------------------------------------------------------------

TEST_CASE("temp_dir creates a private directory and removes it with its contents") {
  fs::path kept;
  {
    temp_dir d("vnfs-support");
    kept = d.path();
    REQUIRE(fs::is_directory(kept));
    CHECK(kept.is_absolute());
    CHECK(kept.filename().string().starts_with("vnfs-support-"));
    CHECK((fs::status(kept).permissions() & fs::perms::all) == fs::perms::owner_all);
    fs::create_directories(d / "a" / "b");
    std::ofstream(d / "a" / "b" / "f") << "x";
    fs::permissions(d / "a", fs::perms::owner_read | fs::perms::owner_exec);  // read-only dir
  }
  CHECK_FALSE(fs::exists(kept));
}

TEST_CASE("temp_dir honours TMPDIR and moves ownership") {
  temp_dir parent;
  scoped_env tmp("TMPDIR", parent.path().string());
  temp_dir a;
  CHECK(a.path().parent_path() == parent.path());
  fs::path p = a.path();
  {
    temp_dir b(std::move(a));
    CHECK(a.path().empty());
    CHECK(b.path() == p);
    CHECK(fs::is_directory(p));
  }
  CHECK_FALSE(fs::exists(p));
}

// ---- free_port / tcp_port_open ---------------------------------------------------------

TEST_CASE("free_port returns a loopback port that can be bound and probed") {
  std::uint16_t port = free_port();
  REQUIRE(port != 0);
  CHECK_FALSE(tcp_port_open("127.0.0.1", port));  // nobody listens on it

  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(s, 4) == 0);
  CHECK(tcp_port_open("127.0.0.1", port));
  ::close(s);
  CHECK_THROWS_AS(tcp_port_open("localhost", port), std::invalid_argument);
}

// ---- child_process ---------------------------------------------------------------------

TEST_CASE("child_process reads lines, then reports EOF and the exit code") {
  auto c = sh("echo one; echo; echo two; printf three; exit 3");
  CHECK(c.pid() > 0);
  CHECK(c.read_line(10s) == "one");
  CHECK(c.read_line(10s) == "");
  CHECK(c.read_line(10s) == "two");
  CHECK(c.read_line(10s) == "three");  // the unterminated last line
  try {
    c.read_line(10s);
    FAIL("read_line past EOF must throw");
  } catch (const process_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("closed its stdout"));
    CHECK_THAT(e.what(), Catch::Contains("exited with code 3"));
  }
  exit_status st = c.wait();
  CHECK(st.exited());
  CHECK(st.code() == 3);
  CHECK_FALSE(st.success());
  CHECK(st.describe() == "exited with code 3");
  CHECK_FALSE(c.running());
  CHECK(c.wait().code() == 3);  // idempotent
}

TEST_CASE("child_process passes arguments verbatim and adds environment variables") {
  scoped_env inherited("VNFS_SUPPORT_INHERITED", "from-parent");
  spawn_options o;
  o.env = {{"VNFS_SUPPORT_ADDED", "a b"}, {"VNFS_SUPPORT_INHERITED", "overridden"}};
  child_process c("/bin/sh", {"-c", "printf '%s|%s|%s\\n' \"$0\" \"$1\" \"$VNFS_SUPPORT_ADDED\"; "
                                    "echo \"$VNFS_SUPPORT_INHERITED\"; echo \"$PATH\"",
                              "arg zero", "arg;1"},
                  o);
  CHECK(c.read_line(10s) == "arg zero|arg;1|a b");
  CHECK(c.read_line(10s) == "overridden");
  CHECK(c.read_line(10s) == std::getenv("PATH"));
  CHECK(c.wait().success());
}

TEST_CASE("child_process read_line times out on a silent child instead of hanging") {
  auto c = sh("sleep 30");
  try {
    c.read_line(200ms);
    FAIL("read_line must time out");
  } catch (const process_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("timed out after 200 ms"));
  }
  CHECK(c.running());
  exit_status st = c.terminate();
  CHECK(st.signaled());
  CHECK(st.signal() == SIGTERM);
}

TEST_CASE("child_process terminate stops the child and the helpers it started") {
  auto c = sh("sleep 60 & echo $!; wait");
  pid_t helper = std::stoi(c.read_line(10s));
  pid_t pid = c.pid();
  REQUIRE_FALSE(process_gone(helper));
  exit_status st = c.terminate(5s);
  CHECK(st.signaled());
  CHECK(st.signal() == SIGTERM);
  CHECK(process_gone(pid));
  CHECK(process_gone(helper));
  CHECK(c.terminate().signal() == SIGTERM);  // already stopped: same status
}

TEST_CASE("child_process terminate escalates to SIGKILL when SIGTERM is ignored") {
  auto c = sh("trap '' TERM; echo ready; while :; do sleep 1; done");
  REQUIRE(c.read_line(10s) == "ready");
  exit_status st = c.terminate(300ms);
  CHECK(st.signaled());
  CHECK(st.signal() == SIGKILL);
  CHECK(st.describe().starts_with("killed by signal 9"));
}

TEST_CASE("child_process destructor stops a running child") {
  pid_t pid = 0;
  {
    auto c = sh("echo $$; exec sleep 60");
    pid = std::stoi(c.read_line(10s));
    CHECK(pid == c.pid());
  }
  CHECK(process_gone(pid));
}

TEST_CASE("child_process drains a chatty child so it never blocks on a full pipe") {
  // About 190 KB: more than a pipe holds. The child must be able to exit before anyone reads.
  auto c = sh("i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done; echo end");
  CHECK(c.wait().success());
  for (int i = 0; i < 20000; ++i) {
    std::string line = c.read_line(10s);
    if (line != "line" + std::to_string(i)) FAIL("line " << i << " is \"" << line << "\"");
  }
  CHECK(c.read_line(10s) == "end");
}

TEST_CASE("child_process stderr: merged into the pipe or into an output file") {
  spawn_options merged;
  merged.merge_stderr = true;
  auto c = sh("echo out; echo err >&2", merged);
  CHECK(c.read_line(10s) == "out");
  CHECK(c.read_line(10s) == "err");
  CHECK(c.wait().success());

  temp_dir d;
  spawn_options to_file;
  to_file.capture_stdout = false;
  to_file.merge_stderr = true;
  to_file.output_file = d / "out.txt";
  to_file.working_dir = d.path();
  auto f = sh("echo out; echo err >&2; pwd", to_file);
  CHECK(f.wait().success());
  CHECK(read_file(d / "out.txt") == "out\nerr\n" + d.path().string() + "\n");
  CHECK_THROWS_AS(f.read_line(1s), process_error);
}

TEST_CASE("child_process reports a program that cannot be started") {
  try {
    child_process c("/nonexistent/vnfs-no-such-program", {});
    FAIL("spawning a missing program must throw");
  } catch (const process_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("cannot start /nonexistent/vnfs-no-such-program"));
    CHECK_THAT(e.what(), Catch::Contains("No such file or directory"));
  }
}

// ---- vnfsd_process (against a stand-in script until vnfsd exists) ----------------------

namespace {
// Prints what vnfsd prints: a ready line naming the port it was asked for (or 45678 for
// port 0), after one unrelated line; records its arguments.
const char* fake_vnfsd = R"(#!/bin/sh
echo "$@" >> "$(dirname "$0")/args.log"
while [ $# -gt 0 ]; do
  case "$1" in --listen) listen="$2"; shift;; esac
  shift
done
port="${listen##*:}"
[ "$port" = 0 ] && port=45678
echo "fake vnfsd starting"
echo "vnfsd listening on tcp://127.0.0.1:$port"
exec sleep 60
)";
}  // namespace

TEST_CASE("vnfsd_process parses the ready line and restarts on the same port") {
  temp_dir d;
  write_script(d / "vnfsd", fake_vnfsd);
  fs::create_directory(d / "export");
  scoped_env bin("VNFSD_BIN", (d / "vnfsd").string());
  CHECK(vnfsd_process::binary() == d / "vnfsd");
  CHECK(vnfsd_process::available());

  vnfsd_process v(d / "export", {"--flag", "x"});
  CHECK(v.host() == "127.0.0.1");
  CHECK(v.port() == 45678);
  CHECK(v.running());
  pid_t first = v.pid();
  CHECK(first > 0);

  v.restart();
  CHECK(v.port() == 45678);
  CHECK(v.pid() != first);
  CHECK(process_gone(first));

  exit_status st = v.stop();
  CHECK(st.signal() == SIGTERM);
  CHECK(v.pid() == -1);
  CHECK_THROWS_AS(v.stop(), process_error);
  std::string export_arg = (d / "export").string();
  CHECK(read_file(d / "args.log") == "--export " + export_arg + " --listen 127.0.0.1:0 --flag x\n" +
                                         "--export " + export_arg + " --listen 127.0.0.1:45678 --flag x\n");
}

TEST_CASE("vnfsd_process fails clearly when the server exits or stays silent") {
  temp_dir d;
  write_script(d / "dies", "#!/bin/sh\necho 'bad export' >&2\nexit 2\n");
  write_script(d / "silent", "#!/bin/sh\nexec sleep 60\n");
  write_script(d / "garbled", "#!/bin/sh\necho 'vnfsd listening on tcp://127.0.0.1:notaport'\nexec sleep 60\n");
  {
    scoped_env bin("VNFSD_BIN", (d / "no-such-vnfsd").string());
    CHECK_FALSE(vnfsd_process::available());
    CHECK_THROWS_WITH(vnfsd_process(d.path()), Catch::Contains("cannot start"));
  }
  {
    scoped_env bin("VNFSD_BIN", (d / "dies").string());
    try {
      vnfsd_process v(d.path());
      FAIL("must throw");
    } catch (const process_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("exited before it was ready"));
      CHECK_THAT(e.what(), Catch::Contains("exited with code 2"));
    }
  }
  {
    scoped_env bin("VNFSD_BIN", (d / "silent").string());
    vnfsd_process::options o;
    o.export_dir = d.path();
    o.ready_timeout = 300ms;
    try {
      vnfsd_process v(o);
      FAIL("must throw");
    } catch (const process_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("timed out"));
    }
  }
  {
    scoped_env bin("VNFSD_BIN", (d / "garbled").string());
    CHECK_THROWS_WITH(vnfsd_process(d.path()), Catch::Contains("malformed ready line"));
  }
}

TEST_CASE("vnfsd_process runs the real vnfsd") {
  if (!vnfsd_process::available()) {
    WARN("no vnfsd in this build yet: real-vnfsd checks skipped");
    return;
  }
  temp_dir d;
  vnfsd_process v(d.path());
  CHECK(v.host() == "127.0.0.1");
  REQUIRE(v.port() != 0);
  CHECK(tcp_port_open(v.host(), v.port()));
  std::uint16_t port = v.port();
  v.restart();
  CHECK(v.port() == port);
  CHECK(tcp_port_open(v.host(), v.port()));
  pid_t pid = v.pid();
  v.stop();
  CHECK(process_gone(pid));
}

// ---- ganesha_process -------------------------------------------------------------------

namespace {
// One ONC RPC NULL call (RFC 5531) to NFS (program 100003) version 4, in one record;
// returns the 24-byte reply body, or throws.
std::vector<unsigned char> nfs_null_call(std::uint16_t port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  REQUIRE(::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval tv{10, 0};
  ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::array<std::uint32_t, 11> call = {
      0x80000000u | 40,  // record mark: last fragment, 40 bytes
      0x1234abcd,        // xid
      0,                 // CALL
      2,                 // RPC version
      100003, 4, 0,      // NFS v4, procedure NULL
      0, 0,              // credential AUTH_NONE, empty
      0, 0};             // verifier AUTH_NONE, empty
  std::array<std::uint32_t, 11> wire{};
  for (std::size_t i = 0; i < call.size(); ++i) wire[i] = htonl(call[i]);
  REQUIRE(::send(s, wire.data(), sizeof wire, 0) == static_cast<ssize_t>(sizeof wire));
  std::vector<unsigned char> reply;
  unsigned char buf[256];
  while (reply.size() < 28) {
    ssize_t n = ::recv(s, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.insert(reply.end(), buf, buf + n);
  }
  ::close(s);
  return reply;
}
}  // namespace

TEST_CASE("ganesha_process serves NFSv4 on loopback and stops by pid") {
  ganesha_process g;
  REQUIRE(g.running());
  CHECK(g.host() == "127.0.0.1");
  CHECK(g.port() != 0);
  CHECK(g.pseudo_path() == "/export");
  CHECK(fs::is_directory(g.export_dir()));
  CHECK(fs::is_empty(g.export_dir()));
  std::string conf = read_file(g.config_file());
  CHECK_THAT(conf, Catch::Contains("NFS_Port = " + std::to_string(g.port()) + ";"));
  CHECK_THAT(conf, Catch::Contains("Path = " + g.export_dir().string() + ";"));
  CHECK_THAT(conf, Catch::Contains("Pseudo = /export;"));
  CHECK_THAT(conf, Catch::Contains("Graceless = true;"));

  CHECK(tcp_port_open("127.0.0.1", g.port()));
  // A real NFS server answers: reply to our xid, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
  std::vector<unsigned char> reply = nfs_null_call(g.port());
  const std::vector<unsigned char> expected = {0x80, 0, 0, 24,           // last fragment, 24 bytes
                                               0x12, 0x34, 0xab, 0xcd,   // xid
                                               0, 0, 0, 1,               // REPLY
                                               0, 0, 0, 0,               // MSG_ACCEPTED
                                               0, 0, 0, 0, 0, 0, 0, 0,   // verifier AUTH_NONE
                                               0, 0, 0, 0};              // SUCCESS
  CHECK(reply == expected);

  pid_t pid = g.pid();
  exit_status st = g.stop();
  INFO(st.describe() << "\n" << g.log_tail());
  CHECK(st.success());
  CHECK(g.pid() == -1);
  CHECK_FALSE(g.running());
  CHECK(process_gone(pid));
  CHECK_FALSE(tcp_port_open("127.0.0.1", g.port()));
  CHECK(g.stop().raw == st.raw);  // idempotent
}

TEST_CASE("ganesha_process takes a custom pseudo path and rejects a relative one") {
  ganesha_process::options o;
  o.pseudo_path = "/vnfs/data";
  ganesha_process g(o);
  CHECK(g.pseudo_path() == "/vnfs/data");
  CHECK_THAT(read_file(g.config_file()), Catch::Contains("Pseudo = /vnfs/data;"));
  CHECK(tcp_port_open("127.0.0.1", g.port()));

  ganesha_process::options bad;
  bad.pseudo_path = "export";
  CHECK_THROWS_AS(ganesha_process(bad), process_error);
}
