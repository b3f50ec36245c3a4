#include "transport/rdma/rpc_server.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <set>
#include <stdexcept>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>

#include "transport/rdma/chunks.hpp"

namespace vnfs::transport::rdma {

namespace rr = rpc::rdma;

namespace {

std::vector<std::byte> encode(const rr::header& h) {
  xdr::encoder e;
  rr::encode_header(e, h);
  return e.flatten();
}

/// One connection's state. Touched by the io thread (messages, completions) and by
/// workers (replies): guarded by mu.
struct conn : std::enable_shared_from_this<conn> {
  std::weak_ptr<rpc_server::impl> srv;
  std::shared_ptr<endpoint> ep;
  std::mutex mu;
  std::uint32_t inline_send = rr::default_inline_size;
  std::uint32_t requested = 1;
  std::uint32_t max_grant = 1;   // the largest grant sent (a new client may assume 1)
  std::uint32_t outstanding = 0;  // messages received and not yet answered
  std::size_t pulling = 0;        // bytes being RDMA-Read
  std::deque<std::function<void()>> deferred;  // pulls waiting for pull budget
  // The idle timeout's clock: the last message in or out or RDMA completion, and the calls
  // with the call handler (the server's own time, never idle).
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
  std::uint32_t executing = 0;
  std::optional<rpc_server_limit> closed_by;  // set before the server closes it for a limit

  void progress() {
    std::lock_guard lock(mu);
    last_progress = std::chrono::steady_clock::now();
  }
};

/// The limit an endpoint's own close code stands for (the fabric enforces the receive size
/// and, with cma, refuses a message that finds no receive posted).
std::optional<rpc_server_limit> limit_of(std::error_code why) {
  if (why == std::errc::message_size) return rpc_server_limit::inline_size;
  if (why == std::errc::no_buffer_space) return rpc_server_limit::credits;
  return std::nullopt;
}

}  // namespace

struct rpc_server::impl : std::enable_shared_from_this<impl> {
  impl(fabric& f, rpc_server_options o, call_handler h)
      : fab(f), opts(std::move(o)), on_call(std::move(h)), idle_timer(f.context()) {
    if (opts.inline_size < 1024 || opts.inline_size > 256 * 1024 || opts.inline_size % 1024 != 0)
      throw std::invalid_argument("rpc_server: inline_size must be a multiple of 1024 in 1024..262144, not " +
                                  std::to_string(opts.inline_size));
    if (opts.max_credits < 1 || opts.max_credits > 1024)
      throw std::invalid_argument("rpc_server: max_credits must be 1..1024, not " + std::to_string(opts.max_credits));
    if (!opts.grant_policy) opts.grant_policy = std::make_shared<adaptive_grant_policy>();
  }

  fabric& fab;
  rpc_server_options opts;
  call_handler on_call;
  boost::asio::steady_timer idle_timer;  // io thread only
  std::unique_ptr<listener> lst;
  mutable std::mutex mu;  // conns, stats, stopped
  std::set<std::shared_ptr<conn>> conns;
  rpc_server_stats st;
  bool stopped = false;

  template <class F>
  void count(F f) {
    std::lock_guard lock(mu);
    f(st);
  }

  void accept(std::shared_ptr<endpoint> ep) {
    auto c = std::make_shared<conn>();
    c->srv = weak_from_this();
    c->ep = ep;
    bool full = false, refused = false;
    {
      std::lock_guard lock(mu);
      full = opts.max_connections != 0 && conns.size() >= opts.max_connections;
      refused = stopped || full;
      if (!refused) {
        conns.insert(c);
        st.connections++;
      } else if (full) {
        st.refused_connections++;
      }
    }
    if (refused) {
      ep->close();
      if (full && opts.on_limit) opts.on_limit(ep->peer(), rpc_server_limit::max_connections);
      return;
    }
    auto pd = rr::private_data::decode(ep->peer_private_data());
    std::uint32_t peer_recv = pd ? pd->inline_recv : rr::default_inline_size;
    c->inline_send = static_cast<std::uint32_t>(
        std::min<std::size_t>({peer_recv, ep->peer_recv_size(), opts.inline_size}));
    ep->post_recv(opts.max_credits);
    std::weak_ptr<conn> weak = c;
    auto self = shared_from_this();
    ep->start(
        [self, weak](std::span<const std::byte> m) {
          if (auto c = weak.lock()) self->on_message(c, m);
        },
        [self, weak](std::error_code why) {
          auto c = weak.lock();
          if (!c) return;
          std::optional<rpc_server_limit> limit, by_fabric;  // the server counted its own closes
          {
            std::lock_guard lock(c->mu);
            if (!c->closed_by) by_fabric = limit_of(why);
            limit = c->closed_by ? c->closed_by : by_fabric;
          }
          {
            std::lock_guard lock(self->mu);
            self->conns.erase(c);
            if (by_fabric == rpc_server_limit::inline_size) self->st.oversized_messages++;
            if (by_fabric == rpc_server_limit::credits) self->st.credit_violations++;
          }
          if (limit && self->opts.on_limit) self->opts.on_limit(c->ep->peer(), *limit);
        });
  }

  /// Closes `c` for `why` (counted by the caller); the close handler reports it.
  void close_for(conn& c, rpc_server_limit why) {
    {
      std::lock_guard lock(c.mu);
      if (!c.closed_by) c.closed_by = why;
    }
    c.ep->close();
  }

  /// Every quarter of the idle timeout (at most every second): closes the connections idle
  /// for the whole timeout. On the io thread.
  void schedule_idle_check() {
    using namespace std::chrono;
    const auto period = std::clamp<milliseconds>(opts.idle_timeout / 4, milliseconds(1), seconds(1));
    idle_timer.expires_after(period);
    idle_timer.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      std::vector<std::shared_ptr<conn>> open;
      {
        std::lock_guard lock(self->mu);
        if (self->stopped) return;
        open.assign(self->conns.begin(), self->conns.end());
      }
      const auto now = steady_clock::now();
      for (auto& c : open) {
        bool idle;
        {
          std::lock_guard lock(c->mu);
          if (c->executing > 0) c->last_progress = now;
          idle = !c->closed_by && now - c->last_progress >= self->opts.idle_timeout;
        }
        if (!idle) continue;
        self->count([](rpc_server_stats& s) { s.idle_closed++; });
        self->close_for(*c, rpc_server_limit::idle_timeout);
      }
      self->schedule_idle_check();
    });
  }

  /// The grant for the next message to `c`: the policy's figure, bounded by max_credits
  /// and by the receives posted (posting more first when allowed). Caller holds c.mu.
  std::uint32_t grant(conn& c) {
    std::uint32_t n_conns;
    {
      std::lock_guard lock(mu);
      n_conns = static_cast<std::uint32_t>(std::max<std::size_t>(1, conns.size()));
    }
    std::uint32_t average = std::max<std::uint32_t>(1, opts.total_credits / n_conns);
    std::uint32_t g = opts.grant_policy->grant(c.requested, c.ep->posted_receives(), average);
    g = std::min(g, opts.max_credits);
    std::uint32_t posted = c.ep->posted_receives();
    if (posted < g) c.ep->post_recv(g - posted);
    g = std::min(g, c.ep->posted_receives());
    c.max_grant = std::max(c.max_grant, g);
    count([&](rpc_server_stats& s) { s.last_grant = g; });
    return g;
  }

  /// Sends `h` (its credits filled in here) followed by `body`; the message answers one
  /// received message. `keep` lives until the send completes.
  void send(const std::shared_ptr<conn>& c, rr::header h, gather_list body, std::shared_ptr<const void> keep) {
    auto head = std::make_shared<std::vector<std::byte>>();
    {
      std::lock_guard lock(c->mu);
      h.credits = grant(*c);
      *head = encode(h);
      if (c->outstanding > 0) c->outstanding--;
    }
    gather_list g;
    g.push_back(*head);
    g.insert(g.end(), body.begin(), body.end());
    c->ep->post_send(std::move(g), [head, keep, weak = std::weak_ptr<conn>(c)](std::error_code) {
      if (auto c = weak.lock()) c->progress();
    });
  }

  void send_error(const std::shared_ptr<conn>& c, std::uint32_t xid, rr::error_code code) {
    count([&](rpc_server_stats& s) { (code == rr::error_code::err_vers ? s.err_vers_sent : s.err_chunk_sent)++; });
    send(c, rr::make_error(xid, code, 0), {}, nullptr);
  }

  void on_message(const std::shared_ptr<conn>& c, std::span<const std::byte> m) {
    c->ep->post_recv(1);  // the message is handled from a copy below
    bool over_grant;
    {
      std::lock_guard lock(c->mu);
      c->last_progress = std::chrono::steady_clock::now();
      c->outstanding++;
      over_grant = c->outstanding > std::max<std::uint32_t>(1, c->max_grant);
    }
    if (over_grant) {
      count([](rpc_server_stats& s) { s.credit_violations++; });
      return close_for(*c, rpc_server_limit::credits);
    }
    xdr::decoder d(m);
    rr::header h;
    try {
      h = rr::decode_header(d);
    } catch (const rr::header_error& e) {
      return send_error(c, e.xid, e.code);
    } catch (const xdr::decode_error&) {  // not even an xid
      count([](rpc_server_stats& s) { s.bad_messages++; });
      return close_for(*c, rpc_server_limit::bad_message);
    }
    {
      std::lock_guard lock(c->mu);
      c->requested = h.credits;
    }
    if (h.type == rr::msg_type::rdma_error) {
      // A requester has nothing to report to us; its message needs no answer.
      std::lock_guard lock(c->mu);
      if (c->outstanding > 0) c->outstanding--;
      return;
    }
    // Chunk checks: NOMSG is one position-zero Read chunk and nothing inline; RDMA_MSG has
    // no position-zero chunk.
    auto chunks = group_read_list(h.read_list);
    bool zero = false;
    for (const auto& s : h.read_list) zero = zero || s.position == 0;
    if (h.type == rr::msg_type::rdma_nomsg) {
      if (chunks.size() != 1 || !zero || d.remaining() != 0) return send_error(c, h.xid, rr::error_code::err_chunk);
    } else if (zero) {
      return send_error(c, h.xid, rr::error_code::err_chunk);
    }
    auto inline_part = d.rest();
    auto layout = layout_read_chunks(inline_part.size(), chunks, opts.max_call_size);
    if (!layout) return send_error(c, h.xid, rr::error_code::err_chunk);
    // Sort check: group_read_list keeps order; layout refuses descending positions.
    std::size_t pull = 0;
    for (auto n : layout->lengths) pull += n;
    auto call = std::make_shared<pending_call>();
    call->xid = h.xid;
    call->write_list = std::move(h.write_list);
    call->reply_chunk = std::move(h.reply_chunk);
    call->record.resize(layout->total);
    // Inline bytes around the chunks; chunk data is read into its place below.
    std::size_t ic = 0, fc = 0;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      std::size_t n = layout->offsets[i] - fc;
      std::memcpy(call->record.data() + fc, inline_part.data() + ic, n);
      ic += n;
      fc = layout->offsets[i] + layout->lengths[i] + xdr_pad(layout->lengths[i]);
    }
    if (inline_part.size() > ic) std::memcpy(call->record.data() + fc, inline_part.data() + ic, inline_part.size() - ic);
    if (pull == 0) return dispatch(c, std::move(call));
    count([&](rpc_server_stats& s) { (h.type == rr::msg_type::rdma_nomsg ? s.nomsg_calls : s.read_chunk_calls)++; });
    call->chunks = std::move(chunks);
    call->layout = std::move(*layout);
    call->pull = pull;
    start_pull(c, std::move(call));
  }

  struct pending_call {
    std::uint32_t xid = 0;
    std::vector<rr::write_chunk> write_list;
    std::optional<rr::write_chunk> reply_chunk;
    std::vector<std::byte> record;
    std::vector<std::vector<rr::read_segment>> chunks;
    chunk_layout layout;
    std::size_t pull = 0;
    std::atomic<std::size_t> ops_left{0};  // completions come on the io thread or at once
    std::atomic<bool> failed{false};
  };

  void start_pull(const std::shared_ptr<conn>& c, std::shared_ptr<pending_call> call) {
    {
      std::lock_guard lock(c->mu);
      if (c->pulling > 0 && c->pulling + call->pull > opts.max_pull_in_flight) {
        c->deferred.push_back([this, c, call] { start_pull(c, call); });
        return;
      }
      c->pulling += call->pull;
    }
    std::size_t ops = 0;
    for (const auto& ch : call->chunks) ops += ch.size();
    call->ops_left = ops;
    auto self = shared_from_this();
    for (std::size_t i = 0; i < call->chunks.size(); ++i) {
      std::size_t at = call->layout.offsets[i];
      for (const auto& s : call->chunks[i]) {
        std::span<std::byte> dst(call->record.data() + at, s.target.length);
        at += s.target.length;
        c->ep->rdma_read(s.target, dst, [self, c, call](std::error_code ec) {
          c->progress();
          if (ec) call->failed = true;
          if (--call->ops_left != 0) return;
          self->pull_done(c, call);
        });
      }
    }
  }

  void pull_done(const std::shared_ptr<conn>& c, std::shared_ptr<pending_call> call) {
    std::function<void()> next;
    {
      std::lock_guard lock(c->mu);
      c->pulling -= call->pull;
      if (!c->deferred.empty()) {
        next = std::move(c->deferred.front());
        c->deferred.pop_front();
      }
    }
    if (call->failed) {
      send_error(c, call->xid, rr::error_code::err_chunk);
    } else {
      count([&](rpc_server_stats& s) { s.bytes_rdma_read += call->pull; });
      dispatch(c, call);
    }
    if (next) next();
  }

  class responder_impl;
  void dispatch(const std::shared_ptr<conn>& c, std::shared_ptr<pending_call> call);
  void reply(const std::shared_ptr<conn>& c, std::shared_ptr<pending_call> call, xdr::encoder msg,
             std::shared_ptr<const void> keepalive);
};

/// A call with the call handler: counted in its connection's `executing` until it is
/// answered, dropped, or its responder goes.
class rpc_server::impl::responder_impl final : public rpc_server::responder {
 public:
  responder_impl(std::weak_ptr<impl> s, std::weak_ptr<conn> c, std::shared_ptr<pending_call> call)
      : srv_(std::move(s)), conn_(std::move(c)), call_(std::move(call)) {}
  ~responder_impl() override { finish(); }
  void reply(xdr::encoder msg, std::shared_ptr<const void> keepalive) override {
    finish();
    auto s = srv_.lock();
    auto c = conn_.lock();
    if (!s || !c || !call_) return;
    s->reply(c, std::move(call_), std::move(msg), std::move(keepalive));
  }
  void drop() override {
    finish();
    if (auto c = conn_.lock()) c->ep->close();
  }

 private:
  void finish() {
    if (finished_.exchange(true)) return;
    if (auto c = conn_.lock()) {
      std::lock_guard lock(c->mu);
      c->executing--;
      c->last_progress = std::chrono::steady_clock::now();
    }
  }

  std::weak_ptr<impl> srv_;
  std::weak_ptr<conn> conn_;
  std::shared_ptr<pending_call> call_;
  std::atomic<bool> finished_{false};
};

void rpc_server::impl::dispatch(const std::shared_ptr<conn>& c, std::shared_ptr<pending_call> call) {
  count([](rpc_server_stats& s) { s.calls++; });
  {
    std::lock_guard lock(c->mu);
    c->executing++;
  }
  std::vector<std::byte> record = std::move(call->record);
  call->record.clear();
  on_call(std::move(record), std::make_shared<responder_impl>(weak_from_this(), c, std::move(call)));
}

void rpc_server::impl::reply(const std::shared_ptr<conn>& c, std::shared_ptr<pending_call> call, xdr::encoder msg,
                             std::shared_ptr<const void> keepalive) {
  // Everything the RDMA Writes and the send read from lives in `keep` until they finish.
  struct reply_state {
    xdr::encoder msg;
    std::shared_ptr<const void> keepalive;
  };
  auto st = std::make_shared<reply_state>(reply_state{std::move(msg), std::move(keepalive)});
  auto chain = st->msg.chain();

  rr::header h;
  h.xid = call->xid;
  std::vector<std::pair<rr::segment, gather_list>> writes;  // RDMA Writes to do first
  gather_list inline_part;
  std::uint64_t direct = 0;
  std::size_t chunks_used = 0;
  if (!call->write_list.empty()) {
    // RFC 8166 (§3.4, §4.3): the payloads (READ data), in order, go to the Write chunks, in
    // order, one payload per chunk whatever its length. A payload longer than its chunk is
    // ERR_CHUNK. Payloads beyond the last chunk stay in the reply, where the requester
    // finds them as it would without chunks (inline, or in the Reply chunk). Chunks beyond
    // the last payload come back unused: their segments, each with length 0.
    reduced_stream red = reduce(chain, 0, call->write_list.size());
    inline_part = std::move(red.inline_part);
    h.write_list.resize(call->write_list.size());
    for (std::size_t k = 0; k < call->write_list.size(); ++k) {
      const auto& segs = call->write_list[k].segments;
      std::vector<gather_list> parts;
      std::vector<std::uint32_t> written(segs.size(), 0);
      if (k < red.items.size()) {
        if (!split_over(segs, {red.items[k].data}, parts, written))
          return send_error(c, call->xid, rr::error_code::err_chunk);
        direct += red.items[k].data.size();
      }
      for (std::size_t i = 0; i < segs.size(); ++i) {
        rr::segment s = segs[i];
        s.length = written[i];
        h.write_list[k].segments.push_back(s);
        if (written[i] > 0) writes.push_back({s, std::move(parts[i])});
      }
    }
    chunks_used = red.items.size();
  } else {
    for (auto& p : chain)
      if (!p.bytes.empty()) inline_part.push_back(p.bytes);
  }

  gather_list body;
  std::size_t header_size = encode(h).size();  // the credit value does not change its size
  std::uint32_t limit;
  {
    std::lock_guard lock(c->mu);
    limit = c->inline_send;
  }
  std::uint64_t reply_chunk_bytes = 0;
  if (header_size + total_size(inline_part) <= limit) {
    body = std::move(inline_part);
  } else if (call->reply_chunk) {
    std::vector<gather_list> parts;
    std::vector<std::uint32_t> written;
    const auto& segs = call->reply_chunk->segments;
    if (!split_over(segs, inline_part, parts, written)) return send_error(c, call->xid, rr::error_code::err_chunk);
    h.type = rr::msg_type::rdma_nomsg;
    h.reply_chunk = rr::write_chunk{};
    for (std::size_t i = 0; i < segs.size(); ++i) {
      rr::segment s = segs[i];
      s.length = written[i];
      h.reply_chunk->segments.push_back(s);
      if (written[i] > 0) writes.push_back({s, std::move(parts[i])});
    }
    reply_chunk_bytes = total_size(inline_part);
  } else {
    return send_error(c, call->xid, rr::error_code::err_chunk);  // does not fit, no Reply chunk
  }

  count([&](rpc_server_stats& s) {
    s.write_chunks_used += chunks_used;
    if (direct > 0) s.write_list_replies++;
    if (reply_chunk_bytes > 0) s.reply_chunk_replies++;
    if (direct == 0 && reply_chunk_bytes == 0) s.inline_replies++;
  });
  if (writes.empty()) return send(c, std::move(h), std::move(body), st);

  struct write_progress {  // completions come on the io thread or at once, in this thread
    std::atomic<std::size_t> left;
    std::atomic<bool> failed{false};
    std::uint64_t bytes = 0;
  };
  auto prog = std::make_shared<write_progress>();
  prog->left = writes.size();
  for (auto& w : writes) prog->bytes += w.first.length;
  auto self = shared_from_this();
  auto hp = std::make_shared<rr::header>(std::move(h));
  auto bp = std::make_shared<gather_list>(std::move(body));
  for (auto& [seg, parts] : writes) {
    c->ep->rdma_write(seg, std::move(parts), [self, c, st, prog, hp, bp](std::error_code ec) {
      c->progress();
      if (ec) prog->failed = true;
      if (--prog->left != 0) return;
      if (prog->failed) return self->send_error(c, hp->xid, rr::error_code::err_chunk);
      self->count([&](rpc_server_stats& s) { s.bytes_rdma_written += prog->bytes; });
      self->send(c, std::move(*hp), std::move(*bp), st);
    });
  }
}

rpc_server::rpc_server(fabric& f, const std::string& host, std::uint16_t port, rpc_server_options opts,
                       call_handler on_call)
    : impl_(std::make_shared<impl>(f, std::move(opts), std::move(on_call))) {
  endpoint_options eo;
  eo.recv_size = impl_->opts.inline_size;
  eo.max_recv = impl_->opts.max_credits;
  rr::private_data pd;
  pd.inline_send = impl_->opts.inline_size;
  pd.inline_recv = impl_->opts.inline_size;
  auto b = pd.encode();
  eo.private_data.assign(b.begin(), b.end());
  std::weak_ptr<impl> weak = impl_;
  impl_->lst = f.listen(host, port, eo, [weak](std::shared_ptr<endpoint> ep) {
    if (auto s = weak.lock()) s->accept(std::move(ep));
    else ep->close();
  });
  if (impl_->opts.idle_timeout.count() > 0)
    boost::asio::dispatch(f.context(), [weak] {
      if (auto s = weak.lock()) s->schedule_idle_check();
    });
}

rpc_server::~rpc_server() { stop(); }

std::uint16_t rpc_server::port() const { return impl_->lst ? impl_->lst->port() : 0; }
std::string rpc_server::address() const { return impl_->lst ? impl_->lst->address() : std::string(); }

void rpc_server::stop() {
  std::set<std::shared_ptr<conn>> conns;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
    conns = std::move(impl_->conns);
    impl_->conns.clear();
  }
  impl_->lst.reset();
  for (auto& c : conns) c->ep->close();
}

std::size_t rpc_server::connection_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->conns.size();
}

rpc_server_stats rpc_server::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->st;
}

}  // namespace vnfs::transport::rdma
