// Records the real traffic of a vnfs client working against vnfsd (through the test TCP
// proxy) and checks it byte for byte: every call the client sent is an ONC RPC call whose
// COMPOUND decodes and encodes back to the same bytes, and every reply decodes as a
// COMPOUND4res for its call. With $VNFS_FUZZ_SEED_DIR set, it also writes what it recorded
// as seeds for the fuzz harnesses of tests/fuzz (scripts/refresh_fuzz_corpus.sh keeps a
// small selection in the repository).
#include <catch2/catch.hpp>
#include <fcntl.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../fuzz/client_call.hpp"
#include "vnfs/client.hpp"
#include "vnfs/transaction.hpp"
#include "vnfs/nfs4/nfs4.hpp"
#include "vnfs/rpc/message.hpp"
#include "vnfs/rpc/record_marking.hpp"
#include "vnfs/test/tcp_proxy.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
namespace fs = std::filesystem;
using direction = vnfs::test::tcp_proxy::direction;

namespace {

/// The work whose traffic is recorded: the vectorized calls and the scalar ones.
void workload(client& c) {
  std::string big(70000, 'b'), small = "small file";
  std::vector<vio> w;
  w.emplace_back("a", 0, std::span<const std::byte>(reinterpret_cast<const std::byte*>(small.data()), small.size()),
                 vio_flags::create);
  w.emplace_back("big", 0, std::span<const std::byte>(reinterpret_cast<const std::byte*>(big.data()), big.size()),
                 vio_flags::create);
  REQUIRE(c.vwrite(w).ok());
  // An overwrite: an OPEN that truncates "a", then a WRITE of fewer bytes at offset 0.
  const std::string shorter = "short";
  w = {vio("a", 0, std::span<const std::byte>(reinterpret_cast<const std::byte*>(shorter.data()), shorter.size()),
           vio_flags::create | vio_flags::truncate)};
  REQUIRE(c.vwrite(w).ok());
  // The same in a transaction (a COMPOUND with TXN_BEGIN, then one with TXN_COMMIT and the
  // OPEN and WRITE): vnfsd backs the old bytes up before it writes over them.
  const std::string again = "in a transaction";
  w = {vio("a", 0, std::span<const std::byte>(reinterpret_cast<const std::byte*>(again.data()), again.size()),
           vio_flags::create | vio_flags::truncate)};
  vnfs::transaction t = vnfs::transaction::begin(c);
  REQUIRE(t.committing().vwrite(w).ok());
  std::vector<vmkdir_item> dirs{{"d"}, {"d/e"}};
  REQUIRE(c.vmkdir(dirs).ok());
  std::vector<vlink> links{{"a", "d/link"}};
  REQUIRE(c.vsymlink(links).ok());
  std::vector<vlink> hard{{"a", "d/hard"}};
  REQUIRE(c.vhardlink(hard).ok());
  std::vector<std::string> paths{"d/link"}, targets;
  REQUIRE(c.vreadlink(paths, &targets).ok());
  std::vector<std::byte> buf(80000);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  std::vector<vio> r;
  r.emplace_back("a", 0, mr.slice(0, 100));
  r.emplace_back("big", 0, mr.slice(100, 70000));
  REQUIRE(c.vread(r).ok());
  std::vector<vattr> attrs{vattr("a"), vattr("d"), vattr("big")};
  REQUIRE(c.vgetattrs(attrs).ok());
  attrs[0].mask = attr::mode;
  attrs[0].stat.mode = 0600;
  REQUIRE(c.vsetattrs(std::span<const vattr>(attrs.data(), 1)).ok());
  std::vector<std::string> list{""};
  vlistdir_options lo;
  lo.recursive = true;
  REQUIRE(c.vlistdir(list, lo).ok());
  std::vector<vcopy_item> copies{{"a", "d/copy"}};
  REQUIRE(c.vscopy(copies).ok());
  std::vector<vrename_item> moves{{"d/copy", "d/e/moved"}};
  REQUIRE(c.vrename(moves).ok());
  // The scalar calls: open, read, write, sync, stat, close.
  file f = c.open("a", O_RDWR);
  std::vector<std::byte> one(5);
  c.pread(f, 0, one);
  c.pwrite(f, 3, std::span<const std::byte>(one));
  c.fsync(f);
  c.close(f);
  (void)c.stat("d/e/moved");
  std::vector<std::string> doomed{"d/e/moved", "d/hard", "d/link"};
  REQUIRE(c.vremove(doomed).ok());
}

/// The records of one recorded stream.
std::vector<std::vector<std::byte>> records_of(const std::vector<std::byte>& stream) {
  rpc::record_assembler a(64u << 20);
  a.feed(stream);
  REQUIRE(a.at_record_boundary());
  std::vector<std::vector<std::byte>> out;
  while (auto r = a.next_record()) out.push_back(std::move(*r));
  return out;
}

/// A file name for seed bytes: FNV-1a of the content, so equal seeds coincide.
std::string seed_name(const std::vector<std::byte>& b) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::byte x : b) h = (h ^ std::to_integer<std::uint64_t>(x)) * 1099511628211ull;
  char name[24];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return name;
}

void write_seed(const fs::path& dir, const std::vector<std::byte>& b) {
  fs::create_directories(dir);
  std::ofstream(dir / seed_name(b), std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                                           static_cast<std::streamsize>(b.size()));
}

}  // namespace

TEST_CASE("the traffic of a client's work decodes call by call and reply by reply") {
  test::temp_dir exp("vnfs-traffic");
  test::vnfsd_process server(exp.path());
  test::tcp_proxy proxy(server.host(), server.port());
  proxy.record(true);
  std::uint64_t compounds = 0;
  {
    auto c = client::connect("nfs://" + proxy.host() + ":" + std::to_string(proxy.port()) + "/");
    workload(c);
    compounds = c.stats().compounds;
  }  // the session and the client ID are destroyed: their COMPOUNDs are recorded too
  proxy.record(false);

  auto calls_streams = proxy.recorded(direction::to_server);
  auto reply_streams = proxy.recorded(direction::to_client);
  REQUIRE(calls_streams.size() == 1);  // one client, one connection
  REQUIRE(reply_streams.size() == 1);
  auto calls = records_of(calls_streams[0]);
  auto replies = records_of(reply_streams[0]);
  CHECK(calls.size() == replies.size());
  CHECK(calls.size() >= compounds);

  std::map<std::uint32_t, std::size_t> call_by_xid;
  std::map<std::uint32_t, std::vector<nfs_argop4>> ops_by_xid;
  std::set<nfs_opnum4> seen;
  std::vector<std::vector<std::byte>> args_seeds, results_seeds, request_seeds, client_reply_seeds;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    xdr::decoder d(calls[i]);
    rpc::call_header h = rpc::decode_call(d);
    CHECK(h.prog == NFS4_PROGRAM);
    call_by_xid[h.xid] = i;
    std::vector<std::byte> body(calls[i].end() - static_cast<std::ptrdiff_t>(d.remaining()), calls[i].end());
    if (h.proc != NFSPROC4_COMPOUND) continue;
    auto args = xdr::from_bytes<COMPOUND4args>(body);
    CHECK(xdr::to_bytes(args) == body);  // the codec writes exactly what the client sent
    for (const auto& op : args.argarray) seen.insert(opnum_of(op));
    ops_by_xid[h.xid] = args.argarray;
    args_seeds.push_back(body);
    // server_requests: an even first byte and the whole call record ...
    std::vector<std::byte> raw{std::byte{0}};
    raw.insert(raw.end(), calls[i].begin(), calls[i].end());
    request_seeds.push_back(raw);
    // ... or an odd one, the operation count after SEQUENCE, and those operations.
    if (!args.argarray.empty() && opnum_of(args.argarray[0]) == nfs_opnum4::OP_SEQUENCE &&
        args.argarray.size() - 1 <= 127) {
      std::vector<std::byte> seq{std::byte((args.argarray.size() - 1) << 1 | 1)};
      for (std::size_t k = 1; k < args.argarray.size(); ++k) {
        auto op = xdr::to_bytes(args.argarray[k]);
        seq.insert(seq.end(), op.begin(), op.end());
      }
      request_seeds.push_back(seq);
    }
  }
  for (const auto& rec : replies) {
    xdr::decoder d(rec);
    rpc::reply_header h = rpc::decode_reply(d);
    REQUIRE(call_by_xid.count(h.xid) == 1);
    REQUIRE(h.is_success());
    std::vector<std::byte> body(rec.end() - static_cast<std::ptrdiff_t>(d.remaining()), rec.end());
    if (body.empty()) continue;  // NULL
    auto res = xdr::from_bytes<COMPOUND4res>(body);
    results_seeds.push_back(body);
    // client_replies and rdma_replies: a control byte 0 (whole, honest), the call, the record.
    if (auto call = fuzz::describe_call(ops_by_xid[h.xid])) {
      std::vector<std::byte> seed{std::byte{0}};
      seed.insert(seed.end(), call->begin(), call->end());
      seed.insert(seed.end(), rec.begin(), rec.end());
      client_reply_seeds.push_back(seed);
    }
  }
  // What the workload exercised, so that the seeds cover it.
  for (nfs_opnum4 op : {nfs_opnum4::OP_EXCHANGE_ID, nfs_opnum4::OP_CREATE_SESSION, nfs_opnum4::OP_SEQUENCE,
                        nfs_opnum4::OP_OPEN, nfs_opnum4::OP_READ, nfs_opnum4::OP_WRITE, nfs_opnum4::OP_CLOSE,
                        nfs_opnum4::OP_CREATE, nfs_opnum4::OP_LINK, nfs_opnum4::OP_READLINK, nfs_opnum4::OP_READDIR,
                        nfs_opnum4::OP_GETATTR, nfs_opnum4::OP_SETATTR, nfs_opnum4::OP_RENAME, nfs_opnum4::OP_REMOVE,
                        nfs_opnum4::OP_COMMIT, nfs_opnum4::OP_DESTROY_SESSION, nfs_opnum4::OP_DESTROY_CLIENTID}) {
    INFO("operation " << static_cast<unsigned>(op));
    CHECK(seen.count(op) == 1);
  }

  if (const char* dir = std::getenv("VNFS_FUZZ_SEED_DIR")) {
    fs::path out(dir);
    for (auto& s : args_seeds) write_seed(out / "nfs4_compound_args", s);
    for (auto& s : results_seeds) write_seed(out / "nfs4_compound_results", s);
    for (auto& s : request_seeds) write_seed(out / "server_requests", s);
    for (auto& s : client_reply_seeds) {
      write_seed(out / "client_replies", s);
      write_seed(out / "rdma_replies", s);
    }
    // rpc_messages: a cut seed byte, then the first records of each stream as sent.
    for (const auto* stream : {&calls_streams[0], &reply_streams[0]}) {
      std::vector<std::byte> seed{std::byte{7}};
      seed.insert(seed.end(), stream->begin(), stream->begin() + std::min<std::ptrdiff_t>(4096, stream->size()));
      write_seed(out / "rpc_messages", seed);
    }
  }
}
