// vnfs client, nfs backend: RPC over RPC-over-RDMA v1 — the server RDMA-Writes READ payload
// into the caller's target and long replies into a Reply chunk, and RDMA-Reads WRITE
// payload and long calls from this process's memory.
#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "client/nfs/rpc_channel.hpp"
#include "transport/rdma/fabric.hpp"
#include "transport/rdma/rpc_client.hpp"

namespace vnfs::detail {

namespace {

namespace rdma = transport::rdma;

class rdma_channel final : public rpc_channel, public std::enable_shared_from_this<rdma_channel> {
 public:
  rdma_channel(boost::asio::io_context& io, const std::string& provider, std::string host, std::uint16_t port,
               channel_events ev, wire_counters wc)
      : fabric_(rdma::make_fabric(provider, io)), host_(std::move(host)), port_(port), ev_(std::move(ev)), wc_(wc) {}
  ~rdma_channel() override { close(); }

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

  void send(std::uint32_t xid, std::shared_ptr<const xdr::encoder> call,
            const read_plan* plan, std::size_t max_reply) override {
    if (!client_) return;  // the engine sends again after reconnecting
    wc_.sent += call->size();
    rdma::rpc_call rc;
    rc.xid = xid;
    rc.message = std::move(call);
    // One Write chunk, which the server fills with the first READ payload: offered only when
    // the COMPOUND has a single READ.
    if (plan && plan->targets.size() == 1) rc.read_target = plan->targets[0];
    rc.max_reply = max_reply;
    std::weak_ptr<rdma_channel> weak = weak_from_this();
    client_->call(std::move(rc), [weak, g = gen_, xid](std::error_code ec, rdma::rpc_result r) {
      auto self = weak.lock();
      if (!self || g != self->gen_) return;
      if (ec) {
        // Connection errors reach the engine through on_lost; these concern this call only.
        if (ec == std::errc::bad_message || ec == std::errc::protocol_not_supported || ec == std::errc::message_size)
          self->ev_.on_call_failed(xid, ec);
        return;
      }
      self->wc_.received += r.record.size();
      std::vector<direct_piece> pieces;
      if (r.direct) {
        self->wc_.received += *r.direct;
        self->wc_.direct += *r.direct;
        pieces.push_back(direct_piece{0, direct_piece::anywhere, *r.direct, 0});
      }
      self->ev_.on_reply(xid, std::move(r.record), std::move(pieces));
    });
  }

  void close() override {
    ++gen_;
    if (auto c = std::move(client_)) c->close();
  }

 private:
  std::unique_ptr<rdma::fabric> fabric_;
  std::string host_;
  std::uint16_t port_;
  channel_events ev_;
  wire_counters wc_;
  std::shared_ptr<rdma::rpc_client> client_;
  std::uint64_t gen_ = 0;  // counts connections; callbacks carry the one they began on
};

}  // namespace

std::shared_ptr<rpc_channel> make_rdma_channel(boost::asio::io_context& io, const std::string& provider,
                                               std::string host, std::uint16_t port, channel_events events,
                                               wire_counters counters) {
  return std::make_shared<rdma_channel>(io, provider, std::move(host), port, std::move(events), counters);
}

}  // namespace vnfs::detail
