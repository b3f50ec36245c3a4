// Helpers the benchmark programs share: option lists, data files, the JSON result file.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

namespace vnfs::bench {

/// CPU time (user and system) and context switches so far: of this process (every thread)
/// or of the calling thread alone.
struct process_usage {
  double cpu_seconds = 0;
  std::uint64_t voluntary_switches = 0, involuntary_switches = 0;

  process_usage operator-(const process_usage& before) const {
    return {cpu_seconds - before.cpu_seconds, voluntary_switches - before.voluntary_switches,
            involuntary_switches - before.involuntary_switches};
  }
};

/// `who`: RUSAGE_SELF (the process) or RUSAGE_THREAD (the calling thread).
inline process_usage usage_now(int who = RUSAGE_SELF) {
  rusage u{};
  ::getrusage(who, &u);
  return {static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
              static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6,
          static_cast<std::uint64_t>(u.ru_nvcsw), static_cast<std::uint64_t>(u.ru_nivcsw)};
}

/// This process's CPU seconds so far (usage_now().cpu_seconds).
inline double cpu_now() { return usage_now().cpu_seconds; }

/// --pin: the client (this process: the thread that makes the client, and the I/O threads
/// it starts, which inherit its CPUs) on the last CPU this process may use, the server it
/// starts on the others, as on two hosts. Unpinned, the scheduler puts the client's
/// threads on one CPU in some runs and on two in others, and a COMPOUND's client CPU
/// differs by half between the two (docs/ARCHITECTURE.md, "Threads").
class cpu_placement {
 public:
  /// Throws std::runtime_error when this process may use fewer than two CPUs.
  cpu_placement() {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (::sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < 2)
      throw std::runtime_error("--pin needs at least two CPUs");
    CPU_ZERO(&client_);
    server_ = mine;
    for (int c = CPU_SETSIZE - 1; c >= 0; --c)
      if (CPU_ISSET(c, &mine)) {
        CPU_SET(c, &client_);
        CPU_CLR(c, &server_);
        break;
      }
  }
  /// The calling thread, and what it starts from now on, on the server's CPUs.
  void server() const { set(server_); }
  /// The calling thread, and what it starts from now on, on the client's CPU.
  void client() const { set(client_); }

 private:
  static void set(const cpu_set_t& s) {
    if (::sched_setaffinity(0, sizeof s, &s) != 0) throw std::runtime_error(std::string("sched_setaffinity: ") + std::strerror(errno));
  }
  cpu_set_t server_, client_;
};

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Parses the command line against `desc` (which has a "help" option). With --help, prints
/// `desc` and returns nothing (the program then exits 0), before required options are
/// checked. Bad or missing options throw po::error.
inline std::optional<boost::program_options::variables_map> parse_options(
    int argc, char** argv, const boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return std::nullopt;
  }
  po::notify(vm);
  return vm;
}

/// "1,8,64" → {"1", "8", "64"} (empty items dropped).
inline std::vector<std::string> split_list(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

/// Writes `size` bytes in which each 8-byte word holds its own offset, so any read of the
/// file can be checked cheaply.
inline void write_offset_file(const std::filesystem::path& p, std::size_t size) {
  std::ofstream f(p, std::ios::binary);
  std::vector<std::uint64_t> chunk(1 << 17);
  for (std::size_t off = 0; off < size; off += chunk.size() * 8) {
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = off + i * 8;
    std::size_t n = std::min(size - off, chunk.size() * 8);
    f.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(n));
  }
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

/// "4096", "4K", "1M" → bytes; anything else after the number is an error.
inline std::size_t parse_size(const std::string& s) {
  std::size_t used = 0;
  std::size_t n = std::stoull(s, &used);
  std::string unit = s.substr(used);
  if (unit == "K" || unit == "k") return n << 10;
  if (unit == "M" || unit == "m") return n << 20;
  if (!unit.empty()) throw std::runtime_error("bad size '" + s + "'");
  return n;
}

/// Bytes as parse_size reads them back: "16M", "4K", "100".
inline std::string size_name(std::size_t n) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

/// Fills `n` bytes at p so that word j holds `tag` + 8j (whole words only).
inline void fill_words(std::byte* p, std::size_t n, std::uint64_t tag) {
  for (std::size_t off = 0; off + 8 <= n; off += 8) {
    std::uint64_t w = tag + off;
    std::memcpy(p + off, &w, 8);
  }
}

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += ch;
  }
  return o;
}

/// Creates the result file (and its folder) and writes its opening: the benchmark's name and
/// the machine it ran on. The caller continues the JSON object.
inline std::ofstream open_results(const std::string& path, const std::string& benchmark) {
  std::filesystem::path p(path);
  if (!p.parent_path().empty()) std::filesystem::create_directories(p.parent_path());
  std::ofstream o(p);
  if (!o) throw std::runtime_error("cannot write " + path);
  utsname u{};
  uname(&u);
  o << "{\n  \"benchmark\": \"" << json_escape(benchmark) << "\",\n"
    << "  \"machine\": {\"cpus\": " << std::thread::hardware_concurrency() << ", \"kernel\": \""
    << json_escape(u.release) << "\"},\n";
  return o;
}

}  // namespace vnfs::bench
