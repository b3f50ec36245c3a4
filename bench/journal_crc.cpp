// bench/journal_crc: what the CRC-32 of vnfsd's transaction journal costs per COMPOUND's worth
// of bytes. The journal checksums every record, and redo records carry file data, so a
// transaction that overwrites 4 MiB checksums 4 MiB before its commit. vnfsd computes the
// CRC-32 of zlib and gzip (reflected, polynomial 0x04C11DB7) with ISA-L's
// crc32_gzip_refl(); zlib's crc32(), which it used before, is measured beside it where this
// build has zlib (the fuzzing packages install it). Both must give the same value.
#include <isa-l/crc.h>

#ifdef VNFS_BENCH_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.hpp"

namespace po = boost::program_options;

namespace {

struct timing {
  double best_ms = 0, median_ms = 0;
  std::uint32_t crc = 0;
};

/// Runs `crc` over `buf` `runs` times: the best and the median time, and the value.
template <class F>
timing measure(const std::vector<unsigned char>& buf, unsigned runs, F crc) {
  std::vector<double> ms;
  timing t;
  for (unsigned i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    t.crc = crc(buf);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  t.best_ms = *std::min_element(ms.begin(), ms.end());
  t.median_ms = vnfs::bench::median(ms);
  return t;
}

}  // namespace

int main(int argc, char** argv) try {
  unsigned mib = 4, runs = 30;
  std::string out = "bench/results/journal_crc.json";
  po::options_description desc(
      "Usage: journal_crc [options]\n\n"
      "The CRC-32 of vnfsd's transaction journal over --mib MiB (a COMPOUND's worth of redo\n"
      "data), --runs times: ISA-L's crc32_gzip_refl (what vnfsd uses) and, where this build\n"
      "has zlib, zlib's crc32 (what it used before); best and median milliseconds. Fails if\n"
      "the two disagree. Writes the results as JSON.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("mib", po::value(&mib)->default_value(mib), "bytes checksummed, MiB (1..1024)")
      ("runs", po::value(&runs)->default_value(runs), "runs of each (1..1000)")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  if (mib < 1 || mib > 1024) throw std::runtime_error("--mib must be 1..1024");
  if (runs < 1 || runs > 1000) throw std::runtime_error("--runs must be 1..1000");

  std::vector<unsigned char> buf(std::size_t(mib) << 20);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>((i * 2654435761u) >> 24);

  const timing isal = measure(buf, runs, [](const std::vector<unsigned char>& b) {
    return static_cast<std::uint32_t>(::crc32_gzip_refl(0, b.data(), b.size()));
  });
  std::cout << "journal_crc: " << mib << " MiB, ISA-L crc32_gzip_refl: best " << isal.best_ms << " ms, median "
            << isal.median_ms << " ms\n";
  std::ofstream f = vnfs::bench::open_results(out, "journal_crc");
  f << "  \"parameters\": {\"mib\": " << mib << ", \"runs\": " << runs << "},\n  \"results\": [\n"
    << "    {\"implementation\": \"isa-l crc32_gzip_refl\", \"best_ms\": " << isal.best_ms
    << ", \"median_ms\": " << isal.median_ms << "}";
#ifdef VNFS_BENCH_ZLIB
  const timing zlib = measure(buf, runs, [](const std::vector<unsigned char>& b) {
    return static_cast<std::uint32_t>(::crc32(0, b.data(), static_cast<uInt>(b.size())));
  });
  std::cout << "journal_crc: " << mib << " MiB, zlib crc32: best " << zlib.best_ms << " ms, median "
            << zlib.median_ms << " ms\n";
  if (zlib.crc != isal.crc) throw std::runtime_error("ISA-L and zlib disagree on the CRC-32");
  f << ",\n    {\"implementation\": \"zlib crc32\", \"best_ms\": " << zlib.best_ms << ", \"median_ms\": " << zlib.median_ms
    << "}";
#endif
  f << "\n  ]\n}\n";
  std::cout << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "journal_crc: " << e.what() << "\n";
  return 1;
}
