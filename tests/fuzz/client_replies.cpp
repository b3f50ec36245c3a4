// Fuzzes the client's reply path over TCP: the real TCP channel (transport/tcp) receives
// the fuzzer's reply from a loopback socket and asks the call's reply_decoder, as its guide,
// what to receive next and where READ payloads go; the decoder finishes the record as the
// session engine does.
// Input: a byte that cuts the stream (bits 0-1 == 3: the record in 2-4 record-marking
// fragments; bit 7: the stream ends early, at (bits 2-6)/32 of its length, and the socket
// closes), the call (client_call.hpp), then the reply record from its xid on (the call is
// sent with that xid).
// Properties: the channel ends every reply with exactly one outcome, in bounded time: the
// reply, or a lost connection (only when the stream was cut, a fragment was too short for
// an xid, or the record was malformed: then protocol_error); check_reply() on the reply;
// nothing in the arena changes but the bytes of placed payloads.
#include <chrono>
#include <memory>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "client_call.hpp"
#include "fuzz_input.hpp"
#include "io_loop.hpp"
#include "transport/rpc_channel.hpp"
#include "vnfs/rpc/record_marking.hpp"

using namespace vnfs;
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

/// A loopback listener that plays the server, and the channel connected to it.
struct harness {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};  // never "out of work"
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  tcp::socket server{io};
  std::atomic<std::uint64_t> sent{0}, received{0}, direct{0}, copied{0};
  bool connected = false;
  // The outcome of the current call.
  int outcomes = 0;
  std::optional<std::vector<std::byte>> record;
  std::error_code lost_with;
  std::shared_ptr<transport::rpc_channel> channel;

  harness() {
    transport::channel_events ev;
    ev.on_reply = [this](std::uint32_t, std::vector<std::byte> r) {
      ++outcomes;
      record = std::move(r);
    };
    ev.on_call_failed = [](std::uint32_t, std::error_code) { fuzz::require(false, "TCP refuses no call"); };
    ev.on_lost = [this](std::error_code ec) {
      ++outcomes;
      lost_with = ec;
      connected = false;
    };
    channel = transport::make_tcp_channel(io, "127.0.0.1", acceptor.local_endpoint().port(), std::move(ev),
                                          {sent, received, direct, copied});
  }

  void ensure_connected() {
    if (connected) return;
    boost::system::error_code ignore;
    server.close(ignore);
    bool accepted = false, done = false;
    acceptor.async_accept(server, [&](boost::system::error_code ec) {
      fuzz::require(!ec, "accept");
      accepted = true;
    });
    channel->connect([&](std::error_code ec) {
      fuzz::require(!ec, "connect");
      done = true;
    });
    fuzz::run_until(io, [&] { return accepted && done; });
    connected = true;
  }

  /// Reads and drops what the channel sent (the calls).
  void drain() {
    boost::system::error_code ec;
    std::array<char, 4096> buf;
    while (server.is_open() && server.available(ec) > 0 && !ec) server.read_some(asio::buffer(buf), ec);
  }
};

/// The reply record as the server sends it: record marks and fragments.
std::vector<std::byte> frame(std::span<const std::byte> record, std::uint8_t cut, std::size_t& first_fragment) {
  std::vector<std::size_t> pieces;
  if ((cut & 3) == 3 && record.size() >= 2) {
    const std::size_t n = 2 + (cut >> 2) % 3;
    for (std::size_t i = 0, at = 0; i < n; ++i) {
      const std::size_t len = i + 1 == n ? record.size() - at : std::min(record.size() - at, (record.size() * (i + 1)) / n - at);
      pieces.push_back(len);
      at += len;
    }
  } else {
    pieces.push_back(record.size());
  }
  first_fragment = pieces[0];
  std::vector<std::byte> out;
  std::size_t at = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto mark = rpc::make_fragment_header(pieces[i], i + 1 == pieces.size());
    out.insert(out.end(), mark.begin(), mark.end());
    out.insert(out.end(), record.begin() + static_cast<std::ptrdiff_t>(at),
               record.begin() + static_cast<std::ptrdiff_t>(at + pieces[i]));
    at += pieces[i];
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static harness* h = new harness;  // lives for the process, as the fuzzer does
  fuzz::input_reader in(fuzz::bytes_of(data, size));
  const std::uint8_t cut = in.u8();
  fuzz::client_call call(in);
  const std::span<const std::byte> record = in.rest();
  if (record.size() > (1u << 20)) return 0;
  const std::uint32_t xid = record.size() >= 4 ? xdr::decoder(record.first(4)).get_u32() : 0;

  h->ensure_connected();
  h->outcomes = 0;
  h->record.reset();
  call.encode(xid);
  h->channel->send(xid, call.call().request, call.call().decoder, {}, detail::reply_size_bound(call.call().ops));

  std::size_t first_fragment = 0;
  std::vector<std::byte> stream = frame(record, cut, first_fragment);
  const bool cut_short = (cut & 0x80) != 0;
  if (cut_short) stream.resize(stream.size() * ((cut >> 2) & 31) / 32);
  // A stream too short for a record mark and an xid would leave the channel waiting for
  // more, as for a server that stalls: the socket closes after it.
  const bool closes = cut_short || stream.size() < 8;
  bool written = false;
  asio::async_write(h->server, asio::buffer(stream), [&](boost::system::error_code, std::size_t) {
    written = true;
    if (closes) {
      boost::system::error_code ignore;
      h->server.shutdown(tcp::socket::shutdown_send, ignore);
    }
  });
  fuzz::run_until(h->io, [&] { return written && h->outcomes > 0; });
  fuzz::require(h->outcomes == 1, "one outcome per reply");
  h->drain();

  if (!h->record) {
    fuzz::require(closes || first_fragment < 4 || h->lost_with == std::errc::protocol_error,
                  "the connection is lost only for a cut or malformed stream");
    call.call().decoder.reset();  // as the engine gives up on the call
    fuzz::require(call.untouched_beyond(std::vector<std::size_t>(call.targets().size(), SIZE_MAX)),
                  "nothing outside the targets written");
    return 0;
  }
  detail::compound_reply reply;
  const std::error_code ec = call.finish(std::move(*h->record), reply);
  fuzz::check_reply(call, ec, reply, record, fuzz::require);
  // What the decoder placed is all that was written: payload bytes, each in its target.
  std::vector<std::size_t> written_to(call.targets().size(), 0);
  for (std::size_t i = 0; !ec && i < reply.res.resarray.size(); ++i) {
    if (!reply.placed_at(i)) continue;
    const auto& d = std::get<nfs4::READ4res>(reply.res.resarray[i]).resok4.data;
    const std::size_t k = *call.target_of(d.data(), d.size());
    written_to[k] = std::max(written_to[k], d.size());
  }
  if (!ec) fuzz::require(call.untouched_beyond(written_to), "only placed payloads written, in their targets");
  else fuzz::require(call.untouched_beyond(std::vector<std::size_t>(call.targets().size(), SIZE_MAX)), "guards intact");
  return 0;
}
