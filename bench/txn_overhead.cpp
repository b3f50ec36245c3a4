// bench/txn_overhead — papers/002 (TC-NFS) Figures 4-6, 11 and 12: what transactional
// COMPOUNDs cost. The same vnfs::client code against two vnfsd processes started here on
// loopback: "plain" (vnfsd --no-transactions, ordinary vwrite: UNSTABLE, no COMMIT), "durable"
// (another vnfsd --no-transactions, every WRITE DATA_SYNC4 by vio_flags::stable: on disk when
// the call returns, as a transaction's data is at its commit) and "txn" (vnfsd, every vwrite
// call one transaction). Plain is papers/002's baseline; durable says what of txn's cost is
// the durability itself. Optionally "old": a vnfsd built from before transactions
// existed (--old-vnfsd), ordinary vwrite, to check that plain COMPOUNDs did not get slower.
//
// Figures 4-6 (write) and 11 (read): `files` files of each size, split evenly over C clients
// (one vnfs::client, i.e. one connection and session, per thread, each in its own
// directory), through vnfs-netdelay at each delay (RTT = 2 x delay-ms). One repeat, per
// mode: write (create) the files, overwrite them (OPEN with truncate: the txn server backs
// up each old file), read them back (every byte compared), then remove them (untimed). The
// time of a pass is from the start of the first client to the end of the last; the ratio of
// a repeat is txn seconds / plain seconds (for C clients the inverse of relative throughput).
// What one transaction covers: one vwrite call of `batch` files, the same batches in every
// mode. When a call of files this size fits one COMPOUND (found by a probe against the txn
// server: errc::transaction_too_large halves the batch), it is client_options::atomic_vectors'
// single-COMPOUND transaction; files too large for one COMPOUND (> 4 MiB) go one call per
// vnfs::transaction, the call made by transaction::committing() (TXN_BEGIN in its first
// COMPOUND once the client knows the server, TXN_COMMIT in its last).
// Figure 12: compounding degree: one client, no proxy, `calls12` vwrite calls of d files.
//
// Every pass is bounded in bytes (--bytes-cap-mib: fewer files at the largest sizes, and the
// JSON says how many) and the run in time (after a pass longer than --sample-seconds-cap the
// point's remaining repeats are skipped and the JSON says so). Servers and proxies are child
// processes stopped by pid.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"
#include "vnfs/client.hpp"
#include "vnfs/error.hpp"
#include "vnfs/transaction.hpp"
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

/// One timed pass: its seconds and the exact COMPOUNDs of all clients (client::stats()).
struct sample {
  double seconds = 0;
  std::uint64_t compounds = 0;
};

/// One measured point: one mode, repeated.
struct point {
  std::string figure, op, mode, delay;  // delay: "direct" or vnfs-netdelay's delay-ms
  double rtt_ms = 0;
  unsigned clients = 0, files = 0, batch = 0, calls = 0;
  std::size_t size = 0;
  std::string unit;  // what one transaction is in mode txn: "compound" or "spanning"
  std::vector<sample> samples;
  bool truncated = false;
};

/// A server of one mode: the process, its export, and how clients use it.
struct server {
  std::string mode;  // plain, durable, txn, old
  std::unique_ptr<vnfs::bench::vnfsd_process> proc;
  fs::path export_dir;
  bool atomic = false;  // txn: client_options::atomic_vectors
  bool stable = false;  // durable: every write vio_flags::stable
};

/// What one client does in one pass: files dir/0..n-1 of `size` bytes, `batch` per call.
struct share {
  std::string dir;
  unsigned n = 0;
};

/// Writes (create or overwrite: create|truncate) or reads `sh`, `batch` files per call, from
/// or into `buf` (batch x size bytes; file j of a call is slice j of `pattern`). In a txn
/// mode each write call is one transaction: atomic_vectors' single COMPOUND, or (spanning)
/// a vnfs::transaction around the call. `write_flags` are added to every write's flags.
/// Reads compare every byte. Throws on any failure, with the vresult's error
/// (errc::transaction_too_large is reported as such).
void run_share(vnfs::client& c, const std::string& op, const share& sh, std::size_t size, unsigned batch,
               bool spanning, unsigned write_flags, const std::vector<std::byte>& pattern,
               std::vector<std::byte>& buf) {
  const bool write = op != "read";
  std::vector<vnfs::vio> ios;
  for (unsigned first = 0; first < sh.n; first += batch) {
    const unsigned k = std::min(batch, sh.n - first);
    ios.clear();
    for (unsigned j = 0; j < k; ++j) {
      std::string path = sh.dir + "/" + std::to_string(first + j);
      if (write)
        ios.emplace_back(std::move(path), 0, std::span<const std::byte>(pattern.data() + j * size, size),
                         vnfs::vio_flags::create | vnfs::vio_flags::truncate | write_flags);
      else
        ios.emplace_back(std::move(path), 0, std::span<std::byte>(buf.data() + j * size, size));
    }
    vnfs::vresult r;
    if (write && spanning) {
      vnfs::transaction t = vnfs::transaction::begin(c);
      r = t.committing().vwrite(ios);  // its last COMPOUND commits
      if (r.ok() && t.state() != vnfs::txn_state::committed)
        throw std::runtime_error("commit in " + sh.dir + ": not committed");
    } else {
      r = write ? c.vwrite(ios) : c.vread(ios);
    }
    if (!r.ok()) throw std::system_error(r.error, op + " " + sh.dir);
    for (unsigned j = 0; j < k; ++j) {
      if (ios[j].bytes != size) throw std::runtime_error(sh.dir + ": short transfer");
      if (!write && std::memcmp(buf.data() + j * size, pattern.data() + j * size, size) != 0)
        throw std::runtime_error(sh.dir + "/" + std::to_string(first + j) + ": wrong data");
    }
  }
}

/// Runs one pass: every client its share at once (a thread each); wall time from before the
/// first starts to after the last ends. Untimed before it: sync(), so that no pass pays for
/// data an earlier one left dirty (a transaction's commit flushes its file system: syncfs).
sample run_pass(std::vector<vnfs::client>& clients, const std::string& op, const std::vector<share>& shares,
                std::size_t size, unsigned batch, bool spanning, unsigned write_flags,
                const std::vector<std::byte>& pattern,
                std::vector<std::vector<std::byte>>& bufs) {
  std::vector<vnfs::client_stats> before;
  for (auto& c : clients) before.push_back(c.stats());
  std::vector<std::exception_ptr> errors(clients.size());
  ::sync();
  auto start = clock_type::now();
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < clients.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          run_share(clients[i], op, shares[i], size, batch, spanning, write_flags, pattern, bufs[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
  }
  sample s;
  s.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (std::size_t i = 0; i < clients.size(); ++i) s.compounds += clients[i].stats().compounds - before[i].compounds;
  return s;
}

vnfs::client connect(const std::string& url, bool atomic) {
  vnfs::client_options o;
  o.atomic_vectors = atomic;
  return vnfs::client::connect(url, o);
}

/// The largest batch (at most `want`) of `size`-byte files whose atomic vwrite is one
/// COMPOUND on `txn`: 0 when not even one file fits (then a transaction spans COMPOUNDs).
unsigned probe_batch(const server& txn, std::size_t size, unsigned want, const std::vector<std::byte>& pattern) {
  const std::string dir = "probe" + size_name(size);
  fs::create_directories(txn.export_dir / dir);
  vnfs::client c = connect("nfs://127.0.0.1:" + std::to_string(txn.proc->port()) + "/", true);
  std::vector<std::byte> none;
  unsigned k = want;
  for (; k > 0; k /= 2) {
    try {
      run_share(c, "write", share{dir, k}, size, k, false, 0, pattern, none);
      break;
    } catch (const std::system_error& e) {
      if (e.code() != vnfs::errc::transaction_too_large) throw;
    }
  }
  c.close();
  fs::remove_all(txn.export_dir / dir);
  return k;
}

void write_point(std::ostream& o, const point& p) {
  std::vector<double> secs, comps;
  for (const auto& s : p.samples) {
    secs.push_back(s.seconds);
    comps.push_back(static_cast<double>(s.compounds));
  }
  o << "    {\"figure\": \"" << p.figure << "\", \"op\": \"" << p.op << "\", \"mode\": \"" << p.mode
    << "\", \"clients\": " << p.clients << ", \"delay_ms\": \"" << p.delay << "\", \"rtt_ms\": " << p.rtt_ms
    << ", \"size\": " << p.size << ", \"files\": " << p.files << ", \"batch\": " << p.batch
    << ", \"calls\": " << p.calls << ", \"txn_unit\": \"" << p.unit << "\", \"truncated\": "
    << (p.truncated ? "true" : "false") << ",\n     \"samples\": [";
  for (std::size_t i = 0; i < p.samples.size(); ++i)
    o << (i ? ", " : "") << "{\"seconds\": " << p.samples[i].seconds << ", \"compounds\": " << p.samples[i].compounds
      << "}";
  o << "], \"median_seconds\": " << vnfs::bench::median(secs)
    << ", \"median_compounds\": " << vnfs::bench::median(comps) << "}";
}

}  // namespace

int main(int argc, char** argv) try {
  bool quick = false;
  std::string sizes, delays = "0.1,2.6", clients_list = "1,8", figures = "4,11,12", old_vnfsd, sizes12, degrees;
  std::string out = "bench/results/txn_overhead.json";
  unsigned files = 1000, repeats = 3, calls12 = 0, server_threads = 4;
  double bytes_cap_mib = 0, sample_cap = 60;
  po::options_description desc(
      "Usage: txn_overhead [options]\n\n"
      "papers/002 Figures 4-6, 11, 12: the same vnfs::client against vnfsd --no-transactions (plain:\n"
      "UNSTABLE writes; durable: every write DATA_SYNC4) and vnfsd with every vwrite call a\n"
      "transaction (txn); JSON with raw samples and ratios.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("quick", po::bool_switch(&quick), "bounded run: sizes 1K,64K,1M,16M, 8 MiB per pass, 1 repeat")
      ("figures", po::value(&figures)->default_value(figures),
       "4 (write and overwrite: Figures 4-6), 11 (read back; needs 4), 12 (compounding degree)")
      ("sizes", po::value(&sizes), "file sizes (default 1K,4K,16K,64K,256K,1M,4M,16M)")
      ("files", po::value(&files)->default_value(files), "files per pass (split over the clients; capped by bytes)")
      ("bytes-cap-mib", po::value(&bytes_cap_mib), "files x size per pass at most this (default 256; quick 8)")
      ("clients", po::value(&clients_list)->default_value(clients_list), "client counts")
      ("delays", po::value(&delays)->default_value(delays), "vnfs-netdelay --delay-ms values ('direct': no proxy)")
      ("repeats", po::value(&repeats), "passes per point and mode (default 3; quick 1)")
      ("sample-seconds-cap", po::value(&sample_cap)->default_value(sample_cap),
       "after a pass longer than this, skip the point's remaining repeats")
      ("sizes12", po::value(&sizes12), "Fig. 12 sizes (default 1K,16K,128K)")
      ("degrees", po::value(&degrees), "Fig. 12 files per call (default 1,4,16,64; quick 1,16)")
      ("calls12", po::value(&calls12), "Fig. 12 calls per point (default 250; quick 50), capped by bytes")
      ("old-vnfsd", po::value(&old_vnfsd), "also measure mode 'old': this vnfsd binary (from before transactions)")
      ("server-threads", po::value(&server_threads)->default_value(server_threads), "vnfsd --threads")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  const auto vm = vnfs::bench::parse_options(argc, argv, desc);
  if (!vm) return 0;  // --help
  if (sizes.empty()) sizes = quick ? "1K,64K,1M,16M" : "1K,4K,16K,64K,256K,1M,4M,16M";
  if (sizes12.empty()) sizes12 = "1K,16K,128K";
  if (degrees.empty()) degrees = quick ? "1,16" : "1,4,16,64";
  if (!vm->count("bytes-cap-mib")) bytes_cap_mib = quick ? 8 : 256;
  if (!vm->count("repeats")) repeats = quick ? 1 : 3;
  if (!vm->count("calls12")) calls12 = quick ? 50 : 250;
  if (repeats == 0 || repeats > 100) throw std::runtime_error("--repeats must be 1..100");
  if (files == 0 || files > 100000) throw std::runtime_error("--files must be 1..100000");
  if (calls12 == 0 || calls12 > 100000) throw std::runtime_error("--calls12 must be 1..100000");
  if (bytes_cap_mib <= 0 || bytes_cap_mib > 65536) throw std::runtime_error("--bytes-cap-mib must be in (0, 65536]");
  const std::size_t bytes_cap = static_cast<std::size_t>(bytes_cap_mib * double(mib));
  auto has = [](const std::string& list, const std::string& x) {
    auto v = vnfs::bench::split_list(list);
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<std::size_t> size_list, size_list12;
  std::vector<unsigned> client_counts, degree_list;
  for (const auto& s : vnfs::bench::split_list(sizes)) size_list.push_back(parse_size(s));
  for (const auto& s : vnfs::bench::split_list(sizes12)) size_list12.push_back(parse_size(s));
  for (const auto& s : vnfs::bench::split_list(clients_list)) client_counts.push_back(static_cast<unsigned>(std::stoul(s)));
  for (const auto& s : vnfs::bench::split_list(degrees)) degree_list.push_back(static_cast<unsigned>(std::stoul(s)));
  for (auto s : size_list) if (s == 0 || s > 64 * mib) throw std::runtime_error("sizes must be 1 B..64 MiB");
  for (auto s : size_list12) if (s == 0 || s > 4 * mib) throw std::runtime_error("sizes12 must be 1 B..4 MiB");
  for (auto c : client_counts) if (c == 0 || c > 64) throw std::runtime_error("clients must be 1..64");
  for (auto d : degree_list) if (d == 0 || d > 1024) throw std::runtime_error("degrees must be 1..1024");

  // Single-COMPOUND batches stay within vnfsd's 4 MiB request; spanning ones hold one file.
  constexpr std::size_t compound_bytes = 4 * mib;
  const std::size_t largest = std::max(*std::max_element(size_list.begin(), size_list.end()),
                                       *std::max_element(size_list12.begin(), size_list12.end()));
  const std::size_t batch12 = *std::max_element(degree_list.begin(), degree_list.end()) *
                              *std::max_element(size_list12.begin(), size_list12.end());
  std::vector<std::byte> pattern(std::max({compound_bytes, largest, batch12}));
  fill_words(pattern.data(), pattern.size(), 0x7478'6E00'0000'0000ull);

  auto started = clock_type::now();
  std::vector<server> servers;
  std::vector<vnfs::bench::temp_dir> exports;
  auto start_server = [&](const std::string& mode, std::vector<std::string> args, const std::string& binary) {
    exports.emplace_back("vnfs-bench-txn-" + mode);
    args.insert(args.begin(), {"--threads", std::to_string(server_threads)});
    if (!binary.empty()) ::setenv("VNFSD_BIN", binary.c_str(), 1);
    server s{mode, std::make_unique<vnfs::bench::vnfsd_process>(exports.back().path(), args), exports.back().path(),
             mode == "txn", mode == "durable"};
    if (!binary.empty()) ::unsetenv("VNFSD_BIN");
    servers.push_back(std::move(s));
  };
  start_server("plain", {"--no-transactions"}, "");
  start_server("durable", {"--no-transactions"}, "");
  start_server("txn", {}, "");
  if (!old_vnfsd.empty()) start_server("old", {}, old_vnfsd);
  const server& txn_server = servers[2];

  std::vector<point> points;
  // Measures `ops` (write, overwrite, read, each a pass over the same files) for every
  // mode, `repeats` times, modes interleaved per repeat; the files are removed after each
  // repeat (untimed).
  auto measure = [&](const std::string& figure, const std::string& delay, unsigned nclients, std::size_t size,
                     unsigned nfiles, unsigned batch, bool spanning, const std::vector<std::string>& ops) {
    std::vector<std::unique_ptr<vnfs::bench::netdelay_process>> proxies;
    std::vector<std::vector<vnfs::client>> clients(servers.size());
    double rtt = 0;
    for (std::size_t m = 0; m < servers.size(); ++m) {
      std::string host = "127.0.0.1";
      std::uint16_t port = servers[m].proc->port();
      if (delay != "direct") {
        proxies.push_back(std::make_unique<vnfs::bench::netdelay_process>(host, port, delay));
        port = proxies.back()->port();
        rtt = 2 * std::stod(delay);
      }
      for (unsigned i = 0; i < nclients; ++i)
        clients[m].push_back(connect("nfs://" + host + ":" + std::to_string(port) + "/", servers[m].atomic));
    }
    std::vector<std::vector<std::byte>> bufs(nclients, std::vector<std::byte>(ops.back() == "read" ? batch * size : 0));
    std::vector<point> pts;
    for (const auto& op : ops)
      for (const auto& s : servers) {
        point p{figure, op, s.mode, delay, rtt, nclients, nfiles, batch, 0, size,
                spanning ? "spanning" : "compound", {}, false};
        p.calls = (nfiles + batch - 1) / batch;
        pts.push_back(p);
      }
    for (unsigned rep = 0; rep < repeats; ++rep) {
      bool over = false;
      for (std::size_t m = 0; m < servers.size(); ++m) {
        std::vector<share> shares;
        const std::string base = "f" + figure + "/" + size_name(size) + "x" + std::to_string(batch) + "/c" +
                                 std::to_string(nclients) + "/r" + std::to_string(rep);
        for (unsigned i = 0; i < nclients; ++i) {
          share sh{base + "/" + std::to_string(i), nfiles / nclients + (i < nfiles % nclients ? 1 : 0)};
          fs::create_directories(servers[m].export_dir / sh.dir);
          shares.push_back(sh);
        }
        for (std::size_t o = 0; o < ops.size(); ++o) {
          point& p = pts[o * servers.size() + m];
          sample smp = run_pass(clients[m], ops[o], shares, size, batch, spanning && servers[m].atomic,
                                servers[m].stable ? vnfs::vio_flags::stable : 0u, pattern, bufs);
          p.samples.push_back(smp);
          over = over || smp.seconds > sample_cap;
          std::fprintf(stderr, "fig %-2s %-9s %-5s c%-2u delay %-6s %5s x%-5u batch %-4u %9.4f s %7llu COMPOUNDs\n",
                       figure.c_str(), ops[o].c_str(), servers[m].mode.c_str(), nclients, delay.c_str(),
                       size_name(size).c_str(), nfiles, batch, smp.seconds,
                       static_cast<unsigned long long>(smp.compounds));
        }
        fs::remove_all(servers[m].export_dir / base);
      }
      if (over && rep + 1 < repeats) {
        for (auto& p : pts) p.truncated = true;
        break;
      }
    }
    for (auto& cs : clients)
      for (auto& c : cs) c.close();
    for (auto& pr : proxies) pr->stop();
    for (auto& p : pts) points.push_back(std::move(p));
  };

  if (has(figures, "4")) {
    std::vector<std::string> ops = {"write", "overwrite"};
    if (has(figures, "11")) ops.push_back("read");
    for (auto size : size_list) {
      const unsigned nfiles = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(files, bytes_cap / size)));
      const unsigned want = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(nfiles, compound_bytes / size)));
      unsigned batch = probe_batch(txn_server, size, want, pattern);
      const bool spanning = batch == 0;
      if (spanning) batch = 1;
      for (const auto& delay : vnfs::bench::split_list(delays))
        for (auto nc : client_counts) {
          // Each client gets the same batch; a share smaller than a batch is one call.
          measure("4", delay, nc, size, std::max(nfiles, nc), batch, spanning, ops);
        }
    }
  }
  if (has(figures, "12")) {
    for (auto size : size_list12)
      for (auto d : degree_list) {
        const unsigned calls = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(calls12, bytes_cap / (size * d))));
        unsigned batch = probe_batch(txn_server, size, d, pattern);
        if (batch != d) {
          std::fprintf(stderr, "fig 12: %u files of %s do not fit one COMPOUND (%u do): skipped\n", d,
                       size_name(size).c_str(), batch);
          continue;
        }
        measure("12", "direct", 1, size, calls * d, d, false, {"write"});
      }
  }
  for (auto& s : servers) s.proc->stop();
  const double total = std::chrono::duration<double>(clock_type::now() - started).count();

  std::ofstream o = vnfs::bench::open_results(out, "txn_overhead");
  o << "  \"parameters\": {\"quick\": " << (quick ? "true" : "false") << ", \"figures\": \"" << figures
    << "\", \"sizes\": \"" << sizes << "\", \"files\": " << files << ", \"bytes_cap\": " << bytes_cap
    << ", \"clients\": \"" << clients_list << "\", \"delays_ms\": \"" << delays << "\", \"repeats\": " << repeats
    << ", \"sample_seconds_cap\": " << sample_cap << ", \"sizes12\": \"" << sizes12 << "\", \"degrees\": \""
    << degrees << "\", \"calls12\": " << calls12 << ", \"vnfsd_threads\": " << server_threads
    << ", \"old_vnfsd\": \"" << vnfs::bench::json_escape(old_vnfsd) << "\"},\n"
    << "  \"note\": \"Modes: plain = vnfsd --no-transactions, ordinary vwrite (UNSTABLE, no COMMIT); durable = "
       "another vnfsd --no-transactions, every write vio_flags::stable (DATA_SYNC4: on disk when the call returns); "
       "txn = vnfsd, each vwrite call one "
       "transaction (txn_unit compound: client_options::atomic_vectors, one COMPOUND; spanning: vnfs::transaction "
       "begin, the call by transaction::committing(): TXN_BEGIN in its first COMPOUND, TXN_COMMIT in its last); "
       "old = the vnfsd of --old-vnfsd, ordinary vwrite. rtt_ms is nominal (2 x delay-ms). "
       "A pass's seconds run from the start of the first client to the end of the last; ops of one repeat run on the "
       "same files: write creates them, overwrite truncates and rewrites them, read compares every byte.\",\n"
    << "  \"total_seconds\": " << total << ",\n  \"points\": [\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    write_point(o, points[i]);
    o << (i + 1 < points.size() ? ",\n" : "\n");
  }
  o << "  ]\n}\n";
  if (!o) throw std::runtime_error("cannot write " + out);
  std::fprintf(stderr, "wrote %s (%.1f s)\n", out.c_str(), total);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "txn_overhead: " << e.what() << "\n";
  return 1;
}
