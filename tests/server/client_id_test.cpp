// Client IDs and sessions as RFC 8881 fixes them: the client-record cases of EXCHANGE_ID
// (§18.35.4), CREATE_SESSION's checks (§18.36), SEQUENCE's reply-cache limit (§18.46),
// RECLAIM_COMPLETE (§18.51) — against vnfsd and NFS-Ganesha. Where Ganesha 4.3 answers
// otherwise than the RFC, the test asserts Ganesha's actual answer and says so.
//
// Each test speaks raw COMPOUNDs through a `peer`: one TCP connection whose AUTH_SYS
// credential (the principal, §2.4) the test chooses.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <optional>

#include "stateful_client.hpp"
#include "vnfs/rpc/auth.hpp"
#include "vnfs/test/blocking_channel.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;

namespace {

/// A connection sending COMPOUNDs as AUTH_SYS uid:gid.
class peer {
 public:
  peer(test_server& srv, std::uint32_t uid = 0, std::uint32_t gid = 0)
      : srv_(srv),
        ch_(test::blocking_channel::connect(srv.host(), srv.port())),
        uid_(uid),
        gid_(gid) {}

  COMPOUND4res send(std::vector<nfs_argop4> ops) {
    const COMPOUND4args args{"", 1, std::move(ops)};
    rpc::authsys_parms p;
    p.machinename = "client-id-test";
    p.uid = uid_;
    p.gid = gid_;
    replies_.push_back(std::make_unique<std::vector<std::byte>>(test::rpc_call(
        ch_, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND,
        [&](xdr::encoder& e) { xdr::encode(e, args); }, rpc::make_authsys(p))));
    xdr::decoder d(*replies_.back());
    return xdr::decode<COMPOUND4res>(d);
  }

  EXCHANGE_ID4res exchange_id(const std::string& owner, std::uint8_t verifier,
                              std::uint32_t flags = EXCHGID4_FLAG_USE_NON_PNFS) {
    EXCHANGE_ID4args ex;
    ex.eia_clientowner.co_ownerid = to_byte_vector(owner);
    ex.eia_clientowner.co_verifier[0] = std::byte{verifier};
    ex.eia_flags = flags;
    auto r = send({ex});
    if (r.resarray.empty()) return EXCHANGE_ID4res{r.status, {}};
    return result_at<EXCHANGE_ID4res>(r, 0);
  }

  static CREATE_SESSION4args session_args(clientid4 id, sequenceid4 seq) {
    CREATE_SESSION4args cs;
    cs.csa_clientid = id;
    cs.csa_sequence = seq;
    cs.csa_fore_chan_attrs = {0, 65536, 65536, 4096, 16, 4, std::nullopt};
    cs.csa_back_chan_attrs = {0, 4096, 4096, 0, 2, 1, std::nullopt};
    cs.csa_cb_program = 0x40000000;
    callback_sec_parms4 none;
    none.cb_secflavor = AUTH_NONE;
    cs.csa_sec_parms.push_back(none);
    return cs;
  }

  CREATE_SESSION4res create_session(const CREATE_SESSION4args& cs) {
    auto r = send({cs});
    if (r.resarray.empty()) return CREATE_SESSION4res{r.status, {}};
    return result_at<CREATE_SESSION4res>(r, 0);
  }
  /// CREATE_SESSION with the defaults above for the client ID an EXCHANGE_ID returned.
  CREATE_SESSION4res create_session(const EXCHANGE_ID4res& ex) {
    return create_session(session_args(ex.resok4.eir_clientid, ex.resok4.eir_sequenceid));
  }

  /// SEQUENCE on slot 0 of `sid` with sequence id `seq`, then `ops`.
  COMPOUND4res sequence(const sessionid4& sid, sequenceid4 seq, std::vector<nfs_argop4> ops = {},
                        bool cachethis = false) {
    ops.insert(ops.begin(), SEQUENCE4args{sid, seq, 0, 0, cachethis});
    return send(std::move(ops));
  }

  /// PUTROOTFH and the LOOKUPs to the export.
  std::vector<nfs_argop4> root_ops() const {
    std::vector<nfs_argop4> ops{PUTROOTFH4args{}};
    for (const auto& c : srv_.root_path()) ops.push_back(LOOKUP4args{c});
    return ops;
  }

 private:
  test_server& srv_;
  test::blocking_channel ch_;
  std::uint32_t uid_, gid_;
  std::vector<std::unique_ptr<std::vector<std::byte>>> replies_;
};

/// A client owner no other test (or earlier run against the same Ganesha) uses.
std::string fresh_owner(const char* what) {
  static std::atomic<int> counter{0};
  return std::string("cid-") + what + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++);
}

bool confirmed(const EXCHANGE_ID4res& r) {
  return (r.resok4.eir_flags & EXCHGID4_FLAG_CONFIRMED_R) != 0;
}

constexpr std::uint32_t other_uid = 4242;

}  // namespace

TEST_CASE("RFC 8881 §18.35.4 cases 1, 2, 4: new, repeated and replaced client records") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  peer c(srv);
  const std::string owner = fresh_owner("c124");

  // Case 1: a new owner gets a new, unconfirmed client ID.
  auto first = c.exchange_id(owner, 1);
  REQUIRE(first.status == nfsstat4::NFS4_OK);
  CHECK_FALSE(confirmed(first));

  // Case 4: an unconfirmed record is replaced by a new one with a new client ID; the old
  // client ID is gone.
  auto second = c.exchange_id(owner, 1);
  REQUIRE(second.status == nfsstat4::NFS4_OK);
  CHECK_FALSE(confirmed(second));
  CHECK(second.resok4.eir_clientid != first.resok4.eir_clientid);
  CHECK(c.create_session(first).status == nfsstat4::NFS4ERR_STALE_CLIENTID);

  auto cs = c.create_session(second);
  REQUIRE(cs.status == nfsstat4::NFS4_OK);

  // Case 2: the confirmed record again (same verifier, same principal): the same client ID,
  // now with EXCHGID4_FLAG_CONFIRMED_R.
  auto again = c.exchange_id(owner, 1);
  REQUIRE(again.status == nfsstat4::NFS4_OK);
  CHECK(confirmed(again));
  CHECK(again.resok4.eir_clientid == second.resok4.eir_clientid);
  CHECK(c.sequence(cs.resok4.csr_sessionid, 1).status == nfsstat4::NFS4_OK);
}

TEST_CASE("RFC 8881 §18.35.4 case 3: another principal for a confirmed owner is CLID_INUSE") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  peer c(srv), intruder(srv, other_uid, other_uid);
  const std::string owner = fresh_owner("c3");
  auto ex = c.exchange_id(owner, 1);
  REQUIRE(ex.status == nfsstat4::NFS4_OK);
  auto cs = c.create_session(ex);
  REQUIRE(cs.status == nfsstat4::NFS4_OK);
  if (kind == server_kind::vnfsd) {
    CHECK(intruder.exchange_id(owner, 1).status == nfsstat4::NFS4ERR_CLID_INUSE);
    CHECK(intruder.exchange_id(owner, 2).status == nfsstat4::NFS4ERR_CLID_INUSE);
    // The owner's record is untouched.
    CHECK(c.sequence(cs.resok4.csr_sessionid, 1).status == nfsstat4::NFS4_OK);
    auto again = c.exchange_id(owner, 1);
    CHECK(again.resok4.eir_clientid == ex.resok4.eir_clientid);
  } else {
    // NFS-Ganesha 4.3 (like the Linux server) treats a record without open or lock state as
    // free: the other principal's EXCHANGE_ID replaces it with a new client ID, and the
    // session goes with it. vnfsd refuses while the record's lease runs (every record it
    // holds), which keeps one principal from tearing down another's sessions.
    auto taken = intruder.exchange_id(owner, 1);
    CHECK(taken.status == nfsstat4::NFS4_OK);
    CHECK(taken.resok4.eir_clientid != ex.resok4.eir_clientid);
    CHECK(c.sequence(cs.resok4.csr_sessionid, 1).status == nfsstat4::NFS4ERR_BADSESSION);
  }
}

TEST_CASE("RFC 8881 §18.35.4 case 5: a restarted client's old state lasts until the new "
          "client ID is confirmed") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  const std::string dir = new_workdir(srv, "c5_");
  peer c(srv);
  const std::string owner = fresh_owner("c5");
  auto old_ex = c.exchange_id(owner, 1);
  REQUIRE(old_ex.status == nfsstat4::NFS4_OK);
  auto old_cs = c.create_session(old_ex);
  REQUIRE(old_cs.status == nfsstat4::NFS4_OK);
  const sessionid4 old_sid = old_cs.resok4.csr_sessionid;
  sequenceid4 old_seq = 1;
  const clientid4 old_id = old_ex.resok4.eir_clientid;
  REQUIRE(c.sequence(old_sid, old_seq++, {RECLAIM_COMPLETE4args{false}}).status ==
          nfsstat4::NFS4_OK);

  // The old incarnation holds "held" open, denying writes to everyone else.
  auto root = c.root_ops();
  root.push_back(LOOKUP4args{dir});
  OPEN4args op;
  op.share_access = OPEN4_SHARE_ACCESS_READ;
  op.share_deny = OPEN4_SHARE_DENY_WRITE;
  op.owner = {old_id, to_byte_vector("c5-owner")};
  op.openhow.opentype = opentype4::OPEN4_CREATE;
  op.openhow.how.mode = createmode4::UNCHECKED4;
  op.claim.claim = open_claim_type4::CLAIM_NULL;
  op.claim.file = "held";
  auto ops = root;
  ops.push_back(op);
  auto opened = c.sequence(old_sid, old_seq++, ops);
  REQUIRE(opened.status == nfsstat4::NFS4_OK);

  // The client comes back with a new verifier: a new, unconfirmed client ID.
  auto new_ex = c.exchange_id(owner, 2);
  REQUIRE(new_ex.status == nfsstat4::NFS4_OK);
  CHECK_FALSE(confirmed(new_ex));
  CHECK(new_ex.resok4.eir_clientid != old_id);

  // Until it is confirmed, the old session and its state stay valid.
  CHECK(c.sequence(old_sid, old_seq++).status == nfsstat4::NFS4_OK);
  {
    // A third party still cannot open the file for writing.
    peer other(srv);
    auto oex = other.exchange_id(fresh_owner("c5-other"), 1);
    auto ocs = other.create_session(oex);
    REQUIRE(ocs.status == nfsstat4::NFS4_OK);
    REQUIRE(other.sequence(ocs.resok4.csr_sessionid, 1, {RECLAIM_COMPLETE4args{false}}).status ==
            nfsstat4::NFS4_OK);
    OPEN4args w = op;
    w.share_access = OPEN4_SHARE_ACCESS_WRITE;
    w.share_deny = OPEN4_SHARE_DENY_NONE;
    w.owner = {oex.resok4.eir_clientid, to_byte_vector("c5-other")};
    w.openhow.opentype = opentype4::OPEN4_NOCREATE;
    auto wops = root;
    wops.push_back(w);
    CHECK(other.sequence(ocs.resok4.csr_sessionid, 2, wops).status ==
          nfsstat4::NFS4ERR_SHARE_DENIED);

    // CREATE_SESSION confirms the new client ID: the old one, its session and its open go.
    auto new_cs = c.create_session(new_ex);
    REQUIRE(new_cs.status == nfsstat4::NFS4_OK);
    CHECK(c.sequence(old_sid, old_seq).status == nfsstat4::NFS4ERR_BADSESSION);
    CHECK(c.create_session(old_ex).status == nfsstat4::NFS4ERR_STALE_CLIENTID);
    auto wr = other.sequence(ocs.resok4.csr_sessionid, 3, wops);
    CHECK(wr.status == nfsstat4::NFS4_OK);
    auto again = c.exchange_id(owner, 2);
    CHECK(confirmed(again));
    CHECK(again.resok4.eir_clientid == new_ex.resok4.eir_clientid);
  }
}

TEST_CASE("RFC 8881 §18.35.4 cases 6-9: EXCHGID4_FLAG_UPD_CONFIRMED_REC_A") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  peer c(srv), intruder(srv, other_uid, other_uid);
  const std::uint32_t upd = EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;
  const std::string owner = fresh_owner("upd");

  // Case 7: no record at all, then only an unconfirmed one: NFS4ERR_NOENT.
  CHECK(c.exchange_id(owner, 1, upd).status == nfsstat4::NFS4ERR_NOENT);
  auto ex = c.exchange_id(owner, 1);
  REQUIRE(ex.status == nfsstat4::NFS4_OK);
  CHECK(c.exchange_id(owner, 1, upd).status == nfsstat4::NFS4ERR_NOENT);
  // The failed update did not disturb the unconfirmed record.
  auto cs = c.create_session(ex);
  REQUIRE(cs.status == nfsstat4::NFS4_OK);

  // Case 6: an update of the confirmed record keeps its client ID.
  auto up = c.exchange_id(owner, 1, upd);
  REQUIRE(up.status == nfsstat4::NFS4_OK);
  CHECK(up.resok4.eir_clientid == ex.resok4.eir_clientid);
  CHECK(confirmed(up));

  // Case 8: another verifier: NFS4ERR_NOT_SAME. Case 9: another principal: NFS4ERR_PERM.
  CHECK(c.exchange_id(owner, 2, upd).status == nfsstat4::NFS4ERR_NOT_SAME);
  CHECK(intruder.exchange_id(owner, 1, upd).status == nfsstat4::NFS4ERR_PERM);
  // None of them touched the record or its session.
  CHECK(c.sequence(cs.resok4.csr_sessionid, 1).status == nfsstat4::NFS4_OK);
}

TEST_CASE("RFC 8881 §18.35.3: eia_flags a client may not set are NFS4ERR_INVAL") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  peer c(srv);
  // Only the server sets EXCHGID4_FLAG_CONFIRMED_R.
  CHECK(c.exchange_id(fresh_owner("fl"), 1, EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_CONFIRMED_R)
            .status == nfsstat4::NFS4ERR_INVAL);
  // Bits RFC 8881 does not define.
  for (std::uint32_t bit : {0x00000008u, 0x00000800u, 0x00100000u, 0x10000000u}) {
    INFO("bit " << bit);
    CHECK(c.exchange_id(fresh_owner("fl"), 1, EXCHGID4_FLAG_USE_NON_PNFS | bit).status ==
          nfsstat4::NFS4ERR_INVAL);
  }
  // The defined client bits are accepted.
  CHECK(c.exchange_id(fresh_owner("fl"), 1,
                      EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_SUPP_MOVED_REFER |
                          EXCHGID4_FLAG_SUPP_MOVED_MIGR | EXCHGID4_FLAG_BIND_PRINC_STATEID)
            .status == nfsstat4::NFS4_OK);
}

TEST_CASE("RFC 8881 §18.36.3, §18.36.4: CREATE_SESSION flags, principal and back channel") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  peer c(srv), intruder(srv, other_uid, other_uid);
  auto ex = c.exchange_id(fresh_owner("cs"), 1);
  REQUIRE(ex.status == nfsstat4::NFS4_OK);
  auto args = peer::session_args(ex.resok4.eir_clientid, ex.resok4.eir_sequenceid);

  SECTION("undefined csa_flags") {
    auto bad = args;
    bad.csa_flags = 0x100;
    CHECK(c.create_session(bad).status == nfsstat4::NFS4ERR_INVAL);
  }
  SECTION("another principal than the one that created the client ID") {
    CHECK(intruder.create_session(args).status == nfsstat4::NFS4ERR_CLID_INUSE);
  }
  SECTION("a back channel too small for a callback") {
    auto small_req = args;
    small_req.csa_back_chan_attrs.ca_maxrequestsize = 64;
    auto small_resp = args;
    small_resp.csa_back_chan_attrs.ca_maxresponsesize = 16;
    auto one_op = args;
    one_op.csa_back_chan_attrs.ca_maxoperations = 1;
    CHECK(c.create_session(small_req).status == nfsstat4::NFS4ERR_TOOSMALL);
    CHECK(c.create_session(small_resp).status == nfsstat4::NFS4ERR_TOOSMALL);
    CHECK(c.create_session(one_op).status == nfsstat4::NFS4ERR_TOOSMALL);
  }
  // After any of the refusals the client ID is still usable.
  auto ok = c.create_session(args);
  CHECK(ok.status == nfsstat4::NFS4_OK);
}

TEST_CASE("RFC 8881 §2.10.6.4, §18.46.3: sa_cachethis beyond ca_maxresponsesize_cached is "
          "REP_TOO_BIG_TO_CACHE") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  peer c(srv);
  auto ex = c.exchange_id(fresh_owner("cache"), 1);
  REQUIRE(ex.status == nfsstat4::NFS4_OK);
  auto args = peer::session_args(ex.resok4.eir_clientid, ex.resok4.eir_sequenceid);
  // A SEQUENCE-only reply is 56 bytes (COMPOUND4res header 12, SEQUENCE4res 44).
  const count4 asked = GENERATE(count4{0}, count4{32}, count4{64});
  INFO("ca_maxresponsesize_cached " << asked);
  args.csa_fore_chan_attrs.ca_maxresponsesize_cached = asked;
  auto cs = c.create_session(args);
  REQUIRE(cs.status == nfsstat4::NFS4_OK);
  const auto& fore = cs.resok4.csr_fore_chan_attrs;
  CHECK(fore.ca_maxresponsesize_cached <= std::max<count4>(asked, 64));
  const sessionid4 sid = cs.resok4.csr_sessionid;
  sequenceid4 seq = 1;

  // Not cached: every size is fine.
  CHECK(c.sequence(sid, seq, c.root_ops(), false).status == nfsstat4::NFS4_OK);
  ++seq;
  std::vector<nfs_argop4> big = c.root_ops();
  for (int i = 0; i < 4; ++i) big.push_back(GETFH4args{});
  auto r = c.sequence(sid, seq, big, true);
  CHECK(r.status == nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE);
  REQUIRE_FALSE(r.resarray.empty());
  const bool sequence_ok = status_of(r.resarray[0]) == nfsstat4::NFS4_OK;
  if (kind == server_kind::vnfsd) {
    // SEQUENCE itself fails when the cache cannot hold even its own reply (then the slot
    // does not advance); otherwise the first operation past the limit fails.
    CHECK(sequence_ok == (fore.ca_maxresponsesize_cached >= 56));
    if (sequence_ok) {
      ++seq;
    } else {
      auto alone = c.sequence(sid, seq, {}, true);
      CHECK(alone.status == nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE);
      CHECK(alone.resarray.size() == 1);
    }
  } else {
    // NFS-Ganesha 4.3 fails SEQUENCE itself at each of these sizes, and, unlike §2.10.6.1
    // (a SEQUENCE that fails leaves the slot alone), consumes the sequence id: the same id
    // again answers the cached error.
    CHECK_FALSE(sequence_ok);
    ++seq;
  }
  CHECK(c.sequence(sid, seq, {}, false).status == nfsstat4::NFS4_OK);
}

TEST_CASE("RFC 8881 §18.51.3: RECLAIM_COMPLETE with rca_one_fs TRUE, then FALSE") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server& srv = server_of(kind);
  peer c(srv);
  auto ex = c.exchange_id(fresh_owner("rc"), 1);
  auto cs = c.create_session(ex);
  REQUIRE(cs.status == nfsstat4::NFS4_OK);
  const sessionid4 sid = cs.resok4.csr_sessionid;
  auto ops = c.root_ops();
  ops.push_back(RECLAIM_COMPLETE4args{true});
  CHECK(c.sequence(sid, 1, ops).status == nfsstat4::NFS4_OK);
  CHECK(c.sequence(sid, 2, {RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  CHECK(c.sequence(sid, 3, {RECLAIM_COMPLETE4args{false}}).status ==
        nfsstat4::NFS4ERR_COMPLETE_ALREADY);
}
