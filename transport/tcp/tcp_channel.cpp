// vnfs transport: the RPC-client channel over TCP (record marking: vnfs/rpc/record_marking.hpp,
// as the server's connections), and the zero-copy receive of payloads straight into the
// caller's targets (any number per reply), where the reply's guide (reply_guide.hpp) says
// they are.
#include <algorithm>
#include <array>
#include <deque>
#include <unordered_map>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "transport/rpc_channel.hpp"
#include "vnfs/rpc/record_marking.hpp"
#include "vnfs/xdr/decoder.hpp"

namespace vnfs::transport {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

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
    sock_ = std::make_shared<tcp::socket>(io_);
    asio::async_connect(*sock_, eps, [self = shared_from_this(), s = sock_, g = gen_, done](boost::system::error_code ec, const tcp::endpoint&) {
      if (g != self->gen_) return done(make_error_code(std::errc::operation_canceled));
      if (ec) return done(ec);
      boost::system::error_code ignore;
      s->set_option(tcp::no_delay(true), ignore);
      self->connected_ = true;
      self->read_head();
      done({});
    });
  }

  // The socket reads into and writes from any memory: registrations need nothing more here.
  void send(std::uint32_t xid, std::shared_ptr<const xdr::encoder> call, std::shared_ptr<reply_guide> guide,
            const std::vector<std::shared_ptr<registered_region>>&, std::size_t) override {
    if (!connected_) return;  // the caller sends again after reconnecting
    if (guide) remember_guide(xid, guide);
    outgoing o;
    o.call = std::move(call);
    std::vector<xdr::bytes_view> pieces = o.call->pieces();
    o.framed = rpc::frame_record(pieces);  // views o.call's bytes, which it keeps alive
    queue_.push_back(std::move(o));
    write_next();
  }

  void close() override {
    connected_ = false;
    ++gen_;
    writing_ = false;
    queue_.clear();
    guides_.clear();  // the caller sends again, guides included, on the next connection
    guide_.reset();
    boost::system::error_code ignore;
    sock_->close(ignore);
  }

 private:
  struct outgoing {
    std::shared_ptr<const xdr::encoder> call;
    rpc::framed_record framed;  // record marks and call's pieces, for one gather write
  };

  /// Keeps `guide` (weakly) for the reply to `xid`. Guides of xids whose replies never come
  /// on this connection expire with their calls and are swept as the table grows.
  void remember_guide(std::uint32_t xid, const std::shared_ptr<reply_guide>& guide) {
    if (guides_.size() >= sweep_at_) {
      std::erase_if(guides_, [](const auto& e) { return e.second.expired(); });
      sweep_at_ = std::max<std::size_t>(64, 2 * guides_.size());
    }
    guides_[xid] = guide;
  }

  /// The guide sent with `xid`, if its caller still holds it; forgotten by the channel.
  std::shared_ptr<reply_guide> take_guide(std::uint32_t xid) {
    auto it = guides_.find(xid);
    if (it == guides_.end()) return nullptr;
    auto guide = it->second.lock();
    guides_.erase(it);
    return guide;
  }

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
    for (auto b : o.framed.buffers) bufs.emplace_back(b.data(), b.size());
    asio::async_write(*sock_, bufs, [self = shared_from_this(), s = sock_, g = gen_](boost::system::error_code ec, std::size_t n) {
      if (g != self->gen_) return;  // of a connection already lost: `writing_` is the new one's
      self->writing_ = false;
      self->wc_.sent += n;
      self->queue_.pop_front();
      if (ec) return self->lost(ec);
      self->write_next();
    });
  }

  void read_head() {
    asio::async_read(*sock_, asio::buffer(head_), [self = shared_from_this(), s = sock_, g = gen_](boost::system::error_code ec, std::size_t) {
      if (g != self->gen_) return;  // of a connection already lost
      if (ec) return self->lost(ec);
      self->on_head();
    });
  }

  void on_head() {
    const rpc::fragment_header mark = rpc::read_fragment_header(std::span<const std::byte, 4>(head_.data(), 4));
    const std::uint32_t xid = xdr::decoder(std::span<const std::byte>(head_).subspan(4)).get_u32();
    const std::size_t len = mark.length;
    if (len < 4 || len > max_reply) return lost(std::make_error_code(std::errc::protocol_error));
    wc_.received += 8;
    body_.assign(head_.begin() + 4, head_.end());
    if (!mark.last) {  // a reply in several fragments (NFS-Ganesha sends them)
      take_guide(xid);  // never placed
      guide_.reset();
      return read_fragment(xid, len - 4, false);
    }
    // What the guide has seen views body_ as it grows: it must never reallocate.
    body_.reserve(len);
    record_left_ = len - 4;
    guide_ = take_guide(xid);
    advance(xid);
  }

  /// Appends `n` bytes of a fragment to `body_`; after the last fragment, the whole record is
  /// handed over (never placed directly: fragments are rare and may split a result).
  void read_fragment(std::uint32_t xid, std::size_t n, bool last) {
    const std::size_t at = body_.size();
    if (at + n > max_reply) return lost(std::make_error_code(std::errc::protocol_error));
    body_.resize(at + n);
    asio::async_read(*sock_, asio::buffer(body_.data() + at, n),
                     [self = shared_from_this(), s = sock_, g = gen_, xid, last](boost::system::error_code ec, std::size_t got) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += got;
                       if (!last) return self->read_fragment_mark(xid);
                       self->deliver(xid);
                     });
  }

  void read_fragment_mark(std::uint32_t xid) {
    asio::async_read(*sock_, asio::buffer(next_mark_),
                     [self = shared_from_this(), s = sock_, g = gen_, xid](boost::system::error_code ec, std::size_t got) {
                       if (g != self->gen_) return;
                       if (ec) return self->lost(ec);
                       self->wc_.received += got;
                       const rpc::fragment_header mark = rpc::read_fragment_header(self->next_mark_);
                       self->read_fragment(xid, mark.length, mark.last);
                     });
  }

  /// Receives what is left of the record into `body_`, then hands it over.
  void read_rest(std::uint32_t xid) {
    if (record_left_ == 0) return deliver(xid);
    receive(record_left_, [xid](tcp_channel& self) { self.deliver(xid); });
  }

  /// Appends the next `n` bytes of the record to `body_`, then runs `then`.
  template <class Then>
  void receive(std::size_t n, Then then) {
    const std::size_t at = body_.size();
    body_.resize(at + n);
    record_left_ -= n;
    asio::async_read(*sock_, asio::buffer(body_.data() + at, n),
                     [self = shared_from_this(), s = sock_, g = gen_, then](boost::system::error_code ec, std::size_t got) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += got;
                       then(*self);
                     });
  }

  /// Receives what the guide asks for next, placing payloads where it says (without a
  /// guide: the rest of the record).
  void advance(std::uint32_t xid) {
    const reply_guide::step next = guide_ ? guide_->advance(body_, record_left_) : reply_guide::step{};
    switch (next.what) {
      case reply_guide::step::kind::receive:
        if (next.until > body_.size() && record_left_ > 0)
          return receive(std::min(next.until - body_.size(), record_left_), [xid](tcp_channel& self) { self.advance(xid); });
        break;  // (never: the guide asks only for bytes the record has and body_ lacks)
      case reply_guide::step::kind::place:
        return place(xid, next);
      case reply_guide::step::kind::rest:
        break;
    }
    read_rest(xid);
  }

  /// The guide found a payload at `p.at` in the record that goes to `p.target`: what of it
  /// is already in body_ is copied there and cut out, the rest is received straight into
  /// the target, the padding dropped.
  void place(std::uint32_t xid, const reply_guide::step& p) {
    const std::size_t cut = p.at;
    const std::size_t buffered = body_.size() - cut;
    const std::size_t have = std::min<std::size_t>(buffered, p.len);
    const std::size_t pad_have = std::min<std::size_t>(buffered - have, p.pad);
    std::copy_n(body_.begin() + static_cast<std::ptrdiff_t>(cut), have, p.target.begin());
    wc_.copied += have;
    body_.erase(body_.begin() + static_cast<std::ptrdiff_t>(cut),
                body_.begin() + static_cast<std::ptrdiff_t>(cut + have + pad_have));
    const std::size_t direct = p.len - have;
    const std::size_t pad_left = p.pad - pad_have;
    if (direct + pad_left == 0) return advance(xid);
    record_left_ -= direct + pad_left;
    std::array<asio::mutable_buffer, 2> bufs{asio::buffer(p.target.data() + have, direct),
                                             asio::buffer(scratch_.data(), pad_left)};
    asio::async_read(*sock_, bufs, [self = shared_from_this(), s = sock_, g = gen_, xid, direct](boost::system::error_code ec, std::size_t got) {
      if (g != self->gen_) return;  // of a connection already lost
      if (ec) return self->lost(ec);
      self->wc_.received += got;
      self->wc_.direct += direct;
      self->advance(xid);
    });
  }

  void deliver(std::uint32_t xid) {
    std::vector<std::byte> record = std::move(body_);
    guide_.reset();  // the caller has it, and finishes decoding the reply with it
    std::uint64_t g = gen_;
    ev_.on_reply(xid, std::move(record));
    if (g == gen_) read_head();
  }

  asio::io_context& io_;
  std::string host_;
  std::uint16_t port_;
  channel_events ev_;
  wire_counters wc_;
  // One socket object per connection: a composed read or write of a connection already lost
  // goes on with its own (closed) socket, which its handler keeps alive, never with the
  // next connection's.
  std::shared_ptr<tcp::socket> sock_ = std::make_shared<tcp::socket>(io_);
  bool connected_ = false;
  std::uint64_t gen_ = 0;  // counts connections; socket handlers carry the one they began on
  std::deque<outgoing> queue_;
  bool writing_ = false;
  std::unordered_map<std::uint32_t, std::weak_ptr<reply_guide>> guides_;  // by xid, of calls sent
  std::size_t sweep_at_ = 64;

  // Receive state.
  std::array<std::byte, 8> head_{};  // record mark + xid
  rpc::fragment_header_bytes next_mark_{};  // record mark of a reply's later fragment
  std::vector<std::byte> body_;   // the record so far (less payloads placed directly)
  std::size_t record_left_ = 0;  // bytes of the current record not yet received
  std::shared_ptr<reply_guide> guide_;  // of the reply being received (null: places nothing)
  std::array<std::byte, 4> scratch_{};  // a placed payload's padding
};

}  // namespace

std::shared_ptr<rpc_channel> make_tcp_channel(boost::asio::io_context& io, std::string host, std::uint16_t port,
                                              channel_events events, wire_counters counters) {
  return std::make_shared<tcp_channel>(io, std::move(host), port, std::move(events), counters);
}

}  // namespace vnfs::transport
