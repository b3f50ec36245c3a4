#include "transport/rdma/rpc_client.hpp"

#include <algorithm>

#include "transport/rdma/chunks.hpp"

namespace vnfs::transport::rdma {

namespace rr = rpc::rdma;

namespace {

std::error_code errc_code(std::errc e) { return std::make_error_code(e); }

std::vector<std::byte> encode(const rr::header& h) {
  xdr::encoder e;
  rr::encode_header(e, h);
  return e.flatten();
}

/// Room a reply needs besides the RPC message when the client offered chunks: the fixed
/// header words and the echoed chunk lists.
constexpr std::size_t reply_header_room = 7 * 4 + 2 * 4 + 16 * 2;
/// What each Write chunk of one segment adds to it: presence, segment count, the segment.
constexpr std::size_t write_chunk_room = 4 + 4 + 16;
/// Above this many pieces a position-zero chunk is flattened into one buffer.
constexpr std::size_t max_nomsg_segments = 16;

}  // namespace

void rpc_client::connect(fabric& f, const std::string& host, std::uint16_t port, rpc_client_options opts,
                         lost_handler on_lost, connect_handler done) {
  if (!opts.request_policy) opts.request_policy = std::make_shared<adaptive_request_policy>();
  opts.max_credits = std::max<std::uint32_t>(1, opts.max_credits);
  endpoint_options eo;
  eo.recv_size = opts.inline_size;
  eo.max_recv = opts.max_credits;
  if (opts.send_private_data) {
    rr::private_data pd;
    pd.inline_send = opts.inline_size;
    pd.inline_recv = opts.inline_size;
    auto b = pd.encode();
    eo.private_data.assign(b.begin(), b.end());
  }
  fabric* fp = &f;
  f.connect(host, port, eo, [fp, opts, on_lost = std::move(on_lost), done = std::move(done)](
                                std::error_code ec, std::shared_ptr<endpoint> ep) mutable {
    if (ec) return done(ec, nullptr);
    auto c = std::make_shared<rpc_client>(passkey{}, *fp, std::move(ep), std::move(opts), std::move(on_lost));
    std::weak_ptr<rpc_client> weak = c;
    c->ep_->post_recv(c->opts_.max_credits);
    c->ep_->start(
        [weak](std::span<const std::byte> m) {
          if (auto self = weak.lock()) self->on_message(m);
        },
        [weak](std::error_code why) {
          if (auto self = weak.lock()) self->lost(why ? why : errc_code(std::errc::connection_reset));
        });
    done({}, std::move(c));
  });
}

rpc_client::rpc_client(passkey, fabric& f, std::shared_ptr<endpoint> ep, rpc_client_options opts,
                       lost_handler on_lost)
    : fabric_(f), ep_(std::move(ep)), opts_(std::move(opts)), on_lost_(std::move(on_lost)) {
  // RFC 8797: what the peer can receive; 1 KiB when it said nothing.
  auto pd = rr::private_data::decode(ep_->peer_private_data());
  std::uint32_t peer_recv = pd ? pd->inline_recv : rr::default_inline_size;
  inline_send_ = std::min<std::uint32_t>({peer_recv, static_cast<std::uint32_t>(std::min<std::size_t>(ep_->peer_recv_size(), UINT32_MAX)),
                                          opts_.inline_size});
}

bool rpc_client::is_open() const { return !closed_ && ep_->is_open(); }

void rpc_client::call(rpc_call c, reply_handler done) {
  if (closed_) return done(errc_code(std::errc::not_connected), {});
  auto p = std::make_unique<pending>();
  p->call = std::move(c);
  p->done = std::move(done);
  waiting_.push_back(std::move(p));
  pump();
}

void rpc_client::pump() {
  while (!closed_ && !waiting_.empty() && outstanding_.size() < effective_grant(granted_) &&
         outstanding_.size() < opts_.max_credits) {
    auto p = std::move(waiting_.front());
    waiting_.pop_front();
    send_one(std::move(p));
  }
}

void rpc_client::send_one(std::unique_ptr<pending> p) {
  const xdr::encoder& msg = *p->call.message;
  rr::header h;
  h.xid = p->call.xid;
  h.credits = opts_.request_policy->request(static_cast<std::uint32_t>(outstanding_.size() + 1), granted_);

  try {
    // The reply: a Write chunk per READ target, and a Reply chunk for what may remain of a
    // long reply.
    if (p->call.read_targets.size() > rr::max_list_entries) return p->done(errc_code(std::errc::invalid_argument), {});
    std::size_t placeable = 0;
    for (auto& t : p->call.read_targets) {
      h.write_list.push_back(rr::write_chunk{{expose(p->call, t.data(), t.size(), remote_access::write, p->regs)}});
      placeable += t.size();
    }
    stats_.write_chunks_offered += h.write_list.size();
    const std::size_t rest = p->call.max_reply - std::min(placeable, p->call.max_reply);
    if (rest > 0 && rest + reply_header_room + write_chunk_room * h.write_list.size() > opts_.inline_size) {
      p->reply_buffer.resize(std::min<std::size_t>(rest, UINT32_MAX));
      h.reply_chunk = rr::write_chunk{
          {expose(p->call, p->reply_buffer.data(), p->reply_buffer.size(), remote_access::write, p->regs)}};
    }

    // The call: inline, WRITE payloads by Read chunk, or all of it by a position-zero chunk.
    // Each header is encoded once; the one sent leads the gather list.
    gather_list g;
    auto chain = msg.chain();
    p->header = encode(h);
    if (p->header.size() + msg.size() <= inline_send_) {
      g.reserve(1 + chain.size());
      g.push_back(p->header);
      for (auto& piece : chain)
        if (!piece.bytes.empty()) g.push_back(piece.bytes);
      stats_.inline_calls++;
    } else {
      reduced_stream red = reduce(chain, opts_.ddp_threshold, rr::max_list_entries);
      rr::header with_reads = h;
      std::vector<std::unique_ptr<memory_registration>> read_regs;
      std::size_t offered = 0;
      const std::uint64_t registered_before = stats_.registered_segments;
      for (const auto& item : red.items) {
        auto* data = const_cast<std::byte*>(item.data.data());  // exposed for remote READ only
        with_reads.read_list.push_back(
            {item.position, expose(p->call, data, item.data.size(), remote_access::read, read_regs)});
        offered += item.data.size();
      }
      std::vector<std::byte> reads_header = red.items.empty() ? std::vector<std::byte>{} : encode(with_reads);
      if (!red.items.empty() && reads_header.size() + total_size(red.inline_part) <= inline_send_) {
        p->header = std::move(reads_header);
        g.reserve(1 + red.inline_part.size());
        g.push_back(p->header);
        g.insert(g.end(), red.inline_part.begin(), red.inline_part.end());
        stats_.bytes_offered += offered;
        for (auto& r : read_regs) p->regs.push_back(std::move(r));
        stats_.read_chunk_calls++;
      } else {
        stats_.registered_segments = registered_before;  // those Read chunks are not sent
        h.type = rr::msg_type::rdma_nomsg;
        if (chain.size() > max_nomsg_segments) {
          p->flat_call = msg.flatten();  // too many pieces for one chunk's segments
          h.read_list.push_back(
              {0, expose(p->call, p->flat_call.data(), p->flat_call.size(), remote_access::read, p->regs)});
        } else {
          for (auto& piece : chain) {
            if (piece.bytes.empty()) continue;
            auto* data = const_cast<std::byte*>(piece.bytes.data());
            h.read_list.push_back({0, expose(p->call, data, piece.bytes.size(), remote_access::read, p->regs)});
          }
        }
        p->header = encode(h);
        g.push_back(p->header);
        stats_.bytes_offered += msg.size();
        stats_.nomsg_calls++;
      }
    }
    stats_.bytes_sent += total_size(g);
    stats_.calls++;
    // No completion: a failed send ends the connection, and the endpoint's close handler
    // fails the calls; the bytes sent live in `p` until the call completes.
    ep_->post_send(std::move(g), {});
  } catch (const std::system_error& e) {
    return p->done(e.code(), {});
  } catch (const std::out_of_range&) {
    return p->done(errc_code(std::errc::message_size), {});
  }
  outstanding_.push_back(std::move(p));
  stats_.max_outstanding = std::max<std::uint32_t>(stats_.max_outstanding, static_cast<std::uint32_t>(outstanding_.size()));
}

rr::segment rpc_client::expose(const rpc_call& c, std::byte* data, std::size_t size, remote_access access,
                               std::vector<std::unique_ptr<memory_registration>>& made) {
  for (const auto& r : c.registered) {
    if (r && allows(r->access(), access) && r->contains(data, size)) {
      stats_.registered_segments++;
      ep_->grant(*r);  // once per registration and connection: the peer then asks nothing
      return r->segment(static_cast<std::size_t>(data - r->data()), size);
    }
  }
  made.push_back(fabric_.register_memory(data, size, access));
  stats_.per_call_registrations++;
  return made.back()->segment(0, size);
}

void rpc_client::on_message(std::span<const std::byte> m) {
  stats_.bytes_received += m.size();
  ep_->post_recv(1);  // the message is consumed below; the buffer can take the next one
  rr::header h;
  xdr::decoder d(m);
  try {
    h = rr::decode_header(d);
  } catch (const xdr::decode_error&) {
    return lost(errc_code(std::errc::connection_aborted));  // not a v1 reply: nothing to trust
  }
  granted_ = h.credits;
  auto it = find_outstanding(h.xid);
  if (it == outstanding_.end()) return pump();  // a reply to nothing outstanding: dropped
  pending& p = **it;

  if (h.type == rr::msg_type::rdma_error) {
    complete(h.xid, errc_code(h.error == rr::error_code::err_vers ? std::errc::protocol_not_supported
                                                                 : std::errc::bad_message),
             {});
    return pump();
  }

  rpc_result r;
  bool ok = true;
  // The Write list: no more chunks than we offered, each with the bytes actually written,
  // which fit its target. A chunk the reply leaves out was not used.
  const auto& targets = p.call.read_targets;
  if (h.write_list.size() > targets.size()) ok = false;
  if (ok && !targets.empty()) {
    r.written.assign(targets.size(), 0);
    for (std::size_t i = 0; ok && i < h.write_list.size(); ++i) {
      const std::uint64_t n = h.write_list[i].total_length();
      if (n > targets[i].size()) ok = false;
      else r.written[i] = static_cast<std::uint32_t>(n);
    }
  }
  if (ok && h.type == rr::msg_type::rdma_msg) {
    auto rest = d.rest();
    r.record.assign(rest.begin(), rest.end());
  } else if (ok && h.type == rr::msg_type::rdma_nomsg) {
    // The whole reply is in the Reply chunk we offered.
    std::uint64_t n = h.reply_chunk ? h.reply_chunk->total_length() : 0;
    if (!h.reply_chunk || p.reply_buffer.empty() || n > p.reply_buffer.size() || d.remaining() != 0) {
      ok = false;
    } else {
      r.record = std::move(p.reply_buffer);
      r.record.resize(n);
      stats_.bytes_placed += n;
      stats_.reply_chunk_replies++;
    }
  }
  if (!ok) return lost(errc_code(std::errc::connection_aborted));
  if (const std::uint64_t placed = r.direct(); placed > 0) {
    stats_.bytes_placed += placed;
    stats_.write_list_replies++;
    for (auto w : r.written) stats_.write_chunks_filled += w > 0;
  }
  complete(h.xid, {}, std::move(r));
  pump();
}

std::vector<std::unique_ptr<rpc_client::pending>>::iterator rpc_client::find_outstanding(std::uint32_t xid) {
  return std::find_if(outstanding_.begin(), outstanding_.end(), [xid](const auto& p) { return p->call.xid == xid; });
}

void rpc_client::complete(std::uint32_t xid, std::error_code ec, rpc_result r) {
  auto it = find_outstanding(xid);
  if (it == outstanding_.end()) return;
  reply_handler done = std::move((*it)->done);
  // Before the caller hears of it, the call is gone: the per-call registrations are
  // released and the caller's own are no longer held by it (its last holder may release
  // them). What is left to do after `done` (which may wake a waiting caller) is little.
  outstanding_.erase(it);
  done(ec, std::move(r));
}

void rpc_client::fail_all(std::error_code ec) {
  auto out = std::move(outstanding_);
  outstanding_.clear();
  auto wait = std::move(waiting_);
  waiting_.clear();
  for (auto& p : out) {
    p->regs.clear();
    p->call.registered.clear();
    p->done(ec, {});
  }
  for (auto& p : wait) {
    p->call.registered.clear();
    p->done(ec, {});
  }
}

void rpc_client::lost(std::error_code ec) {
  if (closed_) return;
  closed_ = true;
  ep_->close();
  fail_all(ec);
  if (auto cb = std::move(on_lost_)) cb(ec);
}

void rpc_client::close() {
  if (closed_) return;
  closed_ = true;
  on_lost_ = nullptr;
  ep_->close();
  fail_all(errc_code(std::errc::operation_canceled));
}

}  // namespace vnfs::transport::rdma
