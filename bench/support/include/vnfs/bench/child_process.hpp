// vnfs bench support (tests use it too): a child process that a program starts, talks to,
// and always stops.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace vnfs::bench {

/// Every failure of the process helpers (spawn failure, timeout, early exit, ...). The
/// message names the program and says what was expected.
class process_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How a child ended, decoded from a waitpid() status.
struct exit_status {
  int raw = 0;

  bool exited() const noexcept;       // returned from main or called exit()
  int code() const noexcept;          // exit code; -1 unless exited()
  bool signaled() const noexcept;     // killed by a signal
  int signal() const noexcept;        // the signal; 0 unless signaled()
  bool success() const noexcept { return exited() && code() == 0; }
  std::string describe() const;       // "exited with code 3", "killed by signal 15 (Terminated)"
};

struct spawn_options {
  /// Variables added to (or replacing in) the parent's environment, as NAME, VALUE.
  std::vector<std::pair<std::string, std::string>> env;
  /// Pipe the child's stdout to read_line(). When false, stdout goes to `output_file` if
  /// set, else to the parent's stdout.
  bool capture_stdout = true;
  /// Send stderr where stdout goes (the pipe, or output_file). Otherwise stderr is
  /// inherited, so a failing test shows the child's diagnostics.
  bool merge_stderr = false;
  /// Used only when capture_stdout is false: stdout (and stderr if merged) appended here.
  std::filesystem::path output_file;
  /// Working directory of the child; empty = the parent's.
  std::filesystem::path working_dir;
};

/// A running program. The child leads its own process group; stopping it signals that
/// group (whose id is the child's pid), so helpers it spawned (a shell's `sleep`) stop too
/// and cannot hold the stdout pipe open. Nothing ever signals a process by name.
///
/// Stdout is read by a background thread into a line queue, so a chatty child never
/// blocks on a full pipe and read_line() can time out without hanging. Not thread-safe:
/// one test thread uses one child_process.
///
/// The destructor stops a child that is still running (terminate() with a short grace).
class child_process {
 public:
  /// Starts `program` (a path; not searched in PATH) with argv[1..] = `args`.
  /// Throws process_error if it cannot be executed (missing file, not executable, ...).
  child_process(std::filesystem::path program, std::vector<std::string> args, spawn_options options = {});
  ~child_process();

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const noexcept { return pid_; }
  const std::filesystem::path& program() const noexcept { return program_; }

  /// The next line of stdout without its '\n'. Throws process_error if no complete line
  /// arrives within `timeout`, or if stdout reached EOF first (a last unterminated line is
  /// returned once before that). Requires capture_stdout.
  std::string read_line(std::chrono::milliseconds timeout);

  /// True until the child has exited (reaps it if it just did).
  bool running();

  /// Blocks until the child exits; returns its status. Idempotent.
  exit_status wait();

  /// Like wait(), but gives up after `timeout` and returns nullopt.
  std::optional<exit_status> wait_for(std::chrono::milliseconds timeout);

  /// SIGTERM to the child's process group, up to `grace` for it to exit, then SIGKILL.
  /// Returns the exit status; if the child had already exited, just returns its status.
  exit_status terminate(std::chrono::milliseconds grace = std::chrono::seconds(5));

  /// Sends `sig` to the child's process group; no-op once the child has been reaped.
  void send_signal(int sig);

 private:
  struct line_queue {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::string> lines;
    bool eof = false;
    int read_errno = 0;
  };

  void reader_loop(int fd, int stop_fd);
  void stop_reader() noexcept;
  void kill_group_leftovers() noexcept;

  std::filesystem::path program_;
  pid_t pid_ = -1;
  std::optional<exit_status> status_;
  int stdout_fd_ = -1;   // read end of the stdout pipe, owned by the reader thread's lifetime
  int stop_fd_ = -1;     // eventfd that tells the reader thread to finish
  std::unique_ptr<line_queue> queue_;
  std::thread reader_;
};

}  // namespace vnfs::bench
