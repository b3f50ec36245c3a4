// vnfs archive adapter: the drop-in for unmodified bsdtar (LD_PRELOAD).
//
//   VNFS_MAP=/local/prefix=nfs://host:port/path LD_PRELOAD=libvnfs_bsdtar_preload.so
//   bsdtar -x -f A -C /local/prefix/sub
//
// bsdtar extracts each entry with archive_read_extract2(archive, entry, disk_writer) after
// changing into the -C directory. When that directory lies under the mapped prefix, this
// library takes the entries instead of the disk writer: it writes them, as bsdtar edited
// them (names, -s, --strip-components), into a pax stream piped to one
// `vnfs tar -x -f - URL` (the `vnfs` of $VNFS_CLI, else from PATH), which extracts with the
// vectorized calls in batches. archive_read_close waits for it; its failure makes that call
// fail (bsdtar then exits 1, the vnfs child having said why on stderr). Outside the mapping,
// and for every other program, the calls go to libarchive unchanged.
//
// The library holds no vnfs client itself, so it needs nothing but libarchive and libc and
// loads into any process.
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

/// The stream to the vnfs child, while one runs.
struct redirect {
  struct archive* reader = nullptr;  ///< the archive whose entries are redirected
  struct archive* writer = nullptr;  ///< pax into the pipe
  int* fd = nullptr;                 ///< the pipe's end, owned by the writer
  pid_t child = -1;
  bool failed = false;
};

redirect current;
bool decided = false;  ///< whether the first extraction looked at the mapping
bool mapped = false;

/// The URL the working directory maps to under VNFS_MAP ("PREFIX=URL"), or "".
std::string mapped_url() {
  const char* map = std::getenv("VNFS_MAP");
  if (!map) return "";
  std::string m = map;
  auto eq = m.find('=');
  if (eq == std::string::npos || eq == 0) return "";
  std::string prefix = m.substr(0, eq), url = m.substr(eq + 1);
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  while (!url.empty() && url.back() == '/') url.pop_back();
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) return "";
  std::string here = cwd;
  if (here == prefix) return url + "/";
  if (here.size() > prefix.size() && here.compare(0, prefix.size(), prefix) == 0 && here[prefix.size()] == '/')
    return url + here.substr(prefix.size());
  return "";
}

la_ssize_t pipe_write(struct archive*, void* fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(*static_cast<int*>(fd), p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    done += static_cast<size_t>(w);
  }
  return static_cast<la_ssize_t>(n);
}

int pipe_close(struct archive*, void* fd) {
  int* p = static_cast<int*>(fd);
  if (*p >= 0) ::close(*p);
  delete p;
  return ARCHIVE_OK;
}

/// Starts `vnfs tar -x -f - URL` reading from a pipe; false if it cannot be started.
bool start_child(struct archive* reader, const std::string& url) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  const char* cli = std::getenv("VNFS_CLI");
  std::string prog = cli && *cli ? cli : "vnfs";
  std::vector<std::string> args{prog, "tar", "-x", "-f", "-", url};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
  // The child must not see this library (it would map its own reads).
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env_s.push_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  int rc = prog.find('/') == std::string::npos
               ? posix_spawnp(&pid, prog.c_str(), &fa, nullptr, argv.data(), envp.data())
               : posix_spawn(&pid, prog.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[0]);
  if (rc != 0) {
    ::close(fds[1]);
    std::fprintf(stderr, "vnfs preload: cannot run '%s': %s\n", prog.c_str(), std::strerror(rc));
    return false;
  }
  struct archive* w = archive_write_new();
  archive_write_set_format_pax(w);
  // Unbuffered: every complete entry is in the pipe before the next one starts, so that
  // cutting the stream (below) loses only the entry being passed on.
  archive_write_set_bytes_per_block(w, 0);
  int* fd = new int(fds[1]);
  if (archive_write_open(w, fd, nullptr, pipe_write, pipe_close) != ARCHIVE_OK) {
    archive_write_free(w);
    return false;
  }
  current = {reader, w, fd, pid, false};
  return true;
}

/// Ends the stream and waits for the child; true if it succeeded. After a failure the
/// stream is cut where it is, not finished: the child finds the archive truncated in the
/// entry that failed and leaves that entry out (an entry finished here would be padded).
bool finish_child() {
  if (!current.writer) return true;
  if (current.failed) {
    ::close(*current.fd);
    *current.fd = -1;
  }
  bool ok = archive_write_close(current.writer) == ARCHIVE_OK && !current.failed;
  archive_write_free(current.writer);
  int status = 0;
  while (::waitpid(current.child, &status, 0) < 0 && errno == EINTR) {
  }
  ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  current = {};
  return ok;
}

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int archive_read_extract2(struct archive* a, struct archive_entry* e, struct archive* disk) {
  static auto real = next<int (*)(struct archive*, struct archive_entry*, struct archive*)>("archive_read_extract2");
  if (!decided) {
    decided = true;
    std::string url = mapped_url();
    mapped = !url.empty() && start_child(a, url);
  }
  if (!mapped || a != current.reader) return real(a, e, disk);
  if (archive_write_header(current.writer, e) < ARCHIVE_WARN) {
    current.failed = true;
    archive_set_error(a, EIO, "vnfs: cannot pass '%s' on: %s", archive_entry_pathname(e),
                      archive_error_string(current.writer));
    return ARCHIVE_FATAL;
  }
  static char buf[1 << 16];
  for (;;) {
    la_ssize_t n = archive_read_data(a, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      current.failed = true;  // damaged: the child gets the entries before this one
      return static_cast<int>(n);
    }
    if (archive_write_data(current.writer, buf, static_cast<size_t>(n)) < 0) {
      current.failed = true;
      archive_set_error(a, EIO, "vnfs: cannot pass '%s' on", archive_entry_pathname(e));
      return ARCHIVE_FATAL;
    }
  }
  return archive_write_finish_entry(current.writer) < ARCHIVE_WARN ? ARCHIVE_FATAL : ARCHIVE_OK;
}

int archive_read_close(struct archive* a) {
  static auto real = next<int (*)(struct archive*)>("archive_read_close");
  int r = real(a);
  if (current.writer && a == current.reader && !finish_child()) {
    archive_set_error(a, EIO, "vnfs: the extraction through vnfs failed");
    return ARCHIVE_FATAL;
  }
  return r;
}

int archive_read_free(struct archive* a) {
  static auto real = next<int (*)(struct archive*)>("archive_read_free");
  if (current.writer && a == current.reader) finish_child();
  return real(a);
}

}  // extern "C"
