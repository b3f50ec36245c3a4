// Fuzzes the client's reply path over RPC-over-RDMA: the real RDMA channel
// (transport/rdma/rdma_channel.cpp over rpc_client, cma provider) sends the call to this
// harness, which plays the server on a raw endpoint and answers with the fuzzer's reply;
// the call's reply_decoder finishes it as the session engine does.
// Input: a mode byte, the call (client_call.hpp), then by mode (bits 0-1):
//   0 (as a correct server): the rest is the whole reply record. Its READ payloads go by
//     RDMA Write into the Write chunks the client offered, in order, one payload each
//     (a payload longer than its chunk: ERR_CHUNK), and the record carries the rest (the
//     reduced reply); a record too long to send inline goes into the Reply chunk
//     (RDMA_NOMSG) when one was offered, else the call gets ERR_CHUNK.
//   1 (a hostile server, in the protocol's shape): a type byte, credits (2), a payload
//     length (2) and a shift (2, signed) of what is RDMA-Written into the first Write chunk
//     (the client's validation refuses what leaves its registration), the length each
//     chunk of the Write list claims (2), the length the Reply chunk claims (2), then the
//     message body.
//   2, 3 (raw): the rest is the whole transport message, header and all.
// A hostile message is followed by RDMA_ERROR for the call, so every call ends.
// Properties: exactly one outcome per call (a reply, a refused call, a lost connection);
// check_reply() on every reply, against the whole record in mode 0 (where the reply must
// come, and ends with what a plain decoding of the record gives); the client's memory
// grants RDMA Writes inside the Write chunk it offered only; nothing outside the targets
// ever changes.
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "client_call.hpp"
#include "fuzz_input.hpp"
#include "io_loop.hpp"
#include "transport/rdma/fabric.hpp"
#include "transport/rpc_channel.hpp"
#include "vnfs/rpc/rdma_header.hpp"

using namespace vnfs;
namespace asio = boost::asio;
namespace rdma = vnfs::transport::rdma;
namespace rr = vnfs::rpc::rdma;

namespace {

constexpr std::size_t inline_size = rr::preferred_inline_size;  // both sides' receive size

struct harness {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::unique_ptr<rdma::fabric> server_fabric = rdma::make_fabric("cma", io);
  std::unique_ptr<rdma::listener> lst;
  std::shared_ptr<rdma::endpoint> server;  // the accepted endpoint of the current connection
  std::deque<std::vector<std::byte>> calls;  // messages the channel sent
  std::atomic<std::uint64_t> sent{0}, received{0}, direct{0}, copied{0};
  std::shared_ptr<transport::rpc_channel> channel;
  bool connected = false;
  std::uint32_t next_xid = 1;
  // The outcome of the current call.
  int outcomes = 0;
  std::optional<std::vector<std::byte>> record;
  std::error_code failed_with;

  harness() {
    rdma::endpoint_options eo;
    eo.recv_size = inline_size;
    eo.max_recv = 8;
    const auto pd = rr::private_data{}.encode();
    eo.private_data.assign(pd.begin(), pd.end());
    lst = server_fabric->listen("127.0.0.1", 0, eo, [this](std::shared_ptr<rdma::endpoint> ep) {
      if (server) server->close();
      server = ep;
      calls.clear();
      server->post_recv(8);
      std::weak_ptr<rdma::endpoint> weak = server;
      server->start(
          [this, weak](std::span<const std::byte> m) {
            calls.emplace_back(m.begin(), m.end());
            if (auto s = weak.lock()) s->post_recv(1);
          },
          [](std::error_code) {});
    });
    transport::channel_events ev;
    ev.on_reply = [this](std::uint32_t, std::vector<std::byte> r) {
      ++outcomes;
      record = std::move(r);
    };
    ev.on_call_failed = [this](std::uint32_t, std::error_code ec) {
      ++outcomes;
      failed_with = ec;
    };
    ev.on_lost = [this](std::error_code) {
      ++outcomes;
      connected = false;
    };
    channel = transport::make_rdma_channel(io, "cma", "127.0.0.1", lst->port(), std::move(ev),
                                           {sent, received, direct, copied});
  }

  void ensure_connected() {
    if (connected) return;
    server.reset();
    bool done = false;
    channel->connect([&](std::error_code ec) {
      fuzz::require(!ec, "connect");
      done = true;
    });
    fuzz::run_until(io, [&] { return done && server; });
    connected = true;
  }

  /// Sends `m` (header then body) to the client; a message above its receive size stays here.
  void send(const rr::header& h, std::span<const std::byte> body) {
    xdr::encoder e;
    rr::encode_header(e, h);
    send_raw(e.flatten(), body);
  }
  void send_raw(std::vector<std::byte> head, std::span<const std::byte> body) {
    head.insert(head.end(), body.begin(), body.end());
    bool done = false;
    server->post_send({head}, [&](std::error_code) { done = true; });
    fuzz::run_until(io, [&] { return done; });
  }
  /// RDMA-Writes `data` into the client's `seg`; the client's verdict.
  std::error_code write(rr::segment seg, std::span<const std::byte> data) {
    std::optional<std::error_code> r;
    server->rdma_write(seg, {data}, [&](std::error_code ec) { r = ec; });
    fuzz::run_until(io, [&] { return r.has_value(); });
    return *r;
  }
};

/// The payloads of the successful READ results of `res`, in order (views of the record it
/// was decoded from).
std::vector<std::span<const std::byte>> read_payloads(const nfs4::COMPOUND4res& res) {
  std::vector<std::span<const std::byte>> out;
  for (const auto& r : res.resarray)
    if (const auto* rd = std::get_if<nfs4::READ4res>(&r); rd && rd->status == nfs4::nfsstat4::NFS4_OK)
      out.emplace_back(rd->resok4.data.data(), rd->resok4.data.size());
  return out;
}

/// Answers as a correct server would; false when it refused the call (ERR_CHUNK).
bool answer_correctly(harness& h, const rr::header& call, std::span<const std::byte> record) {
  rr::header rep;
  rep.xid = call.xid;
  rep.credits = 8;
  std::vector<std::byte> body(record.begin(), record.end());
  const auto plain = fuzz::plain_decode(record);
  const auto payloads = plain ? read_payloads(*plain) : std::vector<std::span<const std::byte>>{};
  // Payload k goes to chunk k; chunks without a payload come back unused (length 0).
  std::size_t used = std::min(payloads.size(), call.write_list.size());
  for (std::size_t k = 0; k < used; ++k)
    if (payloads[k].size() > call.write_list[k].segments.at(0).length) {
      h.send(rr::make_error(call.xid, rr::error_code::err_chunk, 8), {});
      return false;
    }
  for (std::size_t k = 0; k < call.write_list.size(); ++k) {
    rr::segment seg = call.write_list[k].segments.at(0);
    seg.length = 0;
    if (k < used && !payloads[k].empty()) {
      seg.length = static_cast<std::uint32_t>(payloads[k].size());
      fuzz::require(!h.write(seg, payloads[k]), "a write into an offered Write chunk");
    }
    rep.write_list.push_back({{seg}});
  }
  // The reduced reply: each placed payload and its padding cut out after its length field.
  for (std::size_t k = used; k-- > 0;) {
    const std::size_t at = static_cast<std::size_t>(payloads[k].data() - record.data());
    const std::size_t cut = payloads[k].size() + ((4 - (payloads[k].size() & 3)) & 3);
    body.erase(body.begin() + static_cast<std::ptrdiff_t>(at), body.begin() + static_cast<std::ptrdiff_t>(at + cut));
  }
  xdr::encoder e;
  rr::encode_header(e, rep);
  if (e.size() + body.size() <= inline_size) {
    h.send(rep, body);
    return true;
  }
  if (call.reply_chunk && !call.reply_chunk->segments.empty() &&
      body.size() <= call.reply_chunk->segments[0].length) {
    rr::segment seg = call.reply_chunk->segments[0];
    fuzz::require(!h.write(seg, body), "a write into the offered Reply chunk");
    seg.length = static_cast<std::uint32_t>(body.size());
    rep.type = rr::msg_type::rdma_nomsg;
    rep.reply_chunk = rr::write_chunk{{seg}};
    h.send(rep, {});
    return true;
  }
  h.send(rr::make_error(call.xid, rr::error_code::err_chunk, 8), {});
  return false;
}

/// Answers as the input says, in the protocol's shape.
void answer_hostile(harness& h, const rr::header& call, fuzz::input_reader& in) {
  rr::header rep;
  rep.xid = call.xid;
  rep.type = static_cast<rr::msg_type>(in.u8() % 5);
  rep.credits = in.u16();
  const std::size_t payload = in.u16();
  const auto shift = static_cast<std::int16_t>(in.u16());
  const std::uint32_t claim_write = in.u16(), claim_reply = in.u16();
  const auto body = in.rest();
  if (!call.write_list.empty()) {
    rr::segment seg = call.write_list[0].segments.at(0);
    std::vector<std::byte> bytes(payload, std::byte{0x3c});
    rr::segment aimed = seg;
    aimed.offset += static_cast<std::uint64_t>(static_cast<std::int64_t>(shift));
    aimed.length = static_cast<std::uint32_t>(payload);
    const std::error_code ec = h.write(aimed, bytes);
    const bool inside = shift >= 0 && std::uint64_t(shift) + payload <= seg.length;
    fuzz::require(inside ? !ec : ec == std::errc::permission_denied, "the client grants writes inside its Write chunk only");
    for (const auto& chunk : call.write_list) {
      rr::segment claimed = chunk.segments.at(0);
      claimed.length = claim_write;
      rep.write_list.push_back({{claimed}});
    }
  }
  if (call.reply_chunk && !call.reply_chunk->segments.empty()) {
    rr::segment seg = call.reply_chunk->segments[0];
    const std::size_t n = std::min<std::size_t>(body.size(), seg.length);
    fuzz::require(!h.write(seg, body.first(n)), "a write into the offered Reply chunk");
    seg.length = claim_reply;
    rep.reply_chunk = rr::write_chunk{{seg}};
  }
  h.send(rep, body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static harness* h = new harness;  // lives for the process, as the fuzzer does
  fuzz::input_reader in(fuzz::bytes_of(data, size));
  const std::uint8_t mode = in.u8() & 3;
  fuzz::client_call call(in);

  h->ensure_connected();
  h->outcomes = 0;
  h->record.reset();
  h->failed_with = {};
  const std::uint32_t xid = h->next_xid++;  // never one a late message of an earlier call names
  call.encode(xid);
  h->channel->send(xid, call.call().request, call.call().decoder, {}, detail::reply_size_bound(call.call().ops));
  fuzz::run_until(h->io, [&] { return !h->calls.empty() || !h->connected; });
  fuzz::require(h->connected, "the call is sent");
  std::vector<std::byte> m = std::move(h->calls.front());
  h->calls.pop_front();
  xdr::decoder d(m);
  const rr::header c = rr::decode_header(d);
  fuzz::require(c.xid == xid, "the call's transport header names its xid");

  std::optional<std::span<const std::byte>> meant;
  bool refused = false;
  if (mode == 0) {
    meant = in.rest();
    refused = !answer_correctly(*h, c, *meant);
  } else {
    if (mode == 1) answer_hostile(*h, c, in);
    else h->send_raw({}, in.rest());
    if (h->connected) h->send(rr::make_error(xid, rr::error_code::err_chunk, 1), {});
  }
  fuzz::run_until(h->io, [&] { return h->outcomes > 0; });
  fuzz::require(h->outcomes == 1, "one outcome per call");
  const std::vector<std::size_t> anything(call.targets().size(), SIZE_MAX);

  if (!h->record) {
    fuzz::require(mode != 0 || (refused && h->failed_with == std::errc::bad_message),
                  "a correct server's reply is taken, its ERR_CHUNK reported");
    fuzz::require(call.untouched_beyond(anything), "nothing outside the targets written");
    return 0;
  }
  fuzz::require(!(mode == 0 && refused), "no reply after ERR_CHUNK");
  detail::compound_reply reply;
  const std::error_code ec = call.finish(std::move(*h->record), reply);
  fuzz::check_reply(call, ec, reply, meant, fuzz::require);
  fuzz::require(call.untouched_beyond(anything), "nothing outside the targets written");
  return 0;
}
