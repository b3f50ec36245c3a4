#include "transport/rdma/verbs/verbs_fabric.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include <boost/asio.hpp>

namespace vnfs::transport::rdma::verbs {

namespace asio = boost::asio;

namespace {

constexpr int resolve_timeout_ms = 2000;
constexpr auto connect_timeout = std::chrono::seconds(10);
constexpr std::uint32_t max_sge = 8;
constexpr std::uint64_t recv_tag = 1ull << 63;

std::error_code errno_code(int e) { return std::error_code(e, std::generic_category()); }
std::error_code errc_code(std::errc e) { return std::make_error_code(e); }
[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno_code(errno), what); }

/// The protection domain on the first device rdma_cm knows, shared by the fabric, its
/// registrations and its endpoints.
struct domain {
  ibv_context** devices = nullptr;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  std::uint32_t max_rd_atom = 1;
  // fabric::register_memory's registrations (not the fabric's own message buffers).
  std::atomic<std::uint64_t> registrations_made{0};
  std::atomic<std::uint64_t> registrations_live{0};

  domain() {
    int n = 0;
    devices = rdma_get_devices(&n);
    if (devices == nullptr || n == 0) {
      if (devices) rdma_free_devices(devices);
      throw std::system_error(errc_code(std::errc::no_such_device), "verbs: no RDMA device");
    }
    ctx = devices[0];
    pd = ibv_alloc_pd(ctx);
    if (pd == nullptr) {
      rdma_free_devices(devices);
      throw_errno("verbs: ibv_alloc_pd");
    }
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) == 0)
      max_rd_atom = static_cast<std::uint32_t>(std::max(1, std::min(attr.max_qp_rd_atom, attr.max_qp_init_rd_atom)));
  }
  ~domain() {
    ibv_dealloc_pd(pd);
    rdma_free_devices(devices);
  }
};

class verbs_registration final : public memory_registration {
 public:
  verbs_registration(std::shared_ptr<domain> d, ibv_mr* mr, remote_access a)
      : memory_registration(mr->rkey, static_cast<std::byte*>(mr->addr), mr->length, a), d_(std::move(d)), mr_(mr) {
    d_->registrations_made++;
    d_->registrations_live++;
  }
  ~verbs_registration() override {
    ibv_dereg_mr(mr_);  // the rkey is invalid from here on
    d_->registrations_live--;
  }

 private:
  std::shared_ptr<domain> d_;
  ibv_mr* mr_;
};

int access_flags(remote_access a) {
  int f = IBV_ACCESS_LOCAL_WRITE;
  if (allows(a, remote_access::read)) f |= IBV_ACCESS_REMOTE_READ;
  if (allows(a, remote_access::write)) f |= IBV_ACCESS_REMOTE_WRITE;
  return f;
}

/// A local memory registration released with its owner (message pools, RDMA sources).
struct local_mr {
  ibv_mr* mr = nullptr;
  local_mr() = default;
  explicit local_mr(ibv_mr* m) : mr(m) {}
  local_mr(local_mr&& o) noexcept : mr(std::exchange(o.mr, nullptr)) {}
  local_mr& operator=(local_mr&& o) noexcept {
    std::swap(mr, o.mr);
    return *this;
  }
  ~local_mr() {
    if (mr) ibv_dereg_mr(mr);
  }
};

class verbs_endpoint;

/// What the fabric's rdma_cm event loop tells an endpoint.
struct cm_event {
  rdma_cm_event_type type;
  int status;
  std::vector<std::byte> private_data;
};

class verbs_endpoint final : public endpoint {
 public:
  verbs_endpoint(asio::io_context& io, std::shared_ptr<domain> d, rdma_cm_id* id, const endpoint_options& opts)
      : io_(io), d_(std::move(d)), id_(id), opts_(opts), chan_desc_(io) {}
  ~verbs_endpoint() override { release(); }

  /// Creates the CQ, QP and message pools on id_. Throws std::system_error.
  void create_resources() {
    if (id_->verbs != d_->ctx)
      throw std::system_error(errc_code(std::errc::no_such_device), "verbs: connection on another device than the fabric's");
    chan_ = ibv_create_comp_channel(d_->ctx);
    if (!chan_) throw_errno("verbs: ibv_create_comp_channel");
    std::uint32_t max_send = opts_.max_recv * 2 + 32;
    cq_ = ibv_create_cq(d_->ctx, static_cast<int>(max_send + opts_.max_recv), nullptr, chan_, 0);
    if (!cq_) throw_errno("verbs: ibv_create_cq");
    if (ibv_req_notify_cq(cq_, 0) != 0) throw_errno("verbs: ibv_req_notify_cq");
    ibv_qp_init_attr qa{};
    qa.send_cq = cq_;
    qa.recv_cq = cq_;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = max_send;
    qa.cap.max_recv_wr = opts_.max_recv;
    qa.cap.max_send_sge = max_sge;
    qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(id_, d_->pd, &qa) != 0) throw_errno("verbs: rdma_create_qp");
    recv_pool_.resize(std::size_t(opts_.max_recv) * opts_.recv_size);
    recv_mr_ = local_mr(ibv_reg_mr(d_->pd, recv_pool_.data(), recv_pool_.size(), int{IBV_ACCESS_LOCAL_WRITE}));
    if (!recv_mr_.mr) throw_errno("verbs: ibv_reg_mr (receives)");
    for (std::uint32_t i = 0; i < opts_.max_recv; ++i) free_recv_.push_back(i);
    send_slots_ = opts_.max_recv + 16;
    send_pool_.resize(std::size_t(send_slots_) * opts_.recv_size);
    send_mr_ = local_mr(ibv_reg_mr(d_->pd, send_pool_.data(), send_pool_.size(), 0));
    if (!send_mr_.mr) throw_errno("verbs: ibv_reg_mr (sends)");
    for (std::uint32_t i = 0; i < send_slots_; ++i) free_send_.push_back(i);
    int fl = ::fcntl(chan_->fd, F_GETFL);
    ::fcntl(chan_->fd, F_SETFL, fl | O_NONBLOCK);
    chan_desc_.assign(chan_->fd);
  }

  rdma_conn_param conn_param() const {
    rdma_conn_param p{};
    p.private_data = opts_.private_data.data();
    p.private_data_len = static_cast<std::uint8_t>(std::min<std::size_t>(opts_.private_data.size(), 196));
    p.responder_resources = static_cast<std::uint8_t>(std::min<std::uint32_t>(d_->max_rd_atom, 255));
    p.initiator_depth = p.responder_resources;
    p.retry_count = 7;
    p.rnr_retry_count = 7;  // hardware retries: a receiver out of receives stalls the sender
    return p;
  }

  void established(std::vector<std::byte> peer_pd) { peer_pd_ = std::move(peer_pd); }

  void start(recv_handler on_recv, close_handler on_close) override {
    asio::dispatch(io_, [self = shared(), on_recv = std::move(on_recv), on_close = std::move(on_close)]() mutable {
      self->on_recv_ = std::move(on_recv);
      self->on_close_ = std::move(on_close);
      self->arm();
    });
  }

  std::uint32_t post_recv(std::uint32_t n) override {
    std::uint32_t cur = posted_.load();
    std::uint32_t add = std::min(n, opts_.max_recv - std::min(cur, opts_.max_recv));
    posted_ += add;
    asio::dispatch(io_, [self = shared(), add] {
      for (std::uint32_t i = 0; i < add && !self->closed_; ++i) self->post_one_recv();
    });
    return add;
  }
  std::uint32_t posted_receives() const override { return posted_.load(); }

  void post_send(std::vector<bytes_view> gather, completion done) override {
    asio::dispatch(io_, [self = shared(), gather = std::move(gather), done = std::move(done)]() mutable {
      std::size_t total = 0;
      for (auto g : gather) total += g.size();
      if (total > self->opts_.recv_size) return done(errc_code(std::errc::message_size));
      if (self->closed_) return done(errc_code(std::errc::not_connected));
      self->send_queue_.push_back({std::move(gather), std::move(done)});
      self->pump_sends();
    });
  }

  void rdma_write(rpc::rdma::segment remote, std::vector<bytes_view> local, completion done) override {
    asio::dispatch(io_, [self = shared(), remote, local = std::move(local), done = std::move(done)]() mutable {
      self->one_sided(IBV_WR_RDMA_WRITE, remote, std::move(local), {}, std::move(done));
    });
  }
  void rdma_read(rpc::rdma::segment remote, std::span<std::byte> local, completion done) override {
    asio::dispatch(io_, [self = shared(), remote, local, done = std::move(done)]() mutable {
      if (local.size() != remote.length) return done(errc_code(std::errc::invalid_argument));
      self->one_sided(IBV_WR_RDMA_READ, remote, {}, local, std::move(done));
    });
  }

  std::span<const std::byte> peer_private_data() const override { return peer_pd_; }
  /// Unknown to verbs itself: RPC-over-RDMA learns it from RFC 8797 private data.
  std::size_t peer_recv_size() const override { return SIZE_MAX; }
  void close() override {
    asio::dispatch(io_, [self = shared()] { self->shut({}); });
  }
  bool is_open() const override { return !closed_; }
  std::string peer() const override {
    char host[NI_MAXHOST] = "?";
    sockaddr* sa = rdma_get_peer_addr(id_);
    if (sa) ::getnameinfo(sa, sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in), host, sizeof host,
                          nullptr, 0, NI_NUMERICHOST);
    return std::string("verbs:") + host;
  }

  /// An rdma_cm event for this connection (from the fabric's loop).
  void on_cm(const cm_event& e) {
    if (e.type == RDMA_CM_EVENT_DISCONNECTED || e.type == RDMA_CM_EVENT_DEVICE_REMOVAL)
      shut(errc_code(std::errc::connection_reset));
  }
  /// Ends the connection on a fatal error.
  void shut(std::error_code why) {
    if (closed_) return;
    closed_ = true;
    rdma_disconnect(id_);
    auto ops = std::move(ops_);
    ops_.clear();
    auto sends = std::move(send_queue_);
    send_queue_.clear();
    auto cancelled = errc_code(std::errc::operation_canceled);
    for (auto& [id, op] : ops)
      if (op.done) op.done(cancelled);
    for (auto& s : sends)
      if (s.done) s.done(cancelled);
    if (auto cb = std::move(on_close_)) cb(why);
    // The receive handler may be running (shut from inside it): drop it once it returned.
    asio::post(io_, [self = shared()] { self->on_recv_ = nullptr; });
  }

  rdma_cm_id* id() const { return id_; }

 private:
  struct pending_send {
    std::vector<bytes_view> gather;
    completion done;
  };
  struct op {
    completion done;
    std::vector<local_mr> mrs;          // released at completion
    std::vector<std::byte> bounce;      // a gather of more than max_sge pieces, copied
    std::uint32_t send_slot = UINT32_MAX;
  };

  std::shared_ptr<verbs_endpoint> shared() { return std::static_pointer_cast<verbs_endpoint>(shared_from_this()); }

  void post_one_recv() {
    if (free_recv_.empty()) return;
    std::uint32_t i = free_recv_.front();
    free_recv_.pop_front();
    ibv_sge sge{reinterpret_cast<std::uint64_t>(recv_pool_.data() + std::size_t(i) * opts_.recv_size),
                static_cast<std::uint32_t>(opts_.recv_size), recv_mr_.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = recv_tag | i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(id_->qp, &wr, &bad) != 0) shut(errno_code(errno));
  }

  void pump_sends() {
    while (!closed_ && !send_queue_.empty() && !free_send_.empty()) {
      pending_send s = std::move(send_queue_.front());
      send_queue_.pop_front();
      std::uint32_t slot = free_send_.front();
      free_send_.pop_front();
      std::byte* buf = send_pool_.data() + std::size_t(slot) * opts_.recv_size;
      std::size_t at = 0;
      for (auto g : s.gather) {
        std::memcpy(buf + at, g.data(), g.size());
        at += g.size();
      }
      ibv_sge sge{reinterpret_cast<std::uint64_t>(buf), static_cast<std::uint32_t>(at), send_mr_.mr->lkey};
      ibv_send_wr wr{};
      std::uint64_t id = ++next_op_;
      wr.wr_id = id;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.send_flags = IBV_SEND_SIGNALED;
      op o;
      o.done = std::move(s.done);
      o.send_slot = slot;
      ops_.emplace(id, std::move(o));
      ibv_send_wr* bad = nullptr;
      if (ibv_post_send(id_->qp, &wr, &bad) != 0) return shut(errno_code(errno));
    }
  }

  void one_sided(ibv_wr_opcode code, rpc::rdma::segment remote, std::vector<bytes_view> src, std::span<std::byte> dst,
                 completion done) {
    if (closed_) return done(errc_code(std::errc::not_connected));
    op o;
    std::vector<ibv_sge> sges;
    if (code == IBV_WR_RDMA_WRITE) {
      std::size_t total = 0;
      std::vector<bytes_view> pieces;
      for (auto s : src)
        if (!s.empty()) pieces.push_back(s), total += s.size();
      if (total > remote.length) return done(errc_code(std::errc::invalid_argument));
      if (pieces.size() > max_sge) {  // too many pieces for one work request: one copy
        for (auto p : pieces) o.bounce.insert(o.bounce.end(), p.begin(), p.end());
        pieces = {bytes_view(o.bounce)};
      }
      for (auto p : pieces) {
        ibv_mr* mr = ibv_reg_mr(d_->pd, const_cast<std::byte*>(p.data()), p.size(), 0);
        if (!mr) return done(errno_code(errno));
        o.mrs.emplace_back(mr);
        sges.push_back({reinterpret_cast<std::uint64_t>(p.data()), static_cast<std::uint32_t>(p.size()), mr->lkey});
      }
    } else if (!dst.empty()) {
      ibv_mr* mr = ibv_reg_mr(d_->pd, dst.data(), dst.size(), int{IBV_ACCESS_LOCAL_WRITE});
      if (!mr) return done(errno_code(errno));
      o.mrs.emplace_back(mr);
      sges.push_back({reinterpret_cast<std::uint64_t>(dst.data()), static_cast<std::uint32_t>(dst.size()), mr->lkey});
    }
    if (sges.empty()) return done({});
    ibv_send_wr wr{};
    std::uint64_t id = ++next_op_;
    wr.wr_id = id;
    wr.sg_list = sges.data();
    wr.num_sge = static_cast<int>(sges.size());
    wr.opcode = code;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote.offset;
    wr.wr.rdma.rkey = remote.handle;
    o.done = std::move(done);
    ops_.emplace(id, std::move(o));
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(id_->qp, &wr, &bad) != 0) shut(errno_code(errno));
  }

  void arm() {
    if (closed_) return;
    chan_desc_.async_wait(asio::posix::stream_descriptor::wait_read, [self = shared()](boost::system::error_code ec) {
      if (ec || self->closed_) return;
      self->drain();
      self->arm();
    });
  }

  void drain() {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    while (ibv_get_cq_event(chan_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
    if (ibv_req_notify_cq(cq_, 0) != 0) return shut(errno_code(errno));
    ibv_wc wc[16];
    // Bounded: each round consumes completions, of which there are at most the posted work
    // requests; the notify above catches anything that arrives afterwards.
    for (int round = 0; round < 1024 && !closed_; ++round) {
      int n = ibv_poll_cq(cq_, 16, wc);
      if (n <= 0) break;
      for (int i = 0; i < n && !closed_; ++i) complete(wc[i]);
    }
  }

  void complete(const ibv_wc& wc) {
    if (wc.wr_id & recv_tag) {
      std::uint32_t idx = static_cast<std::uint32_t>(wc.wr_id & ~recv_tag);
      free_recv_.push_back(idx);
      if (posted_ > 0) posted_--;
      if (wc.status != IBV_WC_SUCCESS) return shut(errc_code(std::errc::connection_aborted));
      if (on_recv_) on_recv_(std::span<const std::byte>(recv_pool_.data() + std::size_t(idx) * opts_.recv_size, wc.byte_len));
      return;
    }
    auto it = ops_.find(wc.wr_id);
    if (it == ops_.end()) return;
    op o = std::move(it->second);
    ops_.erase(it);
    if (o.send_slot != UINT32_MAX) free_send_.push_back(o.send_slot);
    std::error_code ec;
    if (wc.status == IBV_WC_REM_ACCESS_ERR) ec = errc_code(std::errc::permission_denied);
    else if (wc.status != IBV_WC_SUCCESS) ec = errc_code(std::errc::connection_aborted);
    o.mrs.clear();
    if (o.done) o.done(ec);
    // An RC queue pair in error completes nothing more: the connection is over.
    if (ec) return shut(ec);
    pump_sends();
  }

  void release() {
    if (chan_desc_.is_open()) chan_desc_.release();  // the comp channel owns the fd
    if (id_ && id_->qp) rdma_destroy_qp(id_);
    if (cq_) ibv_destroy_cq(cq_);
    if (chan_) ibv_destroy_comp_channel(chan_);
    recv_mr_ = local_mr();
    send_mr_ = local_mr();
    if (id_) rdma_destroy_id(id_);
    id_ = nullptr;
  }

  asio::io_context& io_;
  std::shared_ptr<domain> d_;
  rdma_cm_id* id_;
  endpoint_options opts_;
  ibv_comp_channel* chan_ = nullptr;
  ibv_cq* cq_ = nullptr;
  asio::posix::stream_descriptor chan_desc_;
  std::vector<std::byte> recv_pool_, send_pool_;
  local_mr recv_mr_, send_mr_;
  std::deque<std::uint32_t> free_recv_, free_send_;
  std::uint32_t send_slots_ = 0;
  std::atomic<std::uint32_t> posted_{0};
  std::atomic<bool> closed_{false};
  std::vector<std::byte> peer_pd_;
  recv_handler on_recv_;
  close_handler on_close_;
  std::deque<pending_send> send_queue_;
  std::unordered_map<std::uint64_t, op> ops_;
  std::uint64_t next_op_ = 0;
};

class verbs_fabric;

class verbs_listener final : public listener {
 public:
  verbs_listener(std::shared_ptr<verbs_fabric> f, rdma_cm_id* id, std::string host, std::uint16_t port)
      : f_(std::move(f)), id_(id), host_(std::move(host)), port_(port) {}
  ~verbs_listener() override;
  std::string address() const override { return host_ + ":" + std::to_string(port_); }
  std::uint16_t port() const override { return port_; }

 private:
  std::shared_ptr<verbs_fabric> f_;
  rdma_cm_id* id_;
  std::string host_;
  std::uint16_t port_;
};

/// The fabric runs rdma_cm's event channel on the io_context and routes events by id.
class verbs_fabric final : public std::enable_shared_from_this<verbs_fabric> {
 public:
  explicit verbs_fabric(asio::io_context& io) : io_(io), d_(std::make_shared<domain>()), ch_desc_(io) {
    ch_ = rdma_create_event_channel();
    if (!ch_) throw_errno("verbs: rdma_create_event_channel");
    int fl = ::fcntl(ch_->fd, F_GETFL);
    ::fcntl(ch_->fd, F_SETFL, fl | O_NONBLOCK);
    ch_desc_.assign(ch_->fd);
  }
  ~verbs_fabric() {
    if (ch_desc_.is_open()) ch_desc_.release();
    rdma_destroy_event_channel(ch_);
  }
  void start() { arm(); }
  void stop() {
    boost::system::error_code ignore;
    ch_desc_.cancel(ignore);
  }

  std::unique_ptr<memory_registration> register_memory(void* data, std::size_t size, remote_access a) {
    ibv_mr* mr = ibv_reg_mr(d_->pd, data, size, access_flags(a));
    if (!mr) throw_errno("verbs: ibv_reg_mr");
    return std::make_unique<verbs_registration>(d_, mr, a);
  }
  registration_counts registrations() const { return {d_->registrations_made.load(), d_->registrations_live.load()}; }

  std::unique_ptr<listener> listen(const std::string& host, std::uint16_t port, const endpoint_options& opts,
                                   fabric::accept_handler on_accept) {
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(ch_, &id, nullptr, RDMA_PS_TCP) != 0) throw_errno("verbs: rdma_create_id");
    addrinfo hints{}, *ai = nullptr;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_socktype = SOCK_STREAM;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &ai);
    if (rc != 0 || !ai) {
      rdma_destroy_id(id);
      throw std::system_error(errc_code(std::errc::address_not_available), "verbs: resolve " + host);
    }
    rc = rdma_bind_addr(id, ai->ai_addr);
    ::freeaddrinfo(ai);
    if (rc != 0 || rdma_listen(id, 64) != 0) {
      int e = errno;
      rdma_destroy_id(id);
      throw std::system_error(errno_code(e), "verbs: listen on " + host + ":" + std::to_string(port));
    }
    listeners_[id] = {opts, std::move(on_accept)};
    return std::make_unique<verbs_listener>(shared_from_this(), id, host, ntohs(rdma_get_src_port(id)));
  }

  void forget_listener(rdma_cm_id* id) {
    asio::dispatch(io_, [self = shared_from_this(), id] {
      self->listeners_.erase(id);
      rdma_destroy_id(id);
    });
  }

  void connect(const std::string& host, std::uint16_t port, const endpoint_options& opts, fabric::connect_handler done) {
    asio::dispatch(io_, [self = shared_from_this(), host, port, opts, done = std::move(done)]() mutable {
      self->start_connect(host, port, opts, std::move(done));
    });
  }

 private:
  struct listen_state {
    endpoint_options opts;
    fabric::accept_handler on_accept;
  };
  struct connecting {
    std::shared_ptr<verbs_endpoint> ep;
    fabric::connect_handler done;  // connector side; empty for accepted connections
    fabric::accept_handler on_accept;
    std::shared_ptr<asio::steady_timer> timer;
  };

  void start_connect(const std::string& host, std::uint16_t port, const endpoint_options& opts, fabric::connect_handler done) {
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(ch_, &id, nullptr, RDMA_PS_TCP) != 0) return done(errno_code(errno), nullptr);
    addrinfo hints{}, *ai = nullptr;
    hints.ai_flags = AI_NUMERICSERV;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &ai) != 0 || !ai) {
      rdma_destroy_id(id);
      return done(errc_code(std::errc::host_unreachable), nullptr);
    }
    int rc = rdma_resolve_addr(id, nullptr, ai->ai_addr, resolve_timeout_ms);
    ::freeaddrinfo(ai);
    if (rc != 0) {
      int e = errno;
      rdma_destroy_id(id);
      return done(errno_code(e), nullptr);
    }
    connecting c;
    c.ep = std::make_shared<verbs_endpoint>(io_, d_, id, opts);
    c.done = std::move(done);
    c.timer = std::make_shared<asio::steady_timer>(io_, connect_timeout);
    c.timer->async_wait([self = shared_from_this(), id](boost::system::error_code ec) {
      if (!ec) self->fail_connect(id, errc_code(std::errc::timed_out));
    });
    pending_[id] = std::move(c);
  }

  void fail_connect(rdma_cm_id* id, std::error_code ec) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    connecting c = std::move(it->second);
    pending_.erase(it);
    if (c.timer) c.timer->cancel();
    c.ep->shut(ec);  // destroys the id with the endpoint
    if (c.done) c.done(ec, nullptr);
  }

  void arm() {
    ch_desc_.async_wait(asio::posix::stream_descriptor::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return;
      self->drain();
      self->arm();
    });
  }

  void drain() {
    rdma_cm_event* ev = nullptr;
    for (int round = 0; round < 256 && rdma_get_cm_event(ch_, &ev) == 0; ++round) {
      cm_event e{ev->event, ev->status, {}};
      auto pd = static_cast<const std::byte*>(ev->param.conn.private_data);
      if (pd && ev->param.conn.private_data_len)
        e.private_data.assign(pd, pd + ev->param.conn.private_data_len);
      rdma_cm_id* id = ev->id;
      rdma_cm_id* listen_id = ev->listen_id;
      rdma_ack_cm_event(ev);  // private data copied above
      handle(id, listen_id, e);
    }
  }

  void handle(rdma_cm_id* id, rdma_cm_id* listen_id, const cm_event& e) {
    if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) return accept(id, listen_id, e);
    if (auto it = pending_.find(id); it != pending_.end()) {
      connecting& c = it->second;
      switch (e.type) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
          if (rdma_resolve_route(id, resolve_timeout_ms) != 0) fail_connect(id, errno_code(errno));
          return;
        case RDMA_CM_EVENT_ROUTE_RESOLVED: {
          try {
            c.ep->create_resources();
          } catch (const std::system_error& ex) {
            return fail_connect(id, ex.code());
          }
          rdma_conn_param p = c.ep->conn_param();
          if (rdma_connect(id, &p) != 0) fail_connect(id, errno_code(errno));
          return;
        }
        case RDMA_CM_EVENT_ESTABLISHED: {
          connecting done = std::move(c);
          pending_.erase(it);
          if (done.timer) done.timer->cancel();
          if (done.done) done.ep->established(e.private_data);  // the listener's; accepted ones have theirs
          live_[id] = done.ep;
          if (done.done) done.done({}, done.ep);
          else if (done.on_accept) done.on_accept(done.ep);
          return;
        }
        case RDMA_CM_EVENT_REJECTED:
          return fail_connect(id, errc_code(std::errc::connection_refused));
        default:
          return fail_connect(id, errc_code(std::errc::host_unreachable));
      }
    }
    if (auto it = live_.find(id); it != live_.end()) {
      auto ep = it->second.lock();
      if (e.type == RDMA_CM_EVENT_DISCONNECTED || e.type == RDMA_CM_EVENT_DEVICE_REMOVAL) live_.erase(it);
      if (ep) ep->on_cm(e);
    }
  }

  void accept(rdma_cm_id* id, rdma_cm_id* listen_id, const cm_event& e) {
    auto ls = listeners_.find(listen_id);
    if (ls == listeners_.end()) {
      rdma_reject(id, nullptr, 0);
      rdma_destroy_id(id);
      return;
    }
    auto ep = std::make_shared<verbs_endpoint>(io_, d_, id, ls->second.opts);
    try {
      ep->create_resources();
    } catch (const std::system_error&) {
      rdma_reject(id, nullptr, 0);
      return;  // the endpoint destroys the id
    }
    rdma_conn_param p = ep->conn_param();
    if (rdma_accept(id, &p) != 0) return;
    ep->established(e.private_data);  // the connector's private data
    connecting c;
    c.ep = ep;
    c.on_accept = ls->second.on_accept;
    c.timer = std::make_shared<asio::steady_timer>(io_, connect_timeout);
    c.timer->async_wait([self = shared_from_this(), id](boost::system::error_code ec) {
      if (!ec) self->fail_connect(id, errc_code(std::errc::timed_out));
    });
    pending_[id] = std::move(c);  // ESTABLISHED hands it to on_accept
  }

  asio::io_context& io_;
  std::shared_ptr<domain> d_;
  rdma_event_channel* ch_ = nullptr;
  asio::posix::stream_descriptor ch_desc_;
  std::map<rdma_cm_id*, listen_state> listeners_;
  std::map<rdma_cm_id*, connecting> pending_;
  std::map<rdma_cm_id*, std::weak_ptr<verbs_endpoint>> live_;
};

verbs_listener::~verbs_listener() { f_->forget_listener(id_); }

/// The public face: forwards to the shared implementation, which outlives pending handlers.
class fabric_handle final : public fabric {
 public:
  explicit fabric_handle(asio::io_context& io) : io_(io), impl_(std::make_shared<verbs_fabric>(io)) { impl_->start(); }
  ~fabric_handle() override { impl_->stop(); }
  std::string_view provider() const override { return "verbs"; }
  asio::io_context& context() const override { return io_; }
  std::unique_ptr<memory_registration> register_memory(void* data, std::size_t size, remote_access a) override {
    return impl_->register_memory(data, size, a);
  }
  registration_counts registrations() const override { return impl_->registrations(); }
  std::unique_ptr<listener> listen(const std::string& host, std::uint16_t port, const endpoint_options& opts,
                                   accept_handler on_accept) override {
    return impl_->listen(host, port, opts, std::move(on_accept));
  }
  void connect(const std::string& host, std::uint16_t port, const endpoint_options& opts, connect_handler done) override {
    impl_->connect(host, port, opts, std::move(done));
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<verbs_fabric> impl_;
};

}  // namespace

bool device_present() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return false;
  ibv_free_device_list(list);
  return n > 0;
}

std::unique_ptr<fabric> make_fabric(boost::asio::io_context& io) {
  if (!device_present()) throw std::system_error(errc_code(std::errc::no_such_device), "verbs: no RDMA device");
  return std::make_unique<fabric_handle>(io);
}

}  // namespace vnfs::transport::rdma::verbs
