// bench/compound_rate — COMPOUNDs per second of a server for two small COMPOUNDs:
//   getattr: SEQUENCE, PUTFH, GETATTR (the attributes stat() needs)
//   read4k:  SEQUENCE, PUTFH, READ 4 KiB (anonymous stateid, offsets cycling over 1 MiB)
// over 1 and 16 TCP connections (one session and one thread each, one request in flight per
// connection), against vnfsd and NFS-Ganesha started on loopback by this program. The
// COMPOUNDs are encoded by hand (bench/support's raw_session): the figure is the server's.
// Every run is bounded by --seconds and by --max-compounds per connection.
// Results go to a JSON file; bench/plot_compound_rate.py draws them.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"
#include "vnfs/bench/ganesha_process.hpp"
#include "vnfs/bench/raw_session.hpp"
#include "vnfs/bench/temp_dir.hpp"
#include "vnfs/bench/vnfsd_process.hpp"

using namespace vnfs;
namespace po = boost::program_options;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::size_t file_size = 1 << 20;

// The attributes stat() needs (RFC 8881 §5.8 numbers): type, change, size, fileid, mode,
// numlinks, owner, owner_group, space_used, time_access, time_metadata, time_modify.
const std::vector<std::uint32_t> stat_attrs = {1, 3, 4, 20, 33, 35, 36, 37, 45, 47, 52, 53};

struct result {
  std::string server, workload;
  unsigned connections;
  std::uint64_t compounds;
  double seconds;
};

struct target {
  std::string name;
  std::string host;
  std::uint16_t port;
  std::vector<std::string> root_path;
};

/// One COMPOUND of `workload` (the i-th of its connection); throws unless it succeeded.
void run_one(bench::raw_session& s, const std::string& workload, const std::vector<std::byte>& fh, std::uint64_t i) {
  if (workload == "getattr") {
    if (std::uint32_t st = s.getattr(fh, stat_attrs); st != 0)
      throw std::runtime_error("GETATTR COMPOUND: NFSv4 status " + std::to_string(st));
    return;
  }
  const std::uint64_t off = (i * 4096) % file_size;
  std::size_t got = 0;
  if (std::uint32_t st = s.read(fh, off, 4096, &got); st != 0)
    throw std::runtime_error("READ COMPOUND: NFSv4 status " + std::to_string(st));
  if (got != 4096) throw std::runtime_error("short READ");
}

result measure(const target& t, const std::string& workload, unsigned connections,
               double seconds, std::uint64_t max_per_connection) {
  std::vector<std::byte> fh = bench::raw_session(t.host, t.port, t.root_path).lookup("bench.dat");
  std::vector<std::unique_ptr<bench::raw_session>> sessions;
  for (unsigned c = 0; c < connections; ++c)
    sessions.push_back(std::make_unique<bench::raw_session>(t.host, t.port, t.root_path));
  std::atomic<std::uint64_t> total{0};
  std::atomic<bool> failed{false};
  std::string failure;
  auto start = clock_type::now();
  auto deadline = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      std::uint64_t n = 0;
      try {
        while (n < max_per_connection && clock_type::now() < deadline && !failed) {
          run_one(*sessions[c], workload, fh, n + c * 97);
          ++n;
        }
      } catch (const std::exception& e) {
        if (!failed.exchange(true)) failure = e.what();
      }
      total += n;
    });
  }
  for (auto& th : threads) th.join();
  double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  if (failed) throw std::runtime_error(t.name + " " + workload + ": " + failure);
  return {t.name, workload, connections, total.load(), elapsed};
}

}  // namespace

int main(int argc, char** argv) try {
  std::string servers = "vnfsd,ganesha", workloads = "getattr,read4k", conns = "1,16";
  std::string out = "bench/results/compound_rate.json";
  double seconds = 3;
  std::uint64_t max_compounds = 1'000'000;
  po::options_description desc(
      "Usage: compound_rate [options]\n\n"
      "Measures COMPOUNDs per second of vnfsd and NFS-Ganesha (both started here on\n"
      "127.0.0.1) for a GETATTR COMPOUND and a 4 KiB READ COMPOUND over several numbers of\n"
      "connections, and writes the results as JSON.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("servers", po::value(&servers)->default_value(servers), "comma-separated: vnfsd, ganesha")
      ("workloads", po::value(&workloads)->default_value(workloads), "comma-separated: getattr, read4k")
      ("connections", po::value(&conns)->default_value(conns), "comma-separated connection counts")
      ("seconds", po::value(&seconds)->default_value(seconds), "duration of each run")
      ("max-compounds", po::value(&max_compounds)->default_value(max_compounds),
       "upper bound of COMPOUNDs per connection and run")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  if (seconds <= 0 || seconds > 600) throw std::runtime_error("--seconds must be in (0, 600]");

  std::vector<result> results;
  for (const auto& server : bench::split_list(servers, ',')) {
    std::unique_ptr<bench::temp_dir> dir;
    std::unique_ptr<bench::vnfsd_process> vnfsd;
    std::unique_ptr<bench::ganesha_process> ganesha;
    target t;
    t.name = server;
    if (server == "vnfsd") {
      dir = std::make_unique<bench::temp_dir>("vnfs-bench");
      bench::write_offset_file(dir->path() / "bench.dat", file_size);
      vnfsd = std::make_unique<bench::vnfsd_process>(dir->path(), std::vector<std::string>{"--threads", "4"});
      t.host = vnfsd->host();
      t.port = vnfsd->port();
    } else if (server == "ganesha") {
      ganesha = std::make_unique<bench::ganesha_process>();
      bench::write_offset_file(ganesha->export_dir() / "bench.dat", file_size);
      t.host = ganesha->host();
      t.port = ganesha->port();
      t.root_path = bench::split_list(ganesha->pseudo_path(), '/');
    } else {
      throw std::runtime_error("unknown server '" + server + "' (vnfsd or ganesha)");
    }
    for (const auto& w : bench::split_list(workloads, ',')) {
      if (w != "getattr" && w != "read4k") throw std::runtime_error("unknown workload '" + w + "'");
      for (const auto& c : bench::split_list(conns, ',')) {
        unsigned n = static_cast<unsigned>(std::stoul(c));
        if (n == 0 || n > 256) throw std::runtime_error("connections must be 1..256");
        std::fprintf(stderr, "%-8s %-8s %3u connection(s) ... ", server.c_str(), w.c_str(), n);
        result r = measure(t, w, n, seconds, max_compounds);
        std::fprintf(stderr, "%10.0f COMPOUNDs/s (%llu in %.2f s)\n", r.compounds / r.seconds,
                     static_cast<unsigned long long>(r.compounds), r.seconds);
        results.push_back(r);
      }
    }
  }

  std::ofstream f = bench::open_results(out, "compound_rate");
  f << "  \"seconds_per_run\": " << seconds << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    f << "    {\"server\": \"" << r.server << "\", \"workload\": \"" << r.workload
      << "\", \"connections\": " << r.connections << ", \"compounds\": " << r.compounds
      << ", \"seconds\": " << r.seconds << ", \"compounds_per_second\": " << r.compounds / r.seconds
      << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  std::cerr << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "compound_rate: " << e.what() << "\n";
  return 1;
}
