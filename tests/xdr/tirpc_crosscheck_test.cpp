// Judges our XDR codec and RPC headers by libtirpc, an independent implementation: every
// value goes ours -> tirpc and tirpc -> ours, and both encodings must be byte-identical.
#include <catch2/catch.hpp>

#include <climits>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vnfs/rpc/message.hpp"
#include "vnfs/xdr/codec.hpp"

// After our headers: tirpc defines macros (TRUE, rm_call, ar_results, ...).
#include <rpc/rpc.h>
#include <rpc/auth_unix.h>
#include <rpc/rpc_msg.h>
#include <rpc/xdr.h>
// tirpc aliases its authunix_parms as authsys_parms by a macro, which would rename ours.
#undef authsys_parms

using namespace vnfs;

namespace {

using bytes = std::vector<std::byte>;

/// xdrproc_t is declared variadic; cast through void(*)() as the C API expects.
template <class F>
xdrproc_t proc(F* f) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(f));
}

// memcpy/memcmp with a null pointer is undefined even for 0 bytes (empty vectors have one).
void copy_bytes(void* to, const void* from, std::size_t n) {
  if (n != 0) std::memcpy(to, from, n);
}
bool same_bytes(const void* a, const void* b, std::size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

/// Encodes with tirpc: fn must succeed; returns exactly the bytes it wrote.
bytes tirpc_encode(const std::function<bool_t(XDR*)>& fn) {
  std::vector<char> buf(1 << 16);
  XDR x;
  xdrmem_create(&x, buf.data(), static_cast<u_int>(buf.size()), XDR_ENCODE);
  REQUIRE(fn(&x));
  u_int n = xdr_getpos(&x);
  xdr_destroy(&x);
  bytes out(n);
  copy_bytes(out.data(), buf.data(), n);
  return out;
}

/// Decodes with tirpc: fn must succeed and consume every byte.
void tirpc_decode(const bytes& in, const std::function<bool_t(XDR*)>& fn) {
  std::vector<char> buf(in.size() + 4);  // xdrmem needs a non-null buffer even for 0 bytes
  copy_bytes(buf.data(), in.data(), in.size());
  XDR x;
  xdrmem_create(&x, buf.data(), static_cast<u_int>(in.size()), XDR_DECODE);
  REQUIRE(fn(&x));
  CHECK(xdr_getpos(&x) == in.size());
  xdr_destroy(&x);
}

template <class T>
T ours_decode(const bytes& in) {
  return xdr::from_bytes<T>(in);
}

/// The full cross-check for one value of a scalar type: both encodings equal, and each side
/// decodes the other's bytes to the original value.
template <class Ours, class C>
void cross_scalar(Ours v, bool_t (*tirpc_fn)(XDR*, C*)) {
  bytes mine = xdr::to_bytes(v);
  C c = static_cast<C>(v);
  bytes theirs = tirpc_encode([&](XDR* x) { return tirpc_fn(x, &c); });
  CHECK(mine == theirs);
  C back{};
  tirpc_decode(mine, [&](XDR* x) { return tirpc_fn(x, &back); });
  CHECK(back == c);
  CHECK(ours_decode<Ours>(theirs) == v);
}

enum class color : std::int32_t { red = 0, green = 1, minus = -1, big = 0x7fffffff };

}  // namespace

TEST_CASE("tirpc: unsigned and signed 32-bit integers") {
  for (std::uint32_t v : {0u, 1u, 0x12345678u, 0x7fffffffu, 0x80000000u, 0xffffffffu})
    cross_scalar<std::uint32_t, uint32_t>(v, xdr_uint32_t);
  for (std::uint32_t v : {0u, 0xdeadbeefu}) cross_scalar<std::uint32_t, u_int32_t>(v, xdr_u_int32_t);
  for (std::int32_t v : {0, 1, -1, INT_MIN, INT_MAX, -123456}) cross_scalar<std::int32_t, int32_t>(v, xdr_int32_t);
}

TEST_CASE("tirpc: 64-bit integers (hyper)") {
  for (std::uint64_t v : {0ull, 1ull, 0x0102030405060708ull, 0x8000000000000000ull, ~0ull}) {
    cross_scalar<std::uint64_t, uint64_t>(v, xdr_uint64_t);
    cross_scalar<std::uint64_t, u_int64_t>(v, xdr_u_quad_t);
  }
  for (std::int64_t v : {0ll, -1ll, LLONG_MIN, LLONG_MAX, -0x123456789ll}) {
    cross_scalar<std::int64_t, int64_t>(v, xdr_int64_t);
    cross_scalar<std::int64_t, quad_t>(v, xdr_quad_t);
  }
}

TEST_CASE("tirpc: bool and enum") {
  for (bool v : {false, true}) {
    bytes mine = xdr::to_bytes(v);
    bool_t c = v;
    CHECK(mine == tirpc_encode([&](XDR* x) { return xdr_bool(x, &c); }));
    bool_t back = 7;
    tirpc_decode(mine, [&](XDR* x) { return xdr_bool(x, &back); });
    CHECK((back != 0) == v);
  }
  for (color v : {color::red, color::green, color::minus, color::big}) {
    bytes mine = xdr::to_bytes(v);
    enum_t c = static_cast<enum_t>(v);
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_enum(x, &c); });
    CHECK(mine == theirs);
    enum_t back = 99;
    tirpc_decode(mine, [&](XDR* x) { return xdr_enum(x, &back); });
    CHECK(back == static_cast<enum_t>(v));
    CHECK(ours_decode<color>(theirs) == v);
  }
}

TEST_CASE("tirpc: strings of every padding length") {
  std::vector<std::string> cases;
  for (std::size_t n = 0; n <= 9; ++n) cases.push_back(std::string(n, char('a' + n)));
  cases.push_back("caf\xc3\xa9 \x7f\x01");
  cases.push_back(std::string(255, 'z'));
  for (const std::string& s : cases) {
    bytes mine = xdr::to_bytes(s);
    char* p = const_cast<char*>(s.c_str());
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_string(x, &p, 1024); });
    CHECK(mine == theirs);
    std::vector<char> area(1024);
    char* q = area.data();
    tirpc_decode(mine, [&](XDR* x) { return xdr_string(x, &q, 1024); });
    CHECK(std::string(q) == s);
    CHECK(ours_decode<std::string>(theirs) == s);
  }
}

TEST_CASE("tirpc: variable-length opaque (xdr_bytes), copied and referenced") {
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 63u, 64u, 65u, 1000u}) {
    bytes v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = std::byte(i * 7 + 1);
    bytes mine = xdr::to_bytes(v);
    xdr::encoder ref;
    ref.put_opaque_ref(v);  // zero-copy path (a separate piece from 64 bytes on)
    CHECK(ref.flatten() == mine);

    char* p = reinterpret_cast<char*>(v.data());
    u_int len = static_cast<u_int>(n);
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_bytes(x, &p, &len, 4096); });
    CHECK(mine == theirs);

    std::vector<char> area(4096);
    char* q = area.data();
    u_int back_len = 0;
    tirpc_decode(mine, [&](XDR* x) { return xdr_bytes(x, &q, &back_len, 4096); });
    REQUIRE(back_len == n);
    CHECK(same_bytes(q, v.data(), n));
    CHECK(ours_decode<bytes>(theirs) == v);
    CHECK(theirs.size() == 4 + (n + 3) / 4 * 4);
  }
}

TEST_CASE("tirpc: fixed-length opaque (xdr_opaque), padding 0..3") {
  for (std::size_t n = 0; n <= 8; ++n) {
    bytes v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = std::byte(0xf0 | i);
    xdr::encoder e;
    e.put_fixed_opaque(v);
    bytes mine = e.flatten();
    std::vector<char> src(n + 1);
    copy_bytes(src.data(), v.data(), n);
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_opaque(x, src.data(), static_cast<u_int>(n)); });
    CHECK(mine == theirs);
    CHECK(mine.size() == (n + 3) / 4 * 4);

    std::vector<char> back(n + 1);
    tirpc_decode(mine, [&](XDR* x) { return xdr_opaque(x, back.data(), static_cast<u_int>(n)); });
    CHECK(same_bytes(back.data(), v.data(), n));
    xdr::decoder d(theirs);
    auto view = d.get_fixed_opaque(n);
    CHECK(bytes(view.begin(), view.end()) == v);
    CHECK(d.remaining() == 0);
  }
  // and through the codec for std::array
  std::array<std::byte, 5> a{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}};
  bytes mine = xdr::to_bytes(a);
  char src[5] = {1, 2, 3, 4, 5};
  CHECK(mine == tirpc_encode([&](XDR* x) { return xdr_opaque(x, src, 5); }));
}

TEST_CASE("tirpc: arrays (xdr_array) of integers and of strings") {
  for (std::size_t n : {0u, 1u, 5u, 33u}) {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>(i * 0x01010101u);
    bytes mine = xdr::to_bytes(v);
    char* p = reinterpret_cast<char*>(v.data());
    u_int len = static_cast<u_int>(n);
    bytes theirs = tirpc_encode(
        [&](XDR* x) { return xdr_array(x, &p, &len, 100, sizeof(uint32_t), proc(xdr_uint32_t)); });
    CHECK(mine == theirs);

    std::vector<uint32_t> area(100);
    char* q = reinterpret_cast<char*>(area.data());
    u_int back_len = 0;
    tirpc_decode(mine,
                 [&](XDR* x) { return xdr_array(x, &q, &back_len, 100, sizeof(uint32_t), proc(xdr_uint32_t)); });
    REQUIRE(back_len == n);
    CHECK(std::vector<std::uint32_t>(area.begin(), area.begin() + n) == v);
    CHECK(ours_decode<std::vector<std::uint32_t>>(theirs) == v);
  }
  std::vector<std::string> names = {"", "a", "bcde", "fghij"};
  bytes mine = xdr::to_bytes(names);
  std::vector<char*> ptrs;
  for (auto& s : names) ptrs.push_back(const_cast<char*>(s.c_str()));
  char* p = reinterpret_cast<char*>(ptrs.data());
  u_int len = static_cast<u_int>(ptrs.size());
  bytes theirs =
      tirpc_encode([&](XDR* x) { return xdr_array(x, &p, &len, 10, sizeof(char*), proc(xdr_wrapstring)); });
  CHECK(mine == theirs);
  CHECK(ours_decode<std::vector<std::string>>(theirs) == names);
}

TEST_CASE("tirpc: optional data (xdr_pointer)") {
  for (std::optional<std::int32_t> v : {std::optional<std::int32_t>{}, std::optional<std::int32_t>{-5}}) {
    bytes mine = xdr::to_bytes(v);
    int32_t value = v.value_or(0);
    char* p = v ? reinterpret_cast<char*>(&value) : nullptr;
    bytes theirs =
        tirpc_encode([&](XDR* x) { return xdr_pointer(x, &p, sizeof(int32_t), proc(xdr_int32_t)); });
    CHECK(mine == theirs);
    CHECK(mine.size() == (v ? 8u : 4u));

    int32_t area = 12345;
    char* q = reinterpret_cast<char*>(&area);  // preset: tirpc decodes into it, no allocation
    tirpc_decode(mine, [&](XDR* x) { return xdr_pointer(x, &q, sizeof(int32_t), proc(xdr_int32_t)); });
    if (v) {
      REQUIRE(q != nullptr);
      CHECK(area == -5);
    } else {
      CHECK(q == nullptr);  // tirpc nulls the pointer for an absent value
    }
    CHECK(ours_decode<std::optional<std::int32_t>>(theirs) == v);
  }
}

namespace {
struct tirpc_authsys {
  std::vector<char> name;
  std::vector<gid_t> gids;
  authunix_parms p{};
  explicit tirpc_authsys(const rpc::authsys_parms& a) : name(a.machinename.begin(), a.machinename.end()) {
    name.push_back('\0');
    gids.assign(a.gids.begin(), a.gids.end());
    gids.resize(gids.size() + 1);
    p.aup_time = a.stamp;
    p.aup_machname = name.data();
    p.aup_uid = a.uid;
    p.aup_gid = a.gid;
    p.aup_len = static_cast<u_int>(a.gids.size());
    p.aup_gids = gids.data();
  }
};
}  // namespace

TEST_CASE("tirpc: AUTH_SYS credential body (xdr_authunix_parms)") {
  rpc::authsys_parms a{0x5eed, "client.example", 1000, 100, {4, 24, 27, 30}};
  tirpc_authsys t(a);
  bytes theirs = tirpc_encode([&](XDR* x) { return xdr_authunix_parms(x, &t.p); });
  rpc::opaque_auth mine = rpc::make_authsys(a);
  CHECK(mine.body == theirs);
  CHECK(rpc::parse_authsys({rpc::auth_flavor::sys, theirs}) == a);

  std::vector<char> name(256);
  std::vector<gid_t> gids(16);
  authunix_parms back{};
  back.aup_machname = name.data();
  back.aup_gids = gids.data();
  tirpc_decode(mine.body, [&](XDR* x) { return xdr_authunix_parms(x, &back); });
  CHECK(back.aup_time == 0x5eed);
  CHECK(std::string(back.aup_machname) == "client.example");
  CHECK(back.aup_uid == 1000);
  CHECK(back.aup_gid == 100);
  REQUIRE(back.aup_len == 4);
  CHECK(std::vector<gid_t>(back.aup_gids, back.aup_gids + 4) == std::vector<gid_t>{4, 24, 27, 30});
}

TEST_CASE("tirpc: call header (xdr_callmsg) both ways, AUTH_SYS credential") {
  rpc::authsys_parms a{7, "host", 0, 0, {0, 1}};
  rpc::call_header h{0xabcdef01, 100003, 4, 1, rpc::make_authsys(a), rpc::opaque_auth::none()};
  xdr::encoder e;
  rpc::encode_call(e, h);
  bytes mine = e.flatten();

  rpc_msg m{};
  m.rm_xid = h.xid;
  m.rm_direction = CALL;
  m.rm_call.cb_rpcvers = RPC_MSG_VERSION;
  m.rm_call.cb_prog = h.prog;
  m.rm_call.cb_vers = h.vers;
  m.rm_call.cb_proc = h.proc;
  m.rm_call.cb_cred.oa_flavor = AUTH_SYS;
  m.rm_call.cb_cred.oa_base = reinterpret_cast<caddr_t>(h.cred.body.data());
  m.rm_call.cb_cred.oa_length = static_cast<u_int>(h.cred.body.size());
  m.rm_call.cb_verf.oa_flavor = AUTH_NONE;
  m.rm_call.cb_verf.oa_base = nullptr;
  m.rm_call.cb_verf.oa_length = 0;
  bytes theirs = tirpc_encode([&](XDR* x) { return xdr_callmsg(x, &m); });
  CHECK(mine == theirs);

  xdr::decoder d(theirs);
  CHECK(rpc::decode_call(d) == h);
  CHECK(d.remaining() == 0);

  char cred_area[MAX_AUTH_BYTES], verf_area[MAX_AUTH_BYTES];
  rpc_msg back{};
  back.rm_call.cb_cred.oa_base = cred_area;
  back.rm_call.cb_verf.oa_base = verf_area;
  tirpc_decode(mine, [&](XDR* x) { return xdr_callmsg(x, &back); });
  CHECK(back.rm_xid == h.xid);
  CHECK(back.rm_direction == CALL);
  CHECK(back.rm_call.cb_rpcvers == 2);
  CHECK(back.rm_call.cb_prog == 100003);
  CHECK(back.rm_call.cb_vers == 4);
  CHECK(back.rm_call.cb_proc == 1);
  CHECK(back.rm_call.cb_cred.oa_flavor == AUTH_SYS);
  REQUIRE(back.rm_call.cb_cred.oa_length == h.cred.body.size());
  CHECK(std::memcmp(back.rm_call.cb_cred.oa_base, h.cred.body.data(), h.cred.body.size()) == 0);
  CHECK(back.rm_call.cb_verf.oa_length == 0);
}

TEST_CASE("tirpc: replies (xdr_replymsg) both ways") {
  SECTION("accepted SUCCESS with a result") {
    xdr::encoder e;
    rpc::encode_accepted_reply(e, 42, rpc::accept_stat::success);
    e.put_u32(0xcafe);
    bytes mine = e.flatten();

    uint32_t result = 0xcafe;
    rpc_msg m{};
    m.rm_xid = 42;
    m.rm_direction = REPLY;
    m.rm_reply.rp_stat = MSG_ACCEPTED;
    m.acpted_rply.ar_verf.oa_flavor = AUTH_NONE;
    m.acpted_rply.ar_stat = SUCCESS;
    m.acpted_rply.ar_results.where = reinterpret_cast<caddr_t>(&result);
    m.acpted_rply.ar_results.proc = proc(xdr_uint32_t);
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_replymsg(x, &m); });
    CHECK(mine == theirs);

    xdr::decoder d(theirs);
    rpc::reply_header h = rpc::decode_reply(d);
    CHECK(h.xid == 42);
    CHECK(h.is_success());
    CHECK(d.get_u32() == 0xcafe);

    uint32_t got = 0;
    char verf_area[MAX_AUTH_BYTES];
    rpc_msg back{};
    back.acpted_rply.ar_verf.oa_base = verf_area;
    back.acpted_rply.ar_results.where = reinterpret_cast<caddr_t>(&got);
    back.acpted_rply.ar_results.proc = proc(xdr_uint32_t);
    tirpc_decode(mine, [&](XDR* x) { return xdr_replymsg(x, &back); });
    CHECK(back.rm_xid == 42);
    CHECK(back.rm_reply.rp_stat == MSG_ACCEPTED);
    CHECK(back.acpted_rply.ar_stat == SUCCESS);
    CHECK(got == 0xcafe);
  }
  SECTION("accepted PROG_MISMATCH") {
    xdr::encoder e;
    rpc::encode_accepted_reply(e, 43, rpc::accept_stat::prog_mismatch, {}, {3, 4});
    bytes mine = e.flatten();
    rpc_msg m{};
    m.rm_xid = 43;
    m.rm_direction = REPLY;
    m.rm_reply.rp_stat = MSG_ACCEPTED;
    m.acpted_rply.ar_verf.oa_flavor = AUTH_NONE;
    m.acpted_rply.ar_stat = PROG_MISMATCH;
    m.acpted_rply.ar_vers.low = 3;
    m.acpted_rply.ar_vers.high = 4;
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_replymsg(x, &m); });
    CHECK(mine == theirs);
    xdr::decoder d(theirs);
    auto h = rpc::decode_reply(d);
    CHECK(h.accepted == rpc::accept_stat::prog_mismatch);
    CHECK(h.mismatch == rpc::mismatch_info{3, 4});
  }
  SECTION("denied RPC_MISMATCH") {
    xdr::encoder e;
    rpc::encode_denied_reply(e, 44);
    bytes mine = e.flatten();
    rpc_msg back{};
    tirpc_decode(mine, [&](XDR* x) { return xdr_replymsg(x, &back); });
    CHECK(back.rm_xid == 44);
    CHECK(back.rm_reply.rp_stat == MSG_DENIED);
    CHECK(back.rjcted_rply.rj_stat == RPC_MISMATCH);
    CHECK(back.rjcted_rply.rj_vers.low == 2);
    CHECK(back.rjcted_rply.rj_vers.high == 2);
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_replymsg(x, &back); });
    CHECK(mine == theirs);
  }
  SECTION("denied AUTH_ERROR") {
    rpc_msg m{};
    m.rm_xid = 45;
    m.rm_direction = REPLY;
    m.rm_reply.rp_stat = MSG_DENIED;
    m.rjcted_rply.rj_stat = AUTH_ERROR;
    m.rjcted_rply.rj_why = AUTH_BADCRED;
    bytes theirs = tirpc_encode([&](XDR* x) { return xdr_replymsg(x, &m); });
    xdr::encoder e;
    rpc::encode_denied_reply(e, 45, rpc::auth_stat::badcred);
    CHECK(e.flatten() == theirs);
    xdr::decoder d(theirs);
    auto h = rpc::decode_reply(d);
    CHECK(h.stat == rpc::reply_stat::msg_denied);
    CHECK(h.rejected == rpc::reject_stat::auth_error);
    CHECK(h.auth == rpc::auth_stat::badcred);
  }
}
