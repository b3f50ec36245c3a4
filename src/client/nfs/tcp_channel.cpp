// vnfs client, nfs backend: RPC over TCP with record marking, and the zero-copy receive of
// READ payload straight into the caller's target.
#include <array>
#include <deque>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "client/nfs/rpc_channel.hpp"
#include "vnfs/error.hpp"
#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/message.hpp"
#include "vnfs/rpc/record_marking.hpp"

namespace vnfs::detail {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

/// Bytes of a successful reply to SEQUENCE, PUTFH, READ up to and including READ's data
/// length, after the xid: RPC reply header with an empty AUTH_NONE verifier (20), COMPOUND
/// status, empty tag and count (12), SEQUENCE4res (44), PUTFH4res (8), READ's opnum, status,
/// eof and length (16).
constexpr std::size_t direct_read_prefix = 20 + 12 + 44 + 8 + 16;

/// The longest reply accepted (all fragments together): a READ of 4 MiB and its COMPOUND.
constexpr std::size_t max_reply = 64u << 20;

class tcp_channel final : public rpc_channel, public std::enable_shared_from_this<tcp_channel> {
 public:
  tcp_channel(asio::io_context& io, std::string host, std::uint16_t port, channel_events ev, wire_counters wc)
      : io_(io), host_(std::move(host)), port_(port), ev_(std::move(ev)), wc_(wc) {}

  void connect(std::function<void(std::error_code)> done) override {
    close();
    tcp::resolver resolver(io_);
    boost::system::error_code ec;
    auto eps = resolver.resolve(host_, std::to_string(port_), ec);
    if (ec) return asio::post(io_, [done, ec] { done(ec); });
    sock_ = tcp::socket(io_);
    asio::async_connect(sock_, eps, [self = shared_from_this(), g = gen_, done](boost::system::error_code ec, const tcp::endpoint&) {
      if (g != self->gen_) return done(make_error_code(std::errc::operation_canceled));
      if (ec) return done(ec);
      boost::system::error_code ignore;
      self->sock_.set_option(tcp::no_delay(true), ignore);
      self->connected_ = true;
      self->read_head();
      done({});
    });
  }

  void send(std::uint32_t, std::shared_ptr<const xdr::encoder> call, std::span<std::byte>, std::size_t) override {
    if (!connected_) return;  // the engine sends again after reconnecting
    outgoing o;
    auto len = static_cast<std::uint32_t>(call->size()) | rpc::last_fragment_bit;
    o.mark = {std::byte(len >> 24), std::byte(len >> 16), std::byte(len >> 8), std::byte(len)};
    o.call = std::move(call);
    queue_.push_back(std::move(o));
    write_next();
  }

  void close() override {
    connected_ = false;
    ++gen_;
    writing_ = false;
    queue_.clear();
    boost::system::error_code ignore;
    sock_.close(ignore);
  }

 private:
  struct outgoing {
    std::array<std::byte, 4> mark;
    std::shared_ptr<const xdr::encoder> call;
  };

  void lost(std::error_code ec) {
    if (!connected_) return;
    close();  // handlers of this socket still to run must not touch the next connection
    ev_.on_lost(ec);
  }

  void write_next() {
    if (writing_ || !connected_ || queue_.empty()) return;
    writing_ = true;
    const outgoing& o = queue_.front();
    std::vector<asio::const_buffer> bufs;
    bufs.emplace_back(o.mark.data(), o.mark.size());
    for (auto p : o.call->pieces()) bufs.emplace_back(p.data(), p.size());
    asio::async_write(sock_, bufs, [self = shared_from_this(), g = gen_](boost::system::error_code ec, std::size_t n) {
      if (g != self->gen_) return;  // of a connection already lost: `writing_` is the new one's
      self->writing_ = false;
      self->wc_.sent += n;
      self->queue_.pop_front();
      if (ec) return self->lost(ec);
      self->write_next();
    });
  }

  void read_head() {
    asio::async_read(sock_, asio::buffer(head_), [self = shared_from_this(), g = gen_](boost::system::error_code ec, std::size_t) {
      if (g != self->gen_) return;  // of a connection already lost
      if (ec) return self->lost(ec);
      self->on_head();
    });
  }

  void on_head() {
    xdr::decoder d(head_);
    std::uint32_t mark = d.get_u32();
    std::uint32_t xid = d.get_u32();
    std::size_t len = mark & ~rpc::last_fragment_bit;
    if (len < 4 || len > max_reply) return lost(make_error_code(errc::protocol_error));
    wc_.received += 8;
    if (!(mark & rpc::last_fragment_bit)) {  // a reply in several fragments (NFS-Ganesha sends them)
      body_.assign(head_.begin() + 4, head_.end());
      return read_fragment(xid, len - 4, false);
    }
    record_left_ = len - 4;
    if (!ev_.read_target(xid).empty() && record_left_ >= direct_read_prefix) return read_direct_prefix(xid);
    read_body(xid, 0);
  }

  /// Appends `n` bytes of a fragment to `body_`; after the last fragment, the whole record is
  /// handed over (never received directly: fragments are rare and the prefix may be split).
  void read_fragment(std::uint32_t xid, std::size_t n, bool last) {
    const std::size_t at = body_.size();
    if (at + n > max_reply) return lost(make_error_code(errc::protocol_error));
    body_.resize(at + n);
    asio::async_read(sock_, asio::buffer(body_.data() + at, n),
                     [self = shared_from_this(), g = gen_, xid, last](boost::system::error_code ec, std::size_t got) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += got;
                       if (!last) return self->read_fragment_mark(xid);
                       std::vector<std::byte> record = std::move(self->body_);
                       self->ev_.on_reply(xid, std::move(record), std::nullopt);
                       if (g == self->gen_) self->read_head();
                     });
  }

  void read_fragment_mark(std::uint32_t xid) {
    asio::async_read(sock_, asio::buffer(next_mark_),
                     [self = shared_from_this(), g = gen_, xid](boost::system::error_code ec, std::size_t got) {
                       if (g != self->gen_) return;
                       if (ec) return self->lost(ec);
                       self->wc_.received += got;
                       xdr::decoder d(self->next_mark_);
                       std::uint32_t mark = d.get_u32();
                       self->read_fragment(xid, mark & ~rpc::last_fragment_bit, (mark & rpc::last_fragment_bit) != 0);
                     });
  }

  /// Reads the rest of the record into `body_` after the first `have` bytes already there.
  void read_body(std::uint32_t xid, std::size_t have) {
    body_.resize(4 + have + record_left_);
    std::copy(head_.begin() + 4, head_.end(), body_.begin());
    asio::async_read(sock_, asio::buffer(body_.data() + 4 + have, record_left_),
                     [self = shared_from_this(), g = gen_, xid](boost::system::error_code ec, std::size_t n) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += n;
                       self->record_left_ = 0;
                       std::vector<std::byte> record = std::move(self->body_);
                       self->ev_.on_reply(xid, std::move(record), std::nullopt);
                       if (g == self->gen_) self->read_head();
                     });
  }

  void read_direct_prefix(std::uint32_t xid) {
    body_.resize(4 + direct_read_prefix);
    std::copy(head_.begin() + 4, head_.end(), body_.begin());
    asio::async_read(sock_, asio::buffer(body_.data() + 4, direct_read_prefix),
                     [self = shared_from_this(), g = gen_, xid](boost::system::error_code ec, std::size_t n) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += n;
                       self->record_left_ -= n;
                       self->on_direct_prefix(xid);
                     });
  }

  /// The prefix of a reply to SEQUENCE, PUTFH, READ is in `body_`. If it has the expected
  /// successful shape, the payload goes straight into the caller's target.
  void on_direct_prefix(std::uint32_t xid) {
    std::span<std::byte> target = ev_.read_target(xid);
    std::uint32_t len = 0;
    bool ok = false;
    try {
      xdr::decoder d(body_);
      auto h = rpc::decode_reply(d);
      ok = h.is_success() && h.verf.body.empty() && d.get_u32() == 0 /* NFS4_OK */ &&
           d.get_u32() == 0 /* empty tag */ && d.get_u32() == 3;
      if (ok) {
        (void)nfs4::decode_resop(d);  // SEQUENCE (statuses OK: the COMPOUND status was OK)
        (void)nfs4::decode_resop(d);  // PUTFH
        ok = d.get_u32() == static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_READ) && d.get_u32() == 0;
        d.get_u32();  // eof
        len = d.get_u32();
        ok = ok && len <= target.size() && std::size_t(len) + ((4 - (len & 3)) & 3) <= record_left_;
      }
    } catch (const xdr::decode_error&) {
      ok = false;
    }
    if (!ok) return read_body(xid, direct_read_prefix);  // the general path decodes it
    asio::async_read(sock_, asio::buffer(target.data(), len),
                     [self = shared_from_this(), g = gen_, xid, len](boost::system::error_code ec, std::size_t n) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += n;
                       self->wc_.direct += n;
                       self->record_left_ -= n;
                       self->read_direct_trailer(xid, len);
                     });
  }

  void read_direct_trailer(std::uint32_t xid, std::uint32_t len) {
    std::size_t prefix_end = body_.size();
    if (record_left_ == 0) {  // payload a multiple of 4 bytes: no padding to read
      std::vector<std::byte> record = std::move(body_);
      std::uint64_t g = gen_;
      ev_.on_reply(xid, std::move(record), std::make_pair(prefix_end, len));
      if (g == gen_) read_head();
      return;
    }
    body_.resize(prefix_end + record_left_);
    asio::async_read(sock_, asio::buffer(body_.data() + prefix_end, record_left_),
                     [self = shared_from_this(), g = gen_, xid, len, prefix_end](boost::system::error_code ec, std::size_t n) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += n;
                       self->record_left_ = 0;
                       std::vector<std::byte> record = std::move(self->body_);
                       self->ev_.on_reply(xid, std::move(record), std::make_pair(prefix_end, len));
                       if (g == self->gen_) self->read_head();
                     });
  }

  asio::io_context& io_;
  std::string host_;
  std::uint16_t port_;
  channel_events ev_;
  wire_counters wc_;
  tcp::socket sock_{io_};
  bool connected_ = false;
  std::uint64_t gen_ = 0;  // counts connections; socket handlers carry the one they began on
  std::deque<outgoing> queue_;
  bool writing_ = false;

  // Receive state.
  std::array<std::byte, 8> head_{};  // record mark + xid
  std::array<std::byte, 4> next_mark_{};  // record mark of a reply's later fragment
  std::vector<std::byte> body_;
  std::size_t record_left_ = 0;  // bytes of the current record after the xid
};

}  // namespace

std::shared_ptr<rpc_channel> make_tcp_channel(boost::asio::io_context& io, std::string host, std::uint16_t port,
                                              channel_events events, wire_counters counters) {
  return std::make_shared<tcp_channel>(io, std::move(host), port, std::move(events), counters);
}

}  // namespace vnfs::detail
