// papers/003 Figure 7 (§7.4) on vnfs: Berkeley DB read-only transactions, each reading one
// small record chosen uniformly at random from a B-tree with 16 KiB pages, warm cache, the
// database swept from 1/4 to 4 times the Berkeley DB cache. Each record is touched twice on
// average (transactions = 2 x records, capped by --max-txns). Transactions per second and
// client CPU per transaction (getrusage of this process; vnfsd is another process) for:
//   local            the database on local disk (the upper bound)
//   tcp, cma         vnfs::bdb over vnfsd, TCP and RPC-over-RDMA (cma); the cache region is
//                    registered memory: a miss is one READ straight into the cache
//   tcp-delay        vnfs over TCP through vnfs-netdelay (--delay-ms, each way)
//   tcp-unregistered the same environment with its regions left unregistered
//                    (vnfs::bdb::region_options): every page read through a library
//                    buffer and copied
// Per point: Berkeley DB's cache misses per transaction, COMPOUNDs per transaction, and the
// measured time of one 16 KiB READ on the same client, for the model
// 1 / (misses per transaction x READ time).
//
//   bdb_fig7 [--quick] [--cache-mib N] [--max-txns N] [--delay-ms D] --out FILE.json
#include <db.h>
#include <fcntl.h>
#include <sys/resource.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "vnfs/bdb/attach.hpp"
#include "vnfs/bench/netdelay_process.hpp"
#include "vnfs/bench/temp_dir.hpp"
#include "vnfs/bench/vnfsd_process.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace {

constexpr u_int32_t page_size = 16384;

void check(int ret, const char* what) {
  if (ret != 0) throw std::runtime_error(std::string(what) + ": " + db_strerror(ret));
}

std::string key_of(long i) {
  char b[24];
  std::snprintf(b, sizeof b, "k%09ld", i);
  return b;
}

struct point {
  std::string config;
  double db_mib = 0, cache_mib = 0;
  long records = 0, txns = 0;
  double seconds = 0, cpu_seconds = 0, misses_per_txn = 0, compounds_per_txn = 0, copied_per_txn = 0;
};

DB_ENV* open_env(const fs::path& home, std::size_t cache, bool priv, bool txn) {
  DB_ENV* env = nullptr;
  check(db_env_create(&env, 0), "db_env_create");
  env->set_errfile(env, stderr);
  check(env->set_cachesize(env, 0, static_cast<u_int32_t>(cache), 1), "set_cachesize");
  u_int32_t flags = DB_CREATE | DB_INIT_MPOOL | (priv ? DB_PRIVATE : 0);
  if (txn) flags |= DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG;
  if (txn) check(env->set_flags(env, DB_TXN_NOSYNC, 1), "set_flags");
  check(env->open(env, home.c_str(), flags, 0), "env open");
  return env;
}

/// Loads `records` records of about 100 bytes into home/fig7.db (16 KiB pages).
void load(const fs::path& home, long records) {
  DB_ENV* env = open_env(home, 64 << 20, true, false);
  DB* db = nullptr;
  check(db_create(&db, env, 0), "db_create");
  check(db->set_pagesize(db, page_size), "set_pagesize");
  check(db->open(db, nullptr, "fig7.db", nullptr, DB_BTREE, DB_CREATE | DB_TRUNCATE, 0644), "db open");
  std::string value(90, 'v');
  for (long i = 0; i < records; ++i) {
    std::string k = key_of(i);
    DBT key{}, val{};
    key.data = k.data();
    key.size = static_cast<u_int32_t>(k.size());
    val.data = value.data();
    val.size = static_cast<u_int32_t>(value.size());
    check(db->put(db, nullptr, &key, &val, 0), "put");
  }
  check(db->close(db, 0), "db close");
  check(env->close(env, 0), "env close");
}

/// The random read-only transactions on a warm cache.
point run(const std::string& config, const fs::path& home, const std::string& prefix, long records,
          std::size_t cache, long max_txns) {
  DB_ENV* env = open_env(home, cache, false, true);
  DB* db = nullptr;
  check(db_create(&db, env, 0), "db_create");
  check(db->open(db, nullptr, "fig7.db", nullptr, DB_BTREE, DB_AUTO_COMMIT, 0), "db open");
  std::mt19937_64 rng(42);
  auto one = [&](long i) {
    DB_TXN* t = nullptr;
    check(env->txn_begin(env, nullptr, &t, 0), "txn_begin");
    std::string k = key_of(i);
    DBT key{}, val{};
    key.data = k.data();
    key.size = static_cast<u_int32_t>(k.size());
    char buf[128];
    val.data = buf;
    val.ulen = sizeof buf;
    val.flags = DB_DBT_USERMEM;
    check(db->get(db, t, &key, &val, 0), "get");
    check(t->commit(t, 0), "commit");
  };
  const long txns = std::min(2 * records, max_txns);
  for (long n = 0; n < std::min(records, txns); ++n) one(static_cast<long>(rng() % records));  // warm
  DB_MPOOL_STAT* ms = nullptr;
  check(env->memp_stat(env, &ms, nullptr, DB_STAT_CLEAR), "memp_stat");
  std::free(ms);
  std::optional<vnfs::client_stats> s0 = prefix.empty() ? std::nullopt : vnfs::bdb::stats(prefix);
  double c0 = vnfs::bench::cpu_now();
  auto t0 = std::chrono::steady_clock::now();
  for (long n = 0; n < txns; ++n) one(static_cast<long>(rng() % records));
  point p;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.cpu_seconds = vnfs::bench::cpu_now() - c0;
  check(env->memp_stat(env, &ms, nullptr, 0), "memp_stat");
  p.misses_per_txn = static_cast<double>(ms->st_cache_miss) / static_cast<double>(txns);
  std::free(ms);
  if (s0) {
    vnfs::client_stats s1 = *vnfs::bdb::stats(prefix);
    p.compounds_per_txn = static_cast<double>(s1.compounds - s0->compounds) / static_cast<double>(txns);
    p.copied_per_txn = static_cast<double>(s1.payload_bytes_copied - s0->payload_bytes_copied) / static_cast<double>(txns);
  }
  p.config = config;
  p.records = records;
  p.txns = txns;
  p.db_mib = static_cast<double>(fs::exists(home / "fig7.db") ? fs::file_size(home / "fig7.db") : 0) / (1 << 20);
  check(db->close(db, 0), "db close");
  check(env->close(env, 0), "env close");
  return p;
}

/// Mean seconds of one 16 KiB READ into registered memory on a client of `url`.
double read_time(const std::string& url, const std::string& file) {
  vnfs::client c = vnfs::client::connect(url);
  std::vector<std::byte> buf(page_size);
  vnfs::memory_region mr = c.register_memory(buf.data(), buf.size());
  vnfs::file f = c.open(file, O_RDONLY);
  for (int i = 0; i < 50; ++i) c.pread(f, 0, mr.all());
  constexpr int n = 500;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) c.pread(f, static_cast<std::uint64_t>(i % 64) * page_size, mr.all());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  c.close(f);
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  po::options_description o(
      "Usage: bdb_fig7 [options] --out FILE.json\n\n"
      "papers/003 Figure 7: Berkeley DB read-only transactions on local disk and through\n"
      "vnfs::bdb against vnfsd (TCP, RPC-over-RDMA/cma, TCP through vnfs-netdelay, and TCP\n"
      "with the cache unregistered), the database swept from 1/4 to 4 times the cache.\n\nOptions");
  std::string out;
  std::size_t cache_mib = 16;
  long max_txns = 400000;
  std::string delay = "0.2";
  bool quick = false;
  o.add_options()("help,h", "print this help")("out", po::value(&out)->required(), "JSON results")(
      "quick", po::bool_switch(&quick), "small run: cache 4 MiB, at most 10,000 transactions per point")(
      "cache-mib", po::value(&cache_mib), "Berkeley DB cache (MiB; default 16)")(
      "max-txns", po::value(&max_txns), "transactions per point at most (default 400,000)")(
      "delay-ms", po::value(&delay), "vnfs-netdelay delay each way (ms; default 0.2)");
  const auto vm = vnfs::bench::parse_options(argc, argv, o);
  if (!vm) return 0;  // --help
  if (quick) {  // what is not given explicitly
    if (!vm->count("cache-mib")) cache_mib = 4;
    if (!vm->count("max-txns")) max_txns = 10000;
  }
  const std::size_t cache = cache_mib << 20;
  const std::vector<double> mults = {0.25, 0.5, 1, 2, 4};

  vnfs::bench::temp_dir local, exp;
  vnfs::bench::vnfsd_process vnfsd(exp.path(), {"--rdma", "cma:127.0.0.1:0"});
  vnfs::bench::netdelay_process nd("127.0.0.1", vnfsd.port(), delay);
  const std::string tcp = "nfs://127.0.0.1:" + std::to_string(vnfsd.port()) + "/";
  struct config {
    std::string name, url;
    bool registered;
  };
  const std::vector<config> configs = {
      {"local", "", true},
      {"tcp", tcp, true},
      {"cma", "nfs+rdma://127.0.0.1:" + std::to_string(vnfsd.rdma_port()) + "/?provider=cma", true},
      {"tcp-delay", "nfs://127.0.0.1:" + std::to_string(nd.port()) + "/", true},
      {"tcp-unregistered", tcp, false},
  };
  std::vector<point> points;
  std::vector<std::pair<std::string, double>> reads;
  for (double m : mults) {
    // About 130 bytes of a leaf page per record (key, value, item overhead, fill factor).
    const long records = static_cast<long>(m * static_cast<double>(cache) / 130);
    fs::remove_all(local / "home");
    fs::remove_all(exp / "home");
    fs::create_directories(local / "home");
    fs::create_directories(exp / "home");
    load(local / "home", records);
    fs::copy_file(local / "home" / "fig7.db", exp / "home" / "fig7.db");
    for (const config& c : configs) {
      const fs::path prefix = local / "mapped";
      if (!c.url.empty()) vnfs::bdb::attach({{prefix.string(), c.url}}, {}, {c.registered});
      const fs::path home = c.url.empty() ? local / "home" : prefix / "home";
      point p = run(c.name, home, c.url.empty() ? "" : prefix.string(), records, cache, max_txns);
      if (!c.url.empty()) vnfs::bdb::detach();
      p.cache_mib = static_cast<double>(cache_mib);
      std::fprintf(stderr, "%-17s db %6.1f MiB (%.2fx cache): %9.0f txn/s, %6.2f us CPU/txn, %.3f misses/txn, %.3f COMPOUNDs/txn\n",
                   p.config.c_str(), p.db_mib, m, p.txns / p.seconds, 1e6 * p.cpu_seconds / p.txns, p.misses_per_txn,
                   p.compounds_per_txn);
      points.push_back(p);
    }
    if (m == mults.back())
      for (const config& c : configs)
        if (!c.url.empty() && c.registered) reads.emplace_back(c.name, read_time(c.url, "home/fig7.db"));
  }
  std::ofstream j = vnfs::bench::open_results(out, "bdb_fig7");
  j << "  \"page_size\": " << page_size << ", \"cache_mib\": " << cache_mib << ", \"delay_ms\": \"" << delay
    << "\",\n  \"read_seconds\": {";
  for (std::size_t i = 0; i < reads.size(); ++i)
    j << (i ? ", " : "") << "\"" << reads[i].first << "\": " << reads[i].second;
  j << "},\n  \"points\": [\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const point& p = points[i];
    j << "    {\"config\": \"" << p.config << "\", \"db_mib\": " << p.db_mib << ", \"cache_mib\": " << p.cache_mib
      << ", \"records\": " << p.records << ", \"txns\": " << p.txns << ", \"seconds\": " << p.seconds
      << ", \"cpu_seconds\": " << p.cpu_seconds << ", \"txn_per_s\": " << p.txns / p.seconds
      << ", \"cpu_us_per_txn\": " << 1e6 * p.cpu_seconds / p.txns << ", \"misses_per_txn\": " << p.misses_per_txn
      << ", \"compounds_per_txn\": " << p.compounds_per_txn << ", \"copied_bytes_per_txn\": " << p.copied_per_txn << "}"
      << (i + 1 < points.size() ? "," : "") << "\n";
  }
  j << "  ]\n}\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bdb_fig7: " << e.what() << "\n";
  return 1;
}
