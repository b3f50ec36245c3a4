// vnfs_tpie_merge: the TPIE Merge program of papers/003 §7.2, on TPIE itself (built with
// -DVNFS_TPIE_ROOT, so its file streams use the vnfs accessor). Writes N sorted input
// streams of X records of Y bytes (an integer key first) into DIR, merges them into one
// sorted output stream, checks it, and prints one JSON line:
//   {"n":N,"records":X,"record_bytes":Y,"block_bytes":B,"merge_seconds":T,"throughput_mb_s":2*N*X*Y/T/1e6}
//
//   VNFS_MAP=/mnt/v=nfs://HOST:PORT/ vnfs_tpie_merge /mnt/v N X Y [BLOCK_KIB]
//
// DIR may be local or under a VNFS_MAP prefix; BLOCK_KIB is TPIE's block size (32: the
// paper's 32 KB requests; default 2048, TPIE_BLOCK_SIZE).
#include <tpie/file_stream.h>
#include <tpie/tpie.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

template <std::size_t Bytes>
struct record {
  std::uint64_t key;
  char payload[Bytes - sizeof(std::uint64_t)];
};

template <std::size_t Bytes>
int run(const std::string& dir, unsigned n, std::uint64_t x, double block_factor) {
  using rec = record<Bytes>;
  std::vector<std::string> inputs;
  for (unsigned j = 0; j < n; ++j) inputs.push_back(dir + "/merge-input-" + std::to_string(j));
  const std::string output = dir + "/merge-output";
  for (unsigned j = 0; j < n; ++j) {  // input j holds keys j, j+n, j+2n, ...
    tpie::file_stream<rec> s(block_factor);
    s.open(inputs[j], tpie::access_write);
    rec r{};
    for (std::uint64_t i = 0; i < x; ++i) {
      r.key = i * n + j;
      std::memset(r.payload, static_cast<int>(r.key & 0xff), sizeof r.payload);
      s.write(r);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  {
    // Read with the block size they were written with (TPIE checks it in the header).
    std::vector<std::unique_ptr<tpie::file_stream<rec>>> in;
    std::vector<rec> head(n);
    std::vector<bool> live(n, false);
    for (unsigned j = 0; j < n; ++j) {
      in.push_back(std::make_unique<tpie::file_stream<rec>>(block_factor));
      in[j]->open(inputs[j], tpie::access_read);
      if (in[j]->can_read()) {
        head[j] = in[j]->read();
        live[j] = true;
      }
    }
    tpie::file_stream<rec> out(block_factor);
    out.open(output, tpie::access_write);
    for (;;) {
      int best = -1;
      for (unsigned j = 0; j < n; ++j)
        if (live[j] && (best < 0 || head[j].key < head[best].key)) best = static_cast<int>(j);
      if (best < 0) break;
      out.write(head[best]);
      if (in[best]->can_read())
        head[best] = in[best]->read();
      else
        live[best] = false;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Check: keys 0 .. n*x-1 in order, payloads intact.
  std::uint64_t bad = 0, count = 0;
  {
    tpie::file_stream<rec> out(block_factor);
    out.open(output, tpie::access_read);
    while (out.can_read()) {
      const rec& r = out.read();
      if (r.key != count || static_cast<unsigned char>(r.payload[0]) != (r.key & 0xff)) ++bad;
      ++count;
    }
  }
  std::printf(
      "{\"n\":%u,\"records\":%llu,\"record_bytes\":%zu,\"block_bytes\":%.0f,\"merge_seconds\":%.6f,"
      "\"throughput_mb_s\":%.3f,\"records_out\":%llu,\"wrong\":%llu}\n",
      n, static_cast<unsigned long long>(x), Bytes, block_factor * tpie::get_block_size(), seconds,
      2.0 * n * x * Bytes / seconds / 1e6, static_cast<unsigned long long>(count), static_cast<unsigned long long>(bad));
  return bad == 0 && count == n * x ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s DIR N X Y(16|64|256|1024) [BLOCK_KIB]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const unsigned n = static_cast<unsigned>(std::atoi(argv[2]));
  const std::uint64_t x = std::strtoull(argv[3], nullptr, 10);
  const int y = std::atoi(argv[4]);
  tpie::tpie_init();
  tpie::get_memory_manager().set_limit(std::size_t(512) << 20);
  const double block_kib = argc > 5 ? std::atof(argv[5]) : 2048.0;
  const double factor = block_kib * 1024.0 / static_cast<double>(tpie::get_block_size());
  int rc = 2;
  switch (y) {
    case 16: rc = run<16>(dir, n, x, factor); break;
    case 64: rc = run<64>(dir, n, x, factor); break;
    case 256: rc = run<256>(dir, n, x, factor); break;
    case 1024: rc = run<1024>(dir, n, x, factor); break;
    default: std::fprintf(stderr, "Y must be 16, 64, 256 or 1024\n");
  }
  tpie::tpie_finish();
  return rc;
}
