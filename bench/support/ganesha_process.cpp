#include "vnfs/bench/ganesha_process.hpp"

#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "vnfs/bench/free_port.hpp"

namespace vnfs::bench {

using namespace std::chrono_literals;

namespace {

std::string file_tail(const std::filesystem::path& file, std::size_t lines);

bool log_contains(const std::filesystem::path& file, std::string_view text) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::filesystem::path ganesha_process::binary() {
  if (const char* env = std::getenv("GANESHA_BIN"); env != nullptr && *env != '\0') return env;
  std::vector<std::filesystem::path> dirs;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');) {
      if (!dir.empty()) dirs.emplace_back(dir);
    }
  }
  dirs.emplace_back("/usr/bin");
  dirs.emplace_back("/usr/sbin");
  for (const auto& dir : dirs) {
    auto candidate = dir / "ganesha.nfsd";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw process_error("ganesha_process: ganesha.nfsd not found (install nfs-ganesha and nfs-ganesha-vfs, "
                      "see scripts/install-deps.sh, or set GANESHA_BIN)");
}

// The facts behind each setting (NFS-Ganesha 4.3, no rpcbind on the machine):
// - RQUOTA and NLM register with rpcbind, which is fatal without it; NFSv3 needs MOUNT,
//   which does too, so only NFSv4 is served. No UDP: NFSv4.1 is TCP only.
// - Graceless: otherwise OPEN answers NFS4ERR_GRACE for the first 90 s.
// - RecoveryRoot and CCacheDir default to system paths; keep them in the scratch dir.
// - Only_Numeric_Owners: owners as "0", not "root@localdomain", like vnfsd.
// - No_Root_Squash: tests run as root and must be able to create files.
std::string ganesha_process::make_config(const std::filesystem::path& export_dir,
                                         const std::filesystem::path& scratch_dir, std::uint16_t port,
                                         const options& opts) {
  std::ostringstream c;
  c << "# NFS-Ganesha serving " << export_dir.string() << " over NFSv4.1 on 127.0.0.1:" << port
    << " (written by vnfs::bench::ganesha_process)\n"
    << "NFS_CORE_PARAM {\n"
    << "    Protocols = 4;\n"
    << "    Bind_addr = 127.0.0.1;\n"
    << "    NFS_Port = " << port << ";\n"
    << "    Enable_RQUOTA = false;\n"
    << "    Enable_NLM = false;\n"
    << "    Enable_UDP = false;\n"
    << "}\n"
    << "NFS_KRB5 {\n"
    << "    Active_krb5 = false;\n"
    << "    CCacheDir = " << (scratch_dir / "ccache").string() << ";\n"
    << "}\n"
    << "NFSv4 {\n"
    << "    Graceless = true;\n"
    << "    Lease_Lifetime = " << opts.lease_seconds << ";\n"
    << "    RecoveryRoot = " << (scratch_dir / "recovery").string() << ";\n"
    << "    Minor_Versions = 1, 2;\n"
    << "    Only_Numeric_Owners = true;\n"
    << "}\n"
    << "EXPORT {\n"
    << "    Export_Id = 1;\n"
    << "    Path = " << export_dir.string() << ";\n"
    << "    Pseudo = " << opts.pseudo_path << ";\n"
    << "    Protocols = 4;\n"
    << "    Transports = TCP;\n"
    << "    Access_Type = RW;\n"
    << "    Squash = No_Root_Squash;\n"
    << "    SecType = sys;\n"
    << "    FSAL { Name = VFS; }\n"
    << "}\n"
    << "LOG { Default_Log_Level = " << opts.log_level << "; }\n";
  return c.str();
}

ganesha_process::ganesha_process() : ganesha_process(options{}) {}

ganesha_process::ganesha_process(options opts) : opts_(std::move(opts)), root_("vnfs-ganesha") {
  if (opts_.pseudo_path.empty() || opts_.pseudo_path.front() != '/') {
    throw process_error("ganesha_process: pseudo_path must be absolute: \"" + opts_.pseudo_path + "\"");
  }
  if (::geteuid() != 0) {
    throw process_error("ganesha_process: NFS-Ganesha's VFS FSAL needs root (open_by_handle_at); run the tests as root");
  }
  export_dir_ = root_ / "export";
  scratch_dir_ = root_ / "ganesha";
  std::filesystem::create_directories(export_dir_);
  std::filesystem::create_directories(scratch_dir_ / "ccache");
  std::filesystem::create_directories(scratch_dir_ / "recovery");
  config_file_ = scratch_dir_ / "ganesha.conf";
  log_file_ = scratch_dir_ / "ganesha.log";
  pid_file_ = scratch_dir_ / "ganesha.pid";

  // A chosen port may be taken by someone else between free_port() and Ganesha's bind:
  // with an automatic port, try a few.
  const int attempts = opts_.port == 0 ? 3 : 1;
  std::string failures;
  for (int i = 0; i < attempts; ++i) {
    std::string failure;
    if (try_start(failure)) return;
    failures += "\n--- attempt " + std::to_string(i + 1) + " on port " + std::to_string(port_) + ": " + failure;
  }
  throw process_error("ganesha_process: NFS-Ganesha did not start" + failures);
}

ganesha_process::~ganesha_process() {
  try {
    stop(5s);
  } catch (...) {
    // child_process's destructor still SIGKILLs it.
  }
}

bool ganesha_process::try_start(std::string& failure) {
  port_ = opts_.port != 0 ? opts_.port : free_port();
  {
    std::ofstream conf(config_file_, std::ios::trunc);
    conf << make_config(export_dir_, scratch_dir_, port_, opts_);
    if (!conf) throw process_error("ganesha_process: cannot write " + config_file_.string());
  }
  std::filesystem::remove(log_file_);

  spawn_options so;
  so.capture_stdout = false;
  so.merge_stderr = true;
  so.output_file = scratch_dir_ / "ganesha.out";
  // libblkid would otherwise write its cache under /run.
  so.env.emplace_back("BLKID_FILE", (scratch_dir_ / "blkid.tab").string());
  child_ = std::make_unique<child_process>(
      binary(),
      std::vector<std::string>{"-F", "-L", log_file_.string(), "-f", config_file_.string(), "-p", pid_file_.string()},
      std::move(so));

  // Ganesha binds its port before its worker threads run; it logs "NFS SERVER
  // INITIALIZED" (at level EVENT) once they do. Wait for both when the log level shows it.
  const bool logs_event = opts_.log_level == "EVENT" || opts_.log_level == "INFO" || opts_.log_level == "DEBUG" ||
                          opts_.log_level == "MID_DEBUG" || opts_.log_level == "FULL_DEBUG";
  auto deadline = std::chrono::steady_clock::now() + opts_.ready_timeout;
  for (;;) {
    if (tcp_port_open(host_, port_) && (!logs_event || log_contains(log_file_, "NFS SERVER INITIALIZED"))) return true;
    if (!child_->running()) {
      failure = "ganesha.nfsd " + child_->wait().describe() + "; its output:\n" +
                file_tail(scratch_dir_ / "ganesha.out", 10) + "log tail:\n" + log_tail();
      child_.reset();
      return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      child_->terminate(2s);
      child_.reset();
      throw process_error("ganesha_process: port " + std::to_string(port_) + " not open after " +
                          std::to_string(opts_.ready_timeout.count()) + " ms; log tail:\n" + log_tail());
    }
    std::this_thread::sleep_for(50ms);
  }
}

pid_t ganesha_process::pid() const noexcept { return child_ ? child_->pid() : -1; }

bool ganesha_process::running() { return child_ && child_->running(); }

exit_status ganesha_process::stop(std::chrono::milliseconds grace) {
  if (stopped_) return *stopped_;
  if (!child_) throw process_error("ganesha_process::stop: not started");
  stopped_ = child_->terminate(grace);
  child_.reset();
  return *stopped_;
}

namespace {
std::string file_tail(const std::filesystem::path& file, std::size_t lines) {
  std::ifstream in(file);
  if (!in) return "(no file " + file.string() + ")\n";
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(std::move(line));
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += l + "\n";
  return out;
}
}  // namespace

std::string ganesha_process::log_tail(std::size_t lines) const { return file_tail(log_file_, lines); }

}  // namespace vnfs::bench
