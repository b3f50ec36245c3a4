#include "vnfs/bench/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

extern char** environ;

namespace vnfs::bench {

using namespace std::chrono_literals;

// ---- exit_status -----------------------------------------------------------------------

bool exit_status::exited() const noexcept { return WIFEXITED(raw); }
int exit_status::code() const noexcept { return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1; }
bool exit_status::signaled() const noexcept { return WIFSIGNALED(raw); }
int exit_status::signal() const noexcept { return WIFSIGNALED(raw) ? WTERMSIG(raw) : 0; }

std::string exit_status::describe() const {
  if (exited()) return "exited with code " + std::to_string(code());
  if (signaled()) {
    const char* name = ::strsignal(signal());
    return "killed by signal " + std::to_string(signal()) + " (" + (name ? name : "?") + ")";
  }
  return "wait status " + std::to_string(raw);
}

// ---- spawning --------------------------------------------------------------------------

namespace {

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"; }

// The children not yet reaped, so that a SIGINT, SIGTERM or SIGHUP that ends this program
// (Ctrl-C, a timeout's kill) stops their process groups too: they lead groups of their own,
// which the terminal's signals do not reach. Slots hold pids, 0 when free; the handler only
// reads them (lock-free atomics), then hands the signal on to whatever handled it before.
constexpr std::size_t max_tracked = 256;
std::atomic<pid_t> tracked[max_tracked];
constexpr int forwarded[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction before[std::size(forwarded)];

extern "C" void stop_children_and_forward(int sig) {
  for (auto& slot : tracked)
    if (const pid_t pid = slot.load(std::memory_order_relaxed); pid > 0) ::kill(-pid, SIGTERM);
  for (std::size_t i = 0; i < std::size(forwarded); ++i)
    if (forwarded[i] == sig) ::sigaction(sig, &before[i], nullptr);
  ::raise(sig);  // as if the handlers of before had received it (the default: the program ends)
}

std::mutex install_mu;

void track(pid_t pid) {
  {
    // At every spawn, not once: a program may have set its own handler since (Catch2 sets
    // and restores its own around each test case).
    std::lock_guard lock(install_mu);
    for (std::size_t i = 0; i < std::size(forwarded); ++i) {
      struct sigaction now {};
      ::sigaction(forwarded[i], nullptr, &now);
      // A program that ignores the signal keeps its children; ours is there already.
      if (now.sa_handler == SIG_IGN || now.sa_handler == stop_children_and_forward) continue;
      before[i] = now;
      struct sigaction sa {};
      sa.sa_handler = stop_children_and_forward;
      sigemptyset(&sa.sa_mask);
      ::sigaction(forwarded[i], &sa, nullptr);
    }
  }
  for (auto& slot : tracked) {
    pid_t free_slot = 0;
    if (slot.compare_exchange_strong(free_slot, pid)) return;
  }
}

void untrack(pid_t pid) {
  for (auto& slot : tracked) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

// RAII holders for the posix_spawn attribute objects.
struct spawn_actions {
  posix_spawn_file_actions_t a;
  spawn_actions() { ::posix_spawn_file_actions_init(&a); }
  ~spawn_actions() { ::posix_spawn_file_actions_destroy(&a); }
};
struct spawn_attr {
  posix_spawnattr_t a;
  spawn_attr() { ::posix_spawnattr_init(&a); }
  ~spawn_attr() { ::posix_spawnattr_destroy(&a); }
};

void check(int rc, const char* what) {
  if (rc != 0) throw process_error(std::string("child_process: ") + what + ": " + errno_text(rc));
}

// The parent's environment with `additions` applied, as NAME=VALUE strings.
std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& additions) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : additions) vars[name] = value;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

child_process::child_process(std::filesystem::path program, std::vector<std::string> args, spawn_options options)
    : program_(std::move(program)), queue_(std::make_unique<line_queue>()) {
  std::vector<std::string> argv_strings;
  argv_strings.push_back(program_.string());
  for (auto& a : args) argv_strings.push_back(std::move(a));
  std::vector<std::string> env_strings = merged_environment(options.env);
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);

  int pipe_fds[2] = {-1, -1};
  if (options.capture_stdout) {
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw process_error("child_process: pipe2: " + errno_text(errno));
  }
  auto close_pipe = [&] {
    for (int& fd : pipe_fds) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  };

  pid_t pid = -1;
  int rc = 0;
  try {
    spawn_actions actions;
    // The child never reads the test's stdin (CI has none).
    check(::posix_spawn_file_actions_addopen(&actions.a, 0, "/dev/null", O_RDONLY, 0), "addopen stdin");
    if (options.capture_stdout) {
      // dup2 clears FD_CLOEXEC on the target; the originals close on exec.
      check(::posix_spawn_file_actions_adddup2(&actions.a, pipe_fds[1], 1), "adddup2 stdout");
      if (options.merge_stderr) check(::posix_spawn_file_actions_adddup2(&actions.a, pipe_fds[1], 2), "adddup2 stderr");
    } else if (!options.output_file.empty()) {
      check(::posix_spawn_file_actions_addopen(&actions.a, 1, options.output_file.c_str(),
                                               O_WRONLY | O_CREAT | O_APPEND, 0644),
            "addopen output file");
      if (options.merge_stderr) check(::posix_spawn_file_actions_adddup2(&actions.a, 1, 2), "adddup2 stderr");
    }
    if (!options.working_dir.empty()) {
      check(::posix_spawn_file_actions_addchdir_np(&actions.a, options.working_dir.c_str()), "addchdir");
    }

    spawn_attr attr;
    // Own process group (id = pid): signals to -pid reach the child's helpers too.
    // Default signal dispositions and an empty mask: the test runner may ignore or block
    // signals (SIGPIPE, ...) that the child must see normally.
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    check(::posix_spawnattr_setflags(&attr.a, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK),
          "setflags");
    check(::posix_spawnattr_setpgroup(&attr.a, 0), "setpgroup");
    check(::posix_spawnattr_setsigdefault(&attr.a, &all), "setsigdefault");
    check(::posix_spawnattr_setsigmask(&attr.a, &none), "setsigmask");

    rc = ::posix_spawn(&pid, program_.c_str(), &actions.a, &attr.a, argv.data(), envp.data());
  } catch (...) {
    close_pipe();
    throw;
  }
  if (rc != 0) {
    close_pipe();
    throw process_error("cannot start " + program_.string() + ": " + errno_text(rc));
  }
  pid_ = pid;
  track(pid);

  if (options.capture_stdout) {
    ::close(pipe_fds[1]);
    stdout_fd_ = pipe_fds[0];
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) {
      int err = errno;
      terminate(1s);
      ::close(stdout_fd_);
      stdout_fd_ = -1;
      throw process_error("child_process: eventfd: " + errno_text(err));
    }
    reader_ = std::thread([this, fd = stdout_fd_, stop = stop_fd_] { reader_loop(fd, stop); });
  } else {
    queue_->eof = true;
  }
}

child_process::~child_process() {
  if (!status_) {
    try {
      terminate(2s);
    } catch (...) {
      // A destructor cannot report; the process group was SIGKILLed if it got that far.
    }
  }
  untrack(pid_);  // also when terminate() failed: never signal a pid that may be reused
  stop_reader();
}

// ---- stdout ----------------------------------------------------------------------------

void child_process::reader_loop(int fd, int stop_fd) {
  std::string partial;
  char buf[4096];
  auto publish_eof = [&](int err) {
    std::lock_guard lock(queue_->mutex);
    if (!partial.empty()) queue_->lines.push_back(std::move(partial));
    queue_->eof = true;
    queue_->read_errno = err;
    queue_->changed.notify_all();
  };
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      publish_eof(errno);
      return;
    }
    if (fds[1].revents != 0) {
      publish_eof(0);
      return;
    }
    if (fds[0].revents == 0) continue;
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      publish_eof(errno);
      return;
    }
    if (got == 0) {
      publish_eof(0);
      return;
    }
    partial.append(buf, static_cast<std::size_t>(got));
    std::vector<std::string> complete;
    std::size_t start = 0;
    for (std::size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      complete.push_back(partial.substr(start, nl - start));
    }
    partial.erase(0, start);
    if (!complete.empty()) {
      std::lock_guard lock(queue_->mutex);
      for (auto& line : complete) queue_->lines.push_back(std::move(line));
      queue_->changed.notify_all();
    }
  }
}

void child_process::stop_reader() noexcept {
  if (reader_.joinable()) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto ignored = ::write(stop_fd_, &one, sizeof one);
    reader_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stop_fd_ = stdout_fd_ = -1;
}

std::string child_process::read_line(std::chrono::milliseconds timeout) {
  if (stdout_fd_ < 0) {
    throw process_error("read_line: stdout of " + program_.string() + " is not captured");
  }
  std::unique_lock lock(queue_->mutex);
  bool ready = queue_->changed.wait_for(lock, timeout, [&] { return !queue_->lines.empty() || queue_->eof; });
  if (!queue_->lines.empty()) {
    std::string line = std::move(queue_->lines.front());
    queue_->lines.pop_front();
    return line;
  }
  std::string who = program_.filename().string() + " (pid " + std::to_string(pid_) + ")";
  if (!ready) {
    throw process_error("read_line: timed out after " + std::to_string(timeout.count()) +
                        " ms waiting for a line from " + who);
  }
  int err = queue_->read_errno;
  lock.unlock();
  std::string how = "closed its stdout";
  if (err != 0) how = "stdout read failed: " + errno_text(err);
  // Closing stdout usually means exiting: say how, without waiting long for it.
  if (auto st = wait_for(500ms)) how += " and " + st->describe();
  throw process_error("read_line: " + who + " " + how + " before printing another line");
}

// ---- lifetime --------------------------------------------------------------------------

namespace {

// Whether `pid` has exited, without reaping it: a zombie keeps its pid (and so its
// process group id) reserved, so signalling -pid cannot reach an unrelated process.
bool exited_unreaped(pid_t pid, bool block) {
  for (;;) {
    siginfo_t info{};
    int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, flags) == 0) return info.si_pid == pid;
    if (errno == EINTR) continue;
    throw process_error("waitid(" + std::to_string(pid) + "): " + errno_text(errno));
  }
}

}  // namespace

// The leader has exited but is not yet reaped: end the helpers left in its group (they
// belong to this child_process), then reap the leader.
void child_process::kill_group_leftovers() noexcept { ::kill(-pid_, SIGKILL); }

exit_status child_process::wait() {
  if (status_) return *status_;
  exited_unreaped(pid_, true);
  kill_group_leftovers();
  untrack(pid_);  // before the reaping frees the pid (and its group id) for others
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0) {
    if (errno != EINTR) throw process_error("waitpid(" + std::to_string(pid_) + "): " + errno_text(errno));
  }
  status_ = exit_status{st};
  return *status_;
}

std::optional<exit_status> child_process::wait_for(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (exited_unreaped(pid_, false)) return wait();
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(5ms);
  }
}

bool child_process::running() {
  if (status_) return false;
  if (exited_unreaped(pid_, false)) {
    wait();
    return false;
  }
  return true;
}

void child_process::send_signal(int sig) {
  if (status_) return;
  // Before reaping, pid_ is ours (alive or a zombie), and so is its process group.
  if (::kill(-pid_, sig) != 0 && errno == ESRCH) ::kill(pid_, sig);
}

exit_status child_process::terminate(std::chrono::milliseconds grace) {
  if (status_) return *status_;
  send_signal(SIGTERM);
  if (auto st = wait_for(grace)) return *st;
  send_signal(SIGKILL);
  return wait();
}

}  // namespace vnfs::bench
