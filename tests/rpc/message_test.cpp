#include <catch2/catch.hpp>

#include "vnfs/rpc/message.hpp"

using namespace vnfs;

namespace {
std::vector<std::byte> W(std::initializer_list<std::uint32_t> words) {
  std::vector<std::byte> out;
  for (std::uint32_t w : words)
    for (int s = 24; s >= 0; s -= 8) out.push_back(std::byte(w >> s));
  return out;
}
std::vector<std::byte> cat(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
rpc::call_error decode_call_error(const std::vector<std::byte>& bytes) {
  xdr::decoder d(bytes);
  try {
    (void)rpc::decode_call(d);
  } catch (const rpc::call_error& e) {
    return e;
  }
  FAIL("decode_call accepted the message");
  throw std::logic_error("unreachable");
}
std::vector<std::byte> owed_reply(const rpc::call_error& e) {
  xdr::encoder enc;
  REQUIRE(e.encode_reply(enc));
  return enc.flatten();
}
}  // namespace

TEST_CASE("authsys_parms layout and round trip") {
  rpc::authsys_parms p{0x11, "host", 1000, 100, {4, 5}};
  auto cred = rpc::make_authsys(p);
  CHECK(cred.flavor == rpc::auth_flavor::sys);
  CHECK(cred.body == cat(W({0x11, 4}), cat(std::vector<std::byte>{std::byte{'h'}, std::byte{'o'}, std::byte{'s'}, std::byte{'t'}},
                                             W({1000, 100, 2, 4, 5}))));
  CHECK(rpc::parse_authsys(cred) == p);
}

TEST_CASE("authsys bounds: encode refuses, parse rejects") {
  rpc::authsys_parms p;
  p.machinename.assign(256, 'x');
  CHECK_THROWS_AS(rpc::make_authsys(p), std::length_error);
  p.machinename = "m";
  p.gids.assign(17, 1);
  CHECK_THROWS_AS(rpc::make_authsys(p), std::length_error);
  p.gids.assign(16, 1);
  CHECK(rpc::parse_authsys(rpc::make_authsys(p)).gids.size() == 16);

  rpc::opaque_auth bad{rpc::auth_flavor::sys, W({0, 0, 0, 0, 17})};  // 17 gids
  CHECK_THROWS_AS(rpc::parse_authsys(bad), xdr::decode_error);
  rpc::opaque_auth trailing = rpc::make_authsys({1, "a", 2, 3, {}});
  trailing.body.resize(trailing.body.size() + 4);
  CHECK_THROWS_AS(rpc::parse_authsys(trailing), xdr::decode_error);
  CHECK_THROWS_AS(rpc::parse_authsys(rpc::opaque_auth::none()), xdr::decode_error);
}

TEST_CASE("call header: exact bytes and round trip") {
  rpc::call_header h{0xdeadbeef, 100003, 4, 1, rpc::opaque_auth::none(), rpc::opaque_auth::none()};
  xdr::encoder e;
  rpc::encode_call(e, h);
  e.put_u32(42);  // an argument
  auto bytes = e.flatten();
  CHECK(bytes == W({0xdeadbeef, 0, 2, 100003, 4, 1, 0, 0, 0, 0, 42}));
  xdr::decoder d(bytes);
  CHECK(rpc::decode_call(d) == h);
  CHECK(d.get_u32() == 42);  // left at the arguments
  CHECK(d.remaining() == 0);
}

TEST_CASE("call header with AUTH_SYS round trips") {
  rpc::call_header h{7, 100003, 4, 1, rpc::make_authsys({3, "client", 0, 0, {0, 1, 2}}), rpc::opaque_auth::none()};
  xdr::encoder e;
  rpc::encode_call(e, h);
  auto bytes = e.flatten();
  xdr::decoder d(bytes);
  rpc::call_header got = rpc::decode_call(d);
  CHECK(got == h);
  CHECK(rpc::parse_authsys(got.cred).machinename == "client");
}

TEST_CASE("decode_call tells the server exactly what to answer") {
  SECTION("rpcvers 3 -> MSG_DENIED RPC_MISMATCH 2..2") {
    auto e = decode_call_error(W({9, 0, 3, 100003, 4, 0, 0, 0, 0, 0}));
    CHECK(e.reason() == rpc::call_error::kind::rpc_mismatch);
    CHECK(e.xid() == 9);
    CHECK(owed_reply(e) == W({9, 1, 1, 0, 2, 2}));
  }
  SECTION("credential body over 400 bytes -> AUTH_ERROR AUTH_BADCRED") {
    auto e = decode_call_error(W({10, 0, 2, 100003, 4, 0, 1, 404}));
    CHECK(e.reason() == rpc::call_error::kind::auth_error);
    CHECK(e.auth() == rpc::auth_stat::badcred);
    CHECK(owed_reply(e) == W({10, 1, 1, 1, 1}));
  }
  SECTION("verifier body over 400 bytes -> AUTH_BADVERF") {
    auto e = decode_call_error(W({11, 0, 2, 100003, 4, 0, 0, 0, 0, 401}));
    CHECK(e.auth() == rpc::auth_stat::badverf);
    CHECK(owed_reply(e) == W({11, 1, 1, 1, 3}));
  }
  SECTION("malformed AUTH_SYS body -> AUTH_BADCRED") {
    // machinename length 300 > 255, within a 12-byte body
    auto e = decode_call_error(W({12, 0, 2, 100003, 4, 0, 1, 12, 0, 300, 0, 0, 0, 0}));
    CHECK(e.reason() == rpc::call_error::kind::auth_error);
    CHECK(e.auth() == rpc::auth_stat::badcred);
  }
  SECTION("truncated after the xid -> GARBAGE_ARGS with an AUTH_NONE verifier") {
    auto e = decode_call_error(W({13, 0, 2, 100003, 4, 0, 0}));
    CHECK(e.reason() == rpc::call_error::kind::garbage_args);
    CHECK(owed_reply(e) == W({13, 1, 0, 0, 0, 4}));
  }
  SECTION("a reply, or a message without an xid, is dropped") {
    auto e = decode_call_error(W({14, 1, 0}));
    CHECK(e.reason() == rpc::call_error::kind::drop);
    CHECK_FALSE(e.has_reply());
    xdr::encoder enc;
    CHECK_FALSE(e.encode_reply(enc));
    CHECK(enc.size() == 0);
    CHECK(decode_call_error(W({15})).reason() == rpc::call_error::kind::drop);
  }
}

TEST_CASE("accepted replies: exact bytes and round trip") {
  SECTION("SUCCESS, results follow") {
    xdr::encoder e;
    rpc::encode_accepted_reply(e, 5, rpc::accept_stat::success);
    e.put_u32(77);
    auto bytes = e.flatten();
    CHECK(bytes == W({5, 1, 0, 0, 0, 0, 77}));
    xdr::decoder d(bytes);
    auto h = rpc::decode_reply(d);
    CHECK(h.xid == 5);
    CHECK(h.is_success());
    CHECK_NOTHROW(rpc::check_reply(h));
    CHECK(d.get_u32() == 77);
  }
  SECTION("PROG_MISMATCH carries low/high") {
    xdr::encoder e;
    rpc::encode_accepted_reply(e, 6, rpc::accept_stat::prog_mismatch, {}, {4, 4});
    auto bytes = e.flatten();
    CHECK(bytes == W({6, 1, 0, 0, 0, 2, 4, 4}));
    xdr::decoder d(bytes);
    auto h = rpc::decode_reply(d);
    CHECK(h.accepted == rpc::accept_stat::prog_mismatch);
    CHECK(h.mismatch == rpc::mismatch_info{4, 4});
    CHECK(d.remaining() == 0);
    CHECK_THROWS_AS(rpc::check_reply(h), rpc::reply_error);
  }
  SECTION("PROC_UNAVAIL with a non-empty verifier") {
    rpc::opaque_auth verf{rpc::auth_flavor::sys, {std::byte{1}, std::byte{2}}};
    rpc::reply_header in;
    in.xid = 8;
    in.verf = verf;
    in.accepted = rpc::accept_stat::proc_unavail;
    xdr::encoder e;
    rpc::encode_reply(e, in);
    auto bytes = e.flatten();
    CHECK(bytes == W({8, 1, 0, 1, 2, 0x01020000, 3}));
    xdr::decoder d(bytes);
    CHECK(rpc::decode_reply(d) == in);
  }
}

TEST_CASE("denied replies round trip and raise reply_error") {
  xdr::encoder e1;
  rpc::encode_denied_reply(e1, 20);
  auto b1 = e1.flatten();
  CHECK(b1 == W({20, 1, 1, 0, 2, 2}));
  xdr::decoder d1(b1);
  auto h1 = rpc::decode_reply(d1);
  CHECK(h1.stat == rpc::reply_stat::msg_denied);
  CHECK(h1.rejected == rpc::reject_stat::rpc_mismatch);
  CHECK(h1.mismatch == rpc::mismatch_info{2, 2});

  xdr::encoder e2;
  rpc::encode_denied_reply(e2, 21, rpc::auth_stat::tooweak);
  auto b2 = e2.flatten();
  CHECK(b2 == W({21, 1, 1, 1, 5}));
  xdr::decoder d2(b2);
  auto h2 = rpc::decode_reply(d2);
  CHECK(h2.rejected == rpc::reject_stat::auth_error);
  CHECK(h2.auth == rpc::auth_stat::tooweak);
  try {
    rpc::check_reply(h2);
    FAIL("no throw");
  } catch (const rpc::reply_error& err) {
    CHECK(err.header() == h2);
    CHECK(std::string(err.what()) == "rpc: xid 21: MSG_DENIED AUTH_ERROR AUTH_TOOWEAK");
  }
}

TEST_CASE("decode_reply rejects what is not a reply") {
  auto bad = [](std::vector<std::byte> b) {
    xdr::decoder d(b);
    CHECK_THROWS_AS(rpc::decode_reply(d), xdr::decode_error);
  };
  bad(W({1, 0, 0}));           // a call
  bad(W({1, 1, 2}));           // reply_stat 2
  bad(W({1, 1, 1, 2, 0}));     // reject_stat 2
  bad(W({1, 1, 0, 0, 500}));   // verifier body over 400 bytes
  bad(W({1, 1, 0, 0, 0, 2, 4}));  // PROG_MISMATCH truncated
}
