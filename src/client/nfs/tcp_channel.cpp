// vnfs client, nfs backend: RPC over TCP (record marking: vnfs/rpc/record_marking.hpp, as
// the server's connections), and the zero-copy receive of READ payloads straight into the
// caller's targets (any number per COMPOUND).
#include <algorithm>
#include <array>
#include <deque>
#include <unordered_map>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "client/nfs/result_size.hpp"
#include "client/nfs/rpc_channel.hpp"
#include "vnfs/error.hpp"
#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/message.hpp"
#include "vnfs/rpc/record_marking.hpp"

namespace vnfs::detail {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

/// The longest reply accepted (all fragments together): a READ of 4 MiB and its COMPOUND.
constexpr std::size_t max_reply = 64u << 20;

/// While looking for READ results to place, a result of variable size (GETATTR, GETFH, OPEN
/// with a delegation, ...) is received in steps of this many bytes; what of a following payload arrives with the
/// last step is copied into its target.
constexpr std::size_t parse_step = 256;

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

  // The socket reads into and writes from any memory: registrations need nothing more here.
  void send(std::uint32_t xid, std::shared_ptr<const xdr::encoder> call, std::shared_ptr<const read_plan> plan,
            const std::vector<std::shared_ptr<registration>>&, std::size_t) override {
    if (!connected_) return;  // the engine sends again after reconnecting
    if (plan) remember_plan(xid, plan);
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
    plans_.clear();  // the engine sends again, plans included, on the next connection
    boost::system::error_code ignore;
    sock_.close(ignore);
  }

 private:
  struct outgoing {
    std::shared_ptr<const xdr::encoder> call;
    rpc::framed_record framed;  // record marks and call's pieces, for one gather write
  };

  /// Keeps `plan` (weakly) for the reply to `xid`. Plans of xids whose replies never come
  /// on this connection expire with their calls and are swept as the table grows.
  void remember_plan(std::uint32_t xid, const std::shared_ptr<const read_plan>& plan) {
    if (plans_.size() >= sweep_at_) {
      std::erase_if(plans_, [](const auto& e) { return e.second.expired(); });
      sweep_at_ = std::max<std::size_t>(64, 2 * plans_.size());
    }
    plans_[xid] = plan;
  }

  /// The plan sent with `xid`, if its caller still holds it; forgotten by the channel.
  std::shared_ptr<const read_plan> take_plan(std::uint32_t xid) {
    auto it = plans_.find(xid);
    if (it == plans_.end()) return nullptr;
    auto plan = it->second.lock();
    plans_.erase(it);
    return plan;
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
    const rpc::fragment_header mark = rpc::read_fragment_header(std::span<const std::byte, 4>(head_.data(), 4));
    const std::uint32_t xid = xdr::decoder(std::span<const std::byte>(head_).subspan(4)).get_u32();
    const std::size_t len = mark.length;
    if (len < 4 || len > max_reply) return lost(make_error_code(errc::protocol_error));
    wc_.received += 8;
    body_.assign(head_.begin() + 4, head_.end());
    parse_ = parse_state{};  // (a connection lost in the middle of a reply left its state)
    plan_ = nullptr;
    if (!mark.last) {  // a reply in several fragments (NFS-Ganesha sends them)
      take_plan(xid);  // never placed
      return read_fragment(xid, len - 4, false);
    }
    record_left_ = len - 4;
    plan_ = take_plan(xid);
    if (next_target(0) != no_target) return parse(xid);
    read_rest(xid);
  }

  /// Appends `n` bytes of a fragment to `body_`; after the last fragment, the whole record is
  /// handed over (never placed directly: fragments are rare and may split a result).
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
                       self->deliver(xid);
                     });
  }

  void read_fragment_mark(std::uint32_t xid) {
    asio::async_read(sock_, asio::buffer(next_mark_),
                     [self = shared_from_this(), g = gen_, xid](boost::system::error_code ec, std::size_t got) {
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
    asio::async_read(sock_, asio::buffer(body_.data() + at, n),
                     [self = shared_from_this(), g = gen_, then](boost::system::error_code ec, std::size_t got) {
                       if (g != self->gen_) return;  // of a connection already lost
                       if (ec) return self->lost(ec);
                       self->wc_.received += got;
                       then(*self);
                     });
  }

  // ---- Placing READ payloads: the reply is decoded as it arrives, result by result; the
  // payload of the k-th READ result goes straight into plan_->targets[k] when it fits there,
  // and is cut out of `body_` (see direct_piece). Each receive takes what surely precedes
  // the next payload (read_plan::earliest), so a successful reply of fixed-size results
  // costs one receive before each payload. Anything unexpected (an RPC error, a result that
  // does not decode) just ends the placing: the rest is received into `body_` and the
  // engine's decoding of the whole record has the last word.

  struct parse_state {
    bool header_done = false;
    std::size_t at = 0;            // in body_: the start of the next result
    std::uint32_t results_left = 0;
    std::size_t reads = 0;         // READ results seen
    std::vector<direct_piece> pieces;
  };

  static constexpr std::size_t no_target = SIZE_MAX;

  /// The first READ from the k-th on that has a target, or no_target.
  std::size_t next_target(std::size_t k) const {
    for (; plan_ && k < plan_->targets.size(); ++k)
      if (!plan_->targets[k].empty()) return k;
    return no_target;
  }

  /// Makes body_ hold at least `n` bytes (as many as the record has) by receiving exactly
  /// what is missing, then parses on. False if body_ already has them.
  bool ensure(std::uint32_t xid, std::size_t n) {
    if (body_.size() >= n || record_left_ == 0) return false;
    receive(std::min(n - body_.size(), record_left_), [xid](tcp_channel& self) { self.parse(xid); });
    return true;
  }

  void parse(std::uint32_t xid) {
    for (;;) {
      const std::size_t next = next_target(parse_.reads);
      if (parse_.header_done && (parse_.results_left == 0 || next == no_target)) return read_rest(xid);
      const std::size_t at = parse_.at;
      // Bytes to have before trying to decode: the header with an empty verifier and tag
      // (xid 4, reply header 20, COMPOUND status, tag and count 12), or a result's opnum and
      // status; and in the same receive, all that surely comes before the next payload.
      std::size_t want = parse_.header_done ? at + 8 : at + 36;
      if (next != no_target && next < plan_->earliest.size()) want = std::max(want, plan_->earliest[next]);
      if (ensure(xid, want)) return;
      try {
        xdr::decoder d(std::span<const std::byte>(body_).subspan(at));
        if (!parse_.header_done) {
          auto h = rpc::decode_reply(d);
          if (!h.is_success()) return read_rest(xid);
          d.get_u32();  // COMPOUND status
          d.get_string(nfs4::NFS4_OPAQUE_LIMIT);
          parse_.results_left = d.get_u32();
          parse_.header_done = true;
          parse_.at += d.position();
          continue;
        }
        xdr::decoder peek = d;
        const std::uint32_t opnum = peek.get_u32();
        const bool ok = peek.get_u32() == 0;  // NFS4_OK
        const bool is_read = opnum == static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_READ);
        if (is_read && ok) {
          if (ensure(xid, at + 16)) return;
          peek.get_u32();  // eof
          const std::uint32_t len = peek.get_u32();
          const std::size_t k = parse_.reads;
          if (plan_ && k < plan_->targets.size() && len > 0 && len <= plan_->targets[k].size() &&
              len + pad(len) <= body_.size() - (at + 16) + record_left_)
            return place(xid, k, len);
          if (ensure(xid, at + 16 + len + pad(len))) return;
        } else if (ok) {
          const std::size_t fixed = fixed_ok_result_size(static_cast<nfs4::nfs_opnum4>(opnum));
          std::size_t end = fixed != 0 ? at + fixed : 0;
          if (opnum == static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_OPEN)) {
            // stateid, change_info, rflags (40 bytes), the attrset bitmap, the delegation
            // type: without a delegation, that is all.
            if (ensure(xid, at + 52)) return;
            const std::uint32_t words = u32_at(at + 48);
            if (words <= 8) {
              if (ensure(xid, at + 56 + 4 * words)) return;
              if (u32_at(at + 52 + 4 * words) == 0 /* OPEN_DELEGATE_NONE */) end = at + 56 + 4 * words;
            }
          }
          if (end != 0 && ensure(xid, end)) return;
        }
        (void)nfs4::decode_resop(d);  // throws decode_error while the result is incomplete
        if (is_read) ++parse_.reads;
        parse_.at += d.position();
        --parse_.results_left;
      } catch (const xdr::decode_error&) {
        // Incomplete (a result of variable size, or a header with a verifier or tag): a
        // little more. What arrives past this result and belongs to a payload is copied.
        if (record_left_ == 0) return deliver(xid);  // malformed: the engine will say so
        return receive(std::min(record_left_, parse_step), [xid](tcp_channel& self) { self.parse(xid); });
      }
    }
  }

  /// The XDR unsigned int at `off` in body_.
  std::uint32_t u32_at(std::size_t off) const {
    if (off + 4 > body_.size()) throw xdr::decode_error("reply truncated");
    return xdr::decoder(std::span<const std::byte>(body_).subspan(off, 4)).get_u32();
  }

  static std::size_t pad(std::size_t n) { return (4 - (n & 3)) & 3; }

  /// The result at parse_.at is the k-th READ, successful, with a payload of `len` bytes
  /// that fits plan_->targets[k]: what of it is already in body_ is copied there and cut out,
  /// the rest is received straight into the target, the padding dropped.
  void place(std::uint32_t xid, std::size_t k, std::uint32_t len) {
    std::span<std::byte> target = plan_->targets[k];
    const std::size_t cut = parse_.at + 16;
    const std::size_t buffered = body_.size() - cut;
    const std::size_t have = std::min<std::size_t>(buffered, len);
    const std::size_t pad_have = std::min(buffered - have, pad(len));
    std::copy_n(body_.begin() + static_cast<std::ptrdiff_t>(cut), have, target.begin());
    wc_.copied += have;
    body_.erase(body_.begin() + static_cast<std::ptrdiff_t>(cut),
                body_.begin() + static_cast<std::ptrdiff_t>(cut + have + pad_have));
    parse_.pieces.push_back(direct_piece{k, cut, len, 0});
    parse_.at = cut;
    ++parse_.reads;
    --parse_.results_left;
    const std::size_t direct = len - have;
    const std::size_t pad_left = pad(len) - pad_have;
    if (direct == 0) return parse(xid);
    record_left_ -= direct + pad_left;
    std::array<asio::mutable_buffer, 2> bufs{asio::buffer(target.data() + have, direct),
                                             asio::buffer(scratch_.data(), pad_left)};
    asio::async_read(sock_, bufs, [self = shared_from_this(), g = gen_, xid, direct](boost::system::error_code ec, std::size_t got) {
      if (g != self->gen_) return;  // of a connection already lost
      if (ec) return self->lost(ec);
      self->wc_.received += got;
      self->wc_.direct += direct;
      self->parse(xid);
    });
  }

  void deliver(std::uint32_t xid) {
    plan_.reset();
    std::vector<std::byte> record = std::move(body_);
    std::vector<direct_piece> pieces = std::move(parse_.pieces);
    std::uint64_t g = gen_;
    ev_.on_reply(xid, std::move(record), std::move(pieces));
    if (g == gen_) read_head();
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
  std::unordered_map<std::uint32_t, std::weak_ptr<const read_plan>> plans_;  // by xid, of calls sent
  std::size_t sweep_at_ = 64;

  // Receive state.
  std::array<std::byte, 8> head_{};  // record mark + xid
  rpc::fragment_header_bytes next_mark_{};  // record mark of a reply's later fragment
  std::vector<std::byte> body_;   // the record so far (less payloads placed directly)
  std::size_t record_left_ = 0;  // bytes of the current record not yet received
  std::shared_ptr<const read_plan> plan_;  // of the reply being received (null: none)
  parse_state parse_;
  std::array<std::byte, 4> scratch_{};  // a placed payload's padding
};

}  // namespace

std::shared_ptr<rpc_channel> make_tcp_channel(boost::asio::io_context& io, std::string host, std::uint16_t port,
                                              channel_events events, wire_counters counters) {
  return std::make_shared<tcp_channel>(io, std::move(host), port, std::move(events), counters);
}

}  // namespace vnfs::detail
