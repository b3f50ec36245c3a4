// Fuzzes `vnfs tar -x`: archive bytes (any format and filter libarchive detects) extracted
// by vnfs::archive::extract_archive through a file:// client into the directory t/ of a
// scratch tree. Beside t/ lie outside/ (a canary file and a directory) and,
// above the client's root, a second canary; the archive wins if anything but t/ changes.
// Properties: extract_archive throws only archive_error (or the harness's own stop, when an
// archive would write more than `write_cap` bytes: a compression bomb is stopped, not
// written out, nor are more than `entry_cap` entries); after every input, the scratch tree
// beside t/ is exactly as made: the same names, each with the same inode, type, mode,
// owner, link count, size, modification and change times, and the canaries' contents.
//
// Speed (a campaign of 10 million inputs): the scratch tree is on a memory file system
// (/dev/shm when there is one) and made once; each input starts from t/ emptied, and the
// tree beside it is checked through directories and canaries kept open (no path lookups,
// no allocation by the listing).
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.hpp"
#include "vnfs/archive/archive_error.hpp"
#include "vnfs/archive/extract_archive.hpp"
#include "vnfs/client.hpp"

using vnfs::fuzz::require;

namespace {

constexpr std::uint64_t write_cap = 8u << 20;
constexpr std::uint64_t entry_cap = 20000;
struct too_big {};

/// What must not change of one name: everything lstat says but the access time, as raw
/// bytes (for comparing) or as text (for the report of a change).
void add_state(std::string& out, const struct stat& st, bool text) {
  if (!text) {
    for (auto field : {std::uint64_t(st.st_ino), std::uint64_t(st.st_mode), std::uint64_t(st.st_nlink),
                       std::uint64_t(st.st_uid), std::uint64_t(st.st_gid), std::uint64_t(st.st_size),
                       std::uint64_t(st.st_mtim.tv_sec), std::uint64_t(st.st_mtim.tv_nsec),
                       std::uint64_t(st.st_ctim.tv_sec), std::uint64_t(st.st_ctim.tv_nsec)})
      out.append(reinterpret_cast<const char*>(&field), sizeof field);
    return;
  }
  char b[256];
  std::snprintf(b, sizeof b, "ino %llu mode %o nlink %llu uid %u gid %u size %lld mtime %lld.%09ld ctime %lld.%09ld",
                static_cast<unsigned long long>(st.st_ino), st.st_mode, static_cast<unsigned long long>(st.st_nlink),
                st.st_uid, st.st_gid, static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
                st.st_mtim.tv_nsec, static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
  out += b;
}

/// Calls f(name, d_type) for each name in the directory `fd` but "." and "..", from its
/// start, in the order the file system gives. No allocation (getdents64 into the stack).
template <class F>
void for_each_name(int fd, F f) {
  require(::lseek(fd, 0, SEEK_SET) == 0, "a directory can be read from its start");
  alignas(8) char buf[4096];
  for (;;) {
    const ssize_t n = ::getdents64(fd, buf, sizeof buf);
    require(n >= 0, "getdents64");
    if (n == 0) return;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(buf + at);
      at += e->d_reclen;
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) f(e->d_name, e->d_type);
    }
  }
}

/// Appends the state of the directory `fd`: its own lstat, then its names but `skip`
/// (sorted when `text`, else in the file system's order, which is stable while the
/// directory does not change).
void add_directory_state(std::string& out, int fd, const char* skip, bool text) {
  struct stat st {};
  require(::fstat(fd, &st) == 0, "fstat of a scratch directory");
  add_state(out, st, text);
  std::vector<std::string> names;
  for_each_name(fd, [&](const char* name, unsigned char) {
    if (std::strcmp(name, skip) != 0) names.emplace_back(name);
  });
  if (text) std::sort(names.begin(), names.end());
  for (const auto& n : names) (out += ' ') += n;
  out += '\n';
}

/// Removes everything in the directory `fd` (a directory the archive left without search
/// permission is given it back first). Takes `fd`.
void empty_directory(int fd) {
  std::vector<std::string> subdirs;
  bool removed = true;
  while (removed) {  // names removed while listing may hide others: list until none is left
    removed = false;
    for_each_name(fd, [&](const char* name, unsigned char) {
      removed = true;
      if (::unlinkat(fd, name, 0) == 0) return;
      require(errno == EISDIR, "an extracted file can be removed");
      subdirs.emplace_back(name);
    });
    for (const auto& name : subdirs) {
      int sub = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0 && errno == EACCES && ::fchmodat(fd, name.c_str(), 0700, 0) == 0)
        sub = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      require(sub >= 0, "an extracted directory can be opened");
      empty_directory(sub);
      require(::unlinkat(fd, name.c_str(), AT_REMOVEDIR) == 0, "an extracted directory can be removed");
    }
    subdirs.clear();
  }
  ::close(fd);
}

int open_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  require(fd >= 0, "a scratch directory can be opened");
  return fd;
}

void write_file(const std::string& path, const char* text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  require(fd >= 0, "a canary can be made");
  const auto n = std::char_traits<char>::length(text);
  require(::write(fd, text, n) == static_cast<ssize_t>(n) && ::close(fd) == 0, "a canary is written");
}

struct scratch {
  std::string box, root, target;
  int box_fd = -1, root_fd = -1, outside_fd = -1, dir_fd = -1;  // the directories beside t/
  int canary_fds[2] = {-1, -1};                                 // box/canary, root/outside/canary
  std::string before, before_text;
  int archive_fd = -1;  // one memfd, refilled for each input
  std::optional<vnfs::client> c;

  scratch() {
    struct stat st {};
    std::string tmpl = (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0)
                           ? "/dev/shm/vnfs-fuzz-tar-XXXXXX"
                           : "/tmp/vnfs-fuzz-tar-XXXXXX";
    require(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp");
    box = tmpl;
    root = box + "/root";
    target = root + "/t";
    for (const std::string& d : {root, root + "/outside", root + "/outside/dir", target})
      require(::mkdir(d.c_str(), 0755) == 0, "the scratch tree can be made");
    write_file(box + "/canary", "above the client's root");
    write_file(root + "/outside/canary", "must not change");
    box_fd = open_directory(box);
    root_fd = open_directory(root);
    outside_fd = open_directory(root + "/outside");
    dir_fd = open_directory(root + "/outside/dir");
    canary_fds[0] = ::open((box + "/canary").c_str(), O_RDONLY | O_CLOEXEC);
    canary_fds[1] = ::open((root + "/outside/canary").c_str(), O_RDONLY | O_CLOEXEC);
    require(canary_fds[0] >= 0 && canary_fds[1] >= 0, "the canaries can be opened");
    before = state();
    before_text = state(true);
    archive_fd = ::memfd_create("archive", MFD_CLOEXEC);
    require(archive_fd >= 0, "memfd_create");
    c.emplace(vnfs::client::connect("file://" + root));
  }
  ~scratch() {
    c.reset();
    for (int fd : {archive_fd, canary_fds[0], canary_fds[1], box_fd, outside_fd, dir_fd, root_fd}) ::close(fd);
    empty_directory(open_directory(box));
    ::rmdir(box.c_str());
  }

  /// Everything beside t/ that must not change: each directory's lstat and names, and each
  /// canary's lstat (by name, so a replaced one shows) and contents. Any change to a name
  /// in a directory moves that directory's modification and change times; any change to a
  /// file its change time (which no call can set back); the names and contents are
  /// compared too, for changes within one tick of the file system's clock. As raw bytes,
  /// or as text for the report of a change.
  std::string state(bool text = false) const {
    std::string out;
    add_directory_state(out, box_fd, "", text);
    add_directory_state(out, root_fd, "t", text);
    add_directory_state(out, outside_fd, "", text);
    add_directory_state(out, dir_fd, "", text);
    const std::pair<int, const char*> canaries[2] = {{box_fd, "canary"}, {outside_fd, "canary"}};
    for (int i = 0; i < 2; ++i) {
      struct stat st {};
      require(::fstatat(canaries[i].first, canaries[i].second, &st, AT_SYMLINK_NOFOLLOW) == 0, "lstat of a canary");
      add_state(out, st, text);
      char contents[64];
      const ssize_t n = ::pread(canary_fds[i], contents, sizeof contents, 0);
      require(n >= 0, "a canary can be read");
      ((out += " [") += std::string_view(contents, static_cast<std::size_t>(n))) += "]\n";
    }
    return out;
  }
};

scratch& the_scratch() {
  static scratch s;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  scratch& s = the_scratch();
  empty_directory(open_directory(s.target));

  require(::ftruncate(s.archive_fd, 0) == 0 && ::pwrite(s.archive_fd, data, size, 0) == static_cast<ssize_t>(size) &&
              ::lseek(s.archive_fd, 0, SEEK_SET) == 0,
          "archive in memfd");

  vnfs::archive::extract_options o;
  o.read_block = 16 * 1024;
  // 64 KiB: files of more than one batch are still common, and the buffer stays in the
  // sanitizer's cached size classes (256 KiB took an mmap, page faults and an munmap per input).
  o.batch_bytes = 64 * 1024;
  o.batch_items = 64;
  o.progress = [](const vnfs::archive::archive_stats& st) {
    if (st.bytes > write_cap || st.entries() + st.skipped > entry_cap) throw too_big{};
  };
  try {
    vnfs::archive::extract_archive(*s.c, "t", s.archive_fd, o);
  } catch (const vnfs::archive::archive_error& e) {
    require(e.what()[0] != '\0', "an archive_error says what went wrong");
  } catch (const too_big&) {
  }
  if (s.state() != s.before) {
    std::fprintf(stderr, "before:\n%s\nafter:\n%s\n", s.before_text.c_str(), s.state(true).c_str());
    require(false, "nothing beside t/ changed, under the client's root or above it");
  }
  return 0;
}
