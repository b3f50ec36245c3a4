// vnfs command line: tar — archive a directory, or extract an archive into one, with the
// archive adapter (adapters/archive) on the location's client.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "atomic_run.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "vnfs/archive/archive_error.hpp"
#include "vnfs/archive/create_archive.hpp"
#include "vnfs/archive/extract_archive.hpp"

namespace vnfs::cli {

namespace {

/// Feeds the adapter's running totals to the bar as advances.
struct progress_feed {
  progress& bar;
  archive::archive_stats last{};
  void operator()(const archive::archive_stats& now) {
    std::uint64_t de = now.entries() - last.entries(), db = now.bytes - last.bytes;
    bar.expect(de, db);
    bar.advance(de, db);
    last = now;
  }
};

/// Closes a descriptor we opened (not stdin/stdout).
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd > 2) ::close(fd);
  }
};

}  // namespace

void run_tar(command_context& ctx, const arguments& a) {
  bool create = a.has('c'), extract = a.has('x');
  if (create == extract) throw usage_error("tar: give exactly one of -c and -x");
  if (!a.has('f')) throw usage_error("tar: -f ARCHIVE is required");
  int filters = a.has('z') + a.has('J') + a.has('Z');
  if (filters > 1) throw usage_error("tar: give at most one of -z, -J and --zstd");
  if (extract && filters) throw usage_error("tar: -z, -J and --zstd go with -c (-x detects the compression)");
  if (create && a.has('@')) throw usage_error("tar: --atomic goes with -x");
  const std::string& name = a.operands[0];
  location loc = parse_location(a.operands[1]);
  if (a.has('@') && loc.local) throw usage_error("tar: --atomic needs an nfs:// LOCATION");
  vnfs::client& c = ctx.pool.at(loc);
  try {
    if (create) {
      int fd = 1;
      if (name == "-") take_stdout();
      else if ((fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0)
        throw command_error("tar: cannot create '" + name + "': " + std::strerror(errno));
      fd_guard g{fd};
      progress bar("archiving");
      progress_feed feed{bar};
      archive::create_options o;
      o.filter = a.has('z') ? "gzip" : a.has('J') ? "xz" : a.has('Z') ? "zstd" : "none";
      o.progress = std::ref(feed);
      archive::create_archive(c, loc.path, fd, o);
      if (fd > 2 && ::close(fd) != 0) {
        g.fd = -1;
        throw command_error("tar: cannot write '" + name + "': " + std::strerror(errno));
      }
      g.fd = -1;
    } else {
      int fd = 0;
      if (name != "-" && (fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC)) < 0)
        throw command_error("tar: cannot open '" + name + "': " + std::strerror(errno));
      fd_guard g{fd};
      progress bar("extracting");
      progress_feed feed{bar};
      archive::extract_options o;
      o.progress = std::ref(feed);
      o.restore_owner = ::geteuid() == 0;  // as GNU tar: owners for root only
      if (a.has('@'))
        run_atomic(c, "tar", [&](vnfs::client& inside) { archive::extract_archive(inside, loc.path, fd, o); });
      else
        archive::extract_archive(c, loc.path, fd, o);
    }
  } catch (const archive::archive_error& e) {
    throw command_error("tar: " + loc.text + ": " + e.what());
  }
}

}  // namespace vnfs::cli
