// bench/rdma_io — papers/003 (DAFS) Figures 3 and 4: direct reads (into registered memory)
// through vnfs::client against vnfsd, over TCP (nfs://) and over RPC-over-RDMA with the cma
// provider (nfs+rdma://...?provider=cma): bandwidth, client CPU utilization and client CPU
// seconds per GiB against block size (and per COMPOUND: the client's CPU microseconds and its
// voluntary and involuntary context switches, all threads and split into this thread's and
// the library's: bench/client_cost.hpp), for two access patterns:
// - random (Figures 3-4 left, "without read-ahead"): random block-aligned offsets, `depth`
//   blocks in flight (depth 1: one read outstanding at a time, as in the paper);
// - sequential (Figures 3-4 right, "with read-ahead"): the file in order, as the DAFS client
//   does with its asynchronous API: a read-ahead window of W blocks is kept in flight in a
//   completion group and the blocks are consumed (checked) strictly in file order; a consumed
//   block's buffer is reused for the block W further on.
// The DAFS claim under test: client CPU per byte with RDMA at most a third of TCP's.
//
// vnfsd runs as a separate process serving both transports, so getrusage(RUSAGE_SELF) of this
// process is the client's CPU alone (its I/O thread and this thread). (With cma the server's
// process_vm_writev does the copy into our memory: that CPU is the server's, as an RDMA NIC's
// DMA would be nobody's.) A block of S bytes is ceil(S / 1 MiB) client reads (the SDK's
// largest single READ) issued together into one registered slice. Every run is bounded by
// --seconds and --max-gib; every block's data is checked (its first and last words hold their
// file offsets). Then, per transport and size, vreads of several blocks of 4-64 KiB each
// (measure_vread: the planner packs each vread's READs into COMPOUNDs of several READs,
// each placed by RDMA Write in its own Write chunk). Then many small files are read (open,
// read, close; see small_files), then all of them again with one vread. Results go to a
// JSON file.
#include <fcntl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"
#include "client_cost.hpp"
#include "take_completions.hpp"
#include "vnfs/client.hpp"
#include "vnfs/bench/temp_dir.hpp"
#include "vnfs/bench/vnfsd_process.hpp"

namespace po = boost::program_options;
using clock_type = std::chrono::steady_clock;

namespace {

using vnfs::bench::parse_size;

constexpr std::size_t piece_max = 1u << 20;  // the SDK's largest single READ

struct result {
  std::string transport, pattern;
  std::size_t size = 0;
  unsigned depth = 0;
  std::uint64_t reads = 0, bytes = 0;
  vnfs::bench::client_cost cost;
  std::vector<double> repeat_cpu_per_gib;  // every repeat's CPU s/GiB; the fields above are the median repeat's
};

/// One run: `pattern` random (random block-aligned offsets, `depth` blocks in flight, each
/// slot reissued as soon as its block completes) or sequential (blocks in file order, wrapping
/// at the end; a read-ahead window of `depth` blocks in flight, consumed in order).
result measure(vnfs::client& c, const vnfs::file& f, std::size_t file_size, const std::string& pattern,
               std::size_t size, unsigned depth, double seconds, std::uint64_t max_bytes) {
  const bool sequential = pattern == "sequential";
  const std::size_t pieces = (size + piece_max - 1) / piece_max;
  std::vector<std::byte> buf(std::size_t(depth) * size);
  vnfs::memory_region mr = c.register_memory(buf.data(), buf.size(), vnfs::access::read);
  vnfs::completion_group g = c.make_group();
  std::mt19937_64 rng(depth * 7919 + size);
  const std::uint64_t blocks_in_file = file_size / size;
  std::vector<std::uint64_t> offset_of(depth);
  std::vector<std::size_t> left(depth);  // pieces of the slot's block still to complete
  std::uint64_t next_block = 0;          // sequential: the next block of the file to issue

  auto issue = [&](unsigned slot) {
    std::uint64_t off = sequential ? (next_block++ % blocks_in_file) * size : (rng() % blocks_in_file) * size;
    offset_of[slot] = off;
    left[slot] = pieces;
    for (std::size_t p = 0; p < pieces; ++p) {
      std::size_t at = p * piece_max, n = std::min(piece_max, size - at);
      c.read(f, off + at, mr.slice(std::size_t(slot) * size + at, n), g, std::uint64_t(slot) << 16 | p);
    }
  };
  // The application's use of a block: here, checking it.
  auto consume = [&](unsigned slot) {
    std::uint64_t first, last;
    std::memcpy(&first, buf.data() + std::size_t(slot) * size, 8);
    std::memcpy(&last, buf.data() + std::size_t(slot) * size + size - 8, 8);
    if (first != offset_of[slot] || last != offset_of[slot] + size - 8)
      throw std::runtime_error("wrong data at offset " + std::to_string(offset_of[slot]));
  };

  const vnfs::bench::client_meter meter(c);
  auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  std::uint64_t issued = 0, done = 0;
  if (pattern == "sync") {  // depth 1, the synchronous calls
    while ((done + 1) * size <= max_bytes && clock_type::now() < deadline) {
      const std::uint64_t off = (rng() % blocks_in_file) * size;
      offset_of[0] = off;
      for (std::size_t p = 0; p < pieces; ++p) {
        std::size_t at = p * piece_max, n = std::min(piece_max, size - at);
        if (c.pread(f, off + at, mr.slice(at, n)) != n) throw std::runtime_error("short read");
      }
      consume(0);
      ++done;
    }
    issued = done;
  }
  for (unsigned s = 0; s < depth && (issued + 1) * size <= max_bytes; ++s, ++issued) issue(s);
  // Slots hold blocks issued..done in order, block b in slot b % depth (sequential only).
  std::vector<char> ready(depth, 0);
  unsigned head = 0;  // sequential: the slot of the oldest block not yet consumed
  std::array<vnfs::completion, 64> batch;
  bool stop = false;
  auto refill = [&](unsigned slot) {
    ++done;
    if (!stop && ((issued + 1) * size > max_bytes || clock_type::now() >= deadline)) stop = true;
    if (!stop) {
      issue(slot);
      ++issued;
    }
  };
  while (done < issued) {
    const std::size_t k = vnfs::bench::take_completions(g, batch);
    for (std::size_t i = 0; i < k; ++i) {
      const auto& e = batch[i];
      if (e.status) throw std::runtime_error("read failed: " + e.status.message());
      unsigned slot = static_cast<unsigned>(e.tag >> 16);
      std::size_t p = e.tag & 0xffff;
      std::size_t want = std::min(piece_max, size - p * piece_max);
      if (e.bytes != want) throw std::runtime_error("short read");
      if (--left[slot] != 0) continue;
      if (!sequential) {
        consume(slot);
        refill(slot);
        continue;
      }
      ready[slot] = 1;
      while (ready[head] && done < issued) {  // consume in file order, then read ahead
        if (offset_of[head] != (done % blocks_in_file) * size) throw std::runtime_error("block consumed out of order");
        ready[head] = 0;
        consume(head);
        refill(head);
        head = (head + 1) % depth;
      }
    }
  }
  result r;
  r.cost = meter.cost();
  r.pattern = pattern;
  r.size = size;
  r.depth = depth;
  r.reads = done;
  r.bytes = done * size;
  return r;
}

/// Vreads of `items` blocks of `size` bytes at random block-aligned offsets of the open file
/// (PUTFH and READ each, packed into COMPOUNDs by the planner) into one registered buffer,
/// one vread after another for `seconds` (at most `max_bytes`); every block checked.
struct vread_result {
  std::string transport;
  std::size_t size = 0;
  unsigned items = 0;
  std::uint64_t vreads = 0, bytes = 0;
  vnfs::bench::client_cost cost;
};

vread_result measure_vread(vnfs::client& c, const vnfs::file& f, std::size_t file_size, std::size_t size,
                           unsigned items, double seconds, std::uint64_t max_bytes) {
  std::vector<std::byte> buf(std::size_t(items) * size);
  vnfs::memory_region mr = c.register_memory(buf.data(), buf.size(), vnfs::access::read);
  std::mt19937_64 rng(items * 7907 + size);
  const std::uint64_t blocks_in_file = file_size / size;
  std::vector<vnfs::vio> ios(items);
  vread_result r;
  r.size = size;
  r.items = items;
  const vnfs::bench::client_meter meter(c);
  const auto deadline = clock_type::now() + std::chrono::duration<double>(seconds);
  while (clock_type::now() < deadline && r.bytes < max_bytes) {
    for (unsigned i = 0; i < items; ++i) ios[i] = vnfs::vio(f, (rng() % blocks_in_file) * size, mr.slice(std::size_t(i) * size, size));
    const vnfs::vresult res = c.vread(ios);
    if (!res.ok()) throw std::runtime_error("vread: " + res.error.message());
    for (unsigned i = 0; i < items; ++i) {
      std::uint64_t first, last;
      std::memcpy(&first, buf.data() + std::size_t(i) * size, 8);
      std::memcpy(&last, buf.data() + std::size_t(i) * size + size - 8, 8);
      if (ios[i].bytes != size || first != ios[i].offset || last != ios[i].offset + size - 8)
        throw std::runtime_error("vread: wrong data at offset " + std::to_string(ios[i].offset));
    }
    r.vreads++;
    r.bytes += std::uint64_t(items) * size;
  }
  r.cost = meter.cost();
  return r;
}

/// Reads `n` small files (open, read of `file_size` bytes into registered memory, close),
/// `depth` files at a time: the many-small-files workload with the scalar calls (three
/// COMPOUNDs per file); small_files_vectorized does the same with one vread.
struct small_result {
  std::string transport;
  std::string mode = "scalar";
  unsigned files = 0, depth = 0;
  std::size_t file_size = 0;
  vnfs::bench::client_cost cost;
};

small_result small_files(vnfs::client& c, unsigned n, std::size_t fsize, unsigned depth) {
  std::vector<std::byte> buf(std::size_t(depth) * fsize);
  vnfs::memory_region mr = c.register_memory(buf.data(), buf.size(), vnfs::access::read);
  vnfs::completion_group g = c.make_group();
  std::vector<vnfs::file> files(depth);
  std::vector<unsigned> index(depth);
  enum stage : std::uint64_t { opened = 0, read_done = 1, closed = 2 };
  const vnfs::bench::client_meter meter(c);
  unsigned next = 0, finished = 0;
  auto open_next = [&](unsigned slot) {
    index[slot] = next++;
    c.open("small/" + std::to_string(index[slot]), O_RDONLY, 0, &files[slot], g, std::uint64_t(slot) << 2 | opened);
  };
  for (unsigned s = 0; s < depth && next < n; ++s) open_next(s);
  std::array<vnfs::completion, 64> batch;
  // Each file completes three operations; the loop ends when every file is closed.
  for (std::uint64_t guard = 0; finished < n && guard < std::uint64_t(n) * 3 + 1; ) {
    const std::size_t k = vnfs::bench::take_completions(g, batch);
    for (std::size_t i = 0; i < k; ++i, ++guard) {
      const auto& e = batch[i];
      if (e.status) throw std::runtime_error("small file: " + e.status.message());
      unsigned slot = static_cast<unsigned>(e.tag >> 2);
      switch (e.tag & 3) {
        case opened:
          c.read(files[slot], 0, mr.slice(std::size_t(slot) * fsize, fsize), g, std::uint64_t(slot) << 2 | read_done);
          break;
        case read_done: {
          if (e.bytes != fsize) throw std::runtime_error("small file: short read");
          std::uint64_t first;
          std::memcpy(&first, buf.data() + std::size_t(slot) * fsize, 8);
          if (first != index[slot]) throw std::runtime_error("small file: wrong data");
          c.close(files[slot], g, std::uint64_t(slot) << 2 | closed);
          break;
        }
        default:
          ++finished;
          if (next < n) open_next(slot);
      }
    }
  }
  small_result r;
  r.cost = meter.cost();
  r.files = n;
  r.depth = depth;
  r.file_size = fsize;
  return r;
}

/// The same files with one vread of all of them (opened, read and closed by the call).
small_result small_files_vectorized(vnfs::client& c, unsigned n, std::size_t fsize) {
  std::vector<std::byte> buf(std::size_t(n) * fsize);
  vnfs::memory_region mr = c.register_memory(buf.data(), buf.size(), vnfs::access::read);
  std::vector<vnfs::vio> ios;
  for (unsigned i = 0; i < n; ++i)
    ios.emplace_back("small/" + std::to_string(i), 0, mr.slice(std::size_t(i) * fsize, fsize));
  const vnfs::bench::client_meter meter(c);
  vnfs::vresult res = c.vread(ios);
  small_result r;
  r.cost = meter.cost();
  if (!res.ok()) throw std::runtime_error("vread of small files: " + res.error.message());
  for (unsigned i = 0; i < n; ++i) {
    std::uint64_t first;
    std::memcpy(&first, buf.data() + std::size_t(i) * fsize, 8);
    if (ios[i].bytes != fsize || first != i) throw std::runtime_error("vread of small files: wrong data");
  }
  r.mode = "vectorized";
  r.files = n;
  r.depth = 0;
  r.file_size = fsize;
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  const auto program_start = clock_type::now();
  std::string depths = "1", readahead = "16", patterns = "random,sequential", transports = "tcp,rdma";
  std::string sizes = "4K,8K,16K,32K,64K,128K,256K,512K,1M", vread_sizes = "4K,16K,64K";
  std::string out = "bench/results/rdma_io.json";
  double seconds = 2;
  std::uint64_t max_gib = 8;
  unsigned file_mib = 512, server_threads = 4, small_count = 1000, small_size = 4096, small_depth = 64, vread_items = 16;
  unsigned repeats = 1;
  bool pin = false;
  po::options_description desc(
      "Usage: rdma_io [options]\n\n"
      "papers/003 Figures 3-4: direct reads (registered memory) of several block sizes through\n"
      "vnfs::client against vnfsd (started here as a separate process on 127.0.0.1 with TCP\n"
      "and RPC-over-RDMA/cma listeners), over each transport, at random block-aligned offsets\n"
      "(--depths blocks in flight; 1 = no read-ahead; asynchronous calls into a completion group),\n"
      "or one synchronous call at a time (sync), and sequentially with a read-ahead window\n"
      "of --readahead blocks consumed in order: bandwidth, client CPU utilization and CPU\n"
      "seconds per GiB, COMPOUNDs and payload bytes direct/copied. Writes the results as JSON.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("sizes", po::value(&sizes)->default_value(sizes), "comma-separated block sizes, bytes or with K/M suffix (4 KiB .. 64 MiB)")
      ("patterns", po::value(&patterns)->default_value(patterns),
       "comma-separated: random, sequential, sync (random offsets, one synchronous read call at a time: "
       "the waiting thread runs the client's I/O)")
      ("depths", po::value(&depths)->default_value(depths), "random: comma-separated queue depths (1..256)")
      ("readahead", po::value(&readahead)->default_value(readahead), "sequential: comma-separated read-ahead windows in blocks (1..256)")
      ("transports", po::value(&transports)->default_value(transports), "comma-separated: tcp, rdma")
      ("seconds", po::value(&seconds)->default_value(seconds), "duration of each run")
      ("repeats", po::value(&repeats)->default_value(repeats), "runs of each point per transport, the transports taking turns; the median run (client CPU per byte) is reported (1..9)")
      ("max-gib", po::value(&max_gib)->default_value(max_gib), "upper bound of GiB read per run")
      ("file-mib", po::value(&file_mib)->default_value(file_mib), "size of the file read (MiB)")
      ("server-threads", po::value(&server_threads)->default_value(server_threads), "vnfsd --threads")
      ("pin", po::bool_switch(&pin), "this process (the client) on the last CPU, vnfsd on the others, as on two hosts")
      ("vread-sizes", po::value(&vread_sizes)->default_value(vread_sizes), "vreads: comma-separated block sizes (4 KiB .. 1 MiB; empty: none)")
      ("vread-items", po::value(&vread_items)->default_value(vread_items), "vreads: blocks per vread (1..1024)")
      ("small-files", po::value(&small_count)->default_value(small_count), "small files read per transport (0: none)")
      ("small-size", po::value(&small_size)->default_value(small_size), "bytes of each small file (8..1 MiB)")
      ("small-depth", po::value(&small_depth)->default_value(small_depth), "small files in flight (1..256)")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  if (seconds <= 0 || seconds > 600) throw std::runtime_error("--seconds must be in (0, 600]");
  if (repeats == 0 || repeats > 9) throw std::runtime_error("--repeats must be 1..9");
  if (file_mib == 0 || file_mib > 4096) throw std::runtime_error("--file-mib must be 1..4096");
  if (max_gib == 0 || max_gib > 1024) throw std::runtime_error("--max-gib must be 1..1024");
  const std::size_t file_size = std::size_t(file_mib) << 20;

  vnfs::bench::temp_dir dir("vnfs-bench-rdma-io");
  std::fprintf(stderr, "writing a %u MiB file ...\n", file_mib);
  vnfs::bench::write_offset_file(dir.path() / "bench.dat", file_size);
  if (small_size < 8 || small_size > (1u << 20)) throw std::runtime_error("--small-size must be 8..1048576");
  if (small_depth == 0 || small_depth > 256) throw std::runtime_error("--small-depth must be 1..256");
  if (small_count > 100000) throw std::runtime_error("--small-files must be at most 100000");
  std::filesystem::create_directory(dir.path() / "small");
  for (unsigned i = 0; i < small_count; ++i) {  // file i starts with the 8-byte word i
    std::vector<std::byte> content(small_size, std::byte{0});
    std::uint64_t w = i;
    std::memcpy(content.data(), &w, 8);
    std::ofstream(dir.path() / "small" / std::to_string(i), std::ios::binary)
        .write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
  }
  std::optional<vnfs::bench::cpu_placement> placement;
  if (pin) {
    placement.emplace();
    placement->server();
  }
  vnfs::bench::vnfsd_process server(dir.path(), {"--threads", std::to_string(server_threads), "--rdma", "cma:127.0.0.1:0"});
  if (placement) placement->client();
  std::fprintf(stderr, "vnfsd (pid %d): tcp port %u, rdma+cma port %u\n", static_cast<int>(server.pid()),
               server.port(), server.rdma_port());

  // (pattern, depth) runs at each size: random at each --depths, sequential at each --readahead.
  std::vector<std::pair<std::string, std::string>> runs;
  for (const auto& p : vnfs::bench::split_list(patterns, ',')) {
    if (p == "sync") {
      runs.emplace_back(p, "1");
      continue;
    }
    if (p != "random" && p != "sequential") throw std::runtime_error("unknown pattern '" + p + "'");
    for (const auto& d : vnfs::bench::split_list(p == "random" ? depths : readahead, ',')) runs.emplace_back(p, d);
  }
  // One client per transport, all connected first; the transports take turns at each point so
  // that the VM's drifting background load hits both alike.
  std::vector<std::string> names = vnfs::bench::split_list(transports, ',');
  std::vector<vnfs::client> clients;
  std::vector<vnfs::file> files;
  for (const auto& t : names) {
    std::string url;
    if (t == "tcp") url = "nfs://" + server.host() + ":" + std::to_string(server.port()) + "/";
    else if (t == "rdma") url = "nfs+rdma://127.0.0.1:" + std::to_string(server.rdma_port()) + "/?provider=cma";
    else throw std::runtime_error("unknown transport '" + t + "'");
    clients.push_back(vnfs::client::connect(url));
    files.push_back(clients.back().open("bench.dat", O_RDONLY));
  }

  std::vector<result> results;
  std::vector<vread_result> vreads;
  std::vector<small_result> smalls;
  for (const auto& s : vnfs::bench::split_list(sizes, ',')) {
    std::size_t size = parse_size(s);
    if (size < 4096 || size > (64u << 20) || size % 8 != 0 || size > file_size)
      throw std::runtime_error("sizes must be multiples of 8 in 4 KiB .. 64 MiB and fit the file");
    for (const auto& [pattern, d] : runs) {
      unsigned depth = static_cast<unsigned>(std::stoul(d));
      if (depth == 0 || depth > 256) throw std::runtime_error("depths and read-ahead windows must be 1..256");
      if (std::size_t(depth) * size > (512u << 20)) {
        std::fprintf(stderr, "%-10s %8zu x %3u: skipped (more than 512 MiB of buffers)\n", pattern.c_str(), size, depth);
        continue;
      }
      std::vector<std::vector<result>> runs_of(names.size());  // per transport, one per repeat
      for (unsigned rep = 0; rep < repeats; ++rep) {
        for (std::size_t ti = 0; ti < names.size(); ++ti) {
          const std::string& t = names[ti];
          std::fprintf(stderr, "%-4s %-10s %8zu x %3u ... ", t.c_str(), pattern.c_str(), size, depth);
          result r = measure(clients[ti], files[ti], file_size, pattern, size, depth, seconds, max_gib << 30);
          r.transport = t;
          const vnfs::bench::client_cost& k = r.cost;
          const double gib = static_cast<double>(r.bytes) / double(1u << 30), n = double(k.compounds);
          std::fprintf(stderr,
                       "%8.1f MB/s, client CPU %5.1f%%, %6.3f s/GiB, %.1f us and %.2f+%.2f context switches per "
                       "COMPOUND (this thread %.2f+%.2f, the library's %.2f+%.2f; %llu blocks, %llu COMPOUNDs, %llu "
                       "direct, %llu copied bytes)\n",
                       double(r.bytes) / k.seconds / 1e6, 100 * k.cpu_seconds() / k.seconds, k.cpu_seconds() / gib,
                       1e6 * k.cpu_seconds() / n, double(k.process.voluntary_switches) / n,
                       double(k.process.involuntary_switches) / n, double(k.caller.voluntary_switches) / n,
                       double(k.caller.involuntary_switches) / n, double(k.library().voluntary_switches) / n,
                       double(k.library().involuntary_switches) / n, static_cast<unsigned long long>(r.reads),
                       static_cast<unsigned long long>(k.compounds), static_cast<unsigned long long>(k.bytes_direct),
                       static_cast<unsigned long long>(k.bytes_copied));
          runs_of[ti].push_back(r);
        }
      }
      for (auto& rs : runs_of) {
        auto per_gib = [](const result& r) { return r.cost.cpu_seconds() / std::max(1.0, double(r.bytes)) * double(1u << 30); };
        std::vector<double> all;
        for (const auto& r : rs) all.push_back(per_gib(r));
        std::sort(rs.begin(), rs.end(), [&](const result& a, const result& b) { return per_gib(a) < per_gib(b); });
        result median = rs[rs.size() / 2];
        median.repeat_cpu_per_gib = std::move(all);
        results.push_back(std::move(median));
      }
    }
  }
  if (vread_items == 0 || vread_items > 1024) throw std::runtime_error("--vread-items must be 1..1024");
  for (const auto& s : vnfs::bench::split_list(vread_sizes, ',')) {
    const std::size_t size = parse_size(s);
    if (size < 4096 || size > (1u << 20) || size % 8 != 0 || size > file_size)
      throw std::runtime_error("vread sizes must be multiples of 8 in 4 KiB .. 1 MiB and fit the file");
    for (std::size_t ti = 0; ti < names.size(); ++ti) {
      std::fprintf(stderr, "%-4s vread %4u x %8zu ... ", names[ti].c_str(), vread_items, size);
      vread_result r = measure_vread(clients[ti], files[ti], file_size, size, vread_items, seconds, max_gib << 30);
      r.transport = names[ti];
      const double gib = static_cast<double>(r.bytes) / double(1u << 30);
      std::fprintf(stderr, "%8.1f MB/s, %6.3f client CPU s/GiB, %.2f COMPOUNDs per vread (%llu direct, %llu copied bytes)\n",
                   double(r.bytes) / r.cost.seconds / 1e6, r.cost.cpu_seconds() / gib,
                   double(r.cost.compounds) / double(r.vreads), static_cast<unsigned long long>(r.cost.bytes_direct),
                   static_cast<unsigned long long>(r.cost.bytes_copied));
      vreads.push_back(r);
    }
  }
  for (std::size_t ti = 0; ti < names.size(); ++ti) {
    vnfs::client& c = clients[ti];
    const std::string& t = names[ti];
    if (small_count > 0) {
      for (small_result r : {small_files(c, small_count, small_size, small_depth),
                             small_files_vectorized(c, small_count, small_size)}) {
        r.transport = t;
        std::fprintf(stderr, "%-4s %u small files of %zu bytes, %s: %.3f s, %.3f client CPU s, %llu COMPOUNDs\n",
                     t.c_str(), r.files, r.file_size, r.mode.c_str(), r.cost.seconds, r.cost.cpu_seconds(),
                     static_cast<unsigned long long>(r.cost.compounds));
        smalls.push_back(r);
      }
    }
    c.close(files[ti]);
    c.close();
  }

  std::ofstream o = vnfs::bench::open_results(out, "rdma_io");
  o << "  \"total_seconds\": " << std::chrono::duration<double>(clock_type::now() - program_start).count() << ",\n";
  o << "  \"server\": \"vnfsd\", \"server_threads\": " << server_threads << ", \"pinned\": " << (pin ? "true" : "false") << ", \"rdma_provider\": \"cma\""
    << ", \"file_bytes\": " << file_size << ",\n"
    << "  \"seconds_per_run\": " << seconds << ", \"repeats\": " << repeats << ", \"max_gib_per_run\": " << max_gib << ", \"patterns\": \"" << patterns
    << "\", \"depths\": \"" << depths << "\", \"readahead\": \"" << readahead << "\",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    double gib = static_cast<double>(r.bytes) / double(1u << 30);
    o << "    {\"transport\": \"" << r.transport << "\", \"pattern\": \"" << r.pattern << "\", \"size\": " << r.size
      << ", \"depth\": " << r.depth << ", \"reads\": " << r.reads << ", \"bytes\": " << r.bytes
      << ", \"mb_per_second\": " << double(r.bytes) / r.cost.seconds / 1e6
      << ", \"mib_per_second\": " << double(r.bytes) / r.cost.seconds / double(1u << 20)
      << ", \"cpu_utilization_percent\": " << 100 * r.cost.cpu_seconds() / r.cost.seconds
      << ", \"cpu_seconds_per_gib\": " << r.cost.cpu_seconds() / gib;
    r.cost.write_json(o);
    o << ", \"repeat_cpu_seconds_per_gib\": [";
    for (std::size_t k = 0; k < r.repeat_cpu_per_gib.size(); ++k) o << (k ? ", " : "") << r.repeat_cpu_per_gib[k];
    o << "]}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  o << "  ],\n  \"vreads\": [\n";
  for (std::size_t i = 0; i < vreads.size(); ++i) {
    const auto& r = vreads[i];
    const double gib = static_cast<double>(r.bytes) / double(1u << 30);
    o << "    {\"transport\": \"" << r.transport << "\", \"size\": " << r.size << ", \"items\": " << r.items
      << ", \"vreads\": " << r.vreads << ", \"bytes\": " << r.bytes
      << ", \"mb_per_second\": " << double(r.bytes) / r.cost.seconds / 1e6
      << ", \"cpu_seconds_per_gib\": " << r.cost.cpu_seconds() / gib
      << ", \"compounds_per_vread\": " << double(r.cost.compounds) / double(r.vreads);
    r.cost.write_json(o);
    o << "}" << (i + 1 < vreads.size() ? "," : "") << "\n";
  }
  o << "  ],\n  \"small_files\": [\n";
  for (std::size_t i = 0; i < smalls.size(); ++i) {
    const auto& r = smalls[i];
    o << "    {\"transport\": \"" << r.transport << "\", \"mode\": \"" << r.mode << "\", \"files\": " << r.files << ", \"file_bytes\": " << r.file_size
      << ", \"depth\": " << r.depth;
    r.cost.write_json(o);
    o << "}" << (i + 1 < smalls.size() ? "," : "") << "\n";
  }
  o << "  ]\n}\n";
  if (!o) throw std::runtime_error("cannot write " + out);
  std::cerr << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "rdma_io: " << e.what() << "\n";
  return 1;
}
