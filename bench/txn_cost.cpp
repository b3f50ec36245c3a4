// bench/txn_cost — runs a given number of transactions of one kind against a vnfsd that is
// already running, so that what each costs the server can be counted from outside
// (bench/txn_syscalls.sh attaches strace -f -c to vnfsd around `--run`). Kinds:
//   create1k    one atomic vwrite (client_options::atomic_vectors, one COMPOUND) creating a
//               new 1 KiB file: papers/002 Figure 12 at k=1
//   span1k      the same file in a transaction spanning COMPOUNDs (vnfs::transaction: begin,
//               the vwrite, commit)
//   overwrite1m one atomic vwrite truncating and rewriting an existing 1 MiB file (the server
//               backs the old contents up); `--prepare` makes the files first, untransacted
// Prints one JSON line: the kind, the transactions run, and the client's COMPOUNDs and
// operations (client::stats(), session set-up included).
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "vnfs/client.hpp"
#include "vnfs/error.hpp"
#include "vnfs/transaction.hpp"

namespace {

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: txn_cost URL DIR KIND COUNT --prepare|--run\n"
                       "  KIND: create1k, span1k or overwrite1m; COUNT: 1..100000\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 6) usage();
  const std::string url = argv[1], dir = argv[2], kind = argv[3], step = argv[5];
  const unsigned long count = std::strtoul(argv[4], nullptr, 10);
  if (count == 0 || count > 100000) usage();
  if (kind != "create1k" && kind != "span1k" && kind != "overwrite1m") usage();
  if (step != "--prepare" && step != "--run") usage();
  const std::size_t size = kind == "overwrite1m" ? std::size_t(1) << 20 : 1024;
  std::vector<std::byte> data(size, std::byte{0x5a});
  auto item = [&](unsigned long i, unsigned flags) {
    return vnfs::vio(dir + "/" + std::to_string(i), 0, std::span<const std::byte>(data), flags);
  };

  if (step == "--prepare") {
    vnfs::client c = vnfs::client::connect(url);
    c.mkdir(dir, 0755);
    if (kind == "overwrite1m") {
      for (unsigned long i = 0; i < count; ++i) {
        std::vector<vnfs::vio> one{item(i, vnfs::vio_flags::create)};
        if (vnfs::vresult r = c.vwrite(one); !r.ok()) throw std::system_error(r.error, "prepare");
      }
    }
    return 0;
  }

  vnfs::client_options o;
  o.atomic_vectors = kind != "span1k";
  vnfs::client c = vnfs::client::connect(url, o);
  const unsigned flags = kind == "overwrite1m" ? vnfs::vio_flags::truncate : vnfs::vio_flags::create;
  for (unsigned long i = 0; i < count; ++i) {
    std::vector<vnfs::vio> one{item(i, flags)};
    vnfs::vresult r;
    if (kind == "span1k") {
      vnfs::transaction t = vnfs::transaction::begin(c);
      r = t.view().vwrite(one);
      if (r.ok())
        if (std::error_code ec = t.commit()) throw std::system_error(ec, "commit");
    } else {
      r = c.vwrite(one);
    }
    if (!r.ok()) throw std::system_error(r.error, "transaction " + std::to_string(i));
    if (one[0].bytes != size) throw std::runtime_error("short write");
  }
  const vnfs::client_stats s = c.stats();
  std::printf("{\"kind\": \"%s\", \"transactions\": %lu, \"compounds\": %llu, \"operations\": %llu}\n", kind.c_str(),
              count, static_cast<unsigned long long>(s.compounds), static_cast<unsigned long long>(s.operations));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "txn_cost: %s\n", e.what());
  return 1;
}
