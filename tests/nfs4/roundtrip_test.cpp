// Encode -> decode round trips of every argument and result type, every union arm.
#include "test_util.hpp"

using namespace nfs4_test;

namespace {
const stateid4 S1 = sid(1, 0x10);
const stateid4 S2 = sid(7, 0x40);
const lock_owner4 OWNER{0x1122334455667788ULL, bytes_of("owner-1")};
}  // namespace

TEST_CASE("basic types round trip") {
  round_trip(nfstime4{-5, 999999999});
  round_trip(settime4{time_how4::SET_TO_SERVER_TIME4, {}});
  round_trip(settime4{time_how4::SET_TO_CLIENT_TIME4, {1700000000, 42}});
  round_trip(fsid4{1, 2});
  round_trip(specdata4{8, 1});
  round_trip(S1);
  round_trip(bitmap4::of({0, 1, 33, 75}));
  round_trip(some_attrs());
  round_trip(some_cinfo(5));
  round_trip(nfsace4{ACE4_ACCESS_ALLOWED_ACE_TYPE, ACE4_IDENTIFIER_GROUP, ACE4_GENERIC_READ, "g@x"});
  round_trip(nfsacl41{ACL4_PROTECTED, {{0, 0, ACE4_READ_DATA, "OWNER@"}, {1, 0, ACE4_WRITE_DATA, "EVERYONE@"}}});
  round_trip(netaddr4{"tcp", "127.0.0.1.8.1"});
  round_trip(nfs_impl_id4{"example.org", "vnfs", {1, 2}});
  round_trip(OWNER);
  round_trip(client_owner4{filled<8>(1), bytes_of("client-owner")});
  round_trip(server_owner4{9, bytes_of("major")});
  round_trip(authsys_parms{3, "host", 1000, 100, {4, 5, 6}});
}

TEST_CASE("attribute operations round trip") {
  argop_round_trip(ACCESS4args{ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_EXECUTE});
  resop_round_trip(ACCESS4res{nfsstat4::NFS4_OK, {0x3f, ACCESS4_READ}});
  resop_round_trip(ACCESS4res{nfsstat4::NFS4ERR_STALE, {}});
  argop_round_trip(GETATTR4args{bitmap4::of({FATTR4_TYPE, FATTR4_SIZE, FATTR4_TIME_MODIFY})});
  resop_round_trip(GETATTR4res{nfsstat4::NFS4_OK, {some_attrs()}});
  resop_round_trip(GETATTR4res{nfsstat4::NFS4ERR_ACCESS, {}});
  argop_round_trip(SETATTR4args{S1, some_attrs()});
  resop_round_trip(SETATTR4res{nfsstat4::NFS4_OK, bitmap4::of({FATTR4_MODE})});
  resop_round_trip(SETATTR4res{nfsstat4::NFS4ERR_PERM, bitmap4::of({FATTR4_SIZE})});
  argop_round_trip(VERIFY4args{some_attrs()});
  resop_round_trip(VERIFY4res{nfsstat4::NFS4ERR_NOT_SAME});
  argop_round_trip(NVERIFY4args{some_attrs()});
  resop_round_trip(NVERIFY4res{nfsstat4::NFS4ERR_SAME});
}

TEST_CASE("filehandle operations round trip") {
  argop_round_trip(PUTFH4args{B({1, 2, 3, 4, 5})});
  argop_round_trip(PUTFH4args{std::vector<std::byte>(NFS4_FHSIZE, std::byte{7})});
  resop_round_trip(PUTFH4res{nfsstat4::NFS4ERR_BADHANDLE});
  argop_round_trip(PUTPUBFH4args{});
  resop_round_trip(PUTPUBFH4res{nfsstat4::NFS4_OK});
  argop_round_trip(PUTROOTFH4args{});
  resop_round_trip(PUTROOTFH4res{nfsstat4::NFS4_OK});
  argop_round_trip(GETFH4args{});
  resop_round_trip(GETFH4res{nfsstat4::NFS4_OK, {B({9, 8, 7})}});
  resop_round_trip(GETFH4res{nfsstat4::NFS4ERR_NOFILEHANDLE, {}});
  argop_round_trip(SAVEFH4args{});
  resop_round_trip(SAVEFH4res{nfsstat4::NFS4_OK});
  argop_round_trip(RESTOREFH4args{});
  resop_round_trip(RESTOREFH4res{nfsstat4::NFS4ERR_RESTOREFH});
}

TEST_CASE("name space operations round trip") {
  argop_round_trip(LOOKUP4args{"file.txt"});
  resop_round_trip(LOOKUP4res{nfsstat4::NFS4ERR_NOENT});
  argop_round_trip(LOOKUPP4args{});
  resop_round_trip(LOOKUPP4res{nfsstat4::NFS4_OK});

  argop_round_trip(CREATE4args{{nfs_ftype4::NF4DIR, {}, {}}, "dir", some_attrs()});
  argop_round_trip(CREATE4args{{nfs_ftype4::NF4LNK, "../target", {}}, "link", {}});
  argop_round_trip(CREATE4args{{nfs_ftype4::NF4BLK, {}, {8, 0}}, "sda", {}});
  argop_round_trip(CREATE4args{{nfs_ftype4::NF4CHR, {}, {1, 3}}, "null", {}});
  argop_round_trip(CREATE4args{{nfs_ftype4::NF4FIFO, {}, {}}, "fifo", {}});
  argop_round_trip(CREATE4args{{nfs_ftype4::NF4SOCK, {}, {}}, "sock", {}});
  resop_round_trip(CREATE4res{nfsstat4::NFS4_OK, {some_cinfo(10), bitmap4::of({FATTR4_MODE})}});
  resop_round_trip(CREATE4res{nfsstat4::NFS4ERR_EXIST, {}});

  argop_round_trip(LINK4args{"hard"});
  resop_round_trip(LINK4res{nfsstat4::NFS4_OK, {some_cinfo(3)}});
  argop_round_trip(REMOVE4args{"gone"});
  resop_round_trip(REMOVE4res{nfsstat4::NFS4_OK, {some_cinfo(4)}});
  resop_round_trip(REMOVE4res{nfsstat4::NFS4ERR_NOTEMPTY, {}});
  argop_round_trip(RENAME4args{"old", "new"});
  resop_round_trip(RENAME4res{nfsstat4::NFS4_OK, {some_cinfo(1), some_cinfo(100)}});

  argop_round_trip(READDIR4args{12, filled<8>(3), 4096, 32768, bitmap4::of({FATTR4_TYPE})});
  READDIR4res rd{nfsstat4::NFS4_OK,
                 {filled<8>(5), {{{1, "a", some_attrs()}, {2, "bb", {}}, {3, "ccc", some_attrs()}}, true}}};
  resop_round_trip(rd);
  resop_round_trip(READDIR4res{nfsstat4::NFS4_OK, {filled<8>(5), {{}, false}}});
  resop_round_trip(READDIR4res{nfsstat4::NFS4ERR_BAD_COOKIE, {}});

  argop_round_trip(READLINK4args{});
  resop_round_trip(READLINK4res{nfsstat4::NFS4_OK, {"/a/b"}});

  argop_round_trip(SECINFO4args{"sub"});
  SECINFO4res si{nfsstat4::NFS4_OK,
                 {{AUTH_SYS, {}},
                  {RPCSEC_GSS, {B({0x2a, 0x86, 0x48}), 0, rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY}},
                  {AUTH_NONE, {}}}};
  resop_round_trip(si);
  resop_round_trip(SECINFO4res{nfsstat4::NFS4ERR_WRONGSEC, {}});
  argop_round_trip(SECINFO_NO_NAME4args{secinfo_style4::SECINFO_STYLE4_PARENT});
  resop_round_trip(SECINFO_NO_NAME4res{nfsstat4::NFS4_OK, {{AUTH_SYS, {}}}});
}

TEST_CASE("data operations round trip") {
  argop_round_trip(READ4args{S1, 1ULL << 40, 65536});
  std::vector<std::byte> payload(100, std::byte{0x5a});
  resop_round_trip(READ4res{nfsstat4::NFS4_OK, {true, payload}});
  resop_round_trip(READ4res{nfsstat4::NFS4_OK, {false, {}}});
  resop_round_trip(READ4res{nfsstat4::NFS4ERR_OPENMODE, {}});
  argop_round_trip(WRITE4args{S2, 4096, stable_how4::FILE_SYNC4, payload});
  argop_round_trip(WRITE4args{S2, 1, stable_how4::UNSTABLE4, xdr::bytes_view(payload).first(3)});
  resop_round_trip(WRITE4res{nfsstat4::NFS4_OK, {100, stable_how4::DATA_SYNC4, filled<8>(9)}});
  argop_round_trip(COMMIT4args{0, 0});
  resop_round_trip(COMMIT4res{nfsstat4::NFS4_OK, {filled<8>(9)}});

  COPY4args c{S1, S2, 10, 20, 30, true, false, {}};
  argop_round_trip(c);
  c.ca_source_server = {{netloc_type4::NL4_NAME, "srv", {}, {}},
                        {netloc_type4::NL4_URL, {}, "nfs://srv/x", {}},
                        {netloc_type4::NL4_NETADDR, {}, {}, {"tcp", "10.0.0.1.8.1"}}};
  argop_round_trip(c);
  resop_round_trip(COPY4res{nfsstat4::NFS4_OK, {{S2, 30, stable_how4::FILE_SYNC4, filled<8>(1)}, {true, true}}, {}});
  resop_round_trip(COPY4res{nfsstat4::NFS4_OK, {{std::nullopt, 30, stable_how4::UNSTABLE4, filled<8>(1)}, {false, true}}, {}});
  resop_round_trip(COPY4res{nfsstat4::NFS4ERR_OFFLOAD_NO_REQS, {}, {true, false}});
  resop_round_trip(COPY4res{nfsstat4::NFS4ERR_NOSPC, {}, {}});
}

TEST_CASE("OPEN round trips every claim, createhow and delegation arm") {
  OPEN4args o{5, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, {42, bytes_of("oo")}, {}, {}};
  o.claim = {open_claim_type4::CLAIM_NULL, "name", {}, {}, {}, {}};
  argop_round_trip(o);
  o.claim = {open_claim_type4::CLAIM_PREVIOUS, {}, open_delegation_type4::OPEN_DELEGATE_WRITE, {}, {}, {}};
  argop_round_trip(o);
  o.claim = {open_claim_type4::CLAIM_DELEGATE_CUR, {}, {}, {S1, "cur"}, {}, {}};
  argop_round_trip(o);
  o.claim = {open_claim_type4::CLAIM_DELEGATE_PREV, {}, {}, {}, "prev", {}};
  argop_round_trip(o);
  o.claim = {open_claim_type4::CLAIM_FH, {}, {}, {}, {}, {}};
  argop_round_trip(o);
  o.claim = {open_claim_type4::CLAIM_DELEG_CUR_FH, {}, {}, {}, {}, S2};
  argop_round_trip(o);
  o.claim = {open_claim_type4::CLAIM_DELEG_PREV_FH, {}, {}, {}, {}, {}};
  argop_round_trip(o);

  o.claim = {open_claim_type4::CLAIM_NULL, "new", {}, {}, {}, {}};
  o.openhow = {opentype4::OPEN4_CREATE, {createmode4::UNCHECKED4, some_attrs(), {}, {}}};
  argop_round_trip(o);
  o.openhow = {opentype4::OPEN4_CREATE, {createmode4::GUARDED4, some_attrs(), {}, {}}};
  argop_round_trip(o);
  o.openhow = {opentype4::OPEN4_CREATE, {createmode4::EXCLUSIVE4, {}, filled<8>(2), {}}};
  argop_round_trip(o);
  o.openhow = {opentype4::OPEN4_CREATE, {createmode4::EXCLUSIVE4_1, {}, {}, {filled<8>(3), some_attrs()}}};
  argop_round_trip(o);

  const nfsace4 ace{ACE4_ACCESS_ALLOWED_ACE_TYPE, 0, ACE4_GENERIC_READ, "EVERYONE@"};
  OPEN4resok ok{S1, some_cinfo(7), OPEN4_RESULT_LOCKTYPE_POSIX, bitmap4::of({FATTR4_MODE}), {}};
  resop_round_trip(OPEN4res{nfsstat4::NFS4_OK, ok});
  ok.delegation = {open_delegation_type4::OPEN_DELEGATE_READ, {S2, true, ace}, {}, {}};
  resop_round_trip(OPEN4res{nfsstat4::NFS4_OK, ok});
  ok.delegation = {open_delegation_type4::OPEN_DELEGATE_WRITE, {},
                   {S2, false, {limit_by4::NFS_LIMIT_SIZE, 1 << 20, {}}, ace}, {}};
  resop_round_trip(OPEN4res{nfsstat4::NFS4_OK, ok});
  ok.delegation.write.space_limit = {limit_by4::NFS_LIMIT_BLOCKS, 0, {16, 4096}};
  resop_round_trip(OPEN4res{nfsstat4::NFS4_OK, ok});
  for (auto why : {why_no_delegation4::WND4_NOT_WANTED, why_no_delegation4::WND4_CONTENTION,
                   why_no_delegation4::WND4_RESOURCE, why_no_delegation4::WND4_IS_DIR}) {
    ok.delegation = {open_delegation_type4::OPEN_DELEGATE_NONE_EXT, {}, {}, {why, false, false}};
    if (why == why_no_delegation4::WND4_CONTENTION) ok.delegation.od_whynone.ond_server_will_push_deleg = true;
    if (why == why_no_delegation4::WND4_RESOURCE) ok.delegation.od_whynone.ond_server_will_signal_avail = true;
    resop_round_trip(OPEN4res{nfsstat4::NFS4_OK, ok});
  }
  resop_round_trip(OPEN4res{nfsstat4::NFS4ERR_SHARE_DENIED, {}});
}

TEST_CASE("state operations round trip") {
  argop_round_trip(OPEN_DOWNGRADE4args{S1, 3, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE});
  resop_round_trip(OPEN_DOWNGRADE4res{nfsstat4::NFS4_OK, {S2}});
  argop_round_trip(CLOSE4args{0, S1});
  resop_round_trip(CLOSE4res{nfsstat4::NFS4_OK, S2});
  resop_round_trip(CLOSE4res{nfsstat4::NFS4ERR_BAD_STATEID, {}});

  LOCK4args l{nfs_lock_type4::WRITE_LT, false, 100, NFS4_UINT64_MAX, {true, {1, S1, 2, OWNER}, {}}};
  argop_round_trip(l);
  l.locker = {false, {}, {S2, 9}};
  l.reclaim = true;
  argop_round_trip(l);
  resop_round_trip(LOCK4res{nfsstat4::NFS4_OK, {S2}, {}});
  resop_round_trip(LOCK4res{nfsstat4::NFS4ERR_DENIED, {}, {0, 10, nfs_lock_type4::READ_LT, OWNER}});
  resop_round_trip(LOCK4res{nfsstat4::NFS4ERR_LOCK_RANGE, {}, {}});
  argop_round_trip(LOCKT4args{nfs_lock_type4::READW_LT, 5, 6, OWNER});
  resop_round_trip(LOCKT4res{nfsstat4::NFS4_OK, {}});
  resop_round_trip(LOCKT4res{nfsstat4::NFS4ERR_DENIED, {1, 2, nfs_lock_type4::WRITE_LT, OWNER}});
  argop_round_trip(LOCKU4args{nfs_lock_type4::WRITEW_LT, 4, S1, 0, 1});
  resop_round_trip(LOCKU4res{nfsstat4::NFS4_OK, S2});
  resop_round_trip(LOCKU4res{nfsstat4::NFS4ERR_OLD_STATEID, {}});

  argop_round_trip(DELEGRETURN4args{S1});
  resop_round_trip(DELEGRETURN4res{nfsstat4::NFS4_OK});
  argop_round_trip(FREE_STATEID4args{S2});
  resop_round_trip(FREE_STATEID4res{nfsstat4::NFS4ERR_LOCKS_HELD});
  argop_round_trip(TEST_STATEID4args{{S1, S2, stateid4::bypass()}});
  resop_round_trip(TEST_STATEID4res{
      nfsstat4::NFS4_OK, {{nfsstat4::NFS4_OK, nfsstat4::NFS4ERR_BAD_STATEID, nfsstat4::NFS4ERR_EXPIRED}}});
}

TEST_CASE("session operations round trip") {
  const state_protect_ops4 ops{bitmap4::of({53, 42}), bitmap4::of({25})};
  EXCHANGE_ID4args ex{{filled<8>(1), bytes_of("vnfs-client")}, EXCHGID4_FLAG_USE_NON_PNFS, {}, {}};
  argop_round_trip(ex);
  ex.eia_client_impl_id = nfs_impl_id4{"vnfs.org", "vnfs 0.1", {1, 0}};
  ex.eia_state_protect = {state_protect_how4::SP4_MACH_CRED, ops, {}};
  argop_round_trip(ex);
  ex.eia_state_protect = {state_protect_how4::SP4_SSV, {}, {ops, {B({1, 2}), B({3})}, {B({4})}, 16, 2}};
  argop_round_trip(ex);

  EXCHANGE_ID4resok exr{0xabcdef, 1, EXCHGID4_FLAG_CONFIRMED_R, {}, {7, bytes_of("srv")}, bytes_of("scope"), {}};
  resop_round_trip(EXCHANGE_ID4res{nfsstat4::NFS4_OK, exr});
  exr.eir_state_protect = {state_protect_how4::SP4_MACH_CRED, ops, {}};
  exr.eir_server_impl_id = nfs_impl_id4{"d", "n", {3, 4}};
  resop_round_trip(EXCHANGE_ID4res{nfsstat4::NFS4_OK, exr});
  exr.eir_state_protect = {state_protect_how4::SP4_SSV, {}, {ops, 1, 2, 32, 8, {B({5, 6}), B({7})}}};
  resop_round_trip(EXCHANGE_ID4res{nfsstat4::NFS4_OK, exr});
  resop_round_trip(EXCHANGE_ID4res{nfsstat4::NFS4ERR_CLID_INUSE, {}});

  const channel_attrs4 fore{0, 1 << 20, 1 << 20, 4096, 16, 64, std::nullopt};
  const channel_attrs4 back{0, 4096, 4096, 0, 2, 1, 8u};
  CREATE_SESSION4args cs{0xabcdef, 1, CREATE_SESSION4_FLAG_CONN_BACK_CHAN, fore, back, 0x40000000, {}};
  cs.csa_sec_parms = {{AUTH_NONE, {}, {}},
                      {AUTH_SYS, {1, "client", 1000, 1000, {10, 20}}, {}},
                      {RPCSEC_GSS, {}, {rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY, B({1}), B({2, 3})}}};
  argop_round_trip(cs);
  resop_round_trip(CREATE_SESSION4res{nfsstat4::NFS4_OK, {filled<16>(0x80), 1, 0, fore, back}});
  resop_round_trip(CREATE_SESSION4res{nfsstat4::NFS4ERR_SEQ_MISORDERED, {}});

  argop_round_trip(DESTROY_SESSION4args{filled<16>(0x80)});
  resop_round_trip(DESTROY_SESSION4res{nfsstat4::NFS4ERR_BADSESSION});
  argop_round_trip(SEQUENCE4args{filled<16>(0x80), 17, 3, 63, true});
  resop_round_trip(SEQUENCE4res{nfsstat4::NFS4_OK, {filled<16>(0x80), 17, 3, 63, 31, SEQ4_STATUS_CB_PATH_DOWN}});
  resop_round_trip(SEQUENCE4res{nfsstat4::NFS4ERR_BADSLOT, {}});
  argop_round_trip(BIND_CONN_TO_SESSION4args{filled<16>(1), channel_dir_from_client4::CDFC4_BACK_OR_BOTH, true});
  resop_round_trip(BIND_CONN_TO_SESSION4res{nfsstat4::NFS4_OK, {filled<16>(1), channel_dir_from_server4::CDFS4_BOTH, false}});
  argop_round_trip(DESTROY_CLIENTID4args{0xabcdef});
  resop_round_trip(DESTROY_CLIENTID4res{nfsstat4::NFS4ERR_CLIENTID_BUSY});
  argop_round_trip(RECLAIM_COMPLETE4args{true});
  resop_round_trip(RECLAIM_COMPLETE4res{nfsstat4::NFS4ERR_COMPLETE_ALREADY});
}

TEST_CASE("special stateids") {
  CHECK(stateid4::anonymous() == stateid4{});
  CHECK(stateid4::bypass().seqid == 0xffffffffu);
  for (std::byte b : stateid4::bypass().other) CHECK(b == std::byte{0xff});
  CHECK(stateid4::current() == stateid4{1, {}});
  CHECK(stateid4::invalid() == stateid4{0xffffffffu, {}});
  CHECK(stateid4::current().is_current());
  CHECK(stateid4::invalid().is_special());
  CHECK_FALSE(S1.is_special());
  CHECK_FALSE(stateid4::invalid().is_bypass());
}

TEST_CASE("bitmap4 helpers") {
  bitmap4 m;
  CHECK(m.none());
  m.set(FATTR4_SUPPATTR_EXCLCREAT);
  CHECK(m.words == std::vector<std::uint32_t>{0, 0, 1u << 11});
  CHECK(m.test(75));
  CHECK_FALSE(m.test(74));
  CHECK_FALSE(m.test(1000));
  m.set(1);
  CHECK(m.bits() == std::vector<unsigned>{1, 75});
  m.clear(75);
  CHECK(m.words == std::vector<std::uint32_t>{2, 0, 0});
  CHECK_FALSE(m.none());
  CHECK((bitmap4::of({1, 4, 40}) & bitmap4::of({4, 40, 70})) == bitmap4::of({4, 40}));
  CHECK(xdr::to_bytes(bitmap4::of({1, 33})) == B({0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2}));
}
