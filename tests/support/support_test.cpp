#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <thread>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

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
  // The group was signalled; the orphaned helper dies asynchronously (bounded wait).
  for (int i = 0; i < 500 && !process_gone(helper); ++i) std::this_thread::sleep_for(10ms);
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

TEST_CASE("a program ended by SIGTERM or SIGINT stops the children it started first") {
  // A program (here a fork of this test) starts a child, which leads a process group of its
  // own that the terminal's Ctrl-C does not reach, and is then signalled: its child must not
  // outlive it. The fork ends by itself within 30 s (alarm) if the signal never comes.
  for (const int sig : {SIGTERM, SIGINT}) {
    INFO("signal " << sig);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t program = ::fork();
    REQUIRE(program >= 0);
    if (program == 0) {
      ::close(fds[0]);
      ::alarm(30);
      ::signal(sig, SIG_DFL);  // not Catch2's handler, which would report the fork's end as a failure
      spawn_options o;
      o.capture_stdout = false;
      child_process c("/bin/sleep", {"60"}, o);
      const pid_t pid = c.pid();
      if (::write(fds[1], &pid, sizeof pid) != sizeof pid) ::_exit(3);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    pid_t child = 0;
    const bool got = ::read(fds[0], &child, sizeof child) == sizeof child;
    ::close(fds[0]);
    REQUIRE(got);
    REQUIRE_FALSE(process_gone(child));
    REQUIRE(::kill(program, sig) == 0);
    int st = 0;
    REQUIRE(::waitpid(program, &st, 0) == program);
    CHECK(WIFSIGNALED(st));
    CHECK(WTERMSIG(st) == sig);  // handed on: the program still ends by the signal
    for (int i = 0; i < 500 && !process_gone(child); ++i) std::this_thread::sleep_for(10ms);
    CHECK(process_gone(child));
  }
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

namespace {
// A minimal hand-rolled NFSv4.1 client, independent of the project's own codecs, to check
// that the generated configuration really exports export_dir() at pseudo_path().
class nfs41_probe {
 public:
  explicit nfs41_probe(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~nfs41_probe() { ::close(fd_); }

  static void u32(std::string& b, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<char>((v >> shift) & 0xff));
  }
  static void u64(std::string& b, std::uint64_t v) {
    u32(b, static_cast<std::uint32_t>(v >> 32));
    u32(b, static_cast<std::uint32_t>(v));
  }
  static void opaque(std::string& b, std::string_view v) {
    u32(b, static_cast<std::uint32_t>(v.size()));
    b.append(v);
    b.append((4 - v.size() % 4) % 4, '\0');
  }
  std::uint32_t get_u32(const std::string& r, std::size_t& off) {
    REQUIRE(off + 4 <= r.size());
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(r[off + i]);
    off += 4;
    return v;
  }

  // Sends one COMPOUND (minor version 1, AUTH_SYS uid 0) of the given encoded operations;
  // returns the reply from the first result on, after checking the RPC header and that
  // the COMPOUND status is NFS4_OK and all results are present.
  std::string compound(const std::vector<std::string>& ops) {
    std::string body;
    u32(body, ++xid_);
    u32(body, 0);  // CALL
    u32(body, 2);
    u32(body, 100003);
    u32(body, 4);
    u32(body, 1);  // COMPOUND
    std::string sys;
    u32(sys, 0);  // stamp
    opaque(sys, "vnfs-test");
    u32(sys, 0);  // uid
    u32(sys, 0);  // gid
    u32(sys, 0);  // no extra gids
    u32(body, 1);  // AUTH_SYS
    opaque(body, sys);
    u32(body, 0);  // verifier AUTH_NONE
    u32(body, 0);
    opaque(body, "");  // tag
    u32(body, 1);      // minor version
    u32(body, static_cast<std::uint32_t>(ops.size()));
    for (const auto& op : ops) body += op;
    std::string rec;
    u32(rec, 0x80000000u | static_cast<std::uint32_t>(body.size()));
    rec += body;
    REQUIRE(::send(fd_, rec.data(), rec.size(), 0) == static_cast<ssize_t>(rec.size()));

    std::string reply = recv_exact(4);
    std::size_t off = 0;
    std::uint32_t mark = get_u32(reply, off);
    REQUIRE((mark & 0x80000000u) != 0);
    reply = recv_exact(mark & 0x7fffffffu);
    off = 0;
    CHECK(get_u32(reply, off) == xid_);
    CHECK(get_u32(reply, off) == 1);  // REPLY
    CHECK(get_u32(reply, off) == 0);  // MSG_ACCEPTED
    get_u32(reply, off);              // verifier flavor
    off += (get_u32(reply, off) + 3) / 4 * 4;
    REQUIRE(get_u32(reply, off) == 0);  // SUCCESS
    CHECK(get_u32(reply, off) == 0);    // NFS4_OK
    off += (get_u32(reply, off) + 3) / 4 * 4;  // tag
    CHECK(get_u32(reply, off) == ops.size());
    return reply.substr(off);
  }

 private:
  std::string recv_exact(std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      REQUIRE(r > 0);
      got += static_cast<std::size_t>(r);
    }
    return out;
  }
  int fd_ = -1;
  std::uint32_t xid_ = 0x5000;
};
}  // namespace

TEST_CASE("ganesha_process exports export_dir() at pseudo_path() over NFSv4.1") {
  ganesha_process g;
  std::ofstream(g.export_dir() / "hello.txt") << "hi\n";
  nfs41_probe nfs(g.port());
  using P = nfs41_probe;

  std::string exchange_id;  // RFC 8881 18.35
  P::u32(exchange_id, 42);
  exchange_id += "verifier";
  P::opaque(exchange_id, "vnfs-test-support-probe");
  P::u32(exchange_id, 0x00010000);  // EXCHGID4_FLAG_USE_NON_PNFS
  P::u32(exchange_id, 0);           // SP4_NONE
  P::u32(exchange_id, 0);           // no implementation id
  std::string r = nfs.compound({exchange_id});
  std::size_t off = 0;
  REQUIRE(nfs.get_u32(r, off) == 42);
  REQUIRE(nfs.get_u32(r, off) == 0);
  std::uint64_t clientid = std::uint64_t{nfs.get_u32(r, off)} << 32;
  clientid |= nfs.get_u32(r, off);
  std::uint32_t sequence = nfs.get_u32(r, off);

  std::string create_session;  // RFC 8881 18.36
  P::u32(create_session, 43);
  P::u64(create_session, clientid);
  P::u32(create_session, sequence);
  P::u32(create_session, 0);  // no flags
  for (int channel = 0; channel < 2; ++channel) {
    for (std::uint32_t v : {0u, 1048576u, 1048576u, 4096u, 16u, 8u, 0u}) P::u32(create_session, v);
  }
  P::u32(create_session, 0x40000000);  // callback program
  P::u32(create_session, 1);           // one callback security parameter: AUTH_NONE
  P::u32(create_session, 0);
  r = nfs.compound({create_session});
  off = 0;
  REQUIRE(nfs.get_u32(r, off) == 43);
  REQUIRE(nfs.get_u32(r, off) == 0);
  std::string session_id = r.substr(off, 16);

  std::string sequence_op;  // RFC 8881 18.46
  P::u32(sequence_op, 53);
  sequence_op += session_id;
  for (std::uint32_t v : {1u, 0u, 0u, 0u}) P::u32(sequence_op, v);  // seqid 1, slot 0, highest 0, no cache
  std::string putrootfh, lookup_export, lookup_file, getfh;
  P::u32(putrootfh, 24);
  P::u32(lookup_export, 15);
  P::opaque(lookup_export, g.pseudo_path().substr(1));
  P::u32(lookup_file, 15);
  P::opaque(lookup_file, "hello.txt");
  P::u32(getfh, 10);
  r = nfs.compound({sequence_op, putrootfh, lookup_export, lookup_file, getfh});
  off = 0;
  CHECK(nfs.get_u32(r, off) == 53);
  CHECK(nfs.get_u32(r, off) == 0);
  off += 16 + 5 * 4;  // SEQUENCE4resok
  for (std::uint32_t op : {24u, 15u, 15u, 10u}) {
    CHECK(nfs.get_u32(r, off) == op);
    CHECK(nfs.get_u32(r, off) == 0);  // NFS4_OK
  }
  std::uint32_t fh_len = nfs.get_u32(r, off);
  CHECK(fh_len > 0);
  CHECK(fh_len <= 128);  // NFS4_FHSIZE
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
