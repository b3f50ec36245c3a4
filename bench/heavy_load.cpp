// Heavy load against vnfsd (a separate process on loopback): N clients, each its own
// connection and session, each sending COMPOUNDS of mixed work in its own directory until its
// client::stats() counts that many COMPOUNDs: writes (create, truncate, write), reads,
// exclusive creates, removes, renames and getattrs, one vectorized call with one item each.
// Every read is compared byte for byte with what that client wrote, every getattr's size
// with the size written, and at the end every file on disk (read directly from the export)
// with the client's model of it, and nothing else may be there. Any failed call, mismatch or
// stray file is an error; the run fails unless there are none.
//
// Reported (JSON): calls and COMPOUNDs, errors, bytes checked, p50/p99/max latency of a call,
// wall time, vnfsd's peak RSS (VmHWM from /proc/PID/status).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"
#include "vnfs/bench/temp_dir.hpp"
#include "vnfs/bench/vnfsd_process.hpp"
#include "vnfs/client.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using bytes = std::vector<std::byte>;

namespace {

std::size_t peak_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

bytes content(std::mt19937_64& rng, std::size_t n) {
  bytes b(n);
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t x = rng();
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) b[i + k] = std::byte(x >> (8 * k));
  }
  return b;
}

/// One client's run: its model of its directory, its latencies and its errors.
struct worker {
  int id;
  std::string dir;
  std::map<std::string, bytes> files;  // name in dir -> content
  std::vector<double> latency_us;
  std::uint64_t calls = 0, compounds = 0, errors = 0, bytes_checked = 0, next_name = 0;
  std::string first_error;

  void error(const std::string& what) {
    if (errors++ == 0) first_error = dir + ": " + what;
  }

  std::string pick(std::mt19937_64& rng) const {
    auto it = files.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(rng() % files.size()));
    return it->first;
  }

  void run(const std::string& url, std::uint64_t target, std::size_t max_file) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(id) * 7919 + 1);
    vnfs::client c = vnfs::client::connect(url);
    auto timed = [&](auto&& call) {
      auto t0 = clock_type::now();
      vnfs::vresult r = call();
      latency_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
      ++calls;
      return r;
    };
    if (auto r = c.ensure_directory(dir, 0755); !r.ok()) return error("mkdir: " + r.error.message());
    const std::uint64_t start = c.stats().compounds;
    while (c.stats().compounds - start < target && errors < 10) {
      unsigned kind = files.size() < 4 ? 0 : static_cast<unsigned>(rng() % 6);
      if (kind == 0 || kind == 2) {  // write (create or overwrite) / exclusive create of a new name
        std::string name = kind == 2 || files.empty() || rng() % 2 ? "f" + std::to_string(next_name++) : pick(rng);
        bytes data = content(rng, 1 + rng() % max_file);
        unsigned flags = vnfs::vio_flags::create | (kind == 2 ? vnfs::vio_flags::exclusive : vnfs::vio_flags::truncate);
        std::vector<vnfs::vio> w{vnfs::vio(vnfs::vfile(dir + "/" + name), 0, std::span<const std::byte>(data), flags)};
        vnfs::vresult r = timed([&] { return c.vwrite(w); });
        if (!r.ok() || w[0].bytes != data.size()) {
          error("write " + name + ": " + r.error.message());
          continue;
        }
        files[name] = std::move(data);
      } else if (kind == 1) {  // read back whole, checked
        std::string name = pick(rng);
        const bytes& want = files[name];
        bytes got(want.size() + 1);
        std::vector<vnfs::vio> rd{vnfs::vio(vnfs::vfile(dir + "/" + name), 0, std::span<std::byte>(got))};
        vnfs::vresult r = timed([&] { return c.vread(rd); });
        if (!r.ok() || rd[0].bytes != want.size() || !std::equal(want.begin(), want.end(), got.begin()))
          error("read " + name + ": " + (r.ok() ? "wrong bytes" : r.error.message()));
        else
          bytes_checked += want.size();
      } else if (kind == 3) {  // remove
        std::string name = pick(rng);
        std::vector<std::string> p{dir + "/" + name};
        vnfs::vresult r = timed([&] { return c.vremove(p); });
        if (!r.ok()) error("remove " + name + ": " + r.error.message());
        files.erase(name);
      } else if (kind == 4) {  // rename to a new name
        std::string from = pick(rng), to = "f" + std::to_string(next_name++);
        std::vector<vnfs::vrename_item> items{{dir + "/" + from, dir + "/" + to}};
        vnfs::vresult r = timed([&] { return c.vrename(items); });
        if (!r.ok()) {
          error("rename " + from + ": " + r.error.message());
          continue;
        }
        files[to] = std::move(files[from]);
        files.erase(from);
      } else {  // getattrs: the size written
        std::string name = pick(rng);
        std::vector<vnfs::vattr> a{vnfs::vattr(dir + "/" + name, vnfs::attr::size | vnfs::attr::type)};
        vnfs::vresult r = timed([&] { return c.vgetattrs(a); });
        if (!r.ok() || a[0].stat.size != files[name].size()) error("getattrs " + name);
      }
    }
    compounds = c.stats().compounds - start;
  }

  /// The directory on disk against the model: same names, same bytes.
  void check_disk(const fs::path& export_dir) {
    std::size_t seen = 0;
    for (const auto& e : fs::directory_iterator(export_dir / dir)) {
      auto it = files.find(e.path().filename().string());
      if (it == files.end()) {
        error("on disk but not expected: " + e.path().filename().string());
        continue;
      }
      ++seen;
      std::ifstream in(e.path(), std::ios::binary);
      std::string s((std::istreambuf_iterator<char>(in)), {});
      if (s.size() != it->second.size() || !std::equal(it->second.begin(), it->second.end(),
                                                       reinterpret_cast<const std::byte*>(s.data())))
        error("on disk with other bytes: " + it->first);
      else
        bytes_checked += s.size();
    }
    if (seen != files.size()) error("files missing on disk: " + std::to_string(files.size() - seen));
  }
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  unsigned clients = 64, threads = 4;
  std::uint64_t compounds = 10000;
  std::size_t max_file = 16384;
  std::string out = "bench/results/heavy_load.json";
  bool quick = false;
  po::options_description desc(
      "heavy_load: N clients x M COMPOUNDs of mixed reads, writes, creates, removes, renames and getattrs\n"
      "against vnfsd on loopback; every byte checked. Exits 1 on any error.\nOptions");
  desc.add_options()("help,h", "this help")
      ("clients", po::value(&clients)->default_value(clients), "clients, one connection and session each")
      ("compounds", po::value(&compounds)->default_value(compounds), "COMPOUNDs each client sends")
      ("max-file", po::value(&max_file)->default_value(max_file), "largest file written, bytes")
      ("threads", po::value(&threads)->default_value(threads), "vnfsd --threads")
      ("quick", po::bool_switch(&quick), "8 clients x 1000 COMPOUNDs")
      ("out", po::value(&out)->default_value(out), "JSON result file");
  try {
    if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  } catch (const po::error& e) {
    std::cerr << "heavy_load: " << e.what() << "\n";
    return 2;
  }
  if (quick) {
    clients = 8;
    compounds = 1000;
  }

  vnfs::bench::temp_dir dir;
  vnfs::bench::vnfsd_process server(dir.path(), {"--threads", std::to_string(threads)});
  const std::string url = "nfs://127.0.0.1:" + std::to_string(server.port()) + "/";
  std::vector<worker> workers(clients);
  auto t0 = clock_type::now();
  {
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < clients; ++i) {
      workers[i].id = static_cast<int>(i);
      workers[i].dir = "c" + std::to_string(i);
      ts.emplace_back([&, i] {
        try {
          workers[i].run(url, compounds, max_file);
        } catch (const std::exception& e) {
          workers[i].error(std::string("exception: ") + e.what());
        }
      });
    }
    for (auto& t : ts) t.join();
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  const std::size_t rss = peak_rss_kib(server.pid());
  const bool alive = server.running();
  for (auto& w : workers) w.check_disk(dir.path());

  std::uint64_t calls = 0, total_compounds = 0, errors = 0, checked = 0;
  std::vector<double> lat;
  std::string first_error;
  for (auto& w : workers) {
    calls += w.calls;
    total_compounds += w.compounds;
    errors += w.errors;
    checked += w.bytes_checked;
    lat.insert(lat.end(), w.latency_us.begin(), w.latency_us.end());
    if (first_error.empty()) first_error = w.first_error;
  }
  if (!alive) ++errors;
  const double p50 = percentile(lat, 0.50), p99 = percentile(lat, 0.99);
  const double worst = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());

  auto o = vnfs::bench::open_results(out, "heavy_load");
  o << "  \"parameters\": {\"clients\": " << clients << ", \"compounds_per_client\": " << compounds
    << ", \"max_file\": " << max_file << ", \"vnfsd_threads\": " << threads << ", \"quick\": " << (quick ? "true" : "false")
    << "},\n  \"calls\": " << calls << ",\n  \"compounds\": " << total_compounds << ",\n  \"errors\": " << errors
    << ",\n  \"first_error\": \"" << vnfs::bench::json_escape(first_error) << "\",\n  \"bytes_checked\": " << checked
    << ",\n  \"seconds\": " << seconds << ",\n  \"compounds_per_second\": " << double(total_compounds) / seconds
    << ",\n  \"latency_us\": {\"p50\": " << p50 << ", \"p99\": " << p99 << ", \"max\": " << worst
    << "},\n  \"vnfsd_peak_rss_kib\": " << rss << ",\n  \"vnfsd_alive\": " << (alive ? "true" : "false") << "\n}\n";
  std::cout << clients << " clients, " << total_compounds << " COMPOUNDs in " << calls << " calls, " << seconds
            << " s; errors " << errors << (first_error.empty() ? "" : " (first: " + first_error + ")") << "; "
            << checked << " bytes checked; call latency p50 " << p50 << " us, p99 " << p99 << " us; vnfsd peak RSS "
            << rss << " KiB\n";
  return errors == 0 ? 0 : 1;
}
