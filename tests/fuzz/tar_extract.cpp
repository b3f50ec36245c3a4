// Fuzzes `vnfs tar -x`: archive bytes (any format and filter libarchive detects) extracted
// by vnfs::archive::extract_archive through a file:// client into the directory t/ of a
// scratch tree. Beside t/ lie outside/ (a canary file and a directory) and,
// above the client's root, a second canary; the archive wins if anything but t/ changes.
// Properties: extract_archive throws only archive_error (or the harness's own stop, when an
// archive would write more than `write_cap` bytes: a compression bomb is stopped, not
// written out, nor are more than `entry_cap` entries); after every input, the scratch tree outside t/ is exactly as made.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "fuzz_input.hpp"
#include "vnfs/archive/archive_error.hpp"
#include "vnfs/archive/extract_archive.hpp"
#include "vnfs/client.hpp"

namespace fs = std::filesystem;
using vnfs::fuzz::require;

namespace {

constexpr std::uint64_t write_cap = 8u << 20;
constexpr std::uint64_t entry_cap = 20000;
struct too_big {};

/// Names, types, modes, sizes, link targets and contents of everything under `dir`,
/// skipping `skip` (a name directly in `dir`).
std::string snapshot(const fs::path& dir, const std::string& skip) {
  std::ostringstream s;
  std::map<std::string, std::string> lines;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    fs::path rel = fs::relative(it->path(), dir);
    if (rel.begin()->string() == skip) {
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) std::abort();
    std::ostringstream l;
    l << std::oct << st.st_mode << std::dec << ' ' << st.st_size << ' ' << st.st_nlink << ' ' << st.st_mtim.tv_sec;
    if (S_ISLNK(st.st_mode)) l << " -> " << fs::read_symlink(it->path()).string();
    if (S_ISREG(st.st_mode)) {
      std::ifstream in(it->path(), std::ios::binary);
      l << " [" << std::string(std::istreambuf_iterator<char>(in), {}) << ']';
    }
    lines[rel.string()] = l.str();
  }
  for (const auto& [k, v] : lines) s << k << ' ' << v << '\n';
  return s.str();
}

struct scratch {
  fs::path box, root;
  std::string before_root, before_box;
  std::optional<vnfs::client> c;

  scratch() {
    char tmpl[] = "/tmp/vnfs-fuzz-tar-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    box = tmpl;
    root = box / "root";
    fs::create_directories(root / "outside" / "dir");
    fs::create_directories(root / "t");
    std::ofstream(root / "outside" / "canary") << "must not change";
    std::ofstream(box / "canary") << "above the client's root";
    before_root = snapshot(root, "t");
    before_box = snapshot(box, "root");
    c.emplace(vnfs::client::connect("file://" + root.string()));
  }
  ~scratch() {
    c.reset();
    std::error_code ec;
    fs::remove_all(box, ec);
  }
};

scratch& the_scratch() {
  static scratch s;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  scratch& s = the_scratch();
  std::error_code ec;
  fs::remove_all(s.root / "t", ec);
  require(!ec && fs::create_directory(s.root / "t", ec), "the previous extraction can be removed");

  int fd = ::memfd_create("archive", MFD_CLOEXEC);
  require(fd >= 0, "memfd_create");
  require(::write(fd, data, size) == static_cast<ssize_t>(size) && ::lseek(fd, 0, SEEK_SET) == 0, "archive in memfd");

  vnfs::archive::extract_options o;
  o.read_block = 16 * 1024;
  o.batch_bytes = 256 * 1024;
  o.batch_items = 64;
  o.progress = [](const vnfs::archive::archive_stats& st) {
    if (st.bytes > write_cap || st.entries() + st.skipped > entry_cap) throw too_big{};
  };
  try {
    vnfs::archive::extract_archive(*s.c, "t", fd, o);
  } catch (const vnfs::archive::archive_error& e) {
    require(e.what()[0] != '\0', "an archive_error says what went wrong");
  } catch (const too_big&) {
  }
  ::close(fd);
  if (std::string now = snapshot(s.root, "t"); now != s.before_root)
    std::fprintf(stderr, "before:\n%s\nafter:\n%s\n", s.before_root.c_str(), now.c_str());
  require(snapshot(s.root, "t") == s.before_root, "nothing beside t/ changed under the client's root");
  require(snapshot(s.box, "root") == s.before_box, "nothing above the client's root changed");
  return 0;
}
