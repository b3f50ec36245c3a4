#include "vnfs/test/blocking_session.hpp"

#include <unistd.h>

#include <atomic>
#include <stdexcept>

#include "vnfs/rpc/message.hpp"

namespace vnfs::test {

using namespace vnfs::nfs4;

std::vector<std::byte> to_byte_vector(std::string_view s) {
  auto b = reinterpret_cast<const std::byte*>(s.data());
  return {b, b + s.size()};
}
std::string to_string(xdr::bytes_view b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

namespace {

/// The successful result of a single-operation COMPOUND, or a runtime_error naming `what`.
template <class R>
const R& only_result(const COMPOUND4res& res, const char* what) {
  if (res.status != nfsstat4::NFS4_OK)
    throw std::runtime_error(std::string(what) + " failed: " + std::error_code(res.status).message());
  const R* r = res.resarray.size() == 1 ? std::get_if<R>(&res.resarray[0]) : nullptr;
  if (r == nullptr) throw std::runtime_error(std::string(what) + ": unexpected reply");
  return *r;
}

std::string unique_owner() {
  static std::atomic<int> counter{0};
  return "vnfs-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}
}  // namespace

blocking_session::blocking_session(const std::string& host, std::uint16_t port,
                           std::vector<std::string> root_path, session_options opts)
    : host_(host), port_(port), root_path_(std::move(root_path)), opts_(std::move(opts)) {
  channel_ = std::make_unique<blocking_channel>(
      blocking_channel::connect(host_, port_));
  if (opts_.owner.empty()) opts_.owner = unique_owner();

  EXCHANGE_ID4args ex;
  ex.eia_clientowner.co_ownerid = to_byte_vector(opts_.owner);
  ex.eia_clientowner.co_verifier[0] = std::byte{1};
  ex.eia_flags = EXCHGID4_FLAG_USE_NON_PNFS;
  auto r1 = raw({ex});
  const auto& exr = only_result<EXCHANGE_ID4res>(r1, "EXCHANGE_ID");
  clientid_ = exr.resok4.eir_clientid;

  CREATE_SESSION4args cs;
  cs.csa_clientid = clientid_;
  cs.csa_sequence = exr.resok4.eir_sequenceid;
  cs.csa_fore_chan_attrs = opts_.fore;
  cs.csa_back_chan_attrs = {0, 4096, 4096, 0, 2, 1, std::nullopt};
  cs.csa_cb_program = 0x40000000;
  callback_sec_parms4 none;
  none.cb_secflavor = AUTH_NONE;
  cs.csa_sec_parms.push_back(none);
  auto r2 = raw({cs});
  const auto& csr = only_result<CREATE_SESSION4res>(r2, "CREATE_SESSION");
  session_ = csr.resok4.csr_sessionid;
  fore_ = csr.resok4.csr_fore_chan_attrs;
  seqids_.assign(fore_.ca_maxrequests, 0);
}

blocking_session::~blocking_session() {
  if (destroyed_) return;
  try {
    raw({DESTROY_SESSION4args{session_}});
    raw({DESTROY_CLIENTID4args{clientid_}});
  } catch (...) {  // the server may be gone already; nothing to clean up then
  }
}

std::vector<nfs_argop4> blocking_session::root_ops() const {
  std::vector<nfs_argop4> ops{PUTROOTFH4args{}};
  for (const auto& c : root_path_) ops.push_back(LOOKUP4args{c});
  return ops;
}

std::vector<nfs_argop4> blocking_session::path_ops(const std::string& relative) const {
  auto ops = root_ops();
  std::string cur;
  for (char c : relative + "/") {
    if (c == '/') {
      if (!cur.empty()) ops.push_back(LOOKUP4args{cur});
      cur.clear();
    } else {
      cur += c;
    }
  }
  return ops;
}

COMPOUND4res blocking_session::compound(std::vector<nfs_argop4> ops, bool cachethis,
                                    std::uint32_t slot) {
  SEQUENCE4args seq;
  seq.sa_sessionid = session_;
  seq.sa_sequenceid = seqids_.at(slot) + 1;
  seq.sa_slotid = slot;
  seq.sa_highest_slotid = static_cast<slotid4>(seqids_.size() - 1);
  seq.sa_cachethis = cachethis;
  ops.insert(ops.begin(), seq);
  COMPOUND4args args{"", 1, std::move(ops)};
  COMPOUND4res res = call(args);
  // The slot advanced unless SEQUENCE itself failed (RFC 8881 §2.10.6.1).
  if (!res.resarray.empty() && status_of(res.resarray[0]) == nfsstat4::NFS4_OK)
    seqids_.at(slot) = seq.sa_sequenceid;
  return res;
}

COMPOUND4res blocking_session::raw(std::vector<nfs_argop4> ops, std::uint32_t minorversion) {
  return call(COMPOUND4args{"", minorversion, std::move(ops)});
}

std::vector<std::byte> blocking_session::encode_request(const COMPOUND4args& args, std::uint32_t xid) {
  rpc::call_header h;
  h.xid = xid;
  h.prog = NFS4_PROGRAM;
  h.vers = NFS_V4;
  h.proc = NFSPROC4_COMPOUND;
  if (opts_.auth_sys) {
    rpc::authsys_parms p;
    p.machinename = "vnfs";
    p.uid = opts_.uid;
    p.gid = opts_.gid;
    p.gids = opts_.gids;
    h.cred = rpc::make_authsys(p);
  }
  xdr::encoder e;
  rpc::encode_call(e, h);
  xdr::encode(e, args);
  return e.flatten();
}

COMPOUND4res blocking_session::call(const COMPOUND4args& args) {
  std::uint32_t xid = channel_->next_xid();
  last_request_ = encode_request(args, xid);
  last_xid_ = xid;
  return exchange(last_request_, xid);
}

COMPOUND4res blocking_session::resend_last() { return exchange(last_request_, last_xid_); }

COMPOUND4res blocking_session::exchange(const std::vector<std::byte>& request, std::uint32_t xid) {
  channel_->send_record(std::span<const std::byte>(request));
  last_reply_ = channel_->receive_record();
  xdr::decoder d(last_reply_);
  rpc::reply_header h = rpc::decode_reply(d);
  if (h.xid != xid) throw std::runtime_error("reply xid does not match the call");
  rpc::check_reply(h);
  COMPOUND4res res = xdr::decode<COMPOUND4res>(d);
  if (d.remaining() != 0) throw std::runtime_error("trailing bytes after COMPOUND4res");
  return res;
}

void blocking_session::reconnect() {
  channel_ = std::make_unique<blocking_channel>(
      blocking_channel::connect(host_, port_));
}

}  // namespace vnfs::test
