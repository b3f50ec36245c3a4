// bench/vnfs_experiments — papers/000 §5, Figures 6-8, through the latency emulator.
//
// Figure 6: read, then write, `files` files of each size with one vectorized client
// (compound_vectors on: vread/vwrite packed into COMPOUNDs) and with the scalar baseline
// (compound_vectors off: each item as the scalar calls, one kernel-like round trip pattern
// per call), at each delay of vnfs-netdelay (RTT = 2 x delay-ms) and directly (no proxy: the
// "server time" of the model COMPOUNDs x RTT + server time). Each repeat runs the
// vectorized and the scalar run back to back; the speedup is computed per such pair. A
// point whose run moves 64 MiB or more first runs once untimed in each mode (warm-up).
// Figure 7: at one delay, N items split into calls of k items (compounding degree k), for
// vread, vgetattrs and vwrite.
// Figure 8: one file repeatedly opened, read and closed: the scalar calls (open, pread in
// 1 MiB pieces, close) vs one vread per iteration.
//
// Servers: vnfsd and (optionally, vectorized only unless asked) NFS-Ganesha, started here
// as child processes on 127.0.0.1 and stopped by pid; each proxy likewise. Every point is
// bounded in count (files x size capped by --bytes-cap) and in time (after a sample longer
// than --sample-seconds-cap, the remaining repeats of that point are skipped and the JSON
// says so). Next to every time: the exact COMPOUNDs and operations from client::stats().
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"
#include "vnfs/client.hpp"
#include "vnfs/bench/ganesha_process.hpp"
#include "vnfs/bench/netdelay_process.hpp"
#include "vnfs/bench/temp_dir.hpp"
#include "vnfs/bench/vnfsd_process.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

using vnfs::bench::fill_words;
using vnfs::bench::parse_size;
using vnfs::bench::size_name;

constexpr std::size_t mib = std::size_t(1) << 20;
constexpr std::size_t warm_up_bytes = 64 * mib;  // runs moving this much get an untimed warm-up run

/// One timed run and the exact round trips it made.
struct sample {
  double seconds = 0;
  std::uint64_t compounds = 0, operations = 0;
};

/// One measured point: the same run repeated.
struct point {
  std::string figure, server, op, mode, delay;  // delay: "direct" or the proxy's delay-ms
  double rtt_ms = 0;                            // nominal: 2 x delay (0 for direct)
  std::size_t size = 0;                         // bytes per file (0 for vgetattrs)
  unsigned files = 0, degree = 0, iterations = 0;
  std::vector<sample> samples;
  bool truncated = false;  // repeats skipped by the time bound
};

/// The speedup of a vectorized point over a scalar one, per pair of runs.
struct ratio {
  std::string figure, server, op, delay;
  double rtt_ms = 0;
  std::size_t size = 0;
  std::vector<double> values;
};

/// A server the clients reach: its address and the path of the export under its root.
struct target {
  std::string name, host, root;
  std::uint16_t port = 0;
  fs::path export_dir;
};

/// Creates `count` files of `size` bytes named dir/0..count-1, file i starting with word i.
void make_files(const fs::path& dir, unsigned count, std::size_t size) {
  fs::create_directories(dir);
  std::vector<std::byte> content(size);
  for (unsigned i = 0; i < count; ++i) {
    fill_words(content.data(), size, i);
    std::ofstream f(dir / std::to_string(i), std::ios::binary);
    f.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(size));
    if (!f) throw std::runtime_error("cannot write " + (dir / std::to_string(i)).string());
  }
}

/// Reads or writes dir/0..files-1 (each `size` bytes) with vread/vwrite, `per_call` items per
/// call (calls one after another), through `buf` (at least per_call x size bytes; slices of
/// `mr`, its registration with `c`, unless that is null). Reads
/// check the size and first word of each file. Throws on any failure.
sample run_vio(vnfs::client& c, bool write, const std::string& dir, unsigned files, std::size_t size,
               std::size_t per_call, std::vector<std::byte>& buf, const vnfs::memory_region* mr) {
  vnfs::client_stats s0 = c.stats();
  auto start = clock_type::now();
  std::vector<vnfs::vio> ios;
  for (unsigned first = 0; first < files; first += static_cast<unsigned>(per_call)) {
    std::size_t k = std::min<std::size_t>(per_call, files - first);
    ios.clear();
    for (std::size_t i = 0; i < k; ++i) {
      std::string path = dir + "/" + std::to_string(first + i);
      std::span<std::byte> span(buf.data() + i * size, size);
      const unsigned flags = write ? vnfs::vio_flags::create | vnfs::vio_flags::truncate : 0;
      if (mr)
        ios.emplace_back(std::move(path), 0, mr->slice(i * size, size), flags);
      else if (write)
        ios.emplace_back(std::move(path), 0, std::span<const std::byte>(span), flags);
      else
        ios.emplace_back(std::move(path), 0, span);
    }
    vnfs::vresult r = write ? c.vwrite(ios) : c.vread(ios);
    if (!r.ok()) throw std::runtime_error((write ? "vwrite " : "vread ") + dir + ": " + r.error.message());
    for (std::size_t i = 0; i < k; ++i) {
      if (ios[i].bytes != size) throw std::runtime_error(dir + ": short transfer");
      if (!write && size >= 8) {
        std::uint64_t w;
        std::memcpy(&w, buf.data() + i * size, 8);
        if (w != first + i) throw std::runtime_error(dir + ": wrong data");
      }
    }
  }
  sample s;
  s.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  vnfs::client_stats s1 = c.stats();
  s.compounds = s1.compounds - s0.compounds;
  s.operations = s1.operations - s0.operations;
  return s;
}

/// vgetattrs of dir/0..files-1, `per_call` items per call.
sample run_getattrs(vnfs::client& c, const std::string& dir, unsigned files, std::size_t per_call) {
  vnfs::client_stats s0 = c.stats();
  auto start = clock_type::now();
  std::vector<vnfs::vattr> items;
  for (unsigned first = 0; first < files; first += static_cast<unsigned>(per_call)) {
    std::size_t k = std::min<std::size_t>(per_call, files - first);
    items.clear();
    for (std::size_t i = 0; i < k; ++i) items.emplace_back(dir + "/" + std::to_string(first + i), vnfs::attr::stat);
    vnfs::vresult r = c.vgetattrs(items);
    if (!r.ok()) throw std::runtime_error("vgetattrs " + dir + ": " + r.error.message());
  }
  sample s;
  s.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  vnfs::client_stats s1 = c.stats();
  s.compounds = s1.compounds - s0.compounds;
  s.operations = s1.operations - s0.operations;
  return s;
}

/// Figure 8: `iterations` times open, read all `size` bytes, close one file: with the scalar
/// calls (pread in pieces of at most 1 MiB) or with one vread naming the file by path.
sample run_open_read_close(vnfs::client& c, bool vectorized, const std::string& path, std::size_t size,
                           unsigned iterations, std::vector<std::byte>& buf, const vnfs::memory_region* mr) {
  vnfs::client_stats s0 = c.stats();
  auto start = clock_type::now();
  for (unsigned it = 0; it < iterations; ++it) {
    std::size_t got = 0;
    if (vectorized) {
      std::vector<vnfs::vio> ios;
      if (mr)
        ios.emplace_back(path, 0, mr->slice(0, size));
      else
        ios.emplace_back(path, 0, std::span<std::byte>(buf.data(), size));
      vnfs::vresult r = c.vread(ios);
      if (!r.ok()) throw std::runtime_error("vread " + path + ": " + r.error.message());
      got = ios[0].bytes;
    } else {
      vnfs::file f = c.open(path, O_RDONLY);
      while (got < size) {
        const std::size_t want = std::min(mib, size - got);
        std::size_t n = mr ? c.pread(f, got, mr->slice(got, want))
                           : c.pread(f, got, std::span<std::byte>(buf.data() + got, want));
        if (n == 0) break;
        got += n;
      }
      c.close(f);
    }
    if (got != size) throw std::runtime_error(path + ": short read");
  }
  sample s;
  s.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  vnfs::client_stats s1 = c.stats();
  s.compounds = s1.compounds - s0.compounds;
  s.operations = s1.operations - s0.operations;
  return s;
}

/// The proxy (when delay is not "direct") and the URL to reach `t` through it.
struct path_to {
  std::unique_ptr<vnfs::bench::netdelay_process> proxy;
  std::string url;
  double rtt_ms = 0;
};

path_to route(const target& t, const std::string& delay) {
  path_to p;
  std::string host = t.host;
  std::uint16_t port = t.port;
  if (delay != "direct") {
    p.proxy = std::make_unique<vnfs::bench::netdelay_process>(t.host, t.port, delay);
    host = p.proxy->host();
    port = p.proxy->port();
    p.rtt_ms = 2 * std::stod(delay);
  }
  p.url = "nfs://" + host + ":" + std::to_string(port) + "/" + t.root;
  return p;
}

std::size_t vector_window = vnfs::client_options{}.vector_window_bytes;  // --vector-window-mib
bool registered_memory = true;                                          // --memory

vnfs::client connect(const std::string& url, bool vectorized) {
  vnfs::client_options o;
  o.compound_vectors = vectorized;
  o.vector_window_bytes = vector_window;
  return vnfs::client::connect(url, o);
}

void write_point(std::ostream& o, const point& p) {
  std::vector<double> secs, comps;
  for (const auto& s : p.samples) {
    secs.push_back(s.seconds);
    comps.push_back(static_cast<double>(s.compounds));
  }
  o << "    {\"figure\": \"" << p.figure << "\", \"server\": \"" << p.server << "\", \"op\": \"" << p.op
    << "\", \"mode\": \"" << p.mode << "\", \"delay_ms\": \"" << p.delay << "\", \"rtt_ms\": " << p.rtt_ms
    << ", \"size\": " << p.size << ", \"files\": " << p.files << ", \"degree\": " << p.degree
    << ", \"iterations\": " << p.iterations << ", \"truncated\": " << (p.truncated ? "true" : "false")
    << ",\n     \"samples\": [";
  for (std::size_t i = 0; i < p.samples.size(); ++i)
    o << (i ? ", " : "") << "{\"seconds\": " << p.samples[i].seconds << ", \"compounds\": " << p.samples[i].compounds
      << ", \"operations\": " << p.samples[i].operations << "}";
  o << "],\n     \"median_seconds\": " << vnfs::bench::median(secs)
    << ", \"min_seconds\": " << (secs.empty() ? 0 : *std::min_element(secs.begin(), secs.end()))
    << ", \"max_seconds\": " << (secs.empty() ? 0 : *std::max_element(secs.begin(), secs.end()))
    << ", \"median_compounds\": " << vnfs::bench::median(comps) << "}";
}

void write_ratio(std::ostream& o, const ratio& r) {
  o << "    {\"figure\": \"" << r.figure << "\", \"server\": \"" << r.server << "\", \"op\": \"" << r.op
    << "\", \"delay_ms\": \"" << r.delay << "\", \"rtt_ms\": " << r.rtt_ms << ", \"size\": " << r.size
    << ", \"speedups\": [";
  for (std::size_t i = 0; i < r.values.size(); ++i) o << (i ? ", " : "") << r.values[i];
  o << "], \"median\": " << vnfs::bench::median(r.values)
    << ", \"min\": " << (r.values.empty() ? 0 : *std::min_element(r.values.begin(), r.values.end()))
    << ", \"max\": " << (r.values.empty() ? 0 : *std::max_element(r.values.begin(), r.values.end())) << "}";
}

}  // namespace

int main(int argc, char** argv) try {
  bool quick = false;
  std::string figures = "6,7,8", servers = "vnfsd,ganesha", delays = "direct,0.1,0.6,2.6", ops6 = "read,write";
  std::string sizes6, sizes8, degrees = "1,2,4,8,16,32,64,128,256", out = "bench/results/vnfs_experiments.json";
  unsigned files = 1000, repeats = 3, items7 = 0, iterations8 = 0, server_threads = 4;
  double window_mib = static_cast<double>(vector_window) / mib;
  std::string memory = "registered";
  std::string delay7 = "0.1", delay8 = "0.1", ganesha_modes = "vec", vnfsd_modes = "vec,scalar";
  double bytes_cap_mib = 0, sample_cap = 60;
  po::options_description desc(
      "Usage: vnfs_experiments [options]\n\n"
      "papers/000 Figures 6-8 through vnfs-netdelay: vectorized vs scalar vnfs::client against\n"
      "vnfsd (and NFS-Ganesha), JSON with raw samples, medians, spread and COMPOUND counts.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("quick", po::bool_switch(&quick), "bounded run: sizes 1K,64K,1M (Fig. 6), 16 MiB per point, fewer items")
      ("figures", po::value(&figures)->default_value(figures), "comma-separated: 6, 7, 8")
      ("servers", po::value(&servers)->default_value(servers), "comma-separated: vnfsd, ganesha")
      ("vnfsd-modes", po::value(&vnfsd_modes)->default_value(vnfsd_modes),
       "Fig. 6 modes against vnfsd: vec, scalar (one alone, e.g. to profile the server)")
      ("ganesha-modes", po::value(&ganesha_modes)->default_value(ganesha_modes), "modes against Ganesha: vec, scalar")
      ("delays", po::value(&delays)->default_value(delays), "Fig. 6: 'direct' and/or vnfs-netdelay --delay-ms values")
      ("ops", po::value(&ops6)->default_value(ops6), "Fig. 6 operations: read and/or write")
      ("sizes", po::value(&sizes6), "Fig. 6 file sizes (default 1K,4K,16K,64K,256K,1M,4M,16M; quick 1K,64K,1M)")
      ("files", po::value(&files)->default_value(files), "Fig. 6 files per size (capped by --bytes-cap-mib)")
      ("bytes-cap-mib", po::value(&bytes_cap_mib), "files x size at most this (default 128; quick 16)")
      ("repeats", po::value(&repeats)->default_value(repeats), "runs per point")
      ("sample-seconds-cap", po::value(&sample_cap)->default_value(sample_cap),
       "after a run longer than this, skip the point's remaining repeats")
      ("degrees", po::value(&degrees)->default_value(degrees), "Fig. 7 compounding degrees")
      ("items7", po::value(&items7), "Fig. 7 items per run (default 1000; quick 256)")
      ("delay7", po::value(&delay7)->default_value(delay7), "Fig. 7 delay-ms")
      ("sizes8", po::value(&sizes8), "Fig. 8 sizes (default 1K,4K,16K,64K,256K,1M,4M,16M; quick 1K,64K,1M,16M)")
      ("iterations8", po::value(&iterations8), "Fig. 8 iterations (default 100; quick 30), also capped by bytes")
      ("delay8", po::value(&delay8)->default_value(delay8), "Fig. 8 delay-ms")
      ("server-threads", po::value(&server_threads)->default_value(server_threads), "vnfsd --threads")
      ("vector-window-mib", po::value(&window_mib)->default_value(window_mib),
       "client_options::vector_window_bytes in MiB (0: unbounded)")
      ("memory", po::value(&memory)->default_value(memory),
       "the data buffer, in both modes: registered (direct I/O: READ payload received in place) or plain (copied)")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  const auto vm = vnfs::bench::parse_options(argc, argv, desc);
  if (!vm) return 0;  // --help
  vector_window = static_cast<std::size_t>(window_mib * static_cast<double>(mib));
  if (memory != "registered" && memory != "plain") throw std::runtime_error("--memory: registered or plain");
  registered_memory = memory == "registered";
  if (sizes6.empty()) sizes6 = quick ? "1K,64K,1M" : "1K,4K,16K,64K,256K,1M,4M,16M";
  if (sizes8.empty()) sizes8 = quick ? "1K,64K,1M,16M" : "1K,4K,16K,64K,256K,1M,4M,16M";
  if (!vm->count("bytes-cap-mib")) bytes_cap_mib = quick ? 16 : 128;
  if (!vm->count("items7")) items7 = quick ? 256 : 1000;
  if (!vm->count("iterations8")) iterations8 = quick ? 30 : 100;
  for (const auto& op : vnfs::bench::split_list(ops6))
    if (op != "read" && op != "write") throw std::runtime_error("--ops: read and/or write");
  for (const auto& m : vnfs::bench::split_list(vnfsd_modes + "," + ganesha_modes))
    if (m != "vec" && m != "scalar") throw std::runtime_error("--vnfsd-modes, --ganesha-modes: vec and/or scalar");
  if (repeats == 0 || repeats > 100) throw std::runtime_error("--repeats must be 1..100");
  if (files == 0 || files > 100000) throw std::runtime_error("--files must be 1..100000");
  if (items7 == 0 || items7 > 100000) throw std::runtime_error("--items7 must be 1..100000");
  if (bytes_cap_mib <= 0 || bytes_cap_mib > 65536) throw std::runtime_error("--bytes-cap-mib must be in (0, 65536]");
  const std::size_t bytes_cap = static_cast<std::size_t>(bytes_cap_mib * double(mib));
  const std::size_t call_budget = 64 * mib;  // bytes of one vread/vwrite call (its buffer)
  auto has = [](const std::string& list, const std::string& x) {
    auto v = vnfs::bench::split_list(list);
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<std::size_t> size_list6, size_list8;
  for (const auto& s : vnfs::bench::split_list(sizes6)) size_list6.push_back(parse_size(s));
  for (const auto& s : vnfs::bench::split_list(sizes8)) size_list8.push_back(parse_size(s));
  for (auto s : size_list6) if (s == 0 || s > 64 * mib) throw std::runtime_error("sizes must be 1 B..64 MiB");
  for (auto s : size_list8) if (s == 0 || s > 64 * mib) throw std::runtime_error("sizes8 must be 1 B..64 MiB");
  auto files_for = [&](std::size_t size) {
    return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(files, bytes_cap / size)));
  };
  auto iterations_for = [&](std::size_t size) {
    return static_cast<unsigned>(std::max<std::size_t>(3, std::min<std::size_t>(iterations8, 4 * bytes_cap / size)));
  };

  // The data sets, identical on every server: r<size>/i (Fig. 6 reads), f7/i (Fig. 7, 1 KiB),
  // f8/<size> (Fig. 8). Writes go to w<size>/ and w7/.
  auto populate = [&](const fs::path& root) {
    for (auto s : size_list6) {
      make_files(root / ("r" + size_name(s)), files_for(s), s);
      fs::create_directories(root / ("w" + size_name(s)));
    }
    make_files(root / "f7", items7, 1024);
    fs::create_directories(root / "w7");
    fs::create_directories(root / "f8");
    for (auto s : size_list8) {
      std::vector<std::byte> content(s);
      fill_words(content.data(), s, 0);
      std::ofstream(root / "f8" / size_name(s), std::ios::binary)
          .write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(s));
    }
  };

  auto started = clock_type::now();
  std::vector<point> points;
  std::vector<ratio> ratios;
  std::vector<std::byte> buf(std::max<std::size_t>(call_budget, *std::max_element(size_list8.begin(), size_list8.end())));
  fill_words(buf.data(), buf.size(), 0);

  for (const auto& server : vnfs::bench::split_list(servers)) {
    vnfs::bench::temp_dir dir("vnfs-bench-experiments");
    std::unique_ptr<vnfs::bench::vnfsd_process> vnfsd;
    std::unique_ptr<vnfs::bench::ganesha_process> ganesha;
    target t;
    t.name = server;
    std::vector<std::string> modes = vnfs::bench::split_list(vnfsd_modes);
    if (server == "vnfsd") {
      std::fprintf(stderr, "[%s] creating the data sets ...\n", server.c_str());
      populate(dir.path());
      vnfsd = std::make_unique<vnfs::bench::vnfsd_process>(
          dir.path(), std::vector<std::string>{"--threads", std::to_string(server_threads)});
      t.host = vnfsd->host();
      t.port = vnfsd->port();
    } else if (server == "ganesha") {
      try {
        ganesha = std::make_unique<vnfs::bench::ganesha_process>();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "[ganesha] skipped: %s\n", e.what());
        continue;
      }
      std::fprintf(stderr, "[%s] creating the data sets ...\n", server.c_str());
      populate(ganesha->export_dir());
      t.host = ganesha->host();
      t.port = ganesha->port();
      t.root = ganesha->pseudo_path().substr(1);
      modes = vnfs::bench::split_list(ganesha_modes);
    } else {
      throw std::runtime_error("unknown server '" + server + "'");
    }

    // One point per (op, size, mode) at this delay; speedups per pair of runs.
    auto measure_pairs = [&](const std::string& figure, const std::string& delay, const std::string& op,
                             std::size_t size, unsigned degree_or_files, auto&& run) {
      // A speedup needs exactly the modes {vec, scalar}, in that order.
      const bool paired = modes.size() == 2 && modes[0] == "vec" && modes[1] == "scalar";
      path_to p = route(t, delay);
      std::vector<vnfs::client> clients;
      for (const auto& m : modes) clients.push_back(connect(p.url, m == "vec"));
      std::vector<vnfs::memory_region> regions;  // buf registered with each client
      if (registered_memory)
        for (auto& c : clients) regions.push_back(c.register_memory(buf.data(), buf.size()));
      auto region = [&](std::size_t i) { return regions.empty() ? nullptr : &regions[i]; };
      std::vector<point> pts(modes.size());
      for (std::size_t i = 0; i < modes.size(); ++i) {
        pts[i] = point{figure, server, op, modes[i], delay, p.rtt_ms, size, 0, 0, 0, {}, false};
        if (figure == "7") pts[i].degree = degree_or_files;
        else pts[i].files = degree_or_files;
      }
      ratio r{figure, server, op, delay, p.rtt_ms, size, {}};
      // A run that moves 64 MiB or more is first done once untimed per mode: the first such
      // run of a new client pays for growing its reply buffers (page faults), which would
      // otherwise land on the first repeat only.
      if (figure != "7" && size * degree_or_files >= warm_up_bytes)
        for (std::size_t i = 0; i < modes.size(); ++i) (void)run(clients[i], modes[i] == "vec", region(i));
      for (unsigned rep = 0; rep < repeats; ++rep) {
        bool over = false;
        std::vector<double> secs(modes.size());
        for (std::size_t i = 0; i < modes.size(); ++i) {
          sample s = run(clients[i], modes[i] == "vec", region(i));
          pts[i].samples.push_back(s);
          secs[i] = s.seconds;
          over = over || s.seconds > sample_cap;
          std::fprintf(stderr, "[%s] fig %s %-9s %5s %-6s delay %-6s x%-5u %9.4f s %7llu COMPOUNDs\n", server.c_str(),
                       figure.c_str(), op.c_str(), size_name(size).c_str(), modes[i].c_str(), delay.c_str(),
                       degree_or_files, s.seconds, static_cast<unsigned long long>(s.compounds));
        }
        if (paired) r.values.push_back(secs[1] / secs[0]);
        if (over && rep + 1 < repeats) {
          for (auto& x : pts) x.truncated = true;
          break;
        }
      }
      regions.clear();
      for (std::size_t i = 0; i < clients.size(); ++i) clients[i].close();
      if (p.proxy) p.proxy->stop();
      for (auto& x : pts) points.push_back(std::move(x));
      if (paired) ratios.push_back(std::move(r));
    };

    if (has(figures, "6")) {
      for (const auto& delay : vnfs::bench::split_list(delays)) {
        for (const auto& op : vnfs::bench::split_list(ops6)) {
          bool write = op == "write";
          for (auto s : size_list6) {
            unsigned n = files_for(s);
            std::size_t per_call = std::max<std::size_t>(1, call_budget / s);
            std::string d = (write ? "w" : "r") + size_name(s);
            measure_pairs("6", delay, op, s, n, [&](vnfs::client& c, bool, const vnfs::memory_region* mr) {
              return run_vio(c, write, d, n, s, per_call, buf, mr);
            });
          }
        }
      }
    }
    if (has(figures, "7") && server == "vnfsd") {
      for (const char* op : {"vread", "vgetattrs", "vwrite"}) {
        for (const auto& ds : vnfs::bench::split_list(degrees)) {
          unsigned k = static_cast<unsigned>(std::stoul(ds));
          if (k == 0 || k > 100000) throw std::runtime_error("degrees must be 1..100000");
          std::string o = op;
          std::size_t size = o == "vgetattrs" ? 0 : 1024;
          auto saved = modes;
          modes = {"vec"};
          measure_pairs("7", delay7, o, size, k, [&](vnfs::client& c, bool, const vnfs::memory_region* mr) {
            if (o == "vgetattrs") return run_getattrs(c, "f7", items7, k);
            return run_vio(c, o == "vwrite", o == "vwrite" ? "w7" : "f7", items7, 1024, k, buf, mr);
          });
          points.back().files = items7;
          modes = saved;
        }
      }
    }
    if (has(figures, "8") && server == "vnfsd") {
      for (auto s : size_list8) {
        unsigned iters = iterations_for(s);
        std::string path = "f8/" + size_name(s);
        // vec: one vread per iteration; scalar: the scalar calls (open, pread, close).
        auto saved = modes;
        modes = {"vec", "scalar"};
        measure_pairs("8", delay8, "open-read-close", s, iters,
                      [&](vnfs::client& c, bool vectorized, const vnfs::memory_region* mr) {
          return run_open_read_close(c, vectorized, path, s, iters, buf, mr);
        });
        for (std::size_t i = points.size() - 2; i < points.size(); ++i) {
          points[i].iterations = iters;
          points[i].files = 1;
        }
        modes = saved;
      }
    }
    if (vnfsd) vnfsd->stop();
    if (ganesha) ganesha->stop();
  }
  double total = std::chrono::duration<double>(clock_type::now() - started).count();

  std::ofstream o = vnfs::bench::open_results(out, "vnfs_experiments");
  o << "  \"parameters\": {\"quick\": " << (quick ? "true" : "false") << ", \"figures\": \"" << figures
    << "\", \"servers\": \"" << servers << "\", \"ganesha_modes\": \"" << ganesha_modes << "\", \"vnfsd_modes\": \"" << vnfsd_modes << "\", \"ops\": \"" << ops6 << "\", \"delays_ms\": \""
    << delays << "\", \"sizes\": \"" << sizes6 << "\", \"files\": " << files << ", \"bytes_cap\": " << bytes_cap
    << ", \"call_budget_bytes\": " << call_budget << ", \"repeats\": " << repeats
    << ", \"sample_seconds_cap\": " << sample_cap << ", \"degrees\": \"" << degrees << "\", \"items7\": " << items7
    << ", \"delay7_ms\": \"" << delay7 << "\", \"sizes8\": \"" << sizes8 << "\", \"iterations8\": " << iterations8
    << ", \"delay8_ms\": \"" << delay8 << "\", \"vnfsd_threads\": " << server_threads
    << ", \"vector_window_bytes\": " << vector_window << ", \"memory\": \"" << memory << "\"},\n"
    << "  \"note\": \"rtt_ms is nominal (2 x delay-ms of vnfs-netdelay; netdelay_rtt.json measures it). "
       "Modes: vec = compound_vectors on, scalar = compound_vectors off (Fig. 8: the scalar calls). "
       "Speedup = scalar seconds / vec seconds of the same repeat. Points moving >= 64 MiB per run had one untimed "
       "warm-up run per mode first.\",\n"
    << "  \"total_seconds\": " << total << ",\n  \"points\": [\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    write_point(o, points[i]);
    o << (i + 1 < points.size() ? ",\n" : "\n");
  }
  o << "  ],\n  \"speedups\": [\n";
  for (std::size_t i = 0; i < ratios.size(); ++i) {
    write_ratio(o, ratios[i]);
    o << (i + 1 < ratios.size() ? ",\n" : "\n");
  }
  o << "  ]\n}\n";
  if (!o) throw std::runtime_error("cannot write " + out);
  std::fprintf(stderr, "wrote %s (%.1f s)\n", out.c_str(), total);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "vnfs_experiments: " << e.what() << "\n";
  return 1;
}
