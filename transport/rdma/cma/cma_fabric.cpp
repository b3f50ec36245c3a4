#include "transport/rdma/cma/cma_fabric.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <shared_mutex>
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
  revoke = 7,      // id: a handle of the sender's that the receiver may no longer access
  revoke_ack = 8,  // id: the handle of a revoke processed: no access under it follows
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

/// A readers-writer lock on which a waiting writer holds back new readers (glibc's
/// PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP; std::shared_mutex prefers readers, and
/// overlapping readers could then keep a writer out indefinitely). A reader must not take it
/// twice. Meets the SharedMutex requirements (std::shared_lock, std::lock_guard).
class writer_first_rwlock {
 public:
  writer_first_rwlock() {
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&l_, &a);
    pthread_rwlockattr_destroy(&a);
  }
  ~writer_first_rwlock() { pthread_rwlock_destroy(&l_); }
  writer_first_rwlock(const writer_first_rwlock&) = delete;
  writer_first_rwlock& operator=(const writer_first_rwlock&) = delete;
  void lock() { pthread_rwlock_wrlock(&l_); }
  void unlock() { pthread_rwlock_unlock(&l_); }
  void lock_shared() { pthread_rwlock_rdlock(&l_); }
  void unlock_shared() { pthread_rwlock_unlock(&l_); }

 private:
  pthread_rwlock_t l_;
};

class cma_endpoint;

/// An endpoint that may access a registration with no further word from its owner: it
/// holds a grant of it, or was answered yes to an access request under it (the transfer
/// follows the answer).
struct registration_user {
  const cma_endpoint* id;  // names the endpoint while `ep` has not expired
  std::weak_ptr<cma_endpoint> ep;
  bool granted;
};

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
    entries_.emplace(h, entry{table_entry{base, size, a}, {}});
    return h;
  }
  /// Ends registration `h`: every later request under it is refused. Returns its users.
  std::vector<registration_user> remove(std::uint32_t h) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(h);
    if (it == entries_.end()) return {};
    auto users = std::move(it->second.users);
    entries_.erase(it);
    return users;
  }
  registration_counts counts() const {
    std::lock_guard lock(mu_);
    return {issued_, entries_.size()};
  }
  /// Records that `ep` holds a grant of `h`: false when `h` is gone or `ep` holds one already.
  bool add_grantee(std::uint32_t h, cma_endpoint& ep);
  /// 0 if the access is allowed, and then `asker` is recorded as a user of the
  /// registration; else the errno it is refused with.
  int validate(std::uint32_t handle, std::uint64_t addr, std::uint64_t len, op_kind op, cma_endpoint& asker);

 private:
  struct entry {
    table_entry range;
    std::vector<registration_user> users;
  };
  /// The record of `ep` among `e`'s users, made (not granted) when missing.
  static registration_user& user_of(entry& e, cma_endpoint& ep);

  mutable std::mutex mu_;
  std::unordered_map<std::uint32_t, entry> entries_;
  std::uint32_t next_ = 0;
  std::uint32_t issued_ = 0;
};

/// A deregistration waiting for the endpoints that used its registration: each settles its
/// slot when its peer acknowledged the revoke or its peer's socket is gone. Thread-safe.
class revocation {
 public:
  explicit revocation(std::size_t n) : settled_(n, false), left_(n) {}
  void settle(std::size_t slot) {
    std::lock_guard lock(mu_);
    if (slot >= settled_.size() || settled_[slot]) return;
    settled_[slot] = true;
    if (--left_ == 0) cv_.notify_all();
  }
  /// Waits until every slot settled or `deadline`; returns the slots not settled.
  std::vector<std::size_t> wait_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [this] { return left_ == 0; });
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < settled_.size(); ++i)
      if (!settled_[i]) open.push_back(i);
    return open;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> settled_;
  std::size_t left_;
};

/// A registration. Its destructor revokes it from its users (see the header's security model).
class cma_registration final : public memory_registration {
 public:
  cma_registration(std::shared_ptr<registration_table> t, std::uint32_t h, std::byte* d, std::size_t n,
                   remote_access a)
      : memory_registration(h, d, n, a), table_(std::move(t)) {}
  ~cma_registration() override;

  const registration_table* table() const { return table_.get(); }

 private:
  std::shared_ptr<registration_table> table_;
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

/// Ends of a connection: shut() stops its traffic and sends the peer the end of the
/// connection, but keeps the socket until the peer's is gone (bounded by the revoke
/// timeout): only then can the peer no longer use a grant (finish()).
class cma_endpoint final : public endpoint {
 public:
  cma_endpoint(asio::io_context& io, seqpacket::socket sock, std::shared_ptr<registration_table> table,
               const endpoint_options& opts, const fabric_options& fopts, std::vector<std::byte> peer_pd,
               std::size_t peer_recv, pid_t peer_pid)
      : io_(io),
        sock_(std::move(sock)),
        strand_(asio::make_strand(sock_.get_executor())),
        timer_(sock_.get_executor()),
        revoke_timeout_(fopts.revoke_timeout),
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
    if (reg == nullptr || reg->table() != table_.get() || !table_->add_grantee(r.handle(), *this)) return;
    outgoing o;
    append_struct(o.head, packet_head{kind::grant, 0, 0});
    append_struct(o.head, grant_body{r.handle(), r.access(), reinterpret_cast<std::uint64_t>(r.data()), r.size()});
    enqueue(std::move(o));
  }
  /// Withdraws the peer's use of `handle` (its registration is gone): sends a revoke, which
  /// the peer answers once it accesses nothing under the handle any more. `waiter` (may be
  /// null) settles `slot` then, or when the peer's socket is gone. A revoke unanswered for
  /// the revoke timeout shuts the connection. Thread-safe.
  void revoke(std::uint32_t handle, std::shared_ptr<revocation> waiter, std::size_t slot) {
    // Recorded and sent before this returns, so that the revoke comes ahead of anything
    // sent here afterwards, from whatever thread.
    const auto deadline = std::chrono::steady_clock::now() + revoke_timeout_;
    bool settle = false, send = false, arm = false;
    {
      std::lock_guard lock(send_mu_);
      if (gone_) {
        settle = true;
      } else {
        auto [it, fresh] = revoking_.try_emplace(handle, pending_revoke{waiter, slot, deadline});
        settle = !fresh;             // a handle is revoked once per connection; nothing to add
        send = fresh && !closed_;    // once closed: settled when the peer's socket is gone
        arm = send && revoking_.size() == 1;
      }
    }
    if (settle && waiter) waiter->settle(slot);
    if (!send) return;
    outgoing o;
    append_struct(o.head, packet_head{kind::revoke, 0, handle});
    enqueue(std::move(o));
    if (arm)
      asio::dispatch(strand_, [self = shared(), deadline] {
        if (!self->gone_) self->arm_timer(deadline);
      });
  }
  /// Whether the calling thread is running this endpoint's io_context: it cannot wait for
  /// what that io_context delivers.
  bool on_io_thread() const { return io_.get_executor().running_in_this_thread(); }
  /// Whether nothing runs this endpoint's io_context any more.
  bool io_stopped() const { return io_.stopped(); }
  std::chrono::milliseconds revoke_timeout() const { return revoke_timeout_; }
  /// Ends the connection at once, from any thread: both directions of the socket shut down
  /// (the strand, if it still runs, then finds its end). The peer reads the end of the
  /// connection; it may still use grants until it has.
  void cut() {
    std::lock_guard lock(fd_mu_);
    if (!fd_closed_) ::shutdown(sock_.native_handle(), SHUT_RDWR);
  }

  std::span<const std::byte> peer_private_data() const override { return peer_pd_; }
  std::size_t peer_recv_size() const override { return peer_recv_; }
  void close() override {
    {
      // Nothing queued is sent once close() returns: its memory may go then.
      std::lock_guard lock(send_mu_);
      halted_ = true;
    }
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
  struct pending_revoke {
    std::shared_ptr<revocation> waiter;  // null: nobody waits
    std::size_t slot;
    std::chrono::steady_clock::time_point deadline;
  };

  std::shared_ptr<cma_endpoint> shared() { return std::static_pointer_cast<cma_endpoint>(shared_from_this()); }

  /// Sends `o` after everything queued before it, from any thread. When nothing is queued
  /// or waiting for room, the calling thread sends it at once (a non-blocking sendmsg, as
  /// a verbs post_send hands its work request to the NIC from the caller's thread) and runs
  /// its completion itself; otherwise it joins the queue, which the strand sends.
  void enqueue(outgoing o) {
    {
      std::unique_lock lock(send_mu_);
      const bool stopped = closed_ || halted_;
      if (!stopped && !writing_ && queue_.empty()) {
        const int err = send_now(o);
        if (err != EAGAIN && err != EWOULDBLOCK) {
          lock.unlock();
          if (err != 0)
            asio::dispatch(strand_, [self = shared(), err] { self->shut(std::error_code(err, std::generic_category())); });
          if (o.done) o.done(err == 0 ? std::error_code{} : std::error_code(err, std::generic_category()));
          return;
        }
      }
      if (!stopped) {
        queue_.push_back(std::move(o));
        if (writing_) return;  // the strand sends it when there is room
        lock.unlock();
        asio::dispatch(strand_, [self = shared()] { self->write_next(); });
        return;
      }
    }
    if (o.done) o.done(errc_code(std::errc::not_connected));
  }

  /// One packet, sent without blocking: 0, or the errno of sendmsg (EAGAIN: no room in the
  /// socket's buffer; EBADF once the socket is closed).
  int send_now(const outgoing& o) {
    std::vector<iovec> iov;
    iov.reserve(1 + o.gather.size());
    iov.push_back({const_cast<std::byte*>(o.head.data()), o.head.size()});
    for (auto g : o.gather)
      if (!g.empty()) iov.push_back({const_cast<std::byte*>(g.data()), g.size()});
    std::vector<std::byte> flat;  // more pieces than one sendmsg takes: one piece
    if (iov.size() > static_cast<std::size_t>(IOV_MAX)) {
      for (const iovec& v : iov) flat.insert(flat.end(), static_cast<std::byte*>(v.iov_base), static_cast<std::byte*>(v.iov_base) + v.iov_len);
      iov.assign(1, iovec{flat.data(), flat.size()});
    }
    msghdr m{};
    m.msg_iov = iov.data();
    m.msg_iovlen = iov.size();
    std::lock_guard lock(fd_mu_);
    if (fd_closed_) return EBADF;
    for (;;) {
      if (::sendmsg(sock_.native_handle(), &m, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) return 0;
      if (errno != EINTR) return errno;
    }
  }

  /// Sends the queue in order, on the strand; waits for room when the socket's buffer is full.
  void write_next() {
    std::unique_lock lock(send_mu_);
    while (!writing_ && !queue_.empty() && !closed_ && !halted_) {
      const int err = send_now(queue_.front());
      if (err == EAGAIN || err == EWOULDBLOCK) {
        writing_ = true;
        lock.unlock();
        sock_.async_wait(seqpacket::socket::wait_write,
                         asio::bind_executor(strand_, [self = shared()](boost::system::error_code ec) {
                           {
                             std::lock_guard lock(self->send_mu_);
                             self->writing_ = false;
                           }
                           if (ec) return self->shut(from_boost(ec));
                           self->write_next();
                         }));
        return;
      }
      outgoing o = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      const std::error_code ec = err == 0 ? std::error_code{} : std::error_code(err, std::generic_category());
      if (o.done) o.done(ec);
      if (ec) return shut(ec);
      lock.lock();
    }
  }

  /// An access the owner pre-authorized (a grant) is checked and done at once, in the
  /// calling thread, with no message, and completes there: the threads that make replies
  /// move their payloads themselves and side by side, as a NIC's DMA would run beside the
  /// CPUs, instead of one after another on this endpoint's strand. Without a grant, the
  /// owner is asked first (access_req), and the transfer and its completion run on the
  /// strand.
  void start_op(pending_op p) {
    if (std::optional<std::error_code> ec = transfer_if_granted(p)) return p.done(*ec);
    asio::dispatch(strand_, [self = shared(), p = std::move(p)]() mutable {
      if (self->closed_) return p.done(errc_code(std::errc::not_connected));
      // A grant that arrived since start_op looked.
      if (std::optional<std::error_code> ec = self->transfer_if_granted(p)) return p.done(*ec);
      if (self->ops_.size() >= max_pending_ops) return p.done(errc_code(std::errc::resource_unavailable_try_again));
      std::uint64_t id = ++self->next_op_;
      outgoing o;
      append_struct(o.head, packet_head{kind::access_req, 0, id});
      append_struct(o.head, access_body{p.op, p.remote.handle, p.remote.offset, p.remote.length});
      self->ops_.emplace(id, std::move(p));
      self->enqueue(std::move(o));
    });
  }

  /// When the peer granted the handle `p` names: checks `p` against the grant and moves its
  /// bytes (any thread). The outcome, or nothing without a grant. grants_mu_ is held
  /// shared from the check to the end of the transfer, so a revoke, which erases the grant
  /// holding it exclusively, is acknowledged only once no transfer under the grant is in
  /// progress; a waiting revoke holds back later transfers (writer_first_rwlock).
  std::optional<std::error_code> transfer_if_granted(pending_op& p) {
    std::shared_lock lock(grants_mu_);
    auto g = peer_grants_.find(p.remote.handle);
    if (g == peer_grants_.end()) return std::nullopt;
    if (closed_) return errc_code(std::errc::not_connected);
    if (check_access(g->second, p.remote.offset, p.remote.length, p.op) != 0)
      return errc_code(std::errc::permission_denied);
    const int err = p.total == 0 ? 0 : transfer(peer_pid_, std::move(p.iov), p.remote.offset, p.total, p.op == op_kind::write);
    return err == 0 ? std::error_code{} : std::error_code(err, std::generic_category());
  }

  /// Keeps one receive outstanding until the socket is closed. After shut(), what arrives
  /// is dropped: the receive only waits for the end of the peer's socket.
  void read_next() {
    if (gone_ || reading_) return;
    reading_ = true;
    sock_.async_receive(asio::buffer(rx_), rx_flags_,
                        asio::bind_executor(strand_, [self = shared()](boost::system::error_code ec, std::size_t n) {
                          self->reading_ = false;
                          if (self->gone_) return;
                          if (ec || n == 0) {  // the peer's socket is gone (or ours failed)
                            self->shut(ec && ec != asio::error::eof ? from_boost(ec)
                                                                    : errc_code(std::errc::connection_reset));
                            return self->finish();
                          }
                          if (!self->closed_) self->on_packet(std::span<const std::byte>(self->rx_.data(), n));
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
        int verdict = table_->validate(a.handle, a.addr, a.length, a.op, *this);
        outgoing o;
        append_struct(o.head, packet_head{kind::access_rsp, static_cast<std::uint32_t>(verdict), h.id});
        enqueue(std::move(o));
        return true;
      }
      case kind::grant: {
        grant_body g;
        std::unique_lock lock(grants_mu_);
        if (!read_struct(body, 0, g) ||
            (peer_grants_.size() >= max_peer_grants && peer_grants_.count(g.handle) == 0)) {
          lock.unlock();
          shut(errc_code(std::errc::protocol_error));
          return false;
        }
        // The peer describes its own memory: a false description only misdirects accesses
        // into the peer itself.
        peer_grants_[g.handle] = table_entry{reinterpret_cast<std::byte*>(g.base), static_cast<std::size_t>(g.size), g.access};
        return true;
      }
      case kind::revoke: {
        if (h.id > std::numeric_limits<std::uint32_t>::max()) {
          shut(errc_code(std::errc::protocol_error));
          return false;
        }
        // A transfer under a grant holds grants_mu_ shared from its check to its end, so
        // once the grant is erased holding it exclusively, none under the handle is in
        // progress. A transfer after an access request runs on this strand, and the answer
        // to one under the handle came before the revoke (its transfer is done). Every
        // later access asks the owner, which refuses it. Say so.
        {
          std::lock_guard lock(grants_mu_);
          peer_grants_.erase(static_cast<std::uint32_t>(h.id));
        }
        outgoing o;
        append_struct(o.head, packet_head{kind::revoke_ack, 0, h.id});
        enqueue(std::move(o));
        return true;
      }
      case kind::revoke_ack: {
        std::optional<pending_revoke> answered;
        {
          std::lock_guard lock(send_mu_);
          auto it = h.id > std::numeric_limits<std::uint32_t>::max() ? revoking_.end()
                                                                     : revoking_.find(static_cast<std::uint32_t>(h.id));
          if (it != revoking_.end()) {
            answered = std::move(it->second);
            revoking_.erase(it);
          }
        }
        if (!answered) {  // an answer to no revoke
          shut(errc_code(std::errc::protocol_error));
          return false;
        }
        if (answered->waiter) answered->waiter->settle(answered->slot);
        return true;
      }
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

  /// Ends the connection's traffic and sends the peer its end; finish() follows when the
  /// peer's socket is gone, or after the revoke timeout.
  void shut(std::error_code why) {
    if (closed_.exchange(true)) return;
    {
      // Waits out the transfers under grants in progress in other threads; later ones see
      // closed_ (or no grant) and do nothing.
      std::lock_guard lock(grants_mu_);
      peer_grants_.clear();
    }
    boost::system::error_code ignore;
    sock_.shutdown(seqpacket::socket::shutdown_send, ignore);
    drain_deadline_ = std::chrono::steady_clock::now() + revoke_timeout_;
    arm_timer(drain_deadline_);
    auto ops = std::move(ops_);
    ops_.clear();
    std::deque<outgoing> queue;
    {
      std::lock_guard lock(send_mu_);
      queue = std::move(queue_);
      queue_.clear();
    }
    std::error_code cancelled = errc_code(std::errc::operation_canceled);
    for (auto& [id, p] : ops) p.done(cancelled);
    for (auto& o : queue)
      if (o.done) o.done(cancelled);
    if (auto cb = std::move(on_close_)) cb(why);
    // The receive handler may be running (shut from inside it): drop it once it returned,
    // and wait for the peer's end (a receive outstanding, also if start() never ran).
    asio::post(strand_, [self = shared()] {
      self->on_recv_ = nullptr;
      self->read_next();
    });
  }

  /// Closes the socket: the peer's is gone, or we stopped waiting for it. Settles the
  /// revocations that waited for this connection.
  void finish() {
    if (gone_) return;
    gone_ = true;
    {
      std::lock_guard lock(fd_mu_);
      boost::system::error_code ignore;
      sock_.close(ignore);
      fd_closed_ = true;
    }
    timer_.cancel();
    std::unordered_map<std::uint32_t, pending_revoke> pending;
    {
      std::lock_guard lock(send_mu_);
      pending = std::move(revoking_);
      revoking_.clear();
    }
    for (auto& [handle, r] : pending)
      if (r.waiter) r.waiter->settle(r.slot);
  }

  /// The next deadline to look at: a revoke's while open, the end of the wait for the
  /// peer's socket after shut().
  void arm_timer(std::chrono::steady_clock::time_point at) {
    timer_.expires_at(at);
    timer_.async_wait(asio::bind_executor(strand_, [self = shared()](boost::system::error_code ec) {
      if (ec == asio::error::operation_aborted || self->gone_) return;
      self->on_timer();
    }));
  }
  void on_timer() {
    const auto now = std::chrono::steady_clock::now();
    if (closed_) {
      if (now >= drain_deadline_) return finish();  // the peer kept its socket: stop waiting
      return arm_timer(drain_deadline_);
    }
    auto next = std::chrono::steady_clock::time_point::max();
    {
      std::lock_guard lock(send_mu_);
      if (revoking_.empty()) return;
      for (const auto& [handle, r] : revoking_) next = std::min(next, r.deadline);
    }
    if (next <= now) return shut(errc_code(std::errc::timed_out));  // a revoke unanswered in time
    arm_timer(next);
  }

  asio::io_context& io_;
  seqpacket::socket sock_;
  asio::strand<asio::any_io_executor> strand_;
  asio::steady_timer timer_;  // strand only: revoke deadlines, then the end of the drain
  std::chrono::milliseconds revoke_timeout_;
  std::shared_ptr<registration_table> table_;
  std::size_t recv_size_;
  std::uint32_t max_recv_;
  std::vector<std::byte> peer_pd_;
  std::size_t peer_recv_;
  pid_t peer_pid_;
  std::atomic<std::uint32_t> posted_{0};
  std::atomic<bool> closed_{false};
  // What the peer pre-authorized: changed on the strand, read by transfers in any thread.
  writer_first_rwlock grants_mu_;
  std::unordered_map<std::uint32_t, table_entry> peer_grants_;  // under grants_mu_
  std::mutex fd_mu_;        // the socket's descriptor: closed by finish(), shut down by cut()
  bool fd_closed_ = false;  // under fd_mu_
  // What goes out, from any thread (enqueue, revoke); taken before fd_mu_.
  std::mutex send_mu_;
  std::deque<outgoing> queue_;  // under send_mu_: waiting for the strand to send them, in order
  bool writing_ = false;        // under send_mu_: the strand waits for room in the socket
  bool halted_ = false;         // under send_mu_: close() was called, nothing more goes out
  std::unordered_map<std::uint32_t, pending_revoke> revoking_;  // under send_mu_: revokes sent, not yet answered
  std::atomic<bool> gone_{false};  // the socket is closed (set on the strand)

  // Strand only.
  std::vector<std::byte> rx_;
  asio::socket_base::message_flags rx_flags_ = 0;
  recv_handler on_recv_;
  close_handler on_close_;
  std::unordered_map<std::uint64_t, pending_op> ops_;
  std::uint64_t next_op_ = 0;
  bool reading_ = false;  // a receive is outstanding
  std::chrono::steady_clock::time_point drain_deadline_;
};

registration_user& registration_table::user_of(entry& e, cma_endpoint& ep) {
  for (auto& u : e.users)
    if (u.id == &ep && !u.ep.expired()) return u;  // alive, so the same endpoint
  std::erase_if(e.users, [](const registration_user& u) { return u.ep.expired(); });
  std::weak_ptr<cma_endpoint> weak = std::static_pointer_cast<cma_endpoint>(ep.shared_from_this());
  return e.users.emplace_back(registration_user{&ep, std::move(weak), false});
}

bool registration_table::add_grantee(std::uint32_t h, cma_endpoint& ep) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(h);
  if (it == entries_.end()) return false;
  registration_user& u = user_of(it->second, ep);
  if (u.granted) return false;
  u.granted = true;
  return true;
}

int registration_table::validate(std::uint32_t handle, std::uint64_t addr, std::uint64_t len, op_kind op,
                                 cma_endpoint& asker) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(handle);
  if (it == entries_.end()) return EACCES;  // forged or stale
  const int verdict = check_access(it->second.range, addr, len, op);
  if (verdict == 0) user_of(it->second, asker);
  return verdict;
}

cma_registration::~cma_registration() {
  const std::vector<registration_user> users = table_->remove(handle());
  if (users.empty()) return;
  auto waiter = std::make_shared<revocation>(users.size());
  std::vector<std::shared_ptr<cma_endpoint>> waited(users.size());
  auto deadline = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < users.size(); ++i) {
    auto ep = users[i].ep.lock();
    if (!ep) {  // its socket closed with it
      waiter->settle(i);
    } else if (ep->io_stopped()) {  // nothing would deliver an answer: end the connection now
      ep->cut();
      waiter->settle(i);
    } else if (ep->on_io_thread()) {  // the answer would come through this thread: don't wait
      if (users[i].granted) ep->revoke(handle(), nullptr, 0);
      waiter->settle(i);
    } else {
      ep->revoke(handle(), waiter, i);
      // The endpoint settles within two revoke timeouts (unanswered: shut, then the drain).
      deadline = std::max(deadline, std::chrono::steady_clock::now() + 3 * ep->revoke_timeout());
      waited[i] = std::move(ep);
    }
  }
  // Past that, the io_context is not running: end the connection from here.
  for (std::size_t i : waiter->wait_until(deadline)) waited[i]->cut();
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
  cma_listener(asio::io_context& io, std::shared_ptr<registration_table> table, const fabric_options& fopts,
               std::string host, std::uint16_t port, const endpoint_options& opts, fabric::accept_handler on_accept)
      : state_(std::make_shared<state>(io, std::move(table), fopts, opts, std::move(on_accept))),
        host_(std::move(host)) {
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
    state(asio::io_context& io_, std::shared_ptr<registration_table> t, const fabric_options& f,
          const endpoint_options& o, fabric::accept_handler a)
        : io(io_), acceptor(io_), table(std::move(t)), fopts(f), opts(o), on_accept(std::move(a)) {}
    asio::io_context& io;
    seqpacket_acceptor acceptor;
    std::shared_ptr<registration_table> table;
    fabric_options fopts;
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
      auto ep = std::make_shared<cma_endpoint>(s->io, std::move(hs->sock), s->table, s->opts, s->fopts, std::move(pd),
                                               peer_recv, pid);
      s->on_accept(std::move(ep));
    });
  }

  std::shared_ptr<state> state_;
  std::string host_;
  std::uint16_t port_ = 0;
};

class cma_fabric final : public fabric {
 public:
  cma_fabric(asio::io_context& io, const fabric_options& opts)
      : io_(io), opts_(opts), table_(std::make_shared<registration_table>()) {}

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
    return std::make_unique<cma_listener>(io_, table_, opts_, host, port, opts, std::move(on_accept));
  }

  void connect(const std::string& host, std::uint16_t port, const endpoint_options& opts,
               connect_handler done) override {
    auto hs = std::make_shared<handshake>(io_.get_executor());
    auto table = table_;
    auto fopts = opts_;  // what the endpoint is made with
    auto* io = &io_;
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
    hs->sock.async_connect(address_of(host, port), [hs, table, fopts, io, opts, finish,
                                                    fail](boost::system::error_code ec) {
      if (ec) return fail(ec == asio::error::not_found || ec.value() == ENOENT ? errc_code(std::errc::connection_refused)
                                                                               : from_boost(ec));
      hs->sock.async_send(asio::buffer(hs->out), 0, [hs, table, fopts, io, opts, finish,
                                                     fail](boost::system::error_code ec, std::size_t) {
        if (ec) return fail(from_boost(ec));
        hs->sock.async_receive(asio::buffer(hs->buf), hs->flags,
                               [hs, table, fopts, io, opts, finish, fail](boost::system::error_code ec, std::size_t n) {
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
                                 cb({}, std::make_shared<cma_endpoint>(*io, std::move(hs->sock), table, opts, fopts,
                                                                       std::move(pd), peer_recv, pid));
                               });
      });
    });
  }

 private:
  asio::io_context& io_;
  fabric_options opts_;
  std::shared_ptr<registration_table> table_;
};

}  // namespace

std::string socket_name(const std::string& host, std::uint16_t port) {
  return "vnfs-rdma-cma/" + host + ":" + std::to_string(port);
}

std::unique_ptr<fabric> make_fabric(boost::asio::io_context& io, const fabric_options& opts) {
  return std::make_unique<cma_fabric>(io, opts);
}

}  // namespace vnfs::transport::rdma::cma
