// papers/003 Figure 5 (§7.2) on vnfs: merge throughput through TPIE's raw file accessor.
//
// n sorted input files of x records of y bytes (a 64-bit key first, then payload) are merged
// into one sorted output file, in 32 KiB requests through vnfs::tpie::raw_file_accessor, the
// accessor TPIE's streams use when built with adapters/tpie/override. The merge is this
// program's own (TPIE is not packaged in Debian; with -DVNFS_TPIE_ROOT the same merge on TPIE
// itself is vnfs_tpie_merge). The record size is swept so that the CPU cost per byte changes:
// small records mean many key comparisons per byte. Throughput is 2·n·x·y / t (every byte is
// read once and written once), t from the first input open to the output's close (close
// waits for every queued write). Client CPU per MiB is getrusage of this process (vnfsd and
// vnfs-netdelay are other processes).
//
// Configurations:
//   local           the files on local disk (the upper bound)
//   sync-tcp        the accessor without read-ahead and write-behind: a plain synchronous port
//   engine-tcp      with read-ahead and write-behind (papers/003 §5.1's block transfer engine)
//   sync-tcp-delay, engine-tcp-delay   the same through vnfs-netdelay (--delay-ms each way)
//   sync-cma, engine-cma   over RPC-over-RDMA with the cma provider (no delay: vnfs-netdelay
//                   forwards TCP only)
// Each point is the median of --runs merges; the output is checked record by record.
//
//   tpie_fig5 [--quick] [--inputs N] [--input-mib M] [--sizes 16,64,...] [--runs R]
//             [--delay-ms D] --out FILE.json
#include <sys/resource.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "vnfs/bench/netdelay_process.hpp"
#include "vnfs/bench/temp_dir.hpp"
#include "vnfs/bench/vnfsd_process.hpp"
#include "vnfs/tpie/mount_stats.hpp"
#include "vnfs/tpie/mounts.hpp"
#include "vnfs/tpie/raw_file_accessor.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace vt = vnfs::tpie;

namespace {

constexpr std::size_t request_bytes = 32 << 10;  // the paper's 32 KB requests

std::uint64_t key_at(const std::byte* record) {
  std::uint64_t k;
  std::memcpy(&k, record, sizeof k);
  return k;
}

/// Record i of input j of n holds key i·n + j and a payload of bytes equal to the key's low byte.
void fill_record(std::byte* record, std::size_t size, std::uint64_t key) {
  std::memcpy(record, &key, sizeof key);
  std::memset(record + sizeof key, static_cast<int>(key & 0xff), size - sizeof key);
}

/// Reads one file in request-sized blocks, a record at a time. Records never straddle a
/// block: the record size divides the request size.
class record_reader {
 public:
  record_reader(const std::string& path, std::size_t record, vt::engine_options options) : buf_(request_bytes), record_(record) {
    f_.set_engine_options(options);
    f_.set_cache_hint(vt::cache_hint::sequential);
    f_.open_ro(path);
    remaining_ = f_.file_size_i();
  }
  /// The next record, or nullptr at the end of the file.
  const std::byte* next() {
    if (at_ == filled_) {
      if (remaining_ == 0) return nullptr;
      filled_ = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, buf_.size()));
      f_.read_i(buf_.data(), filled_);
      remaining_ -= filled_;
      at_ = 0;
    }
    const std::byte* r = buf_.data() + at_;
    at_ += record_;
    return r;
  }
  void close() { f_.close_i(); }

 private:
  vt::raw_file_accessor f_;
  std::vector<std::byte> buf_;
  std::size_t record_, at_ = 0, filled_ = 0;
  std::uint64_t remaining_ = 0;
};

/// Writes one file in request-sized blocks.
class record_writer {
 public:
  record_writer(const std::string& path, vt::engine_options options) : buf_(request_bytes) {
    f_.set_engine_options(options);
    f_.open_wo(path);
  }
  void put(const std::byte* record, std::size_t size) {
    if (at_ + size > buf_.size()) flush();
    std::memcpy(buf_.data() + at_, record, size);
    at_ += size;
  }
  /// Writes what is buffered and closes (close_i waits for every queued write).
  void close() {
    flush();
    f_.close_i();
  }

 private:
  void flush() {
    if (at_ > 0) f_.write_i(buf_.data(), at_);
    at_ = 0;
  }
  vt::raw_file_accessor f_;
  std::vector<std::byte> buf_;
  std::size_t at_ = 0;
};

struct config {
  std::string name;
  std::string dir;  // where the files go: a local directory or a path under a mounted prefix
  bool engine;      // read-ahead and write-behind
  std::string prefix;  // the mounted prefix (empty: local)
};

vt::engine_options options_of(bool engine) {
  vt::engine_options o;
  o.request_bytes = request_bytes;
  o.read_ahead = engine;
  o.write_behind = engine;
  return o;
}

struct point {
  std::string config;
  std::size_t record_bytes = 0;
  std::uint64_t records_per_input = 0;
  double seconds = 0, cpu_seconds = 0, compounds = 0;
};

std::string input_path(const config& c, unsigned j) { return c.dir + "/fig5-input-" + std::to_string(j); }

void write_inputs(const config& c, unsigned n, std::uint64_t x, std::size_t y) {
  std::vector<std::byte> rec(y);
  for (unsigned j = 0; j < n; ++j) {
    record_writer w(input_path(c, j), options_of(true));
    for (std::uint64_t i = 0; i < x; ++i) {
      fill_record(rec.data(), y, i * n + j);
      w.put(rec.data(), y);
    }
    w.close();
  }
}

/// One merge: returns its seconds and client CPU seconds.
std::pair<double, double> merge(const config& c, unsigned n, std::size_t y) {
  const double c0 = vnfs::bench::cpu_now();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<record_reader>> in;
  std::vector<const std::byte*> head;
  for (unsigned j = 0; j < n; ++j) {
    in.push_back(std::make_unique<record_reader>(input_path(c, j), y, options_of(c.engine)));
    head.push_back(in.back()->next());
  }
  record_writer out(c.dir + "/fig5-output", options_of(c.engine));
  for (;;) {  // n is small (papers/003 uses 8): a linear scan for the smallest key, as TPIE's merge of few streams
    int best = -1;
    for (unsigned j = 0; j < n; ++j)
      if (head[j] && (best < 0 || key_at(head[j]) < key_at(head[best]))) best = static_cast<int>(j);
    if (best < 0) break;
    out.put(head[best], y);
    head[best] = in[best]->next();
  }
  for (auto& r : in) r->close();
  out.close();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {s, vnfs::bench::cpu_now() - c0};
}

/// Every record of the output in key order with its payload intact; throws otherwise.
void check_output(const config& c, unsigned n, std::uint64_t x, std::size_t y) {
  record_reader r(c.dir + "/fig5-output", y, options_of(true));
  std::uint64_t k = 0;
  for (const std::byte* rec; (rec = r.next()); ++k) {
    if (key_at(rec) != k || rec[y - 1] != static_cast<std::byte>(k & 0xff))
      throw std::runtime_error(c.name + ": output record " + std::to_string(k) + " is wrong");
  }
  if (k != n * x) throw std::runtime_error(c.name + ": output has " + std::to_string(k) + " records, not " + std::to_string(n * x));
  r.close();
}

}  // namespace

int main(int argc, char** argv) try {
  po::options_description o("tpie_fig5: papers/003 Figure 5, merge throughput through the TPIE accessor");
  std::string out, sizes_arg = "16,64,256,1024,4096";
  unsigned n = 8, runs = 3;
  std::size_t input_mib = 16;
  std::string delay = "0.1";
  bool quick = false;
  o.add_options()("help,h", "this text")("out", po::value(&out), "JSON results (required)")(
      "quick", po::bool_switch(&quick), "small run: 4 MiB inputs, 1 run, sizes 16,256,4096")(
      "inputs", po::value(&n), "input files (8)")("input-mib", po::value(&input_mib), "MiB per input file (16)")(
      "sizes", po::value(&sizes_arg), "record sizes in bytes, each dividing 32768 and at least 16")(
      "runs", po::value(&runs), "merges per point; the median counts (3)")(
      "delay-ms", po::value(&delay), "vnfs-netdelay delay each way for the *-delay configurations (0.1: 0.2 ms RTT)");
  const auto vm = vnfs::bench::parse_options(argc, argv, o);
  if (!vm) return 0;  // --help
  if (out.empty()) {
    std::cout << o << "\n";
    return 2;
  }
  if (quick) {
    input_mib = 4;
    runs = 1;
    if (!vm->count("sizes")) sizes_arg = "16,256,4096";
  }
  std::vector<std::size_t> sizes;
  for (const std::string& s : vnfs::bench::split_list(sizes_arg)) {
    const std::size_t y = std::stoul(s);
    if (y < 16 || request_bytes % y != 0) throw std::invalid_argument("record size " + s + " must be >= 16 and divide 32768");
    sizes.push_back(y);
  }
  if (n == 0 || runs == 0 || input_mib == 0) throw std::invalid_argument("--inputs, --runs and --input-mib must be positive");

  vnfs::bench::temp_dir local("vnfs-fig5-local"), exp("vnfs-fig5-export");
  vnfs::bench::vnfsd_process vnfsd(exp.path(), {"--rdma", "cma:127.0.0.1:0"});
  vnfs::bench::netdelay_process nd("127.0.0.1", vnfsd.port(), delay);
  const std::string root = "/vnfs-fig5";  // mounted prefixes: never touched locally
  vt::mount(root + "/tcp", "nfs://127.0.0.1:" + std::to_string(vnfsd.port()) + "/");
  vt::mount(root + "/tcp-delay", "nfs://127.0.0.1:" + std::to_string(nd.port()) + "/");
  vt::mount(root + "/cma", "nfs+rdma://127.0.0.1:" + std::to_string(vnfsd.rdma_port()) + "/?provider=cma");
  std::vector<config> configs = {{"local", local.path().string(), false, ""}};
  for (const char* t : {"tcp", "tcp-delay", "cma"})
    for (bool engine : {false, true})
      configs.push_back({std::string(engine ? "engine-" : "sync-") + t, root + "/" + t, engine, root + "/" + t});

  std::vector<point> points;
  for (std::size_t y : sizes) {
    const std::uint64_t x = (static_cast<std::uint64_t>(input_mib) << 20) / y;
    for (const config& c : configs) {
      write_inputs(c, n, x, y);
      std::vector<double> secs, cpus, compounds;
      for (unsigned r = 0; r < runs; ++r) {
        std::optional<vnfs::client_stats> s0 = c.prefix.empty() ? std::nullopt : vt::mount_stats(c.prefix);
        auto [s, cpu] = merge(c, n, y);
        if (s0) compounds.push_back(static_cast<double>(vt::mount_stats(c.prefix)->compounds - s0->compounds));
        secs.push_back(s);
        cpus.push_back(cpu);
        check_output(c, n, x, y);
      }
      point p{c.name, y, x, vnfs::bench::median(secs), vnfs::bench::median(cpus), vnfs::bench::median(compounds)};
      const double mb = 2.0 * n * static_cast<double>(x * y) / 1e6;
      std::fprintf(stderr, "%-17s %5zu B records: %8.1f MB/s, %7.1f ms CPU per MB, %6.0f COMPOUNDs\n", c.name.c_str(), y,
                   mb / p.seconds, 1e3 * p.cpu_seconds / mb, p.compounds);
      points.push_back(p);
    }
  }
  vt::unmount_all();

  std::ofstream j = vnfs::bench::open_results(out, "tpie_fig5");
  j << "  \"inputs\": " << n << ", \"input_mib\": " << input_mib << ", \"request_bytes\": " << request_bytes
    << ", \"runs\": " << runs << ", \"delay_ms_each_way\": \"" << delay << "\",\n  \"points\": [\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const point& p = points[i];
    const double bytes = 2.0 * n * static_cast<double>(p.records_per_input * p.record_bytes);
    j << "    {\"config\": \"" << p.config << "\", \"record_bytes\": " << p.record_bytes
      << ", \"records_per_input\": " << p.records_per_input << ", \"seconds\": " << p.seconds
      << ", \"cpu_seconds\": " << p.cpu_seconds << ", \"mb_per_s\": " << bytes / 1e6 / p.seconds
      << ", \"cpu_ms_per_mb\": " << 1e3 * p.cpu_seconds / (bytes / 1e6) << ", \"compounds\": " << p.compounds << "}"
      << (i + 1 < points.size() ? "," : "") << "\n";
  }
  j << "  ]\n}\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tpie_fig5: " << e.what() << "\n";
  return 1;
}
