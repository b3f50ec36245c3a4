// The operations per COMPOUND a server really takes (src/client/nfs/operation_limit.hpp),
// against a real NFS-Ganesha 4.3, which grants whatever CREATE_SESSION asks and refuses
// COMPOUNDs of more than 100 operations whole (NFS4ERR_RESOURCE, no results).
#include <catch2/catch.hpp>

#include <fstream>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "client/nfs/compound_vectors.hpp"
#include "client/nfs/operation_limit.hpp"
#include "client/nfs/session_engine.hpp"
#include "vnfs/test/ganesha_process.hpp"

using namespace vnfs;

namespace {

detail::session_engine::settings settings_for(const test::ganesha_process& g) {
  detail::session_engine::settings s;
  s.host = g.host();
  s.port = g.port();
  return s;
}

}  // namespace

TEST_CASE("operation limit: NFS-Ganesha's is known from its EXCHANGE_ID reply, at no cost") {
  test::ganesha_process ganesha;
  detail::session_engine engine(settings_for(ganesha));
  CHECK(engine.limits().ca_maxoperations == 100);
  const client_stats s = engine.stats();
  CHECK(s.compounds == 2);  // EXCHANGE_ID, CREATE_SESSION
  CHECK(s.operations == 2);
}

TEST_CASE("operation limit: learned exactly by bisection after a refusal, then the refused call is told") {
  test::ganesha_process ganesha;
  auto st = settings_for(ganesha);
  st.known_server_limits = false;
  detail::session_engine engine(st);
  CHECK(engine.limits().ca_maxoperations == 1024);  // what Ganesha granted: what was asked
  std::vector<nfs4::nfs_argop4> ops(299, nfs4::nfs_argop4{nfs4::PUTROOTFH4args{}});
  std::promise<std::pair<std::error_code, std::size_t>> p;
  auto fut = p.get_future();
  engine.submit(std::move(ops), [&](std::error_code ec, detail::compound_reply& r) {
    p.set_value({ec, r.res.resarray.size()});
  });
  const auto [ec, results] = fut.get();
  CHECK(ec == nfs4::nfsstat4::NFS4ERR_TOO_MANY_OPS);
  CHECK(results == 0);
  CHECK(engine.limits().ca_maxoperations == 100);
  // Set-up (2), the refused call (SEQUENCE, the new client ID's RECLAIM_COMPLETE and 299
  // PUTROOTFH: 301), then probes of the limit between 1 and 300 (RECLAIM_COMPLETE, which did
  // not run, is out of the count): 150 refused, 75 ran, 112 refused, 93, 102 refused, 97, 99,
  // 100 ran, 101 refused.
  const client_stats s = engine.stats();
  CHECK(s.compounds == 2 + 1 + 9);
  CHECK(s.operations == 2 + 301 + (150 + 75 + 112 + 93 + 102 + 97 + 99 + 100 + 101));
}

TEST_CASE("operation limit: what a refusal for length looks like") {
  nfs4::COMPOUND4res r;
  r.status = nfs4::nfsstat4::NFS4ERR_RESOURCE;
  CHECK(detail::refused_for_length(r));
  r.status = nfs4::nfsstat4::NFS4ERR_TOO_MANY_OPS;
  CHECK(detail::refused_for_length(r));
  r.status = nfs4::nfsstat4::NFS4ERR_DELAY;
  CHECK_FALSE(detail::refused_for_length(r));
  const std::string ganesha = "vm_NFS-Ganesha";
  std::vector<std::byte> scope(reinterpret_cast<const std::byte*>(ganesha.data()),
                               reinterpret_cast<const std::byte*>(ganesha.data() + ganesha.size()));
  CHECK(detail::known_operation_limit(scope) == 100u);
  scope.push_back(std::byte{0});
  CHECK(detail::known_operation_limit(scope) == 100u);
  const std::string other = "vnfsd";
  CHECK_FALSE(detail::known_operation_limit(std::vector<std::byte>(
      reinterpret_cast<const std::byte*>(other.data()), reinterpret_cast<const std::byte*>(other.data() + other.size()))));
}

TEST_CASE("operation limit: a vectorized call refused for its length is packed again under the limit learned") {
  test::ganesha_process ganesha;
  constexpr int files = 40;  // OPEN, READ and CLOSE each: 120 operations and more in one COMPOUND
  auto content = [](int i) { return "file " + std::to_string(i) + " of the call, its own bytes"; };
  for (int i = 0; i < files; ++i) std::ofstream(ganesha.export_dir() / ("f" + std::to_string(i))) << content(i);
  auto st = settings_for(ganesha);
  st.known_server_limits = false;  // the planner's first COMPOUND is refused whole
  detail::session_engine engine(st);

  // The export's root: PUTROOTFH, a LOOKUP per component of its pseudo path, GETFH.
  std::vector<nfs4::nfs_argop4> walk{nfs4::PUTROOTFH4args{}};
  std::string rest = ganesha.pseudo_path();
  for (std::size_t at = 0; (at = rest.find_first_not_of('/', at)) != std::string::npos;) {
    const std::size_t end = std::min(rest.find('/', at), rest.size());
    walk.push_back(nfs4::LOOKUP4args{rest.substr(at, end - at)});
    at = end;
  }
  walk.push_back(nfs4::GETFH4args{});
  std::promise<nfs4::nfs_fh4> root_p;
  engine.submit(std::move(walk), [&](std::error_code ec, detail::compound_reply& r) {
    if (ec || r.res.resarray.empty()) return root_p.set_value({});
    const auto* fh = std::get_if<nfs4::GETFH4res>(&r.res.resarray.back());
    root_p.set_value(fh ? fh->resok4.object : nfs4::nfs_fh4{});
  });
  const nfs4::nfs_fh4 root = root_p.get_future().get();
  REQUIRE_FALSE(root.empty());

  std::uint64_t owners = 0;
  detail::compound_vectors vec(
      engine, root, [&] { return nfs4::open_owner4{engine.client_id(), xdr::to_bytes("repack-" + std::to_string(owners++))}; },
      std::size_t(64) << 20);
  std::vector<std::vector<std::byte>> bufs(files, std::vector<std::byte>(100));
  std::vector<vio> items;
  for (int i = 0; i < files; ++i) items.emplace_back(vfile("/f" + std::to_string(i)), 0, std::span<std::byte>(bufs[i]));
  vresult out;
  std::promise<std::error_code> done_p;
  vec.vread(items, &out, [&](std::error_code ec, std::size_t) { done_p.set_value(ec); });
  const std::error_code ec = done_p.get_future().get();

  CHECK_FALSE(ec);
  CHECK(out.ok());
  CHECK(engine.limits().ca_maxoperations == 100);  // learned from the refusal
  for (int i = 0; i < files; ++i) {
    INFO("file " << i);
    const std::string want = content(i);
    REQUIRE(items[i].bytes == want.size());
    CHECK(std::string(reinterpret_cast<const char*>(bufs[i].data()), want.size()) == want);
  }
}
