#include "transport/rdma/cma/cma_fabric.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>

namespace vnfs::transport::rdma::cma {

namespace asio = boost::asio;
// Boost 1.74 has no local::seq_packet_protocol: the generic one, with AF_UNIX.
using seqpacket = asio::generic::seq_packet_protocol;
using seqpacket_acceptor = asio::basic_socket_acceptor<seqpacket>;

namespace {

constexpr auto handshake_timeout = std::chrono::seconds(10);
/// Bound on one-sided operations a connection has waiting for the owner's answer.
constexpr std::size_t max_pending_ops = 4096;

// ---- wire format ------------------------------------------------------------------------
// Same host, same ABI: fixed-size little structs copied with memcpy. Every packet starts
// with a packet_head; the rest depends on kind.
enum class kind : std::uint32_t {
  hello = 1,       // connector -> listener: hello_body + private data
  hello_ack = 2,   // listener -> connector: hello_body + private data
  message = 3,     // a two-sided message (consumes one posted receive)
  access_req = 4,  // access_body: may I read/write this range of yours?
  access_rsp = 5,  // status: 0 granted, else an errno value
  grant = 6,       // grant_body: you may access this registration of mine without asking
  revoke = 7,      // id: the handle of a grant withdrawn (its registration is gone)
};
struct packet_head {
  kind k;
  std::uint32_t status;  // access_rsp
  std::uint64_t id;      // access_req/access_rsp: the initiator's operation id
};
struct hello_body {
  std::uint32_t recv_size;
  std::uint32_t reserved;
};
enum class op_kind : std::uint32_t { read = 1, write = 2 };
struct access_body {
  op_kind op;  // what the initiator wants to do to the owner's memory
  std::uint32_t handle;
  std::uint64_t addr;
  std::uint64_t length;
};
struct grant_body {
  std::uint32_t handle;
  remote_access access;
  std::uint64_t base;
  std::uint64_t size;
};
/// Grants one peer may hold on a connection; one more closes it (protocol_error).
constexpr std::size_t max_peer_grants = 65536;

template <class T>
bool read_struct(std::span<const std::byte> in, std::size_t at, T& out) {
  if (in.size() < at + sizeof(T)) return false;
  std::memcpy(&out, in.data() + at, sizeof(T));
  return true;
}
template <class T>
void append_struct(std::vector<std::byte>& out, const T& v) {
  auto p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

std::error_code errc_code(std::errc e) { return std::make_error_code(e); }
/// errno values in the generic category, so callers compare with std::errc codes.
std::error_code from_boost(const boost::system::error_code& ec) {
  if (ec.category() == boost::system::system_category()) return std::error_code(ec.value(), std::generic_category());
  return errc_code(std::errc::connection_reset);  // asio's misc errors (eof...) end the connection
}

// ---- registration table -------------------------------------------------------------------

struct table_entry {
  std::byte* base;
  std::size_t size;
  remote_access access;
};

/// 0 if `e` allows `op` on [addr, addr + len), else the errno it is refused with.
int check_access(const table_entry& e, std::uint64_t addr, std::uint64_t len, op_kind op) {
  if (op != op_kind::read && op != op_kind::write) return EACCES;
  if (!allows(e.access, op == op_kind::write ? remote_access::write : remote_access::read)) return EACCES;
  auto base = reinterpret_cast<std::uint64_t>(e.base);
  if (addr < base || len > e.size || addr - base > e.size - len) return EACCES;  // out of bounds
  return 0;
}

/// The owner's registrations. Shared by the fabric, its registrations and its endpoints.
class registration_table {
 public:
  registration_table() {
    std::random_device rd;
    next_ = rd();  // handles start at a random point and are never reused
  }
  std::uint32_t add(std::byte* base, std::size_t size, remote_access a) {
    std::lock_guard lock(mu_);
    if (issued_ == std::numeric_limits<std::uint32_t>::max())
      throw std::system_error(errc_code(std::errc::no_buffer_space), "cma: registration handles exhausted");
    ++issued_;
    std::uint32_t h = next_++;
    entries_.emplace(h, table_entry{base, size, a});
    return h;
  }
  void remove(std::uint32_t h) {
    std::lock_guard lock(mu_);
    entries_.erase(h);
  }
  registration_counts counts() const {
    std::lock_guard lock(mu_);
    return {issued_, entries_.size()};
  }
  /// 0 if the access is allowed, else the errno it is refused with.
  int validate(std::uint32_t handle, std::uint64_t addr, std::uint64_t len, op_kind op) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(handle);
    if (it == entries_.end()) return EACCES;  // forged or stale
    return check_access(it->second, addr, len, op);
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::uint32_t, table_entry> entries_;
  std::uint32_t next_ = 0;
  std::uint32_t issued_ = 0;
};

class cma_endpoint;

/// A registration, and the endpoints it was granted on (endpoint::grant), which learn of
/// its end.
class cma_registration final : public memory_registration {
 public:
  cma_registration(std::shared_ptr<registration_table> t, std::uint32_t h, std::byte* d, std::size_t n,
                   remote_access a)
      : memory_registration(h, d, n, a), table_(std::move(t)) {}
  ~cma_registration() override;

  const registration_table* table() const { return table_.get(); }
  /// Records a grant on `ep`; false when it was granted there already. Thread-safe.
  bool add_grantee(const std::shared_ptr<cma_endpoint>& ep) const;

 private:
  std::shared_ptr<registration_table> table_;
  mutable std::mutex mu_;
  mutable std::vector<std::weak_ptr<cma_endpoint>> grantees_;
};

// ---- one-sided transfer ------------------------------------------------------------------

/// Moves bytes between local iovecs and ONE remote range of `pid`, resuming after partial
/// transfers. Returns 0 or an errno value.
int transfer(pid_t pid, std::vector<iovec> local, std::uint64_t remote_addr, std::size_t total, bool write) {
  std::size_t done = 0;
  std::size_t first = 0;  // index of the first local iovec not yet fully moved
  // Each round moves at least one byte or fails, so `total + 1` rounds bound the loop.
  for (std::size_t round = 0; done < total && round <= total; ++round) {
    iovec remote{reinterpret_cast<void*>(remote_addr + done), total - done};
    std::size_t n_local = std::min<std::size_t>(local.size() - first, IOV_MAX);
    ssize_t n = write ? ::process_vm_writev(pid, local.data() + first, n_local, &remote, 1, 0)
                      : ::process_vm_readv(pid, local.data() + first, n_local, &remote, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
    std::size_t left = static_cast<std::size_t>(n);
    while (left > 0 && first < local.size()) {
      if (left >= local[first].iov_len) {
        left -= local[first].iov_len;
        ++first;
      } else {
        local[first].iov_base = static_cast<char*>(local[first].iov_base) + left;
        local[first].iov_len -= left;
        left = 0;
      }
    }
  }
  return done == total ? 0 : EIO;
}

// ---- endpoint ------------------------------------------------------------------------------

class cma_endpoint final : public endpoint {
 public:
  cma_endpoint(seqpacket::socket sock, std::shared_ptr<registration_table> table, const endpoint_options& opts,
               std::vector<std::byte> peer_pd, std::size_t peer_recv, pid_t peer_pid)
      : sock_(std::move(sock)),
        strand_(asio::make_strand(sock_.get_executor())),
        table_(std::move(table)),
        recv_size_(opts.recv_size),
        max_recv_(opts.max_recv),
        peer_pd_(std::move(peer_pd)),
        peer_recv_(peer_recv),
        peer_pid_(peer_pid),
        rx_(std::max<std::size_t>(recv_size_, 64) + sizeof(packet_head) + 64) {}

  void start(recv_handler on_recv, close_handler on_close) override {
    asio::dispatch(strand_, [self = shared(), on_recv = std::move(on_recv), on_close = std::move(on_close)]() mutable {
      self->on_recv_ = std::move(on_recv);
      self->on_close_ = std::move(on_close);
      self->read_next();
    });
  }

  std::uint32_t post_recv(std::uint32_t n) override {
    std::uint32_t cur = posted_.load();
    for (;;) {
      std::uint32_t add = std::min(n, max_recv_ - std::min(cur, max_recv_));
      if (posted_.compare_exchange_weak(cur, cur + add)) return add;
    }
  }
  std::uint32_t posted_receives() const override { return posted_.load(); }

  void post_send(std::vector<bytes_view> gather, completion done) override {
    std::size_t total = 0;
    for (auto g : gather) total += g.size();
    if (total > peer_recv_) {
      asio::post(strand_, [done = std::move(done)] { done(errc_code(std::errc::message_size)); });
      return;
    }
    outgoing o;
    append_struct(o.head, packet_head{kind::message, 0, 0});
    o.gather = std::move(gather);
    o.done = std::move(done);
    enqueue(std::move(o));
  }

  void rdma_write(rpc::rdma::segment remote, std::vector<bytes_view> local, completion done) override {
    std::size_t total = 0;
    for (auto l : local) total += l.size();
    if (total > remote.length) {
      asio::post(strand_, [done = std::move(done)] { done(errc_code(std::errc::invalid_argument)); });
      return;
    }
    pending_op p;
    p.op = op_kind::write;
    p.remote = remote;
    p.total = total;
    for (auto l : local)
      if (!l.empty()) p.iov.push_back({const_cast<std::byte*>(l.data()), l.size()});
    p.done = std::move(done);
    start_op(std::move(p));
  }

  void rdma_read(rpc::rdma::segment remote, std::span<std::byte> local, completion done) override {
    if (local.size() != remote.length) {
      asio::post(strand_, [done = std::move(done)] { done(errc_code(std::errc::invalid_argument)); });
      return;
    }
    pending_op p;
    p.op = op_kind::read;
    p.remote = remote;
    p.total = local.size();
    if (!local.empty()) p.iov.push_back({local.data(), local.size()});
    p.done = std::move(done);
    start_op(std::move(p));
  }

  void grant(const memory_registration& r) override {
    auto* reg = dynamic_cast<const cma_registration*>(&r);
    if (reg == nullptr || reg->table() != table_.get() || !reg->add_grantee(shared())) return;
    outgoing o;
    append_struct(o.head, packet_head{kind::grant, 0, 0});
    append_struct(o.head, grant_body{r.handle(), r.access(), reinterpret_cast<std::uint64_t>(r.data()), r.size()});
    enqueue(std::move(o));
  }
  /// Tells the peer that the grant of `handle` is withdrawn (its registration is gone).
  void revoke(std::uint32_t handle) {
    outgoing o;
    append_struct(o.head, packet_head{kind::revoke, 0, handle});
    enqueue(std::move(o));
  }

  std::span<const std::byte> peer_private_data() const override { return peer_pd_; }
  std::size_t peer_recv_size() const override { return peer_recv_; }
  void close() override {
    asio::dispatch(strand_, [self = shared()] { self->shut({}); });
  }
  bool is_open() const override { return !closed_.load(); }
  std::string peer() const override { return "cma:pid " + std::to_string(peer_pid_); }

 private:
  struct outgoing {
    std::vector<std::byte> head;
    std::vector<bytes_view> gather;
    completion done;  // may be empty (control packets)
  };
  struct pending_op {
    op_kind op = op_kind::read;
    rpc::rdma::segment remote;
    std::size_t total = 0;
    std::vector<iovec> iov;
    completion done;
  };

  std::shared_ptr<cma_endpoint> shared() { return std::static_pointer_cast<cma_endpoint>(shared_from_this()); }

  void enqueue(outgoing o) {
    asio::dispatch(strand_, [self = shared(), o = std::move(o)]() mutable {
      if (self->closed_) {
        if (o.done) o.done(errc_code(std::errc::not_connected));
        return;
      }
      self->queue_.push_back(std::move(o));
      self->write_next();
    });
  }

  void write_next() {
    if (writing_ || queue_.empty() || closed_) return;
    writing_ = true;
    const outgoing& o = queue_.front();
    std::vector<asio::const_buffer> bufs;
    bufs.emplace_back(o.head.data(), o.head.size());
    for (auto g : o.gather) bufs.emplace_back(g.data(), g.size());
    sock_.async_send(bufs, 0, asio::bind_executor(strand_, [self = shared()](boost::system::error_code ec, std::size_t) {
      self->writing_ = false;
      if (self->queue_.empty()) return;  // shut() already failed everything
      outgoing o = std::move(self->queue_.front());
      self->queue_.pop_front();
      if (o.done) o.done(ec ? from_boost(ec) : std::error_code{});
      if (ec) return self->shut(from_boost(ec));
      self->write_next();
    }));
  }

  void start_op(pending_op p) {
    asio::dispatch(strand_, [self = shared(), p = std::move(p)]() mutable {
      if (self->closed_) return p.done(errc_code(std::errc::not_connected));
      // Pre-authorized by the owner (a grant): checked here, done at once, no message.
      if (auto g = self->peer_grants_.find(p.remote.handle); g != self->peer_grants_.end()) {
        if (check_access(g->second, p.remote.offset, p.remote.length, p.op) != 0)
          return p.done(errc_code(std::errc::permission_denied));
        const int err =
            p.total == 0 ? 0 : transfer(self->peer_pid_, std::move(p.iov), p.remote.offset, p.total, p.op == op_kind::write);
        return p.done(err == 0 ? std::error_code{} : std::error_code(err, std::generic_category()));
      }
      if (self->ops_.size() >= max_pending_ops) return p.done(errc_code(std::errc::resource_unavailable_try_again));
      std::uint64_t id = ++self->next_op_;
      outgoing o;
      append_struct(o.head, packet_head{kind::access_req, 0, id});
      append_struct(o.head, access_body{p.op, p.remote.handle, p.remote.offset, p.remote.length});
      self->ops_.emplace(id, std::move(p));
      self->queue_.push_back(std::move(o));
      self->write_next();
    });
  }

  void read_next() {
    if (closed_) return;
    sock_.async_receive(asio::buffer(rx_), rx_flags_,
                        asio::bind_executor(strand_, [self = shared()](boost::system::error_code ec, std::size_t n) {
                          if (self->closed_) return;
                          if (ec) return self->shut(ec == asio::error::eof ? errc_code(std::errc::connection_reset)
                                                                           : from_boost(ec));
                          if (n == 0) return self->shut(errc_code(std::errc::connection_reset));  // peer closed
                          if (!self->on_packet(std::span<const std::byte>(self->rx_.data(), n))) return;
                          self->read_next();
                        }));
  }

  /// False when the connection was shut.
  bool on_packet(std::span<const std::byte> pkt) {
    packet_head h;
    if (pkt.size() == rx_.size() || !read_struct(pkt, 0, h)) {
      shut(errc_code(pkt.size() == rx_.size() ? std::errc::message_size : std::errc::protocol_error));
      return false;
    }
    auto body = pkt.subspan(sizeof(packet_head));
    switch (h.k) {
      case kind::message: {
        if (body.size() > recv_size_) {
          shut(errc_code(std::errc::message_size));
          return false;
        }
        std::uint32_t cur = posted_.load();
        do {
          if (cur == 0) {  // receiver not ready: fatal, as an RNR error with no retries
            shut(errc_code(std::errc::no_buffer_space));
            return false;
          }
        } while (!posted_.compare_exchange_weak(cur, cur - 1));
        if (on_recv_) on_recv_(body);
        return !closed_;
      }
      case kind::access_req: {
        access_body a;
        if (!read_struct(body, 0, a)) {
          shut(errc_code(std::errc::protocol_error));
          return false;
        }
        int verdict = table_->validate(a.handle, a.addr, a.length, a.op);
        outgoing o;
        append_struct(o.head, packet_head{kind::access_rsp, static_cast<std::uint32_t>(verdict), h.id});
        queue_.push_back(std::move(o));
        write_next();
        return true;
      }
      case kind::grant: {
        grant_body g;
        if (!read_struct(body, 0, g) ||
            (peer_grants_.size() >= max_peer_grants && peer_grants_.count(g.handle) == 0)) {
          shut(errc_code(std::errc::protocol_error));
          return false;
        }
        // The peer describes its own memory: a false description only misdirects accesses
        // into the peer itself.
        peer_grants_[g.handle] = table_entry{reinterpret_cast<std::byte*>(g.base), static_cast<std::size_t>(g.size), g.access};
        return true;
      }
      case kind::revoke:
        peer_grants_.erase(static_cast<std::uint32_t>(h.id));
        return true;
      case kind::access_rsp: {
        auto it = ops_.find(h.id);
        if (it == ops_.end()) {
          shut(errc_code(std::errc::protocol_error));
          return false;
        }
        pending_op p = std::move(it->second);
        ops_.erase(it);
        if (h.status != 0) {
          p.done(errc_code(std::errc::permission_denied));
          return !closed_;
        }
        int err = p.total == 0 ? 0 : transfer(peer_pid_, std::move(p.iov), p.remote.offset, p.total, p.op == op_kind::write);
        p.done(err == 0 ? std::error_code{} : std::error_code(err, std::generic_category()));
        return !closed_;
      }
      default:
        shut(errc_code(std::errc::protocol_error));
        return false;
    }
  }

  void shut(std::error_code why) {
    if (closed_.exchange(true)) return;
    boost::system::error_code ignore;
    sock_.shutdown(seqpacket::socket::shutdown_both, ignore);
    sock_.close(ignore);
    auto ops = std::move(ops_);
    ops_.clear();
    auto queue = std::move(queue_);
    queue_.clear();
    std::error_code cancelled = errc_code(std::errc::operation_canceled);
    for (auto& [id, p] : ops) p.done(cancelled);
    for (auto& o : queue)
      if (o.done) o.done(cancelled);
    if (auto cb = std::move(on_close_)) cb(why);
    // The receive handler may be running (shut from inside it): drop it once it returned.
    asio::post(strand_, [self = shared()] { self->on_recv_ = nullptr; });
  }

  seqpacket::socket sock_;
  asio::strand<asio::any_io_executor> strand_;
  std::shared_ptr<registration_table> table_;
  std::size_t recv_size_;
  std::uint32_t max_recv_;
  std::vector<std::byte> peer_pd_;
  std::size_t peer_recv_;
  pid_t peer_pid_;
  std::atomic<std::uint32_t> posted_{0};
  std::atomic<bool> closed_{false};

  // Strand only.
  std::vector<std::byte> rx_;
  asio::socket_base::message_flags rx_flags_ = 0;
  recv_handler on_recv_;
  close_handler on_close_;
  std::deque<outgoing> queue_;
  bool writing_ = false;
  std::unordered_map<std::uint64_t, pending_op> ops_;
  std::uint64_t next_op_ = 0;
  std::unordered_map<std::uint32_t, table_entry> peer_grants_;  // what the peer pre-authorized
};

cma_registration::~cma_registration() {
  table_->remove(handle());
  std::lock_guard lock(mu_);
  for (auto& weak : grantees_)
    if (auto ep = weak.lock()) ep->revoke(handle());
}

bool cma_registration::add_grantee(const std::shared_ptr<cma_endpoint>& ep) const {
  std::lock_guard lock(mu_);
  std::erase_if(grantees_, [](const std::weak_ptr<cma_endpoint>& w) { return w.expired(); });
  for (const auto& w : grantees_)
    if (w.lock() == ep) return false;
  grantees_.push_back(ep);
  return true;
}

pid_t peer_pid_of(seqpacket::socket& s) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
  return cred.pid;
}

std::vector<std::byte> hello_packet(kind k, const endpoint_options& opts) {
  std::vector<std::byte> out;
  append_struct(out, packet_head{k, 0, 0});
  append_struct(out, hello_body{static_cast<std::uint32_t>(opts.recv_size), 0});
  out.insert(out.end(), opts.private_data.begin(), opts.private_data.end());
  return out;
}

/// Parses a hello/hello_ack: the peer's receive size and private data.
bool parse_hello(std::span<const std::byte> pkt, kind expected, std::size_t& recv_size, std::vector<std::byte>& pd) {
  packet_head h;
  hello_body b;
  if (!read_struct(pkt, 0, h) || h.k != expected || !read_struct(pkt, sizeof(h), b)) return false;
  if (b.recv_size < 64) return false;
  recv_size = b.recv_size;
  auto rest = pkt.subspan(sizeof(h) + sizeof(b));
  pd.assign(rest.begin(), rest.end());
  return true;
}

constexpr std::size_t max_private_data = 196;  // as rdma_cm allows for RC connections

seqpacket::endpoint address_of(const std::string& host, std::uint16_t port) {
  std::string name = socket_name(host, port);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, then the name, not NUL-terminated.
  std::size_t n = std::min(name.size(), sizeof(sa.sun_path) - 1);
  std::memcpy(sa.sun_path + 1, name.data(), n);
  return seqpacket::endpoint(&sa, offsetof(sockaddr_un, sun_path) + 1 + n, 0);
}

/// A connection being set up: the socket, a deadline, and the buffer for the hello.
struct handshake {
  explicit handshake(asio::any_io_executor ex) : sock(ex), timer(ex) {}
  seqpacket::socket sock;
  asio::steady_timer timer;
  std::vector<std::byte> buf = std::vector<std::byte>(sizeof(packet_head) + sizeof(hello_body) + max_private_data + 1);
  std::vector<std::byte> out;
  asio::socket_base::message_flags flags = 0;
};

class cma_listener final : public listener {
 public:
  cma_listener(asio::io_context& io, std::shared_ptr<registration_table> table, std::string host,
               std::uint16_t port, const endpoint_options& opts, fabric::accept_handler on_accept)
      : state_(std::make_shared<state>(io, std::move(table), opts, std::move(on_accept))), host_(std::move(host)) {
    std::mt19937 rng(std::random_device{}());
    // Port 0: try random ports; the abstract namespace has no ephemeral allocator.
    for (int attempt = 0; attempt < 200; ++attempt) {
      std::uint16_t p = port != 0 ? port : static_cast<std::uint16_t>(20000 + rng() % 40000);
      boost::system::error_code ec;
      state_->acceptor.open(seqpacket(AF_UNIX, 0), ec);
      if (!ec) state_->acceptor.bind(address_of(host_, p), ec);
      if (!ec) state_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
      if (!ec) {
        port_ = p;
        break;
      }
      boost::system::error_code ignore;
      state_->acceptor.close(ignore);
      if (port != 0 || ec != asio::error::address_in_use)
        throw std::system_error(from_boost(ec), "cma: listen on " + socket_name(host_, p));
    }
    if (port_ == 0) throw std::system_error(errc_code(std::errc::address_in_use), "cma: no free port");
    accept_next(state_);
  }
  ~cma_listener() override {
    asio::dispatch(state_->acceptor.get_executor(), [s = state_] {
      s->stopped = true;
      boost::system::error_code ignore;
      s->acceptor.close(ignore);
    });
  }
  std::string address() const override { return host_ + ":" + std::to_string(port_); }
  std::uint16_t port() const override { return port_; }

 private:
  struct state {
    state(asio::io_context& io_, std::shared_ptr<registration_table> t, const endpoint_options& o,
          fabric::accept_handler a)
        : io(io_), acceptor(io_), table(std::move(t)), opts(o), on_accept(std::move(a)) {}
    asio::io_context& io;
    seqpacket_acceptor acceptor;
    std::shared_ptr<registration_table> table;
    endpoint_options opts;
    fabric::accept_handler on_accept;
    bool stopped = false;
  };

  static void accept_next(std::shared_ptr<state> s) {
    auto hs = std::make_shared<handshake>(s->io.get_executor());
    s->acceptor.async_accept(hs->sock, [s, hs](boost::system::error_code ec) {
      if (s->stopped || ec == asio::error::operation_aborted) return;
      if (!ec) {
        greet(s, hs);
        return accept_next(s);
      }
      // E.g. out of descriptors: try again a little later instead of spinning.
      auto t = std::make_shared<asio::steady_timer>(s->io, std::chrono::milliseconds(100));
      t->async_wait([s, t](boost::system::error_code) {
        if (!s->stopped) accept_next(s);
      });
    });
  }

  /// Reads the connector's hello (bounded by handshake_timeout), answers with ours.
  static void greet(std::shared_ptr<state> s, std::shared_ptr<handshake> hs) {
    hs->timer.expires_after(handshake_timeout);
    hs->timer.async_wait([hs](boost::system::error_code ec) {
      if (!ec) {
        boost::system::error_code ignore;
        hs->sock.close(ignore);
      }
    });
    hs->sock.async_receive(asio::buffer(hs->buf), hs->flags, [s, hs](boost::system::error_code ec, std::size_t n) {
      hs->timer.cancel();
      std::size_t peer_recv = 0;
      std::vector<std::byte> pd;
      if (ec || n == hs->buf.size() || !parse_hello(std::span(hs->buf).first(n), kind::hello, peer_recv, pd)) return;
      pid_t pid = peer_pid_of(hs->sock);
      if (pid <= 0) return;
      hs->out = hello_packet(kind::hello_ack, s->opts);
      boost::system::error_code wec;
      hs->sock.send(asio::buffer(hs->out), 0, wec);  // small; the socket buffer is empty
      if (wec || s->stopped) return;
      auto ep = std::make_shared<cma_endpoint>(std::move(hs->sock), s->table, s->opts, std::move(pd), peer_recv, pid);
      s->on_accept(std::move(ep));
    });
  }

  std::shared_ptr<state> state_;
  std::string host_;
  std::uint16_t port_ = 0;
};

class cma_fabric final : public fabric {
 public:
  explicit cma_fabric(asio::io_context& io) : io_(io), table_(std::make_shared<registration_table>()) {}

  std::string_view provider() const override { return "cma"; }
  asio::io_context& context() const override { return io_; }

  std::unique_ptr<memory_registration> register_memory(void* data, std::size_t size, remote_access a) override {
    if (data == nullptr || size == 0) throw std::system_error(errc_code(std::errc::invalid_argument), "cma: empty registration");
    auto* base = static_cast<std::byte*>(data);
    std::uint32_t h = table_->add(base, size, a);
    return std::make_unique<cma_registration>(table_, h, base, size, a);
  }
  registration_counts registrations() const override { return table_->counts(); }

  std::unique_ptr<listener> listen(const std::string& host, std::uint16_t port, const endpoint_options& opts,
                                   accept_handler on_accept) override {
    if (opts.private_data.size() > max_private_data)
      throw std::system_error(errc_code(std::errc::invalid_argument), "cma: private data too long");
    return std::make_unique<cma_listener>(io_, table_, host, port, opts, std::move(on_accept));
  }

  void connect(const std::string& host, std::uint16_t port, const endpoint_options& opts,
               connect_handler done) override {
    auto hs = std::make_shared<handshake>(io_.get_executor());
    auto table = table_;
    auto finish = std::make_shared<connect_handler>(std::move(done));
    auto fail = [hs, finish](std::error_code ec) {
      if (!*finish) return;
      auto cb = std::move(*finish);
      *finish = nullptr;
      hs->timer.cancel();
      boost::system::error_code ignore;
      hs->sock.close(ignore);
      cb(ec, nullptr);
    };
    if (opts.private_data.size() > max_private_data) {
      asio::post(io_, [fail] { fail(errc_code(std::errc::invalid_argument)); });
      return;
    }
    hs->timer.expires_after(handshake_timeout);
    hs->timer.async_wait([fail](boost::system::error_code ec) {
      if (!ec) fail(errc_code(std::errc::timed_out));
    });
    hs->out = hello_packet(kind::hello, opts);
    hs->sock.async_connect(address_of(host, port), [hs, table, opts, finish, fail](boost::system::error_code ec) {
      if (ec) return fail(ec == asio::error::not_found || ec.value() == ENOENT ? errc_code(std::errc::connection_refused)
                                                                               : from_boost(ec));
      hs->sock.async_send(asio::buffer(hs->out), 0, [hs, table, opts, finish, fail](boost::system::error_code ec, std::size_t) {
        if (ec) return fail(from_boost(ec));
        hs->sock.async_receive(asio::buffer(hs->buf), hs->flags,
                               [hs, table, opts, finish, fail](boost::system::error_code ec, std::size_t n) {
                                 std::size_t peer_recv = 0;
                                 std::vector<std::byte> pd;
                                 if (ec) return fail(from_boost(ec));
                                 if (n == hs->buf.size() ||
                                     !parse_hello(std::span(hs->buf).first(n), kind::hello_ack, peer_recv, pd))
                                   return fail(errc_code(std::errc::protocol_error));
                                 pid_t pid = peer_pid_of(hs->sock);
                                 if (pid <= 0) return fail(errc_code(std::errc::protocol_error));
                                 if (!*finish) return;  // timed out meanwhile
                                 hs->timer.cancel();
                                 auto cb = std::move(*finish);
                                 *finish = nullptr;
                                 cb({}, std::make_shared<cma_endpoint>(std::move(hs->sock), table, opts, std::move(pd),
                                                                       peer_recv, pid));
                               });
      });
    });
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<registration_table> table_;
};

}  // namespace

std::string socket_name(const std::string& host, std::uint16_t port) {
  return "vnfs-rdma-cma/" + host + ":" + std::to_string(port);
}

std::unique_ptr<fabric> make_fabric(boost::asio::io_context& io) { return std::make_unique<cma_fabric>(io); }

}  // namespace vnfs::transport::rdma::cma
