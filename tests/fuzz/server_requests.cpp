// Fuzzes vnfsd's whole request path: bytes in, through the RPC checks, the COMPOUND
// decoder, SEQUENCE and the reply cache, and the operation handlers on a real export (a
// scratch directory), reply out. Two kinds of input, by the first byte:
//   even: the rest is a whole RPC record, as a client would send it;
//   odd:  the rest follows a SEQUENCE on a live session — an RPC call header (AUTH_SYS
//         root), a COMPOUND header counting 1 + (first byte >> 1) operations, a valid
//         SEQUENCE, then the fuzzer's bytes as the remaining operations — so the handlers
//         themselves are reached.
// Properties: handle() never throws; a call gets a reply that decodes as an RPC reply to
// its xid (and, when accepted with results, as a COMPOUND4res); nothing beside the export
// changes.
// State (files, opens, the session) carries over from input to input, as on a real server.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include "fuzz_input.hpp"
#include "server/dispatcher.hpp"
#include "server/server_state.hpp"
#include "vnfs/nfs4/nfs4.hpp"
#include "vnfs/rpc/auth.hpp"
#include "vnfs/rpc/message.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
namespace fs = std::filesystem;

namespace {

/// The scratch directory: export/ (served) and outside/ (must never change).
struct scratch {
  fs::path root, exported, outside;
  scratch() {
    char tmpl[] = "/tmp/vnfs-fuzz-server-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    root = tmpl;
    exported = root / "export";
    outside = root / "outside";
    fs::create_directories(exported / "dir" / "sub");
    fs::create_directories(outside);
    std::ofstream(exported / "file") << "some bytes in a file";
    std::ofstream(exported / "dir" / "inner") << "inner";
    fs::create_symlink("file", exported / "link");
    fs::create_symlink("../outside", exported / "escape");
    std::ofstream(outside / "canary") << "must not change";
  }
  ~scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;

  /// Only export/ and outside/ at the top, and outside/ exactly as made.
  bool outside_untouched() const {
    std::size_t top = 0, out = 0;
    for (auto& e : fs::directory_iterator(root)) {
      (void)e;
      ++top;
    }
    for (auto& e : fs::directory_iterator(outside)) {
      (void)e;
      ++out;
    }
    std::error_code ec;
    return top == 2 && out == 1 && fs::file_size(outside / "canary", ec) == 15 && !ec;
  }
};

struct harness {
  scratch dir;
  server::server_state state;
  server::dispatcher d{state};
  sessionid4 session{};
  sequenceid4 next_seqid = 1;
  std::uint32_t xid = 1;

  harness() : state(options(dir.exported)) { open_session(); }

  static server::server_options options(const fs::path& exp) {
    server::server_options o;
    o.export_dir = exp;
    o.lease = std::chrono::seconds(3600);
    return o;
  }

  std::vector<std::byte> call_header() {
    xdr::encoder e;
    rpc::authsys_parms p;
    p.machinename = "fuzz";
    rpc::encode_call(e, {xid++, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, rpc::make_authsys(p), {}});
    return e.flatten();
  }

  /// Runs a record through the dispatcher and checks the reply; the COMPOUND4res if any.
  std::optional<COMPOUND4res> run(std::span<const std::byte> record, std::optional<std::uint32_t> expect_xid) {
    auto reply = d.handle(record);  // an exception escaping here is a finding
    if (!reply) {
      fuzz::require(!expect_xid, "a well-formed call is answered");
      return std::nullopt;
    }
    const auto bytes = reply->msg.flatten();
    xdr::decoder rd(bytes);
    rpc::reply_header h = rpc::decode_reply(rd);  // must decode: vnfsd wrote it
    if (expect_xid) fuzz::require(h.xid == *expect_xid, "the reply answers the call's xid");
    if (!h.is_success()) return std::nullopt;
    if (rd.remaining() == 0) return std::nullopt;  // the NULL procedure's empty result
    return xdr::decode<COMPOUND4res>(rd);         // vnfsd's COMPOUND reply must decode
  }

  COMPOUND4res compound(std::vector<nfs_argop4> ops) {
    auto rec = call_header();
    xdr::encoder e;
    xdr::encode(e, COMPOUND4args{"", 1, std::move(ops)});
    auto body = e.flatten();
    rec.insert(rec.end(), body.begin(), body.end());
    auto r = run(rec, xid - 1);
    if (!r) std::abort();
    return *r;
  }

  void open_session() {
    EXCHANGE_ID4args ex;
    ex.eia_clientowner.co_ownerid = xdr::to_bytes(std::string("vnfs-fuzz"));
    auto r = compound({ex});
    const auto& exr = std::get<EXCHANGE_ID4res>(r.resarray.at(0));
    CREATE_SESSION4args cs;
    cs.csa_clientid = exr.resok4.eir_clientid;
    cs.csa_sequence = exr.resok4.eir_sequenceid;
    cs.csa_fore_chan_attrs = {0, 1u << 20, 1u << 20, 64u << 10, 64, 1, std::nullopt};
    cs.csa_back_chan_attrs = {0, 4096, 4096, 0, 2, 1, std::nullopt};
    cs.csa_cb_program = 0x40000000;
    callback_sec_parms4 none;
    none.cb_secflavor = AUTH_NONE;
    cs.csa_sec_parms.push_back(none);
    auto r2 = compound({cs});
    session = std::get<CREATE_SESSION4res>(r2.resarray.at(0)).resok4.csr_sessionid;
    next_seqid = 1;
  }

  void sequenced(std::uint32_t extra_ops, std::span<const std::byte> ops) {
    const std::uint32_t my_xid = xid;
    auto rec = call_header();
    xdr::encoder e;
    xdr::encode(e, compound_header{"", 1, 1 + extra_ops});
    xdr::encode(e, nfs_argop4{SEQUENCE4args{session, next_seqid, 0, 0, false}});
    auto head = e.flatten();
    rec.insert(rec.end(), head.begin(), head.end());
    rec.insert(rec.end(), ops.begin(), ops.end());
    auto r = run(rec, my_xid);
    if (!r || r->resarray.empty()) return;
    if (const auto* s = std::get_if<SEQUENCE4res>(&r->resarray[0])) {
      if (s->status == nfsstat4::NFS4_OK) {
        ++next_seqid;
      } else if (s->status == nfsstat4::NFS4ERR_BADSESSION || s->status == nfsstat4::NFS4ERR_DEADSESSION ||
                 s->status == nfsstat4::NFS4ERR_STALE_CLIENTID) {
        open_session();  // the fuzzer destroyed it: carry on with a new one
      }
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static harness h;
  if (size == 0) return 0;
  auto in = fuzz::bytes_of(data, size).subspan(1);
  if (data[0] & 1)
    h.sequenced(data[0] >> 1, in);
  else
    h.run(in, std::nullopt);
  fuzz::require(h.dir.outside_untouched(), "nothing outside the export changes");
  return 0;
}
