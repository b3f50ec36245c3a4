// tests/txn: a digest of a directory tree as it is on the local file system — what a
// rolled-back transaction must leave exactly as it found it.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace vnfs::txn_test {

struct digest_options {
  /// Include atime and mtime (the crash test compares a committed tree without them: the
  /// server sets those times when it runs, so another run cannot reproduce them).
  bool times = true;
  /// With times, include directories' atimes too. A directory's atime moves whenever anyone
  /// lists it while its ctime or mtime is not older (relatime), and after a rollback its
  /// ctime is the rollback's: a test that lets other readers in (a server restarted under a
  /// client) compares directories without it.
  bool directory_atimes = true;
};

/// One line per object under `root` (root itself included), sorted by path: type, mode,
/// owner, link count, size and content hash of regular files, link target of symlinks, and
/// atime/mtime in nanoseconds. Skips the transaction state directory at the top (vnfsd's,
/// invisible to clients). Reads with O_NOATIME, so taking a digest changes nothing.
inline std::string tree_digest(const std::filesystem::path& root, digest_options o = {}) {
  std::vector<std::string> lines;
  auto one = [&](const std::filesystem::path& p, const std::string& rel) {
    struct ::stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      lines.push_back(rel + " <lstat failed>");
      return;
    }
    std::ostringstream l;
    l << rel << " type=" << (st.st_mode & S_IFMT) << " mode=" << std::oct << (st.st_mode & 07777) << std::dec
      << " uid=" << st.st_uid << " gid=" << st.st_gid << " nlink=" << st.st_nlink;
    if (S_ISREG(st.st_mode)) {
      l << " size=" << st.st_size;
      int fd = ::open(p.c_str(), O_RDONLY | O_NOATIME | O_NOFOLLOW | O_CLOEXEC);
      std::uint64_t h = 1469598103934665603ull;
      if (fd >= 0) {
        std::array<unsigned char, 65536> buf;
        ssize_t n;
        while ((n = ::read(fd, buf.data(), buf.size())) > 0)
          for (ssize_t i = 0; i < n; ++i) h = (h ^ buf[static_cast<std::size_t>(i)]) * 1099511628211ull;
        ::close(fd);
      } else {
        h = 0;
      }
      l << " data=" << std::hex << h << std::dec;
    }
    if (S_ISLNK(st.st_mode)) l << " target=" << std::filesystem::read_symlink(p).string();
    if (o.times && (o.directory_atimes || !S_ISDIR(st.st_mode)))
      l << " atime=" << st.st_atim.tv_sec << "." << st.st_atim.tv_nsec;
    if (o.times) l << " mtime=" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec;
    lines.push_back(l.str());
  };
  one(root, ".");
  for (auto it = std::filesystem::recursive_directory_iterator(root); it != std::filesystem::recursive_directory_iterator(); ++it) {
    const auto rel = it->path().lexically_relative(root).string();
    if (it.depth() == 0 && rel == ".vnfsd-txn") {
      it.disable_recursion_pending();
      continue;
    }
    one(it->path(), rel);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& s : lines) out += s + "\n";
  return out;
}

/// Whether reading the directories under `root` (the state directory aside) can still move
/// their atimes: under relatime a listing sets a directory's atime when it is not after its
/// ctime and mtime, and the kernel's coarse clock may give a listing the very time of the
/// change before it.
inline bool atimes_may_move(const std::filesystem::path& root) {
  auto not_after = [](const timespec& a, const timespec& b) {
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
  };
  auto moves = [&](const std::filesystem::path& p) {
    struct ::stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
           (not_after(st.st_atim, st.st_ctim) || not_after(st.st_atim, st.st_mtim));
  };
  if (moves(root)) return true;
  for (auto it = std::filesystem::recursive_directory_iterator(root); it != std::filesystem::recursive_directory_iterator(); ++it) {
    if (it.depth() == 0 && it->path().filename() == ".vnfsd-txn") {
      it.disable_recursion_pending();
      continue;
    }
    if (moves(it->path())) return true;
  }
  return false;
}

/// The digest of `root` once reading it no longer moves anything: listed until every
/// directory's atime is after its ctime and mtime (a later tick of the clock; at most about
/// a second), so that a directory read by the server later (before a transaction saves the
/// directory's attributes) leaves the atimes as they are.
inline std::string settled_digest(const std::filesystem::path& root, digest_options o = {}) {
  for (int i = 0; i < 200 && (tree_digest(root, o), atimes_may_move(root)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return tree_digest(root, o);
}

}  // namespace vnfs::txn_test
