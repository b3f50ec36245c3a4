// bench/filebench_personalities — papers/000 §5, Figure 12: the Filebench NFS-Server,
// File-Server and Varmail personalities, scalar flows vs vectorized flows, through the
// latency emulator.
//
// The personalities follow Filebench's workloads/networkfs.f, fileserver.f and varmail.f
// (flowop sequences, file-size distributions, threads), with the file counts scaled down by
// options. Each personality has a fileset: entries named d<k>/f<i> (dirwidth entries per
// directory) or f<i> (flat), prealloc percent of them existing at the start; a flow takes the
// entries it uses exclusively (as Filebench does), so 50 threads never touch the same file.
//
// - scalar flow: the scalar calls a POSIX program makes for the flowops (open, pread in
//   iosize pieces until a short read, pwrite, fsync, close, unlink, stat; an append first asks
//   for the file size with fstat, as lseek(SEEK_END) makes an NFS client revalidate it). The
//   scalar calls cost the round trips of a cold-cache kernel client (nfs_backend.cpp). Reads
//   and writes go in pieces of up to 1 MiB, what a kernel client's readahead and write-back
//   send for networkfs.f's 8-135 KiB application reads and writes (rsize = wsize = 1 MiB);
//   --app-iosize sends each application-sized piece as its own READ/WRITE instead (no page
//   cache at all). fileserver.f and varmail.f use iosize 1 MiB anyway.
// - vectorized flow: papers/000's conversion, pushed as far as the API goes: all the flow's
//   open/read/close sets become one vread, all its creates and appends one vwrite (create |
//   truncate for create+writewholefile, append for appendfilerand, stable where an fsync
//   follows), its deletes one vremove, its stats one vgetattrs. The calls run one after
//   another (synchronously), so a flow costs as many round trips as it makes calls.
//
// Every read is checked: its byte count against the size the fileset tracks for the entry,
// and every word of the data against the pattern the writer put there (the word at offset o
// of entry e is e << 40 | o), so a run that moves nothing, or the wrong bytes, fails loudly.
//
// Per personality and delay (direct, and each vnfs-netdelay delay), each repeat runs the
// vectorized flow then the scalar flow back to back, each for --seconds (and at most
// --max-iterations flows); the speedup is computed per such pair. COMPOUNDs and operations
// per flow come from client::stats() (one client per mode, shared by the personality's
// threads, like one mount).
#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"
#include "vnfs/client.hpp"
#include "vnfs/bench/netdelay_process.hpp"
#include "vnfs/bench/temp_dir.hpp"
#include "vnfs/bench/vnfsd_process.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using rng_type = std::mt19937_64;

namespace {

constexpr std::uint64_t kib = 1024, mib = 1024 * 1024;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// ---- sizes ---------------------------------------------------------------------------------

/// A size distribution: Filebench's cvar-gamma (mean, shape) or a tabular randvar (weighted
/// ranges, rounded to `round`, at least `min`). Sizes are multiples of 8 (the data pattern's
/// word), at least 8.
struct size_dist {
  struct row {
    double weight;
    std::uint64_t lo, hi;
  };
  double mean = 0, shape = 1.5;  // gamma when rows is empty
  std::vector<row> rows;
  std::uint64_t round = 8, min = 8;

  std::uint64_t operator()(rng_type& g) const {
    double x;
    if (rows.empty()) {
      x = std::gamma_distribution<double>(shape, mean / shape)(g);
    } else {
      std::vector<double> w;
      for (const auto& r : rows) w.push_back(r.weight);
      const row& r = rows[std::discrete_distribution<std::size_t>(w.begin(), w.end())(g)];
      x = std::uniform_real_distribution<double>(double(r.lo), double(r.hi))(g);
    }
    std::uint64_t n = static_cast<std::uint64_t>(x);
    n = (n + round / 2) / round * round;
    n = std::max(n, min);
    return std::max<std::uint64_t>(8, n / 8 * 8);
  }
};

/// appendfilerand: uniform in 1..iosize bytes (here in 8-byte words).
std::uint64_t append_size(rng_type& g, std::uint64_t iosize) {
  return 8 * std::uniform_int_distribution<std::uint64_t>(1, std::max<std::uint64_t>(1, iosize / 8))(g);
}

// ---- the data pattern ----------------------------------------------------------------------

void fill_pattern(std::byte* p, std::uint64_t n, std::uint32_t entry, std::uint64_t file_offset) {
  const std::uint64_t tag = std::uint64_t(entry) << 40;
  for (std::uint64_t off = 0; off + 8 <= n; off += 8) {
    std::uint64_t w = tag | (file_offset + off);
    std::memcpy(p + off, &w, 8);
  }
}

void check_pattern(const std::byte* p, std::uint64_t n, std::uint32_t entry, const std::string& path) {
  const std::uint64_t tag = std::uint64_t(entry) << 40;
  for (std::uint64_t off = 0; off + 8 <= n; off += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + off, 8);
    if (w != (tag | off))
      fail(path + ": wrong data at offset " + std::to_string(off) + " (a write or an append landed elsewhere)");
  }
}

// ---- the fileset ---------------------------------------------------------------------------

/// Filebench's fileset: entries that exist or not, each used by one flow at a time. The sizes
/// it tracks are exact because only the flow holding an entry changes the file.
class fileset {
 public:
  struct entry {
    std::uint32_t id = 0;
    std::uint64_t size = 0;     ///< the file's size now (0 when absent)
    std::uint64_t nominal = 0;  ///< the entry's size in the fileset definition (Filebench's fse_size)
    std::string path;
  };

  fileset(std::uint32_t entries, std::uint32_t dirwidth)
      : dirwidth_(dirwidth), size_(entries), nominal_(entries) {}

  std::string path(std::uint32_t id) const {
    std::string name = "f" + std::to_string(id);
    return dirwidth_ ? "d" + std::to_string(id / dirwidth_) + "/" + name : name;
  }
  std::uint32_t entries() const { return static_cast<std::uint32_t>(size_.size()); }

  /// Draws every entry's nominal size and writes the files on the server's export (before it
  /// starts): prealloc percent of the entries, each of its nominal size. As in Filebench, the
  /// nominal size stays when a file grows by appends: a create writes it (fileserver.f's
  /// writewholefile) or the source's (networkfs.f's rmw), which keeps file sizes bounded.
  void populate(const fs::path& dir, unsigned prealloc, const size_dist& sizes, rng_type& g) {
    std::vector<std::uint32_t> ids(entries());
    for (std::uint32_t i = 0; i < ids.size(); ++i) ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), g);
    std::size_t n = ids.size() * prealloc / 100;
    std::vector<std::byte> buf;
    if (dirwidth_)
      for (std::uint32_t d = 0; d * dirwidth_ < entries(); ++d) fs::create_directories(dir / ("d" + std::to_string(d)));
    else
      fs::create_directories(dir);
    for (std::size_t k = 0; k < ids.size(); ++k) {
      std::uint32_t id = ids[k];
      nominal_[id] = sizes(g);
      if (k >= n) {
        free_absent_.push_back(id);
        continue;
      }
      std::uint64_t s = nominal_[id];
      buf.resize(s);
      fill_pattern(buf.data(), s, id, 0);
      std::ofstream f(dir / path(id), std::ios::binary);
      f.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(s));
      if (!f) fail("cannot write " + (dir / path(id)).string());
      size_[id] = s;
      free_existing_.push_back(id);
    }
  }

  /// Takes a random free entry that exists (openfile, deletefile, statfile) or not (createfile).
  entry take(bool existing, rng_type& g) {
    std::lock_guard lock(mu_);
    auto& from = existing ? free_existing_ : free_absent_;
    if (from.empty()) fail(std::string("fileset: no free ") + (existing ? "existing" : "absent") + " entry left");
    std::size_t i = std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(g);
    std::uint32_t id = from[i];
    from[i] = from.back();
    from.pop_back();
    return entry{id, size_[id], nominal_[id], path(id)};
  }
  /// Gives an entry back with its state after the flow.
  void give(const entry& e, bool exists) {
    std::lock_guard lock(mu_);
    size_[e.id] = exists ? e.size : 0;
    (exists ? free_existing_ : free_absent_).push_back(e.id);
  }

 private:
  std::mutex mu_;
  std::uint32_t dirwidth_;
  std::vector<std::uint64_t> size_, nominal_;
  std::vector<std::uint32_t> free_existing_, free_absent_;
};

// ---- one thread's flows --------------------------------------------------------------------

/// What a run moved (checked data only).
struct counters {
  std::uint64_t bytes_read = 0, bytes_written = 0;
};

struct personality;

/// A thread of a personality: its client, random source and buffers.
struct worker {
  vnfs::client& c;
  fileset& set;
  const personality& p;
  rng_type g;
  counters n;
  std::vector<std::vector<std::byte>> bufs;

  std::byte* buffer(std::size_t slot, std::uint64_t size) {
    if (bufs.size() <= slot) bufs.resize(slot + 1);
    if (bufs[slot].size() < size) bufs[slot].resize(size);
    return bufs[slot].data();
  }
};

/// One personality: its Filebench parameters and its two flows.
struct personality {
  std::string name, description;
  unsigned threads = 1;
  std::uint32_t files = 1000, dirwidth = 0;
  unsigned prealloc = 80;
  size_dist file_size;
  std::uint64_t append_iosize = 16 * kib;  // appendfilerand's iosize
  size_dist read_iosize, write_iosize;     // readwholefile / writewholefile iosize (1 MiB unless tabular)
  /// The scalar flow's READ/WRITE size: the application's iosize (app_iosize), else 1 MiB pieces.
  bool app_iosize = false;
  std::uint64_t rsize(rng_type& g) const { return app_iosize ? read_iosize(g) : mib; }
  std::uint64_t wsize(rng_type& g) const { return app_iosize ? write_iosize(g) : mib; }
  void (*scalar_flow)(worker&) = nullptr;
  void (*vector_flow)(worker&) = nullptr;
};

// -- scalar building blocks: the calls a POSIX program makes

/// open, read whole (iosize pieces until a short read: the READ reply's eof tells a kernel
/// client where the file ends, so it does not ask again), and the check of what came back.
void scalar_read_whole(worker& w, vnfs::client& c, const vnfs::file& f, const fileset::entry& e, std::uint64_t iosize) {
  std::byte* b = w.buffer(0, e.size + iosize);
  std::uint64_t got = 0;
  for (;;) {
    std::size_t n = c.pread(f, got, std::span<std::byte>(b + got, iosize));
    got += n;
    if (n < iosize) break;
    if (got > e.size) fail(e.path + ": longer than the " + std::to_string(e.size) + " bytes the fileset knows");
  }
  if (got != e.size) fail(e.path + ": read " + std::to_string(got) + " bytes, the file has " + std::to_string(e.size));
  check_pattern(b, got, e.id, e.path);
  w.n.bytes_read += got;
}

/// writewholefile: `e.size` bytes from offset 0 in iosize pieces.
void scalar_write_whole(worker& w, vnfs::client& c, const vnfs::file& f, const fileset::entry& e, std::uint64_t iosize) {
  std::byte* b = w.buffer(1, e.size);
  fill_pattern(b, e.size, e.id, 0);
  for (std::uint64_t off = 0; off < e.size;) {
    std::uint64_t k = std::min(iosize, e.size - off);
    std::size_t n = c.pwrite(f, off, std::span<const std::byte>(b + off, k));
    if (n != k) fail(e.path + ": short write");
    off += n;
  }
  w.n.bytes_written += e.size;
}

/// appendfilerand: lseek(SEEK_END) (an fstat: GETATTR) and one write of `k` bytes there.
void scalar_append(worker& w, vnfs::client& c, const vnfs::file& f, fileset::entry& e, std::uint64_t k) {
  vnfs::file_stat st = c.fstat(f);
  if (st.size != e.size) fail(e.path + ": size " + std::to_string(st.size) + ", expected " + std::to_string(e.size));
  std::byte* b = w.buffer(1, k);
  fill_pattern(b, k, e.id, st.size);
  if (c.pwrite(f, st.size, std::span<const std::byte>(b, k)) != k) fail(e.path + ": short append");
  e.size += k;
  w.n.bytes_written += k;
}

void scalar_stat(vnfs::client& c, const fileset::entry& e) {
  vnfs::file_stat st = c.stat(e.path);
  if (st.size != e.size) fail(e.path + ": stat size " + std::to_string(st.size) + ", expected " + std::to_string(e.size));
}

// -- vectorized building blocks

/// One vread of whole files (each buffer 4 KiB longer than the file, so a read that
/// returned more than the fileset's size would show), checked.
void vector_read_whole(worker& w, std::span<const fileset::entry> es) {
  std::vector<vnfs::vio> ios;
  ios.reserve(es.size());
  for (std::size_t i = 0; i < es.size(); ++i)
    ios.emplace_back(es[i].path, 0, std::span<std::byte>(w.buffer(i, es[i].size + 4096), es[i].size + 4096));
  vnfs::vresult r = w.c.vread(ios);
  if (!r.ok()) fail("vread " + es[r.failed_index].path + ": " + r.error.message());
  for (std::size_t i = 0; i < es.size(); ++i) {
    if (ios[i].bytes != es[i].size || !ios[i].eof)
      fail(es[i].path + ": vread " + std::to_string(ios[i].bytes) + " bytes, the file has " + std::to_string(es[i].size));
    check_pattern(ios[i].data().data(), ios[i].bytes, es[i].id, es[i].path);
    w.n.bytes_read += ios[i].bytes;
  }
}

/// One item of a vwrite: create (whole file, `e.size` bytes) or append `k` bytes.
struct write_item {
  fileset::entry* e;
  bool create;
  std::uint64_t k;  // append: bytes
};

/// One vwrite of creates (create | truncate) and appends (append: no GETATTR), all `stable`
/// when an fsync follows them in the flow.
void vector_write(worker& w, std::span<const write_item> items, bool stable) {
  std::vector<vnfs::vio> ios;
  ios.reserve(items.size());
  const std::size_t base = 16;  // buffer slots after the reads'
  for (std::size_t i = 0; i < items.size(); ++i) {
    const write_item& it = items[i];
    std::uint64_t n = it.create ? it.e->size : it.k;
    std::byte* b = w.buffer(base + i, n);
    fill_pattern(b, n, it.e->id, it.create ? 0 : it.e->size);
    unsigned fl = it.create ? vnfs::vio_flags::create | vnfs::vio_flags::truncate : vnfs::vio_flags::append;
    if (stable) fl |= vnfs::vio_flags::stable;
    ios.emplace_back(it.e->path, 0, std::span<const std::byte>(b, n), fl);
  }
  vnfs::vresult r = w.c.vwrite(ios);
  if (!r.ok()) fail("vwrite " + items[r.failed_index].e->path + ": " + r.error.message());
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (ios[i].bytes != ios[i].size()) fail(items[i].e->path + ": short vwrite");
    if (!items[i].create) items[i].e->size += items[i].k;
    w.n.bytes_written += ios[i].bytes;
  }
}

void vector_remove(worker& w, std::span<const fileset::entry> es) {
  std::vector<std::string> paths;
  for (const auto& e : es) paths.push_back(e.path);
  vnfs::vresult r = w.c.vremove(paths);
  if (!r.ok()) fail("vremove " + paths[r.failed_index] + ": " + r.error.message());
}

void vector_stat(worker& w, std::span<const fileset::entry> es) {
  std::vector<vnfs::vattr> items;
  for (const auto& e : es) items.emplace_back(e.path, vnfs::attr::stat);
  vnfs::vresult r = w.c.vgetattrs(items);
  if (!r.ok()) fail("vgetattrs " + es[r.failed_index].path + ": " + r.error.message());
  for (std::size_t i = 0; i < es.size(); ++i)
    if (items[i].stat.size != es[i].size)
      fail(es[i].path + ": vgetattrs size " + std::to_string(items[i].stat.size) + ", expected " + std::to_string(es[i].size));
}

// -- File-Server (fileserver.f): createfile + writewholefile + closefile; openfile +
//    appendfilerand + closefile; openfile + readwholefile + closefile; deletefile; statfile.

void fileserver_scalar(worker& w) {
  auto& c = w.c;
  fileset::entry a = w.set.take(false, w.g);
  a.size = a.nominal;
  vnfs::file f = c.open(a.path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  scalar_write_whole(w, c, f, a, mib);
  c.close(f);
  w.set.give(a, true);

  fileset::entry b = w.set.take(true, w.g);
  f = c.open(b.path, O_RDWR);
  scalar_append(w, c, f, b, append_size(w.g, w.p.append_iosize));
  c.close(f);
  w.set.give(b, true);

  fileset::entry r = w.set.take(true, w.g);
  f = c.open(r.path, O_RDONLY);
  scalar_read_whole(w, c, f, r, mib);
  c.close(f);
  w.set.give(r, true);

  fileset::entry d = w.set.take(true, w.g);
  c.unlink(d.path);
  w.set.give(d, false);

  fileset::entry s = w.set.take(true, w.g);
  scalar_stat(c, s);
  w.set.give(s, true);
}

void fileserver_vector(worker& w) {
  fileset::entry a = w.set.take(false, w.g), b = w.set.take(true, w.g), r = w.set.take(true, w.g),
                 d = w.set.take(true, w.g), s = w.set.take(true, w.g);
  a.size = a.nominal;
  write_item wi[] = {{&a, true, 0}, {&b, false, append_size(w.g, w.p.append_iosize)}};
  vector_write(w, wi, false);
  vector_read_whole(w, std::span<const fileset::entry>(&r, 1));
  vector_remove(w, std::span<const fileset::entry>(&d, 1));
  vector_stat(w, std::span<const fileset::entry>(&s, 1));
  w.set.give(a, true);
  w.set.give(b, true);
  w.set.give(r, true);
  w.set.give(d, false);
  w.set.give(s, true);
}

// -- Varmail (varmail.f): deletefile; createfile + appendfilerand + fsync + closefile;
//    openfile + readwholefile + appendfilerand + fsync + closefile; openfile + readwholefile +
//    closefile.

void varmail_scalar(worker& w) {
  auto& c = w.c;
  fileset::entry d = w.set.take(true, w.g);
  c.unlink(d.path);
  w.set.give(d, false);

  fileset::entry a = w.set.take(false, w.g);
  a.size = 0;
  vnfs::file f = c.open(a.path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  scalar_append(w, c, f, a, append_size(w.g, w.p.append_iosize));
  c.fsync(f);
  c.close(f);
  w.set.give(a, true);

  fileset::entry b = w.set.take(true, w.g);
  f = c.open(b.path, O_RDWR);
  scalar_read_whole(w, c, f, b, mib);
  scalar_append(w, c, f, b, append_size(w.g, w.p.append_iosize));
  c.fsync(f);
  c.close(f);
  w.set.give(b, true);

  fileset::entry r = w.set.take(true, w.g);
  f = c.open(r.path, O_RDONLY);
  scalar_read_whole(w, c, f, r, mib);
  c.close(f);
  w.set.give(r, true);
}

void varmail_vector(worker& w) {
  fileset::entry d = w.set.take(true, w.g), a = w.set.take(false, w.g), rs[2] = {w.set.take(true, w.g), w.set.take(true, w.g)};
  vector_remove(w, std::span<const fileset::entry>(&d, 1));
  vector_read_whole(w, rs);  // the read-append-sync file and the read-only file
  a.size = append_size(w.g, w.p.append_iosize);  // created with its first append: a whole-file write
  write_item wi[] = {{&a, true, 0}, {&rs[0], false, append_size(w.g, w.p.append_iosize)}};
  vector_write(w, wi, true);  // both were followed by fsync
  w.set.give(d, false);
  w.set.give(a, true);
  w.set.give(rs[0], true);
  w.set.give(rs[1], true);
}

// -- NFS-Server (networkfs.f): launch (3 x openfile + readwholefile, closes), rmw x 6
//    (openfile A + readwholefile, createfile B + writewholefile of A's size, closes, deletefile
//    A), appnd x 3 (openfile + appendfilerand + closefile), statfile. One thread.

constexpr unsigned nfs_launch = 3, nfs_rmw = 6, nfs_append = 3;

void networkfs_scalar(worker& w) {
  auto& c = w.c;
  fileset::entry l[nfs_launch];
  vnfs::file lf[nfs_launch];
  for (unsigned i = 0; i < nfs_launch; ++i) {  // opens 1, 2, then closes 1 after 2's read, as networkfs.f
    l[i] = w.set.take(true, w.g);
    lf[i] = c.open(l[i].path, O_RDONLY);
    scalar_read_whole(w, c, lf[i], l[i], w.p.rsize(w.g));
    if (i >= 1) c.close(lf[i - 1]);
  }
  c.close(lf[nfs_launch - 1]);
  for (auto& e : l) w.set.give(e, true);

  for (unsigned i = 0; i < nfs_rmw; ++i) {
    fileset::entry a = w.set.take(true, w.g);
    vnfs::file fa = c.open(a.path, O_RDONLY);
    scalar_read_whole(w, c, fa, a, w.p.rsize(w.g));
    fileset::entry b = w.set.take(false, w.g);
    b.size = a.nominal;  // writewholefile srcfd=1: the source entry's fileset size
    vnfs::file fb = c.open(b.path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    scalar_write_whole(w, c, fb, b, w.p.wsize(w.g));
    c.close(fa);
    c.close(fb);
    c.unlink(a.path);
    w.set.give(a, false);
    w.set.give(b, true);
  }

  for (unsigned i = 0; i < nfs_append; ++i) {
    fileset::entry e = w.set.take(true, w.g);
    vnfs::file f = c.open(e.path, O_RDWR);
    scalar_append(w, c, f, e, append_size(w.g, w.p.write_iosize(w.g)));
    c.close(f);
    w.set.give(e, true);
  }

  fileset::entry s = w.set.take(true, w.g);
  scalar_stat(c, s);
  w.set.give(s, true);
}

void networkfs_vector(worker& w) {
  // Reads: the 3 launch files and the 6 rmw sources in one vread.
  std::vector<fileset::entry> reads, created(nfs_rmw), appended(nfs_append);
  for (unsigned i = 0; i < nfs_launch + nfs_rmw; ++i) reads.push_back(w.set.take(true, w.g));
  vector_read_whole(w, reads);
  // Writes: the 6 new files (each of its source's size) and the 3 appends in one vwrite.
  std::vector<write_item> wi;
  for (unsigned i = 0; i < nfs_rmw; ++i) {
    created[i] = w.set.take(false, w.g);
    created[i].size = reads[nfs_launch + i].nominal;
    wi.push_back({&created[i], true, 0});
  }
  for (unsigned i = 0; i < nfs_append; ++i) {
    appended[i] = w.set.take(true, w.g);
    wi.push_back({&appended[i], false, append_size(w.g, w.p.write_iosize(w.g))});
  }
  vector_write(w, wi, false);
  // The 6 rmw sources in one vremove, then the statfile.
  vector_remove(w, std::span<const fileset::entry>(reads).subspan(nfs_launch));
  fileset::entry s = w.set.take(true, w.g);
  vector_stat(w, std::span<const fileset::entry>(&s, 1));
  for (unsigned i = 0; i < reads.size(); ++i) w.set.give(reads[i], i < nfs_launch);
  for (auto& e : created) w.set.give(e, true);
  for (auto& e : appended) w.set.give(e, true);
  w.set.give(s, true);
}

// ---- runs ----------------------------------------------------------------------------------

struct run_result {
  std::string personality, mode, delay;
  double rtt_ms = 0;
  unsigned repeat = 0, threads = 0;
  double seconds = 0;
  std::uint64_t iterations = 0, compounds = 0, operations = 0;
  counters n;
  double ops_per_second() const { return seconds > 0 ? double(iterations) / seconds : 0; }
};

/// Runs the personality's flow on all its threads until `seconds` pass or `max_iterations`
/// flows have started; a failure in any thread stops the others and is rethrown.
run_result run_flows(const personality& p, fileset& set, vnfs::client& c, bool vectorized, double seconds,
                     std::uint64_t max_iterations, std::uint64_t seed) {
  std::atomic<std::uint64_t> started{0};
  std::atomic<bool> stop{false};
  std::mutex err_mu;
  std::exception_ptr err;
  std::vector<counters> per(p.threads);
  std::vector<std::uint64_t> done(p.threads, 0);
  vnfs::client_stats s0 = c.stats();
  auto t0 = clock_type::now();
  auto deadline = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < p.threads; ++t) {
    ts.emplace_back([&, t] {
      worker w{c, set, p, rng_type(seed * 1000003 + t), {}, {}};
      try {
        while (!stop.load() && clock_type::now() < deadline && started.fetch_add(1) < max_iterations) {
          (vectorized ? p.vector_flow : p.scalar_flow)(w);
          ++done[t];
        }
      } catch (...) {
        std::lock_guard lock(err_mu);
        if (!err) err = std::current_exception();
        stop = true;
      }
      per[t] = w.n;
    });
  }
  for (auto& t : ts) t.join();
  run_result r;
  r.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (err) std::rethrow_exception(err);
  vnfs::client_stats s1 = c.stats();
  r.personality = p.name;
  r.mode = vectorized ? "vec" : "scalar";
  r.threads = p.threads;
  for (unsigned t = 0; t < p.threads; ++t) {
    r.iterations += done[t];
    r.n.bytes_read += per[t].bytes_read;
    r.n.bytes_written += per[t].bytes_written;
  }
  r.compounds = s1.compounds - s0.compounds;
  r.operations = s1.operations - s0.operations;
  if (r.iterations == 0) fail(p.name + ": no flow completed");
  if (r.n.bytes_read == 0) fail(p.name + ": the run read nothing");
  return r;
}

struct ratio {
  std::string personality, delay;
  double rtt_ms = 0;
  std::vector<double> values;
};

std::string jstr(const std::string& s) { return "\"" + vnfs::bench::json_escape(s) + "\""; }

}  // namespace

int main(int argc, char** argv) try {
  bool quick = false, app_iosize = false;
  std::string personalities = "nfs-server,file-server,varmail", delays = "direct,0.1,0.6,2.6";
  std::string out = "bench/results/filebench_personalities.json";
  unsigned repeats = 3, fileserver_threads = 50, varmail_threads = 16, server_threads = 4;
  std::uint32_t nfs_files = 0, fileserver_files = 0, varmail_files = 0;
  double seconds = 5;
  std::uint64_t max_iterations = 1000000, seed = 12;
  po::options_description desc(
      "Usage: filebench_personalities [options]\n\n"
      "papers/000 Figure 12 through vnfs-netdelay: Filebench's NFS-Server (networkfs.f), File-Server\n"
      "(fileserver.f) and Varmail (varmail.f) personalities against vnfsd, as scalar flows and as\n"
      "vectorized flows: flows/s, COMPOUNDs per flow, speedup per pair of runs (JSON).\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("quick", po::bool_switch(&quick), "bounded run (~1 min): 1 s per run, 2 repeats, 20 File-Server threads, smaller filesets")
      ("personalities", po::value(&personalities)->default_value(personalities), "comma-separated: nfs-server, file-server, varmail")
      ("delays", po::value(&delays)->default_value(delays), "'direct' and/or vnfs-netdelay --delay-ms values (RTT = 2 x delay)")
      ("seconds", po::value(&seconds), "length of each run (default 5; quick 1)")
      ("max-iterations", po::value(&max_iterations)->default_value(max_iterations), "flows per run at most")
      ("repeats", po::value(&repeats), "pairs of runs (vectorized, scalar) per point (default 3; quick 2)")
      ("fileserver-threads", po::value(&fileserver_threads), "File-Server threads (default 50 as the paper; quick 20)")
      ("varmail-threads", po::value(&varmail_threads)->default_value(varmail_threads), "Varmail threads")
      ("nfs-files", po::value(&nfs_files), "NFS-Server fileset entries (networkfs.f: 100,000; default 2000; quick 500)")
      ("fileserver-files", po::value(&fileserver_files), "File-Server fileset entries (fileserver.f: 10,000; default 2000; quick 600)")
      ("varmail-files", po::value(&varmail_files), "Varmail fileset entries (varmail.f: 1,000; default 1000; quick 400)")
      ("app-iosize", po::bool_switch(&app_iosize),
       "NFS-Server scalar flow: one READ/WRITE per networkfs.f iosize piece (8-135 KiB) instead of 1 MiB pieces")
      ("server-threads", po::value(&server_threads)->default_value(server_threads), "vnfsd --threads")
      ("seed", po::value(&seed)->default_value(seed), "random seed (file sizes, picks)")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  const auto vm = vnfs::bench::parse_options(argc, argv, desc);
  if (!vm) return 0;  // --help
  if (!vm->count("seconds")) seconds = quick ? 1 : 5;
  if (!vm->count("repeats")) repeats = quick ? 2 : 3;
  if (!vm->count("fileserver-threads")) fileserver_threads = quick ? 20 : 50;
  if (!vm->count("nfs-files")) nfs_files = quick ? 500 : 2000;
  if (!vm->count("fileserver-files")) fileserver_files = quick ? 600 : 2000;
  if (!vm->count("varmail-files")) varmail_files = quick ? 400 : 1000;
  if (seconds <= 0 || seconds > 3600) fail("--seconds must be in (0, 3600]");
  if (repeats == 0 || repeats > 100) fail("--repeats must be 1..100");
  if (max_iterations == 0) fail("--max-iterations must be at least 1");
  if (fileserver_threads == 0 || fileserver_threads > 1000 || varmail_threads == 0 || varmail_threads > 1000)
    fail("threads must be 1..1000");
  for (auto n : {nfs_files, fileserver_files, varmail_files})
    if (n < 100 || n > 1000000) fail("fileset entries must be 100..1,000,000");

  // The personalities, as Filebench defines them (sizes, iosizes, dirwidth, prealloc).
  std::vector<personality> all;
  {
    personality p;
    p.name = "nfs-server";
    p.description = "networkfs.f, 1 thread: launch (open+read whole 3 files, closes), 6 x rmw (open+read whole A, "
                    "create B + write A's size, closes, delete A), 3 x append (open, append 1..wrtiosize, close), stat";
    p.threads = 1;
    p.files = nfs_files;
    p.dirwidth = 20;
    p.prealloc = 60;
    p.file_size.rows = {{33, 1 * kib, 1 * kib}, {21, 1 * kib, 3 * kib}, {13, 3 * kib, 5 * kib}, {10, 5 * kib, 11 * kib},
                        {8, 11 * kib, 21 * kib}, {5, 21 * kib, 43 * kib}, {4, 43 * kib, 85 * kib},
                        {3, 85 * kib, 171 * kib}, {2, 171 * kib, 341 * kib}, {1, 341 * kib, 1707 * kib}};
    p.file_size.round = p.file_size.min = kib;
    p.read_iosize.rows = {{85, 8 * kib, 8 * kib}, {8, 17 * kib, 23 * kib}, {4, 33 * kib, 39 * kib},
                          {2, 65 * kib, 71 * kib}, {1, 129 * kib, 135 * kib}};
    p.read_iosize.round = kib;
    p.read_iosize.min = 8 * kib;
    p.write_iosize.rows = {{0, 1 * kib, 7 * kib}, {50, 9 * kib, 15 * kib}, {14, 17 * kib, 23 * kib},
                           {14, 33 * kib, 39 * kib}, {12, 65 * kib, 71 * kib}, {10, 129 * kib, 135 * kib}};
    p.write_iosize.round = p.write_iosize.min = kib;
    p.app_iosize = app_iosize;
    p.scalar_flow = networkfs_scalar;
    p.vector_flow = networkfs_vector;
    all.push_back(p);
  }
  {
    personality p;
    p.name = "file-server";
    p.description = "fileserver.f, N threads: create + write whole (gamma mean 128 KiB) + close, open + append "
                    "1..16 KiB + close, open + read whole + close, delete, stat";
    p.threads = fileserver_threads;
    p.files = fileserver_files;
    p.dirwidth = 20;
    p.prealloc = 80;
    p.file_size.mean = 128 * kib;
    p.scalar_flow = fileserver_scalar;
    p.vector_flow = fileserver_vector;
    all.push_back(p);
  }
  {
    personality p;
    p.name = "varmail";
    p.description = "varmail.f, N threads, flat directory: delete, create + append 1..16 KiB + fsync + close, "
                    "open + read whole + append + fsync + close, open + read whole + close (gamma mean 16 KiB)";
    p.threads = varmail_threads;
    p.files = varmail_files;
    p.dirwidth = 0;
    p.prealloc = 80;
    p.file_size.mean = 16 * kib;
    p.scalar_flow = varmail_scalar;
    p.vector_flow = varmail_vector;
    all.push_back(p);
  }
  std::vector<personality*> chosen;
  for (const auto& name : vnfs::bench::split_list(personalities)) {
    auto it = std::find_if(all.begin(), all.end(), [&](const personality& p) { return p.name == name; });
    if (it == all.end()) fail("unknown personality '" + name + "'");
    chosen.push_back(&*it);
  }
  std::vector<std::string> delay_list = vnfs::bench::split_list(delays);
  for (const auto& d : delay_list)
    if (d != "direct" && !(std::stod(d) >= 0 && std::stod(d) <= 1000)) fail("bad delay '" + d + "'");

  auto started = clock_type::now();
  vnfs::bench::temp_dir dir("vnfs-bench-filebench");
  std::vector<std::unique_ptr<fileset>> sets;
  rng_type g(seed);
  for (auto* p : chosen) {
    std::fprintf(stderr, "[%s] creating the fileset (%u entries, %u%% preallocated) ...\n", p->name.c_str(), p->files,
                 p->prealloc);
    sets.push_back(std::make_unique<fileset>(p->files, p->dirwidth));
    sets.back()->populate(dir.path() / p->name, p->prealloc, p->file_size, g);
  }
  vnfs::bench::vnfsd_process vnfsd(dir.path(), std::vector<std::string>{"--threads", std::to_string(server_threads)});

  std::vector<run_result> runs;
  std::vector<ratio> ratios;
  for (std::size_t pi = 0; pi < chosen.size(); ++pi) {
    const personality& p = *chosen[pi];
    for (const auto& delay : delay_list) {
      std::unique_ptr<vnfs::bench::netdelay_process> proxy;
      std::string host = vnfsd.host();
      std::uint16_t port = vnfsd.port();
      double rtt = 0;
      if (delay != "direct") {
        proxy = std::make_unique<vnfs::bench::netdelay_process>(vnfsd.host(), vnfsd.port(), delay);
        host = proxy->host();
        port = proxy->port();
        rtt = 2 * std::stod(delay);
      }
      // One client per mode, shared by the threads (one mount), rooted at the fileset.
      std::string url = "nfs://" + host + ":" + std::to_string(port) + "/" + p.name;
      vnfs::client_options vo, so;
      so.compound_vectors = false;  // the scalar flow makes no vectorized call; off for clarity
      vnfs::client vc = vnfs::client::connect(url, vo), sc = vnfs::client::connect(url, so);
      ratio rt{p.name, delay, rtt, {}};
      for (unsigned rep = 0; rep < repeats; ++rep) {
        double ops[2];
        for (int m = 0; m < 2; ++m) {
          bool vec = m == 0;
          run_result r = run_flows(p, *sets[pi], vec ? vc : sc, vec, seconds, max_iterations,
                                   seed + 7919 * (rep + 1) + 104729 * m + 1299709 * pi);
          r.delay = delay;
          r.rtt_ms = rtt;
          r.repeat = rep;
          ops[m] = r.ops_per_second();
          std::fprintf(stderr,
                       "[%s] delay %-6s rep %u %-6s %3u threads %7llu flows in %6.2f s = %9.1f flows/s, %6.2f COMPOUNDs/flow, "
                       "%.1f MiB read (checked)\n",
                       p.name.c_str(), delay.c_str(), rep, r.mode.c_str(), r.threads,
                       static_cast<unsigned long long>(r.iterations), r.seconds, ops[m],
                       double(r.compounds) / double(r.iterations), double(r.n.bytes_read) / double(mib));
          runs.push_back(r);
        }
        rt.values.push_back(ops[0] / ops[1]);
      }
      vc.close();
      sc.close();
      if (proxy) proxy->stop();
      ratios.push_back(rt);
    }
  }
  vnfsd.stop();
  double total = std::chrono::duration<double>(clock_type::now() - started).count();

  std::ofstream o = vnfs::bench::open_results(out, "filebench_personalities");
  o << "  \"parameters\": {\"quick\": " << (quick ? "true" : "false") << ", \"personalities\": " << jstr(personalities)
    << ", \"delays_ms\": " << jstr(delays) << ", \"seconds_per_run\": " << seconds << ", \"repeats\": " << repeats
    << ", \"max_iterations\": " << max_iterations << ", \"vnfsd_threads\": " << server_threads << ", \"seed\": " << seed
    << ", \"app_iosize\": " << (app_iosize ? "true" : "false")
    << "},\n"
    << "  \"note\": \"A flow is one pass through the personality's flowop list (Filebench counts each flowop; "
       "here flows/s is the same unit for both modes). scalar = the scalar calls (cold-cache kernel-client round "
       "trips, fstat before each append, reads and writes in 1 MiB pieces unless app_iosize); vec = the flow's reads in one vread, creates and appends in one vwrite "
       "(create|truncate, append, stable where fsync follows), deletes in one vremove, stats in one vgetattrs, "
       "run one after another. Speedup = vec flows/s / scalar flows/s of the same repeat (run back to back). "
       "rtt_ms is nominal (2 x delay-ms). Every read is checked (size and data pattern).\",\n"
    << "  \"total_seconds\": " << total << ",\n  \"personalities\": [\n";
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const personality& p = *chosen[i];
    o << "    {\"name\": " << jstr(p.name) << ", \"threads\": " << p.threads << ", \"files\": " << p.files
      << ", \"dirwidth\": " << p.dirwidth << ", \"prealloc_percent\": " << p.prealloc
      << ", \"flow\": " << jstr(p.description) << "}" << (i + 1 < chosen.size() ? ",\n" : "\n");
  }
  o << "  ],\n  \"runs\": [\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const run_result& r = runs[i];
    o << "    {\"personality\": " << jstr(r.personality) << ", \"mode\": " << jstr(r.mode) << ", \"delay_ms\": "
      << jstr(r.delay) << ", \"rtt_ms\": " << r.rtt_ms << ", \"repeat\": " << r.repeat << ", \"threads\": " << r.threads
      << ", \"seconds\": " << r.seconds << ", \"flows\": " << r.iterations << ", \"flows_per_second\": "
      << r.ops_per_second() << ", \"compounds\": " << r.compounds << ", \"operations\": " << r.operations
      << ", \"compounds_per_flow\": " << double(r.compounds) / double(r.iterations)
      << ", \"operations_per_flow\": " << double(r.operations) / double(r.iterations)
      << ", \"bytes_read\": " << r.n.bytes_read << ", \"bytes_written\": " << r.n.bytes_written << "}"
      << (i + 1 < runs.size() ? ",\n" : "\n");
  }
  o << "  ],\n  \"points\": [\n";
  bool first = true;
  for (const auto& rt : ratios) {
    for (const char* mode : {"vec", "scalar"}) {
      std::vector<double> v, cpf;
      for (const auto& r : runs)
        if (r.personality == rt.personality && r.delay == rt.delay && r.mode == mode) {
          v.push_back(r.ops_per_second());
          cpf.push_back(double(r.compounds) / double(r.iterations));
        }
      o << (first ? "" : ",\n") << "    {\"personality\": " << jstr(rt.personality) << ", \"mode\": " << jstr(mode)
        << ", \"delay_ms\": " << jstr(rt.delay) << ", \"rtt_ms\": " << rt.rtt_ms
        << ", \"median_flows_per_second\": " << vnfs::bench::median(v) << ", \"min_flows_per_second\": "
        << *std::min_element(v.begin(), v.end()) << ", \"max_flows_per_second\": " << *std::max_element(v.begin(), v.end())
        << ", \"median_compounds_per_flow\": " << vnfs::bench::median(cpf) << "}";
      first = false;
    }
  }
  o << "\n  ],\n  \"speedups\": [\n";
  for (std::size_t i = 0; i < ratios.size(); ++i) {
    const ratio& r = ratios[i];
    o << "    {\"personality\": " << jstr(r.personality) << ", \"delay_ms\": " << jstr(r.delay) << ", \"rtt_ms\": "
      << r.rtt_ms << ", \"speedups\": [";
    for (std::size_t k = 0; k < r.values.size(); ++k) o << (k ? ", " : "") << r.values[k];
    o << "], \"median\": " << vnfs::bench::median(r.values)
      << ", \"min\": " << *std::min_element(r.values.begin(), r.values.end())
      << ", \"max\": " << *std::max_element(r.values.begin(), r.values.end()) << "}"
      << (i + 1 < ratios.size() ? ",\n" : "\n");
  }
  o << "  ]\n}\n";
  if (!o) fail("cannot write " + out);
  std::fprintf(stderr, "wrote %s (%.1f s)\n", out.c_str(), total);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "filebench_personalities: " << e.what() << "\n";
  return 1;
}
