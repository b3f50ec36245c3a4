// Sessions, SEQUENCE and the reply cache, COMPOUND rules, RPC-level errors, limits and
// malformed input — against vnfsd and, where RFC 8881 fixes the answer, NFS-Ganesha too.
#include <catch2/catch.hpp>

#include <fstream>
#include <thread>

#include "support/test_session.hpp"
#include "vnfs/rpc/message.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;
using namespace vnfs::test;

namespace {

std::vector<std::byte> rpc_call_bytes(std::uint32_t xid, std::uint32_t prog, std::uint32_t vers,
                                      std::uint32_t proc, const rpc::opaque_auth& cred,
                                      const std::vector<std::byte>& body) {
  rpc::call_header h{xid, prog, vers, proc, cred, {}};
  xdr::encoder e;
  rpc::encode_call(e, h);
  e.put_fixed_opaque(body);
  return e.flatten();
}

rpc::reply_header send_and_read_header(test::blocking_channel& ch,
                                       const std::vector<std::byte>& msg,
                                       std::vector<std::byte>* rest = nullptr) {
  ch.send_record(std::span<const std::byte>(msg));
  auto reply = ch.receive_record();
  xdr::decoder d(reply);
  auto h = rpc::decode_reply(d);
  if (rest) rest->assign(d.rest().begin(), d.rest().end());
  return h;
}

}  // namespace

TEST_CASE("session set-up and a SEQUENCE-only COMPOUND") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server srv(kind);
  test_session s(srv);
  auto r = s.compound({});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const auto& seq = result_at<SEQUENCE4res>(r, 0);
  CHECK(seq.resok4.sr_sessionid == s.session_id());
  CHECK(seq.resok4.sr_sequenceid == 1);
  CHECK(seq.resok4.sr_slotid == 0);
  CHECK(s.fore().ca_maxrequests >= 1);
}

TEST_CASE("vnfsd grants large COMPOUNDs") {
  test_server srv(server_kind::vnfsd);
  test_session s(srv);
  CHECK(s.fore().ca_maxoperations == 1024);  // asked 1024; at least 256 is required
  CHECK(s.fore().ca_maxrequestsize == 4u << 20);
  CHECK(s.fore().ca_maxresponsesize == 4u << 20);
  CHECK(s.fore().ca_maxrequests == 16);
}

TEST_CASE("COMPOUND rules outside a session") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server srv(kind);
  test_session s(srv);
  SECTION("an operation that needs a session, without SEQUENCE") {
    auto r = s.raw({PUTROOTFH4args{}});
    CHECK(r.status == nfsstat4::NFS4ERR_OP_NOT_IN_SESSION);
    // vnfsd returns the failed operation's result (RFC 8881 §15.2: results up to and
    // including the first failure); Ganesha 4.3 returns the status with no results.
    CHECK(r.resarray.size() == (kind == server_kind::vnfsd ? 1u : 0u));
  }
  SECTION("SEQUENCE in second position") {
    SEQUENCE4args seq{s.session_id(), s.next_seqid(), 0, 0, false};
    auto r = s.compound({PUTROOTFH4args{}, seq});
    CHECK(r.status == nfsstat4::NFS4ERR_SEQUENCE_POS);
    CHECK(r.resarray.size() == 3);
  }
  SECTION("minor version 0 is refused, with no results") {
    auto r = s.raw({PUTROOTFH4args{}}, 0);
    CHECK(r.status == nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
    CHECK(r.resarray.empty());
  }
  SECTION("minor version 99 is refused") {
    auto r = s.raw({PUTROOTFH4args{}}, 99);
    CHECK(r.status == nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
  }
  SECTION("an unknown opcode is OP_ILLEGAL") {
    auto r = s.compound({illegal_op4{77777}});
    CHECK(r.status == nfsstat4::NFS4ERR_OP_ILLEGAL);
    REQUIRE(r.resarray.size() == 2);
    CHECK(opnum_of(r.resarray[1]) == nfs_opnum4::OP_ILLEGAL);
  }
  SECTION("an empty COMPOUND succeeds") {
    auto r = s.raw({});
    CHECK(r.status == nfsstat4::NFS4_OK);
    CHECK(r.resarray.empty());
  }
}

TEST_CASE("vnfsd: NFSv4.0 operations are NOTSUPP, session-less ops must be alone") {
  test_server srv(server_kind::vnfsd);
  test_session s(srv);
  auto r = s.compound({unsupported_op4{nfs_opnum4::OP_RENEW}});
  CHECK(r.status == nfsstat4::NFS4ERR_NOTSUPP);
  EXCHANGE_ID4args ex;
  ex.eia_clientowner.co_ownerid = to_byte_vector("another");
  auto r2 = s.raw({ex, PUTROOTFH4args{}});
  CHECK(r2.status == nfsstat4::NFS4ERR_NOT_ONLY_OP);
  // COPY is an NFSv4.2 operation: illegal in a minor version 1 COMPOUND.
  auto r3 = s.compound({COPY4args{}});
  CHECK(r3.status == nfsstat4::NFS4ERR_OP_ILLEGAL);
}

TEST_CASE("SEQUENCE slot and sequence-id rules") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server srv(kind);
  test_session s(srv);
  REQUIRE(s.compound({}).status == nfsstat4::NFS4_OK);
  SECTION("a slot beyond the table is BADSLOT") {
    auto r = s.raw({SEQUENCE4args{s.session_id(), 1, s.fore().ca_maxrequests + 5, 0, false}});
    CHECK(r.status == nfsstat4::NFS4ERR_BADSLOT);
  }
  SECTION("a sequence id that skips ahead is SEQ_MISORDERED") {
    s.set_seqid(0, 5);
    CHECK(s.compound({}).status == nfsstat4::NFS4ERR_SEQ_MISORDERED);
  }
  SECTION("an unknown session is BADSESSION") {
    sessionid4 bogus{};
    bogus[0] = std::byte{0x42};
    auto r = s.raw({SEQUENCE4args{bogus, 1, 0, 0, false}});
    CHECK(r.status == nfsstat4::NFS4ERR_BADSESSION);
  }
}

TEST_CASE("vnfsd: a retransmitted request gets the cached reply and is executed once") {
  test_server srv(server_kind::vnfsd);
  test_session s(srv);
  auto ops = s.root_ops();
  CREATE4args mk;
  mk.objtype.type = nfs_ftype4::NF4DIR;
  mk.objname = "once";
  ops.push_back(mk);
  auto first = s.compound(ops, /*cachethis=*/true);
  REQUIRE(first.status == nfsstat4::NFS4_OK);
  // The same bytes again: executing twice would answer NFS4ERR_EXIST.
  auto again = s.resend_last();
  CHECK(again == first);
  // The same after a reconnect (a new TCP connection, the same session).
  s.reconnect();
  auto third = s.resend_last();
  CHECK(third == first);
  CHECK(std::filesystem::is_directory(srv.export_dir() / "once"));
}

TEST_CASE("vnfsd: a retransmitted cached READ gets the cached bytes, payloads of every length") {
  test_server srv(server_kind::vnfsd);
  test_session s(srv);
  std::vector<std::byte> before(10001), after(10001, std::byte{0xee});
  for (std::size_t i = 0; i < before.size(); ++i) before[i] = std::byte(i * 7 + 3);
  auto write = [&](const std::vector<std::byte>& b) {
    std::ofstream(srv.export_dir() / "cached-read", std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  write(before);
  auto ops = s.path_ops("cached-read");
  // 10001 bytes (padded), 5 bytes (a payload the encoder copies), none at EOF.
  ops.push_back(READ4args{{}, 0, 20000});
  ops.push_back(READ4args{{}, 3, 5});
  ops.push_back(READ4args{{}, 10001, 10});
  auto first = s.compound(ops, /*cachethis=*/true);
  REQUIRE(first.status == nfsstat4::NFS4_OK);
  const std::size_t n = first.resarray.size();
  CHECK(result_at<READ4res>(first, n - 3).resok4.data.size() == 10001);
  // Copies: the views go when the next reply arrives.
  auto data_of = [](const COMPOUND4res& r, std::size_t i) {
    const auto& d = result_at<READ4res>(r, i).resok4.data;
    return std::vector<std::byte>(d.begin(), d.end());
  };
  const auto big = data_of(first, n - 3), small = data_of(first, n - 2);
  CHECK(big == before);
  CHECK(small == std::vector<std::byte>(before.begin() + 3, before.begin() + 8));
  // The file changes: executing the READs again would read it.
  write(after);
  auto again = s.resend_last();
  REQUIRE(again.status == nfsstat4::NFS4_OK);
  REQUIRE(again.resarray.size() == n);
  CHECK(data_of(again, n - 3) == big);
  CHECK(data_of(again, n - 2) == small);
  CHECK(data_of(again, n - 1).empty());
  CHECK(result_at<READ4res>(again, n - 1).resok4.eof);
  CHECK(result_at<SEQUENCE4res>(again, 0).resok4.sr_sequenceid == result_at<SEQUENCE4res>(first, 0).resok4.sr_sequenceid);
}

TEST_CASE("vnfsd: a retry of an uncached request is RETRY_UNCACHED_REP") {
  test_server srv(server_kind::vnfsd);
  test_session s(srv);
  REQUIRE(s.compound({}, /*cachethis=*/false).status == nfsstat4::NFS4_OK);
  auto r = s.resend_last();
  CHECK(r.status == nfsstat4::NFS4ERR_RETRY_UNCACHED_REP);
}

TEST_CASE("vnfsd: limits negotiated in CREATE_SESSION are enforced") {
  test_server srv(server_kind::vnfsd);
  session_options o;
  o.fore = {0, 8192, 8192, 256, 8, 4, std::nullopt};
  test_session s(srv, o);
  CHECK(s.fore().ca_maxoperations == 8);
  CHECK(s.fore().ca_maxrequestsize == 8192);
  SECTION("more operations than granted") {
    std::vector<nfs_argop4> ops(8, PUTROOTFH4args{});
    auto r = s.compound(ops);  // 9 with SEQUENCE
    CHECK(r.status == nfsstat4::NFS4ERR_TOO_MANY_OPS);
    CHECK(r.resarray.size() == 1);
    // The slot did not advance: the same sequence id works now.
    CHECK(s.compound({}).status == nfsstat4::NFS4_OK);
  }
  SECTION("a request larger than granted") {
    auto r = s.compound({LOOKUP4args{std::string(9000, 'a')}});
    CHECK(r.status == nfsstat4::NFS4ERR_REQ_TOO_BIG);
  }
  SECTION("a reply larger than granted") {
    std::vector<nfs_argop4> ops{PUTROOTFH4args{}};
    for (int i = 0; i < 6; ++i) ops.push_back(GETFH4args{});
    // SEQUENCE and PUTROOTFH take 64 bytes of the reply, each GETFH over 40 more: past the
    // 256 cacheable bytes once cachethis is asked for; without it the reply fits.
    auto r = s.compound(ops, /*cachethis=*/true);
    CHECK(r.status == nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE);
    CHECK(s.compound(ops, /*cachethis=*/false).status == nfsstat4::NFS4_OK);
  }
}

TEST_CASE("vnfsd: CREATE_SESSION sequence replay and misordering") {
  test_server srv(server_kind::vnfsd);
  test::blocking_channel ch = test::blocking_channel::connect(srv.host(), srv.port());
  test_session s(srv);
  EXCHANGE_ID4args ex;
  ex.eia_clientowner.co_ownerid = to_byte_vector("cs-replay");
  auto exr = result_at<EXCHANGE_ID4res>(s.raw({ex}), 0);
  REQUIRE(exr.status == nfsstat4::NFS4_OK);
  CHECK((exr.resok4.eir_flags & EXCHGID4_FLAG_CONFIRMED_R) == 0);
  CREATE_SESSION4args cs;
  cs.csa_clientid = exr.resok4.eir_clientid;
  cs.csa_sequence = exr.resok4.eir_sequenceid;
  cs.csa_fore_chan_attrs = {0, 65536, 65536, 4096, 16, 4, std::nullopt};
  cs.csa_back_chan_attrs = {0, 4096, 4096, 0, 2, 1, std::nullopt};
  auto first = s.raw({cs});
  REQUIRE(first.status == nfsstat4::NFS4_OK);
  auto replay = s.raw({cs});  // same csa_sequence: the same reply, no new session
  CHECK(replay == first);
  cs.csa_sequence += 5;
  CHECK(s.raw({cs}).status == nfsstat4::NFS4ERR_SEQ_MISORDERED);
  // The client is now confirmed.
  auto again = result_at<EXCHANGE_ID4res>(s.raw({ex}), 0);
  CHECK((again.resok4.eir_flags & EXCHGID4_FLAG_CONFIRMED_R) != 0);
  CHECK(again.resok4.eir_clientid == exr.resok4.eir_clientid);
  // A client with a session cannot be destroyed; without one it can.
  auto sid = result_at<CREATE_SESSION4res>(first, 0).resok4.csr_sessionid;
  CHECK(s.raw({DESTROY_CLIENTID4args{cs.csa_clientid}}).status == nfsstat4::NFS4ERR_CLIENTID_BUSY);
  CHECK(s.raw({DESTROY_SESSION4args{sid}}).status == nfsstat4::NFS4_OK);
  CHECK(s.raw({DESTROY_SESSION4args{sid}}).status == nfsstat4::NFS4ERR_BADSESSION);
  CHECK(s.raw({DESTROY_CLIENTID4args{cs.csa_clientid}}).status == nfsstat4::NFS4_OK);
  CHECK(s.raw({DESTROY_CLIENTID4args{cs.csa_clientid}}).status == nfsstat4::NFS4ERR_STALE_CLIENTID);
}

TEST_CASE("RECLAIM_COMPLETE once per client") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server srv(kind);
  test_session s(srv);
  CHECK(s.compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4_OK);
  CHECK(s.compound({RECLAIM_COMPLETE4args{false}}).status == nfsstat4::NFS4ERR_COMPLETE_ALREADY);
}

TEST_CASE("BIND_CONN_TO_SESSION on a new connection") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server srv(kind);
  test_session s(srv);
  s.reconnect();
  BIND_CONN_TO_SESSION4args b{s.session_id(), channel_dir_from_client4::CDFC4_FORE, false};
  auto r = s.raw({b});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const auto& res = result_at<BIND_CONN_TO_SESSION4res>(r, 0);
  CHECK(res.resok4.bctsr_sessid == s.session_id());
  CHECK(res.resok4.bctsr_dir == channel_dir_from_server4::CDFS4_FORE);
  CHECK(s.compound({}).status == nfsstat4::NFS4_OK);
}

TEST_CASE("vnfsd: an idle client's lease expires") {
  test_server srv(server_kind::vnfsd, {"--lease", "1"});
  test_session s(srv);
  s.forget();  // it will be gone
  REQUIRE(s.compound({}).status == nfsstat4::NFS4_OK);
  // Bounded wait for the reaper (lease 1 s, checked every second); state is asserted, not time.
  nfsstat4 st = nfsstat4::NFS4_OK;
  for (int i = 0; i < 50 && st == nfsstat4::NFS4_OK; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (i >= 15) st = s.raw({SEQUENCE4args{s.session_id(), s.next_seqid(), 0, 0, false}}).status;
  }
  CHECK(st == nfsstat4::NFS4ERR_BADSESSION);
}

TEST_CASE("RPC-level errors") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(name_of(kind));
  test_server srv(kind);
  auto ch = test::blocking_channel::connect(srv.host(), srv.port());
  rpc::authsys_parms p;
  p.machinename = "t";
  auto sys = rpc::make_authsys(p);
  SECTION("NULL procedure") {
    auto h = send_and_read_header(ch, rpc_call_bytes(1, NFS4_PROGRAM, NFS_V4, NFSPROC4_NULL, sys, {}));
    CHECK(h.xid == 1);
    CHECK(h.is_success());
  }
  SECTION("wrong version") {
    auto h = send_and_read_header(ch, rpc_call_bytes(2, NFS4_PROGRAM, 7, NFSPROC4_NULL, sys, {}));
    CHECK(h.accepted == rpc::accept_stat::prog_mismatch);
    CHECK(h.mismatch.high >= 4);
  }
  SECTION("unknown procedure") {
    auto h = send_and_read_header(ch, rpc_call_bytes(3, NFS4_PROGRAM, NFS_V4, 9, sys, {}));
    CHECK(h.accepted == rpc::accept_stat::proc_unavail);
  }
  SECTION("truncated COMPOUND header") {
    std::vector<std::byte> junk{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{40}};
    auto h = send_and_read_header(ch, rpc_call_bytes(4, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, sys, junk));
    CHECK(h.accepted == rpc::accept_stat::garbage_args);
  }
}

TEST_CASE("vnfsd: RPC errors only it answers this way") {
  test_server srv(server_kind::vnfsd);
  auto ch = test::blocking_channel::connect(srv.host(), srv.port());
  SECTION("unknown program") {
    auto h = send_and_read_header(ch, rpc_call_bytes(5, 100005, 3, 0, {}, {}));
    CHECK(h.accepted == rpc::accept_stat::prog_unavail);
  }
  SECTION("RPCSEC_GSS is refused with AUTH_BADCRED") {
    rpc::opaque_auth gss{rpc::auth_flavor::rpcsec_gss, {std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1}}};
    auto h = send_and_read_header(ch, rpc_call_bytes(6, NFS4_PROGRAM, NFS_V4, NFSPROC4_NULL, gss, {}));
    CHECK(h.stat == rpc::reply_stat::msg_denied);
    CHECK(h.auth == rpc::auth_stat::badcred);
  }
  SECTION("rpcvers 3 is RPC_MISMATCH") {
    auto msg = rpc_call_bytes(7, NFS4_PROGRAM, NFS_V4, NFSPROC4_NULL, {}, {});
    msg[11] = std::byte{3};  // rpcvers is the third word
    auto h = send_and_read_header(ch, msg);
    CHECK(h.stat == rpc::reply_stat::msg_denied);
    CHECK(h.rejected == rpc::reject_stat::rpc_mismatch);
    CHECK(h.mismatch.low == 2);
  }
  SECTION("a malformed operation is BADXDR and the ops before it ran") {
    test_session s(srv);
    COMPOUND4args args{"", 1, {SEQUENCE4args{s.session_id(), s.next_seqid(), 0, 0, false}, PUTROOTFH4args{}}};
    xdr::encoder e;
    xdr::encode(e, args);
    auto body = e.flatten();
    // Append a LOOKUP whose name length claims more bytes than follow, and fix numops.
    xdr::encoder bad;
    bad.put_u32(static_cast<std::uint32_t>(nfs_opnum4::OP_LOOKUP));
    bad.put_u32(1000);
    auto tail = bad.flatten();
    body.insert(body.end(), tail.begin(), tail.end());
    body[11] = std::byte{3};  // numops: tag "" (4 bytes), minorversion (4), numops (4)
    rpc::authsys_parms p;
    auto h = send_and_read_header(ch, rpc_call_bytes(8, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND,
                                                      rpc::make_authsys(p), body), &body);
    REQUIRE(h.is_success());
    auto res = xdr::from_bytes<COMPOUND4res>(body);
    CHECK(res.status == nfsstat4::NFS4ERR_BADXDR);
    REQUIRE(res.resarray.size() == 3);
    CHECK(status_of(res.resarray[1]) == nfsstat4::NFS4_OK);
    CHECK(opnum_of(res.resarray[2]) == nfs_opnum4::OP_LOOKUP);
    s.set_seqid(0, s.next_seqid());
  }
}

TEST_CASE("vnfsd: garbage on one connection does not disturb another") {
  test_server srv(server_kind::vnfsd);
  test_session good(srv);
  REQUIRE(good.compound({}).status == nfsstat4::NFS4_OK);
  {
    auto bad = test::blocking_channel::connect(srv.host(), srv.port());
    std::vector<std::byte> noise(4096);
    for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = std::byte(i * 131 + 7);
    bad.send_raw(noise);  // a record mark claiming a huge fragment, then noise
    bad.set_receive_timeout(std::chrono::seconds(5));
    CHECK_THROWS(bad.receive_record());  // closed by the server, no reply
    auto bad2 = test::blocking_channel::connect(srv.host(), srv.port());
    std::vector<std::byte> not_a_call(64, std::byte{0xee});
    bad2.send_record(std::span<const std::byte>(not_a_call));
    bad2.set_receive_timeout(std::chrono::seconds(5));
    CHECK_THROWS(bad2.receive_record());
  }
  CHECK(good.compound({}).status == nfsstat4::NFS4_OK);
}
