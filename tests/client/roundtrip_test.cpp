// Exact round trips of the scalar calls over nfs:// (client::stats before and after): the
// baseline the vectorized API is measured against. The nfs backend sends what a kernel
// NFSv4.1 client sends with a cold cache (src/client/nfs/nfs_backend.cpp):
// - a path walk costs one COMPOUND per component (SEQUENCE, PUTFH, LOOKUP, GETFH, GETATTR:
//   5 operations); the root itself costs one (SEQUENCE, PUTFH, GETATTR: 3);
// - then one COMPOUND for the operation on the walked parent or object.
// Both NFS servers must give the same numbers: they depend on the client only.
#include <fcntl.h>

#include <algorithm>
#include <fstream>

#include "client_fixture.hpp"

using namespace vnfs;
using namespace vnfs::client_test;

namespace {

#define CHECK_COST(expr, n_compounds, n_ops)            \
  do {                                                  \
    cost k_ = cost_of(c, [&] { expr; });                \
    INFO(#expr);                                        \
    CHECK(k_.compounds == (n_compounds));               \
    CHECK(k_.operations == (n_ops));                    \
  } while (0)

#define FOR_EACH_NFS_TARGET()                                  \
  const target kind = GENERATE(target::vnfsd, target::ganesha, target::vnfsd_rdma); \
  INFO("target " << name_of(kind));                            \
  if (skipped(kind)) return;                                   \
  client_env env(kind);                                        \
  client& c = env.c()

}  // namespace

TEST_CASE("round trips of the scalar calls are exact", "[client][roundtrip]") {
  FOR_EACH_NFS_TARGET();
  std::vector<std::byte> data = pattern(4096);
  std::vector<std::byte> back(4096);

  CHECK_COST(c.stat(""), 1, 3);
  CHECK_COST(c.mkdir("a"), 2, 6);          // root walk + CREATE
  CHECK_COST(c.mkdir("a/b"), 2, 8);        // walk a + CREATE
  CHECK_COST(c.mkdir("a/b/c"), 3, 13);     // walk a, a/b + CREATE
  CHECK_COST(c.stat("a"), 1, 5);
  CHECK_COST(c.stat("a/b/c"), 3, 15);
  // A failed walk stops at the first missing component.
  CHECK_COST(CHECK_THROWS(c.stat("missing/x/y")), 1, 5);

  file f;
  // root walk + SEQUENCE, PUTFH, OPEN, GETFH (O_TRUNC rides in OPEN's create attributes)
  CHECK_COST(f = c.open("f", O_CREAT | O_RDWR | O_TRUNC, 0644), 2, 7);
  CHECK_COST(CHECK(c.pwrite(f, 0, std::span<const std::byte>(data)) == 4096), 1, 3);
  CHECK_COST(CHECK(c.pread(f, 0, std::span<std::byte>(back)) == 4096), 1, 3);
  CHECK_COST(c.fstat(f), 1, 3);
  CHECK_COST(c.fsync(f), 1, 3);
  CHECK_COST(c.pwrite(f, 4096, std::span<const std::byte>(data)), 1, 3);
  // Whether unstable data is left to commit at close is the server's choice (it may write
  // FILE_SYNC4, RFC 8881 §18.32.3); after fsync there is none: PUTFH, CLOSE.
  CHECK_COST(c.fsync(f), 1, 3);
  CHECK_COST(c.close(f), 1, 3);

  file r;
  // walk a + OPEN; a/b is a directory, which OPEN refuses (NFS4ERR_ISDIR) after the trip.
  CHECK_COST(CHECK_THROWS(c.open("a/b", O_RDONLY)), 2, 9);
  CHECK_COST(r = c.open("f", O_RDONLY), 2, 7);
  CHECK_COST(c.close(r), 1, 3);  // clean: no COMMIT
  // Truncating an existing file without O_CREAT: SETATTR in the OPEN COMPOUND.
  CHECK_COST(r = c.open("f", O_RDWR | O_TRUNC), 2, 8);
  CHECK_COST(c.close(r), 1, 3);

  CHECK_COST(c.truncate("f", 10), 2, 8);          // walk f + SETATTR
  CHECK_COST(c.symlink("target", "l"), 2, 6);     // root walk + CREATE
  CHECK_COST(c.readlink("l"), 2, 8);              // walk l + READLINK
  CHECK_COST(c.rename("f", "a/g"), 3, 13);        // walk root, walk a, SAVEFH/RENAME
  CHECK_COST(r = c.open("a/g", O_RDONLY), 2, 9);  // walk a + OPEN
  CHECK_COST(c.close(r), 1, 3);
  CHECK_COST(c.link("a/g", "h"), 4, 18);          // walk a/g (2), root, LINK
  CHECK_COST(c.unlink("h"), 2, 8);                // walk h + REMOVE in the parent
  CHECK_COST(c.unlink("a/g"), 3, 13);
  CHECK_COST(c.rmdir("a/b/c"), 4, 18);

  // readdir: each page is a walk of the directory and a READDIR.
  completion_group g = c.make_group();
  dir_stream d = c.opendir("a");
  CHECK_COST(c.readdir(&d, g, 1); CHECK(!g.wait().status), 2, 8);
  CHECK(d.eof);
  REQUIRE(d.entries.size() == 1);
  CHECK(d.entries[0].name == "b");
}

TEST_CASE("first contact with the server's root: two COMPOUNDs of set-up, the rest rides on the first call",
          "[client][roundtrip]") {
  const target kind = GENERATE(target::vnfsd, target::ganesha, target::vnfsd_rdma);
  INFO("target " << name_of(kind));
  if (skipped(kind)) return;
  target_server& server = shared_server(kind);
  client_env env(kind);  // its directory, made locally; its own client is not used here
  // A URL naming the server's root: nothing is looked up at connect.
  std::string root_url, dir;
  switch (kind) {
    case target::vnfsd: root_url = "nfs://127.0.0.1:" + std::to_string(server.vnfsd->port()) + "/"; break;
    case target::ganesha: root_url = "nfs://127.0.0.1:" + std::to_string(server.ganesha->port()) + "/"; break;
    default: root_url = "nfs+rdma://127.0.0.1:" + std::to_string(server.vnfsd->rdma_port()) + "/?provider=cma"; break;
  }
  // From the server's root to the test's directory: one component, and Ganesha's pseudo path.
  const std::string pseudo = kind == target::ganesha ? server.ganesha->pseudo_path().substr(1) + "/" : "";
  dir = pseudo + env.dir().filename().string();
  const std::uint64_t depth = kind == target::ganesha ? 2 : 1;
  const std::vector<std::byte> data = pattern(1024);
  {
    std::ofstream(env / "f", std::ios::binary).write(reinterpret_cast<const char*>(data.data()), 1024);
  }

  client c = client::connect(root_url);
  CHECK(c.stats().compounds == 2);  // EXCHANGE_ID, CREATE_SESSION
  CHECK(c.stats().operations == 2);
  // The first call's COMPOUND: SEQUENCE, the new client ID's RECLAIM_COMPLETE, PUTROOTFH and
  // GETATTR of the lease time (taken out of the reply), then the read by path: PUTROOTFH,
  // LOOKUP of each directory, SAVEFH, OPEN, READ, CLOSE.
  std::vector<std::byte> back(4096);
  std::vector<vio> io;
  io.emplace_back(vfile(dir + "/f"), 0, std::span<std::byte>(back));
  CHECK_COST(REQUIRE_OK(c.vread(io)), 1, 1 + 3 + (1 + depth + 4));
  CHECK(io[0].bytes == 1024);
  CHECK(std::equal(data.begin(), data.end(), back.begin()));
  // Nothing rides on the next one: SEQUENCE, PUTROOTFH, LOOKUP of each directory, SAVEFH
  // (the planner keeps the directory for items that may follow), LOOKUP f, GETATTR.
  std::vector<vattr> attrs{vattr(dir + "/f")};
  CHECK_COST(REQUIRE_OK(c.vgetattrs(attrs)), 1, 1 + 1 + depth + 1 + 1 + 1);
  CHECK(attrs[0].stat.size == 1024);
  // The scalar calls (connect_and_read's) on a second client: the same riders on their first
  // COMPOUND, the root's walk (SEQUENCE, PUTROOTFH, GETATTR), then nothing more.
  {
    client c = client::connect(root_url);
    CHECK_COST(c.stat(""), 1, 3 + 3);
    CHECK_COST(c.stat(""), 1, 3);
  }
}
