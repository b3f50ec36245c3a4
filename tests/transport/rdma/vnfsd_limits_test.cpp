// vnfsd's RPC-over-RDMA listener under its limits (--rdma-max-connections,
// --rdma-max-credits, --rdma-inline-size, --rdma-idle-timeout), each tried exactly on the
// cma provider over loopback: vnfsd runs as its own process with the options on its command
// line, and peers below the requester (raw_peers.hpp) send RPC NULL calls in RDMA_MSG
// messages. Each check is on state — an answer, a grant, a closed connection, the line vnfsd
// logs — never on time; waits are bounded.
#include <unistd.h>

#include <regex>
#include <string>

#include "raw_peers.hpp"
#include "vnfs/rpc/message.hpp"
#include "vnfs/test/child_process.hpp"
#include "vnfs/test/reliability.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs;
using namespace vnfs::test;
using namespace std::chrono_literals;
namespace rr = vnfs::rpc::rdma;

namespace {

/// vnfsd with TCP and cma listeners on free ports and `limits` on its command line; its
/// stderr comes with its stdout, line by line.
struct vnfsd_rdma {
  temp_dir dir;
  std::unique_ptr<child_process> proc;
  std::uint16_t port = 0;  // the RDMA listener's

  explicit vnfsd_rdma(std::vector<std::string> limits) {
    std::vector<std::string> args = {"--export", dir.path().string(), "--listen", "127.0.0.1:0",
                                     "--rdma", "cma:127.0.0.1:0", "--threads", "2"};
    args.insert(args.end(), limits.begin(), limits.end());
    spawn_options so;
    so.merge_stderr = true;
    proc = std::make_unique<child_process>(vnfsd_process::binary(), args, so);
    REQUIRE(std::regex_match(proc->read_line(10s), std::regex(R"(vnfsd listening on tcp://127\.0\.0\.1:[0-9]+)")));
    std::smatch m;
    const std::string rdma = proc->read_line(10s);
    REQUIRE(std::regex_match(rdma, m, std::regex(R"(vnfsd listening on rdma\+cma://127\.0\.0\.1:([0-9]+))")));
    port = static_cast<std::uint16_t>(std::stoul(m[1]));
  }
  /// The next line vnfsd prints (bounded wait).
  std::string next_line() { return proc->read_line(20s); }
};

/// What vnfsd names this process by in its lines (endpoint::peer() of cma).
std::string this_peer() { return "cma:pid " + std::to_string(::getpid()); }

/// An RPC NULL call to NFSv4 (program 100003, version 4, procedure 0), AUTH_NONE.
std::vector<std::byte> null_call(std::uint32_t xid) {
  xdr::encoder e;
  rpc::call_header h;
  h.xid = xid;
  h.prog = 100003;
  h.vers = 4;
  rpc::encode_call(e, h);
  return e.flatten();
}

/// An RDMA_MSG carrying `body` (the NULL call of `xid` unless given), asking for `credits`,
/// with `read_list`, zero-padded to `size` bytes when that is larger (the zeros are part of
/// the call's record: NULL ignores them).
std::vector<std::byte> rdma_msg(std::uint32_t xid, std::uint32_t credits, std::size_t size = 0,
                                std::vector<rr::read_segment> read_list = {}) {
  rr::header h;
  h.xid = xid;
  h.credits = credits;
  h.read_list = std::move(read_list);
  xdr::encoder e;
  rr::encode_header(e, h);
  auto m = e.flatten();
  const auto body = null_call(xid);
  m.insert(m.end(), body.begin(), body.end());
  if (m.size() < size) m.resize(size);
  return m;
}

/// Decodes an RDMA_MSG that answers a NULL call: its header, after checking the RPC reply
/// it carries (accepted, success, the call's xid).
rr::header null_reply(std::span<const std::byte> m) {
  xdr::decoder d(m);
  const rr::header h = rr::decode_header(d);
  CHECK(h.type == rr::msg_type::rdma_msg);
  const rpc::reply_header r = rpc::decode_reply(d);
  CHECK(r.xid == h.xid);
  CHECK(r.is_success());
  CHECK(d.remaining() == 0);
  return h;
}

/// A NULL call on `c`, answered: the grant of its reply.
std::uint32_t call_null(raw_client& c, std::uint32_t xid, std::uint32_t credits = 1) {
  c.send(rdma_msg(xid, credits));
  const auto m = c.next_message();
  const rr::header h = null_reply(m);
  CHECK(h.xid == xid);
  return h.credits;
}

/// The cma packet kinds a hand_peer sees (cma_fabric.cpp).
constexpr std::uint32_t cma_message = 3, cma_access_req = 4;
std::uint32_t kind_of(const std::vector<std::byte>& packet) {
  std::uint32_t k = 0;
  std::memcpy(&k, packet.data(), 4);
  return k;
}

}  // namespace

TEST_CASE("vnfsd --rdma-max-connections N: N RDMA connections are served, the next one is refused") {
  vnfsd_rdma s({"--rdma-max-connections", "3"});
  io_thread t;
  std::vector<std::unique_ptr<raw_client>> open;
  for (std::uint32_t i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<raw_client>(t, s.port));
    CHECK(call_null(*open.back(), 10 + i) >= 1);
  }
  raw_client fourth(t, s.port);
  REQUIRE(fourth.closed_f.wait_for(wait_limit) == std::future_status::ready);
  CHECK(s.next_line() == "vnfsd: refused 1 RDMA connection(s), the last from " + this_peer() +
                             ": 3 open already (--rdma-max-connections)");
  for (std::uint32_t i = 0; i < 3; ++i) {  // the three are served still
    CHECK_FALSE(open[i]->is_closed());
    call_null(*open[i], 20 + i);
  }
  record_reliability("test_transport_rdma_limits (connections)",
                     "vnfsd --rdma-max-connections 3; 4 cma connections, a NULL call on each open one before and after",
                     "the 3 answered; the 4th closed at once with a --rdma-max-connections line; the 3 answered again",
                     "3 served, the 4th refused");
}

TEST_CASE("vnfsd --rdma-max-credits N: every reply grants N; N calls outstanding are served, one more disconnects") {
  vnfsd_rdma s({"--rdma-max-credits", "5"});
  {
    io_thread t;
    raw_client c(t, s.port);
    CHECK(call_null(c, 1, 1) == 5);    // asked for less
    CHECK(call_null(c, 2, 100) == 5);  // asked for more
  }
  // Calls held outstanding by a peer that never lets the server pull their Read chunk: each
  // of the first five makes the server ask for the chunk (an access request), the sixth
  // exceeds the grant and ends the connection.
  hand_peer peer(s.port);
  REQUIRE(peer.handshake().kind == 2);
  peer.send(hand_peer::packet(cma_message, rdma_msg(1, 5)));
  auto first = peer.receive();
  REQUIRE(first);
  REQUIRE(kind_of(*first) == cma_message);
  CHECK(null_reply(std::span<const std::byte>(*first).subspan(16)).credits == 5);
  const std::size_t call_size = null_call(0).size();
  for (std::uint32_t x = 2; x <= 6; ++x) {
    peer.send(hand_peer::packet(cma_message, rdma_msg(x, 5, 0, {{static_cast<std::uint32_t>(call_size), {7, 8, 0x1000}}})));
    auto req = peer.receive();
    REQUIRE(req);
    CHECK(kind_of(*req) == cma_access_req);
  }
  peer.send(hand_peer::packet(cma_message, rdma_msg(7, 5)));
  CHECK_FALSE(peer.receive());  // the end of the connection, nothing else before it
  const std::string line = s.next_line();
  CHECK(line == "vnfsd: closed the RDMA connection from " + this_peer() +
                    ": it had more calls outstanding than the 5 credits it may be granted (--rdma-max-credits)");
  record_reliability("test_transport_rdma_limits (credits)",
                     "vnfsd --rdma-max-credits 5; NULL calls asking for 1 and 100 credits; then 5 calls held "
                     "outstanding (their Read chunks never pulled) and a 6th",
                     "every reply grants 5; the 5 held calls each reach the server (it asks for their chunk); the 6th "
                     "closes the connection with nothing before it, with a --rdma-max-credits line",
                     "granted 5, 5 outstanding held, the 6th disconnected");
}

TEST_CASE("vnfsd --rdma-inline-size B: announced to clients; a message of B bytes is answered, one of B + 1 disconnects") {
  vnfsd_rdma s({"--rdma-inline-size", "2048"});
  hand_peer peer(s.port);
  const auto ack = peer.handshake();
  CHECK(ack.recv_size == 2048);
  REQUIRE(ack.private_data);
  CHECK(ack.private_data->inline_recv == 2048);
  CHECK(ack.private_data->inline_send == 2048);
  peer.send(hand_peer::packet(cma_message, rdma_msg(1, 1, 2048)));
  auto reply = peer.receive();
  REQUIRE(reply);
  REQUIRE(kind_of(*reply) == cma_message);
  CHECK(null_reply(std::span<const std::byte>(*reply).subspan(16)).xid == 1);
  const auto over = rdma_msg(2, 1, 2049);
  REQUIRE(over.size() == 2049);
  peer.send(hand_peer::packet(cma_message, over));
  CHECK_FALSE(peer.receive());
  CHECK(s.next_line() == "vnfsd: closed the RDMA connection from " + this_peer() +
                             ": it sent a message larger than the inline size, 2048 bytes (--rdma-inline-size)");
  io_thread t;
  raw_client other(t, s.port);  // another client is served after
  call_null(other, 3);
  record_reliability("test_transport_rdma_limits (inline size)",
                     "vnfsd --rdma-inline-size 2048; a peer speaking the cma packets: one call of 2048 bytes, one of 2049",
                     "2048 announced (hello and RFC 8797 private data); the first answered; the second closes that "
                     "connection without an answer, with a --rdma-inline-size line; another client served after",
                     "answered, then closed; another client served");
}

TEST_CASE("vnfsd --rdma-idle-timeout: a silent connection is closed, and so is one whose peer never lets a pull finish") {
  vnfsd_rdma s({"--rdma-idle-timeout", "1"});
  const std::string idle_line = "vnfsd: closed the RDMA connection from " + this_peer() +
                                ": nothing arrived or left for 1000 ms while no call was executing (--rdma-idle-timeout)";
  {
    io_thread t;
    raw_client c(t, s.port);
    call_null(c, 1);
    REQUIRE(c.closed_f.wait_for(wait_limit) == std::future_status::ready);  // silent from here on
    CHECK(s.next_line() == idle_line);
  }
  // A call whose Read chunk the server asks for and never gets: the call is not executing
  // (it waits for the peer), so the connection is idle.
  hand_peer peer(s.port);
  REQUIRE(peer.handshake().kind == 2);
  peer.send(hand_peer::packet(cma_message, rdma_msg(1, 1, 0, {{static_cast<std::uint32_t>(null_call(0).size()), {7, 8, 0x1000}}})));
  auto req = peer.receive();
  REQUIRE(req);
  CHECK(kind_of(*req) == cma_access_req);
  CHECK_FALSE(peer.receive());
  CHECK(s.next_line() == idle_line);
  record_reliability("test_transport_rdma_limits (idle)",
                     "vnfsd --rdma-idle-timeout 1; a connection silent after one NULL call; a peer that never answers "
                     "the server's request to pull its Read chunk",
                     "each closed by the server (a bounded wait for the event), with a --rdma-idle-timeout line",
                     "both closed");
}
