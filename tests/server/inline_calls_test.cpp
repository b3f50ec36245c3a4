// Which calls vnfsd's network thread executes itself (src/server/inline_calls.hpp): exactly
// the NULL procedure and small read-only COMPOUNDs; everything else, and anything that does
// not decode, goes to the workers. The records are decoded as vnfsd does it, once, by
// decode_call (src/server/decoded_call.hpp).
#include <catch2/catch.hpp>

#include "server/inline_calls.hpp"
#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/message.hpp"

using namespace vnfs;
namespace {

bool runs_inline_record(const std::vector<std::byte>& record) {
  return vnfs::server::runs_inline(vnfs::server::decode_call(record));
}

std::vector<std::byte> call(std::uint32_t proc, const std::vector<nfs4::nfs_argop4>& ops,
                            std::uint32_t prog = nfs4::NFS4_PROGRAM) {
  rpc::call_header h;
  h.xid = 7;
  h.prog = prog;
  h.vers = nfs4::NFS_V4;
  h.proc = proc;
  xdr::encoder e;
  rpc::encode_call(e, h);
  if (proc == nfs4::NFSPROC4_COMPOUND) {
    nfs4::COMPOUND4args args;
    args.argarray = ops;
    xdr::encode(e, args);
  }
  return e.flatten();
}

std::vector<std::byte> compound(const std::vector<nfs4::nfs_argop4>& ops) {
  return call(nfs4::NFSPROC4_COMPOUND, ops);
}

nfs4::READ4args read_of(std::uint32_t count) {
  nfs4::READ4args r;
  r.count = count;
  return r;
}

}  // namespace

TEST_CASE("small read-only COMPOUNDs and NULL run inline") {
  CHECK(runs_inline_record(call(nfs4::NFSPROC4_NULL, {})));
  CHECK(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::PUTFH4args{}, nfs4::GETATTR4args{}})));
  CHECK(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::PUTFH4args{}, read_of(64 * 1024)})));
  CHECK(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::PUTROOTFH4args{}, nfs4::LOOKUP4args{}, nfs4::GETFH4args{},
                              nfs4::SAVEFH4args{}, nfs4::LOOKUPP4args{}, nfs4::RESTOREFH4args{},
                              nfs4::ACCESS4args{}})));
  std::vector<nfs4::nfs_argop4> sixteen(16, nfs4::GETATTR4args{});
  sixteen[0] = nfs4::SEQUENCE4args{};
  CHECK(runs_inline_record(compound(sixteen)));
}

TEST_CASE("COMPOUNDs that may write, wait or run long go to the workers") {
  CHECK_FALSE(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::PUTFH4args{}, read_of(64 * 1024 + 1)})));
  CHECK_FALSE(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::PUTFH4args{}, nfs4::WRITE4args{}})));
  CHECK_FALSE(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::PUTFH4args{}, nfs4::OPEN4args{}})));
  CHECK_FALSE(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::RECLAIM_COMPLETE4args{}})));
  CHECK_FALSE(runs_inline_record(compound({nfs4::EXCHANGE_ID4args{}})));
  CHECK_FALSE(runs_inline_record(compound({nfs4::SEQUENCE4args{}, nfs4::VNFS_TXN4args{}, nfs4::GETATTR4args{}})));
  std::vector<nfs4::nfs_argop4> seventeen(17, nfs4::GETATTR4args{});
  seventeen[0] = nfs4::SEQUENCE4args{};
  CHECK_FALSE(runs_inline_record(compound(seventeen)));
  CHECK_FALSE(runs_inline_record(compound({})));
}

TEST_CASE("what the dispatcher must answer or refuse goes to the workers") {
  CHECK_FALSE(runs_inline_record(call(nfs4::NFSPROC4_NULL, {}, 100003 + 1)));  // another program
  CHECK_FALSE(runs_inline_record(call(5, {})));                                // no such procedure
  std::vector<std::byte> truncated = compound({nfs4::SEQUENCE4args{}, nfs4::PUTFH4args{}, nfs4::GETATTR4args{}});
  truncated.resize(truncated.size() - 4);
  CHECK_FALSE(runs_inline_record(truncated));
  CHECK_FALSE(runs_inline_record(std::vector<std::byte>(3)));
}
