// vnfs transport: the RPC-client channel over RPC-over-RDMA v1 (rpc_client.hpp) — the
// server RDMA-Writes each of a reply's payloads into the caller's target for it (one Write
// chunk each) and long replies into a Reply chunk, and RDMA-Reads sent payload and long
// calls from this process's memory, exposed through the fabric registrations of the
// caller's regions.
#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "transport/rpc_channel.hpp"
#include "transport/rdma/fabric.hpp"
#include "transport/rdma/rpc_client.hpp"

namespace vnfs::transport {

namespace {

/// What the server may do to a region used as `u`: RDMA-Write into memory data is
/// received into, RDMA-Read from memory data is sent from.
rdma::remote_access remote_access_for(region_use u) {
  switch (u) {
    case region_use::receive: return rdma::remote_access::write;
    case region_use::send: return rdma::remote_access::read;
    case region_use::both: break;
  }
  return rdma::remote_access::read_write;
}

/// A key for registered_region::attachment() no other channel of this process uses.
std::uint64_t new_attachment_owner() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

class rdma_channel final : public rpc_channel, public std::enable_shared_from_this<rdma_channel> {
 public:
  rdma_channel(boost::asio::io_context& io, const std::string& provider, std::string host, std::uint16_t port,
               channel_events ev, wire_counters wc)
      : fabric_(rdma::make_fabric(provider, io)), host_(std::move(host)), port_(port), ev_(std::move(ev)), wc_(wc) {}
  ~rdma_channel() override {
    close();
    // The fabric registrations this channel attached go with it (a region may outlive it).
    for (auto& weak : attached_)
      if (auto r = weak.lock()) r->detach(attachment_owner_);
  }

  void connect(std::function<void(std::error_code)> done) override {
    close();
    std::weak_ptr<rdma_channel> weak = weak_from_this();
    std::uint64_t g = gen_;
    rdma::rpc_client_options o;
    o.max_credits = 64;
    rdma::rpc_client::connect(
        *fabric_, host_, port_, o,
        [weak, g](std::error_code ec) {
          auto self = weak.lock();
          if (!self || g != self->gen_) return;
          self->client_.reset();
          ++self->gen_;
          self->ev_.on_lost(ec);
        },
        [weak, g, done](std::error_code ec, std::shared_ptr<rdma::rpc_client> c) {
          auto self = weak.lock();
          if (!self || g != self->gen_) {
            if (c) c->close();
            return done(make_error_code(std::errc::operation_canceled));
          }
          if (ec) return done(ec);
          self->client_ = std::move(c);
          done({});
        });
  }

  void send(std::uint32_t xid, std::shared_ptr<const xdr::encoder> call, std::shared_ptr<reply_guide> guide,
            const std::vector<std::shared_ptr<registered_region>>& registered, std::size_t max_reply) override {
    if (!client_) return;  // the caller sends again after reconnecting
    wc_.sent += call->size();
    rdma::rpc_call rc;
    rc.xid = xid;
    rc.message = std::move(call);
    for (const auto& r : registered)
      if (auto fr = fabric_registration(r)) rc.registered.push_back(std::move(fr));
    // One Write chunk per payload target, up to the first payload without one: the server
    // fills the chunks with the reply's payloads in order, so chunk k is payload k's.
    if (guide)
      for (std::span<std::byte> t : guide->targets()) {
        if (t.empty() || rc.read_targets.size() == rpc::rdma::max_list_entries) break;
        rc.read_targets.push_back(t);
      }
    rc.max_reply = max_reply;
    std::weak_ptr<rdma_channel> weak = weak_from_this();
    std::weak_ptr<reply_guide> weak_guide = guide;  // (kept weakly, as rpc_channel::send says)
    client_->call(std::move(rc), [weak, g = gen_, xid, weak_guide](std::error_code ec, rdma::rpc_result r) {
      auto self = weak.lock();
      if (!self || g != self->gen_) return;
      if (ec) {
        // Connection errors reach the engine through on_lost; these concern this call only.
        if (ec == std::errc::bad_message || ec == std::errc::protocol_not_supported || ec == std::errc::message_size)
          self->ev_.on_call_failed(xid, ec);
        return;
      }
      self->wc_.received += r.record.size() + r.direct();
      self->wc_.direct += r.direct();
      if (auto guide = weak_guide.lock())
        for (std::size_t k = 0; k < r.written.size(); ++k) guide->placed_elsewhere(k, r.written[k]);
      self->ev_.on_reply(xid, std::move(r.record));
    });
  }

  void close() override {
    ++gen_;
    if (auto c = std::move(client_)) c->close();
  }

 private:
  /// The fabric's registration of region `r`: made at the first call through it and kept
  /// on the region until it is deregistered or this channel goes. Null for a deregistered
  /// region or when the fabric refuses (the call then registers what it exposes itself).
  std::shared_ptr<const rdma::memory_registration> fabric_registration(const std::shared_ptr<registered_region>& r) {
    if (!r) return nullptr;
    bool made = false;
    std::shared_ptr<const rdma::memory_registration> fr;
    try {
      fr = r->attachment<const rdma::memory_registration>(attachment_owner_, [&] {
        made = true;
        return fabric_->register_memory(r->bytes().data(), r->bytes().size(), remote_access_for(r->use()));
      });
    } catch (const std::system_error&) {
      return nullptr;
    }
    if (made && fr) {
      std::erase_if(attached_, [](const std::weak_ptr<registered_region>& w) { return w.expired(); });
      attached_.push_back(r);
    }
    return fr;
  }

  std::unique_ptr<rdma::fabric> fabric_;
  std::string host_;
  std::uint16_t port_;
  channel_events ev_;
  wire_counters wc_;
  std::shared_ptr<rdma::rpc_client> client_;
  std::uint64_t gen_ = 0;  // counts connections; callbacks carry the one they began on
  const std::uint64_t attachment_owner_ = new_attachment_owner();
  std::vector<std::weak_ptr<registered_region>> attached_;  // regions holding this fabric's registration
};

}  // namespace

std::shared_ptr<rpc_channel> make_rdma_channel(boost::asio::io_context& io, const std::string& provider,
                                               std::string host, std::uint16_t port, channel_events events,
                                               wire_counters counters) {
  return std::make_shared<rdma_channel>(io, provider, std::move(host), port, std::move(events), counters);
}

}  // namespace vnfs::transport
