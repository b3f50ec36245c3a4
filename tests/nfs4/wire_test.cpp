// Hand-checked encodings, COMPOUND decoding op by op, and malformed input.
#include "test_util.hpp"

using namespace nfs4_test;

TEST_CASE("PUTROOTFH + GETFH COMPOUND4args has the RFC layout") {
  COMPOUND4args c{"ab", 1, {PUTROOTFH4args{}, GETFH4args{}}};
  auto bytes = xdr::to_bytes(c);
  CHECK(bytes == B({0, 0, 0, 2, 'a', 'b', 0, 0,  // tag
                    0, 0, 0, 1,                  // minorversion
                    0, 0, 0, 2,                  // argarray count
                    0, 0, 0, 24,                 // OP_PUTROOTFH
                    0, 0, 0, 10}));              // OP_GETFH
  CHECK(xdr::from_bytes<COMPOUND4args>(bytes) == c);
}

TEST_CASE("READ4args and PUTFH4args have the RFC layout") {
  READ4args r{sid(1, 0x10), 0x100000000ULL, 65536};
  CHECK(xdr::to_bytes(r) == B({0, 0, 0, 1, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19,
                               0x1a, 0x1b, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0}));
  xdr::encoder e;
  encode_argop(e, PUTFH4args{B({1, 2, 3, 4, 5})});
  CHECK(e.flatten() == B({0, 0, 0, 22, 0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0}));
}

TEST_CASE("OPEN4args CLAIM_NULL/NOCREATE and its OK result have the RFC layout") {
  OPEN4args o{0, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE, {0x0102030405060708ULL, bytes_of("ab")},
              {opentype4::OPEN4_NOCREATE, {}}, {open_claim_type4::CLAIM_NULL, "f", {}, {}, {}, {}}};
  CHECK(xdr::to_bytes(o) == B({0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,      // seqid, access, deny
                               1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 2, 'a', 'b', 0, 0,  // owner
                               0, 0, 0, 0,                               // OPEN4_NOCREATE
                               0, 0, 0, 0, 0, 0, 0, 1, 'f', 0, 0, 0}));  // CLAIM_NULL "f"
  OPEN4res r{nfsstat4::NFS4ERR_NOENT, {}};
  CHECK(xdr::to_bytes(r) == B({0, 0, 0, 2}));  // the resok4 arm is not encoded
}

TEST_CASE("READDIR reply is the RFC's linked list") {
  dirlist4 l{{{7, "x", {}}}, true};
  CHECK(xdr::to_bytes(l) == B({0, 0, 0, 1,                          // entries present
                               0, 0, 0, 0, 0, 0, 0, 7,              // cookie
                               0, 0, 0, 1, 'x', 0, 0, 0,            // name
                               0, 0, 0, 0, 0, 0, 0, 0,              // attrs: empty mask, no values
                               0, 0, 0, 0,                          // nextentry = NULL
                               0, 0, 0, 1}));                       // eof
  CHECK(xdr_size(l.entries[0]) == 28);
  entry4 big{1, "hello", some_attrs()};
  CHECK(xdr_size(big) == xdr::to_bytes(dirlist4{{big}, false}).size() - 8);
}

TEST_CASE("client-side decoding result by result: the COMPOUND4res header, then each result") {
  COMPOUND4res res;
  res.status = nfsstat4::NFS4ERR_NOENT;
  res.tag = "tag";
  res.resarray = {PUTROOTFH4res{nfsstat4::NFS4_OK}, make_result(nfs_opnum4::OP_LOOKUP, nfsstat4::NFS4ERR_NOENT)};
  auto bytes = xdr::to_bytes(res);

  xdr::decoder d(bytes);
  auto h = xdr::decode<compound_res_header>(d);
  CHECK(h == compound_res_header{nfsstat4::NFS4ERR_NOENT, "tag", 2});
  CHECK(decode_resop(d) == res.resarray[0]);
  CHECK(decode_resop(d) == res.resarray[1]);
  CHECK(d.remaining() == 0);

  // The whole-COMPOUND codec reads the same header, and refuses a count the input cannot hold.
  xdr::decoder whole(bytes);
  CHECK(xdr::decode<COMPOUND4res>(whole) == res);
  xdr::encoder e;
  xdr::encode(e, compound_res_header{nfsstat4::NFS4_OK, "", 1000});
  auto lying = e.flatten();
  xdr::decoder l(lying);
  CHECK_THROWS_AS(xdr::decode<COMPOUND4res>(l), xdr::decode_error);
}

TEST_CASE("server-side decoding stops at an unsupported operation") {
  xdr::encoder e;
  xdr::encode(e, compound_header{"t", 1, 4});
  encode_argop(e, SEQUENCE4args{filled<16>(1), 1, 0, 0, false});
  encode_argop(e, PUTROOTFH4args{});
  e.put_u32(static_cast<std::uint32_t>(nfs_opnum4::OP_OPENATTR));
  e.put_bool(true);  // OPENATTR4args, which this codec cannot read
  encode_argop(e, GETFH4args{});
  auto bytes = e.flatten();

  xdr::decoder d(bytes);
  auto h = xdr::decode<compound_header>(d);
  CHECK(h == compound_header{"t", 1, 4});
  CHECK(std::holds_alternative<SEQUENCE4args>(decode_argop(d)));
  CHECK(std::holds_alternative<PUTROOTFH4args>(decode_argop(d)));
  std::size_t before = d.position();
  nfs_argop4 op = decode_argop(d);
  REQUIRE(std::holds_alternative<unsupported_op4>(op));
  CHECK(std::get<unsupported_op4>(op).opnum == nfs_opnum4::OP_OPENATTR);
  CHECK(opnum_of(op) == nfs_opnum4::OP_OPENATTR);
  CHECK(d.position() == before + 4);  // only the opnum was consumed

  // The whole-COMPOUND decoder stops at the same place.
  xdr::decoder d2(bytes);
  auto c = xdr::decode<COMPOUND4args>(d2);
  REQUIRE(c.argarray.size() == 3);
  CHECK(std::get<unsupported_op4>(c.argarray[2]) == unsupported_op4{nfs_opnum4::OP_OPENATTR});
}

TEST_CASE("server-side decoding reports illegal opcodes") {
  for (std::uint32_t n : {0u, 1u, 2u, 72u, 9999u, 10044u, 0xffffffffu}) {
    xdr::encoder e;
    e.put_u32(n);
    e.put_u32(0xdeadbeef);  // whatever follows is never read
    auto bytes = e.flatten();
    xdr::decoder d(bytes);
    nfs_argop4 op = decode_argop(d);
    REQUIRE(std::holds_alternative<illegal_op4>(op));
    CHECK(std::get<illegal_op4>(op).opnum == n);
    CHECK(opnum_of(op) == nfs_opnum4::OP_ILLEGAL);
    CHECK(d.remaining() == 4);
  }
  COMPOUND4args c{"", 1, {PUTROOTFH4args{}, illegal_op4{9999}}};
  auto bytes = xdr::to_bytes(c);
  CHECK(bytes == B({0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 24, 0, 0, 0x27, 0x0f}));
  CHECK(xdr::from_bytes<COMPOUND4args>(bytes) == c);
}

TEST_CASE("malformed supported arguments throw decode_error") {
  xdr::encoder e;
  e.put_u32(static_cast<std::uint32_t>(nfs_opnum4::OP_PUTFH));
  e.put_opaque(std::vector<std::byte>(NFS4_FHSIZE + 1, std::byte{1}));
  auto bytes = e.flatten();
  xdr::decoder d(bytes);
  CHECK_THROWS_AS(decode_argop(d), xdr::decode_error);

  auto truncated = B({0, 0, 0, 25, 0, 0, 0, 1});  // READ with 4 of its 28 bytes
  xdr::decoder d2(truncated);
  CHECK_THROWS_AS(decode_argop(d2), xdr::decode_error);
}

TEST_CASE("client-side result decoding") {
  COMPOUND4res r{nfsstat4::NFS4ERR_NOTSUPP, "tag", {}};
  r.resarray.push_back(SEQUENCE4res{nfsstat4::NFS4_OK, {filled<16>(1), 1, 0, 0, 0, 0}});
  r.resarray.push_back(PUTROOTFH4res{nfsstat4::NFS4_OK});
  r.resarray.push_back(status_only_res4{nfs_opnum4::OP_OPENATTR, nfsstat4::NFS4ERR_NOTSUPP});
  auto bytes = round_trip(r);
  auto back = xdr::from_bytes<COMPOUND4res>(bytes);
  CHECK(opnum_of(back.resarray[2]) == nfs_opnum4::OP_OPENATTR);
  CHECK(status_of(back.resarray[2]) == nfsstat4::NFS4ERR_NOTSUPP);

  COMPOUND4res illegal{nfsstat4::NFS4ERR_OP_ILLEGAL, "", {ILLEGAL4res{}}};
  auto ib = round_trip(illegal);
  CHECK(ib == B({0, 0, 0x27, 0x3c, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x27, 0x3c, 0, 0, 0x27, 0x3c}));
  CHECK(opnum_of(xdr::from_bytes<COMPOUND4res>(ib).resarray[0]) == nfs_opnum4::OP_ILLEGAL);

  // An OK result without a dedicated type cannot be skipped; an unknown opnum is garbage.
  auto ok_unsupported = B({0, 0, 0, 19, 0, 0, 0, 0});
  xdr::decoder d1(ok_unsupported);
  CHECK_THROWS_AS(decode_resop(d1), xdr::decode_error);
  auto unknown = B({0, 0, 0x27, 0x0f, 0, 0, 0, 1});
  xdr::decoder d2(unknown);
  CHECK_THROWS_AS(decode_resop(d2), xdr::decode_error);
}

TEST_CASE("invalid union discriminants throw decode_error") {
  CHECK_THROWS_AS(xdr::from_bytes<createhow4>(B({0, 0, 0, 4})), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<open_claim4>(B({0, 0, 0, 7})), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<open_delegation4>(B({0, 0, 0, 4})), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<nfs_space_limit4>(B({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})),
                  xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<state_protect4_a>(B({0, 0, 0, 3})), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<state_protect4_r>(B({0, 0, 0, 3})), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<callback_sec_parms4>(B({0, 0, 0, 2})), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<netloc4>(B({0, 0, 0, 0, 0, 0, 0, 0})), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<locker4>(B({0, 0, 0, 2})), xdr::decode_error);
  // Unions with a default arm accept any discriminant.
  CHECK(xdr::from_bytes<createtype4>(B({0, 0, 0, 99})).type == static_cast<nfs_ftype4>(99));
  CHECK(xdr::from_bytes<secinfo4>(B({0, 0, 0, 3})).flavor == 3);
  CHECK(xdr::from_bytes<openflag4>(B({0, 0, 0, 5})).opentype == static_cast<opentype4>(5));
}

TEST_CASE("RFC length bounds are enforced") {
  auto too_long = [](std::uint32_t n) { return std::vector<std::byte>(n, std::byte{'x'}); };
  CHECK(xdr::from_bytes<state_owner4>(xdr::to_bytes(state_owner4{1, too_long(1024)})).owner.size() == 1024);
  CHECK_THROWS_AS(xdr::from_bytes<state_owner4>(xdr::to_bytes(state_owner4{1, too_long(1025)})),
                  xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<client_owner4>(xdr::to_bytes(client_owner4{{}, too_long(1025)})),
                  xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<server_owner4>(xdr::to_bytes(server_owner4{0, too_long(1025)})),
                  xdr::decode_error);
  EXCHANGE_ID4resok ex;
  ex.eir_server_scope = too_long(1025);
  CHECK_THROWS_AS(xdr::from_bytes<EXCHANGE_ID4resok>(xdr::to_bytes(ex)), xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<GETFH4resok>(xdr::to_bytes(GETFH4resok{too_long(129)})),
                  xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<authsys_parms>(xdr::to_bytes(authsys_parms{0, "m", 0, 0,
                                                                             std::vector<std::uint32_t>(17)})),
                  xdr::decode_error);
  CHECK_THROWS_AS(xdr::from_bytes<authsys_parms>(xdr::to_bytes(authsys_parms{0, std::string(256, 'm'), 0, 0, {}})),
                  xdr::decode_error);
  // <1> arrays: a count of 2 is malformed.
  CHECK_THROWS_AS(xdr::from_bytes<write_response4>(B({0, 0, 0, 2})), xdr::decode_error);
}

TEST_CASE("make_result builds the right result type for any opnum") {
  nfs_resop4 r = make_result(nfs_opnum4::OP_SETATTR, nfsstat4::NFS4ERR_PERM);
  REQUIRE(std::holds_alternative<SETATTR4res>(r));
  xdr::encoder e;
  encode_resop(e, r);
  CHECK(e.flatten() == B({0, 0, 0, 34, 0, 0, 0, 1, 0, 0, 0, 0}));  // attrsset always travels
  r = make_result(nfs_opnum4::OP_READ, nfsstat4::NFS4ERR_IO);
  CHECK(std::holds_alternative<READ4res>(r));
  CHECK(status_of(r) == nfsstat4::NFS4ERR_IO);
  r = make_result(nfs_opnum4::OP_LAYOUTGET, nfsstat4::NFS4ERR_NOTSUPP);
  CHECK(std::get<status_only_res4>(r) == status_only_res4{nfs_opnum4::OP_LAYOUTGET, nfsstat4::NFS4ERR_NOTSUPP});
  r = make_result(static_cast<nfs_opnum4>(9999), nfsstat4::NFS4ERR_OP_ILLEGAL);
  CHECK(std::holds_alternative<ILLEGAL4res>(r));
  CHECK(opnum_of(r) == nfs_opnum4::OP_ILLEGAL);
}
