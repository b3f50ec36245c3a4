// bench/client_io — 4 KiB reads through vnfs::client against vnfsd on loopback: IOPS and
// the client's CPU seconds per GiB read, at several queue depths, into registered memory
// (direct: the payload is received from the socket into the caller's buffer) and into plain
// memory (received into a library buffer, then copied); and, as mode `sync`, one synchronous
// pread into registered memory after another (the form a program without completion groups
// uses: the calling thread sleeps until the I/O thread has the reply).
//
// vnfsd runs as a separate process (vnfsd_process), so getrusage(RUSAGE_SELF) of this
// process is the client's CPU alone. Reads go to random 4 KiB-aligned offsets of a 64 MiB
// file through one completion group that keeps `depth` reads in flight. Every run is bounded
// by --seconds and --max-reads. Results go to a JSON file; bench/plot_client_io.py draws them.
#include <fcntl.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
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

constexpr std::size_t block = 4096;

struct result {
  std::string mode;  // registered | plain | sync
  unsigned depth = 0;
  std::uint64_t reads = 0;
  vnfs::bench::client_cost cost;
};

result measure(vnfs::client& c, const vnfs::file& f, std::size_t file_size, const std::string& mode, unsigned depth,
               double seconds, std::uint64_t max_reads) {
  std::vector<std::byte> buf(depth * block);
  vnfs::memory_region mr;
  if (mode != "plain") mr = c.register_memory(buf.data(), buf.size(), vnfs::access::read);
  vnfs::completion_group g = c.make_group();
  std::mt19937_64 rng(depth * 7919 + (mode == "plain"));
  const std::uint64_t blocks = file_size / block;
  std::vector<std::uint64_t> offset_of(depth);

  auto issue = [&](unsigned slot) {
    std::uint64_t off = (rng() % blocks) * block;
    offset_of[slot] = off;
    if (mode == "registered")
      c.read(f, off, mr.slice(slot * block, block), g, slot);
    else
      c.read(f, off, std::span<std::byte>(buf).subspan(slot * block, block), g, slot);
  };

  const vnfs::bench::client_meter meter(c);
  auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  std::uint64_t issued = 0, done = 0;
  if (mode == "sync") {  // one call after another: depth is 1
    while (issued < max_reads && (issued % 64 != 0 || clock_type::now() < deadline)) {
      std::uint64_t off = (rng() % blocks) * block;
      if (c.pread(f, off, mr.slice(0, block)) != block) throw std::runtime_error("short read");
      std::uint64_t first;
      std::memcpy(&first, buf.data(), 8);
      if (first != off) throw std::runtime_error("wrong data at offset " + std::to_string(off));
      ++issued;
    }
    done = issued;
  } else {  // `depth` reads in flight through the group
    for (unsigned s = 0; s < depth && issued < max_reads; ++s, ++issued) issue(s);
    std::array<vnfs::completion, 64> batch;
    bool stop = false;
    while (done < issued) {
      const std::size_t k = vnfs::bench::take_completions(g, batch);
      for (std::size_t i = 0; i < k; ++i) {
        const auto& e = batch[i];
        if (e.status) throw std::runtime_error("read failed: " + e.status.message());
        if (e.bytes != block) throw std::runtime_error("short read");
        std::uint64_t first;
        std::memcpy(&first, buf.data() + e.tag * block, 8);
        if (first != offset_of[e.tag]) throw std::runtime_error("wrong data at offset " + std::to_string(offset_of[e.tag]));
        ++done;
        if (!stop && (issued >= max_reads || (done % 64 == 0 && clock_type::now() >= deadline))) stop = true;
        if (!stop) {
          issue(static_cast<unsigned>(e.tag));
          ++issued;
        }
      }
    }
  }
  result r;
  r.cost = meter.cost();
  r.mode = mode;
  r.depth = depth;
  r.reads = done;
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string depths = "1,8,64", modes = "registered,plain,sync";
  std::string out = "bench/results/client_io.json";
  double seconds = 3;
  std::uint64_t max_reads = 2'000'000;
  unsigned file_mib = 64, server_threads = 4;
  bool pin = false;
  po::options_description desc(
      "Usage: client_io [options]\n\n"
      "Measures 4 KiB random reads through vnfs::client against vnfsd (started here on\n"
      "127.0.0.1 as a separate process): IOPS and client CPU seconds per GiB, at several\n"
      "queue depths, into registered and into plain memory, and by synchronous preads one\n"
      "at a time (mode sync). Writes the results as JSON.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("depths", po::value(&depths)->default_value(depths), "comma-separated queue depths (1..1024)")
      ("modes", po::value(&modes)->default_value(modes), "comma-separated: registered, plain, sync (synchronous preads into registered memory, one at a time: depth 1)")
      ("seconds", po::value(&seconds)->default_value(seconds), "duration of each run")
      ("max-reads", po::value(&max_reads)->default_value(max_reads), "upper bound of reads per run")
      ("file-mib", po::value(&file_mib)->default_value(file_mib), "size of the file read (MiB)")
      ("server-threads", po::value(&server_threads)->default_value(server_threads), "vnfsd --threads")
      ("pin", po::bool_switch(&pin), "this process (the client) on the last CPU, vnfsd on the others, as on two hosts")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  if (seconds <= 0 || seconds > 600) throw std::runtime_error("--seconds must be in (0, 600]");
  if (file_mib == 0 || file_mib > 4096) throw std::runtime_error("--file-mib must be 1..4096");
  if (max_reads == 0) throw std::runtime_error("--max-reads must be positive");
  const std::size_t file_size = std::size_t(file_mib) << 20;

  vnfs::bench::temp_dir dir("vnfs-bench-client-io");
  std::fprintf(stderr, "writing a %u MiB file ...\n", file_mib);
  vnfs::bench::write_offset_file(dir.path() / "bench.dat", file_size);
  std::optional<vnfs::bench::cpu_placement> placement;
  if (pin) {
    placement.emplace();
    placement->server();
  }
  vnfs::bench::vnfsd_process server(dir.path(), {"--threads", std::to_string(server_threads)});
  if (placement) placement->client();
  std::string url = "nfs://" + server.host() + ":" + std::to_string(server.port()) + "/";
  std::fprintf(stderr, "vnfsd (pid %d) on %s\n", static_cast<int>(server.pid()), url.c_str());
  vnfs::client c = vnfs::client::connect(url);
  vnfs::file f = c.open("bench.dat", O_RDONLY);

  std::vector<result> results;
  for (const auto& m : vnfs::bench::split_list(modes, ',')) {
    if (m != "registered" && m != "plain" && m != "sync") throw std::runtime_error("unknown mode '" + m + "'");
    for (const auto& d : vnfs::bench::split_list(m == "sync" ? std::string("1") : depths, ',')) {
      unsigned depth = static_cast<unsigned>(std::stoul(d));
      if (depth == 0 || depth > 1024) throw std::runtime_error("depths must be 1..1024");
      std::fprintf(stderr, "%-10s depth %4u ... ", m.c_str(), depth);
      result r = measure(c, f, file_size, m, depth, seconds, max_reads);
      const vnfs::bench::client_cost& k = r.cost;
      const double gib = static_cast<double>(r.reads * block) / double(1u << 30), n = static_cast<double>(r.reads);
      std::fprintf(stderr,
                   "%9.0f IOPS, %6.2f CPU s/GiB, %5.1f us and %.2f+%.2f context switches per read (this thread "
                   "%.2f+%.2f, the library's %.2f+%.2f; %llu reads in %.2f s, %llu copied, %llu direct bytes)\n",
                   n / k.seconds, k.cpu_seconds() / gib, 1e6 * k.cpu_seconds() / n,
                   double(k.process.voluntary_switches) / n, double(k.process.involuntary_switches) / n,
                   double(k.caller.voluntary_switches) / n, double(k.caller.involuntary_switches) / n,
                   double(k.library().voluntary_switches) / n, double(k.library().involuntary_switches) / n,
                   static_cast<unsigned long long>(r.reads), k.seconds,
                   static_cast<unsigned long long>(k.bytes_copied), static_cast<unsigned long long>(k.bytes_direct));
      results.push_back(r);
    }
  }
  c.close(f);
  c.close();

  std::ofstream o = vnfs::bench::open_results(out, "client_io");
  o << "  \"server\": \"vnfsd\", \"server_threads\": " << server_threads << ", \"pinned\": " << (pin ? "true" : "false") << ", \"block_bytes\": " << block
    << ", \"file_bytes\": " << file_size << ",\n"
    << "  \"seconds_per_run\": " << seconds << ", \"max_reads\": " << max_reads << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const double gib = static_cast<double>(r.reads * block) / double(1u << 30);
    o << "    {\"mode\": \"" << r.mode << "\", \"depth\": " << r.depth << ", \"reads\": " << r.reads
      << ", \"iops\": " << double(r.reads) / r.cost.seconds << ", \"cpu_seconds_per_gib\": " << r.cost.cpu_seconds() / gib;
    r.cost.write_json(o);
    o << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  o << "  ]\n}\n";
  if (!o) throw std::runtime_error("cannot write " + out);
  std::cerr << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "client_io: " << e.what() << "\n";
  return 1;
}
