#include "vnfs/bench/raw_session.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace vnfs::bench {

namespace {

// RFC 5531 (ONC RPC) and RFC 8881 (NFSv4.1) numbers this file speaks.
constexpr std::uint32_t rpc_call = 0, rpc_reply = 1, rpc_version = 2, msg_accepted = 0, accept_success = 0;
constexpr std::uint32_t auth_none = 0, auth_sys = 1;
constexpr std::uint32_t nfs4_program = 100003, nfs_v4 = 4, nfsproc4_compound = 1;
constexpr std::uint32_t op_getattr = 9, op_getfh = 10, op_lookup = 15, op_putfh = 22, op_putrootfh = 24, op_read = 25,
                        op_exchange_id = 42, op_create_session = 43, op_destroy_session = 44, op_sequence = 53,
                        op_destroy_clientid = 57;
constexpr std::uint32_t nfs4_ok = 0;
constexpr std::uint32_t exchgid4_flag_use_non_pnfs = 0x00010000;
constexpr std::uint32_t last_fragment = 0x80000000u;
constexpr std::size_t max_record = std::size_t{64} << 20;

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

std::string status_text(const std::string& what, std::uint32_t status) {
  return what + " failed with NFSv4 status " + std::to_string(status);
}

void channel_attrs(xdr_writer& w, std::uint32_t request, std::uint32_t response, std::uint32_t cached,
                   std::uint32_t ops, std::uint32_t slots) {
  w.u32(0);  // ca_headerpadsize
  w.u32(request);
  w.u32(response);
  w.u32(cached);
  w.u32(ops);
  w.u32(slots);
  w.u32(0);  // ca_rdma_ird<1>: none
}

}  // namespace

// ---- XDR --------------------------------------------------------------------------------

void xdr_writer::u32(std::uint32_t v) {
  b_.insert(b_.end(), {std::byte(v >> 24), std::byte(v >> 16), std::byte(v >> 8), std::byte(v)});
}

void xdr_writer::u64(std::uint64_t v) {
  u32(static_cast<std::uint32_t>(v >> 32));
  u32(static_cast<std::uint32_t>(v));
}

void xdr_writer::fixed(const std::byte* p, std::size_t n) {
  b_.insert(b_.end(), p, p + n);
  b_.resize(b_.size() + ((4 - n % 4) % 4), std::byte{0});
}

void xdr_writer::opaque(const std::byte* p, std::size_t n) {
  u32(static_cast<std::uint32_t>(n));
  fixed(p, n);
}

void xdr_writer::string(const std::string& s) { opaque(reinterpret_cast<const std::byte*>(s.data()), s.size()); }

const std::byte* xdr_reader::need(std::size_t n) {
  if (n > n_ - at_) throw std::runtime_error("raw_session: reply truncated");
  const std::byte* p = p_ + at_;
  at_ += n;
  return p;
}

std::uint32_t xdr_reader::u32() {
  const std::byte* p = need(4);
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}

std::uint64_t xdr_reader::u64() {
  std::uint64_t hi = u32();
  return (hi << 32) | u32();
}

void xdr_reader::skip_fixed(std::size_t n) { need(n + (4 - n % 4) % 4); }

std::vector<std::byte> xdr_reader::opaque() {
  std::size_t n = u32();
  const std::byte* p = need(n);
  std::vector<std::byte> out(p, p + n);
  need((4 - n % 4) % 4);
  return out;
}

// ---- the session ------------------------------------------------------------------------

raw_session::raw_session(const std::string& host, std::uint16_t port, std::vector<std::string> root_path)
    : root_path_(std::move(root_path)) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw std::runtime_error("raw_session: cannot resolve " + host + ": " + ::gai_strerror(rc));
  int last_errno = 0;
  for (addrinfo* ai = res; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd_ < 0) {
      last_errno = errno;
      continue;
    }
    if (::connect(fd_, ai->ai_addr, ai->ai_addrlen) != 0) {
      last_errno = errno;
      ::close(std::exchange(fd_, -1));
    }
  }
  ::freeaddrinfo(res);
  if (fd_ < 0)
    throw std::system_error(last_errno, std::generic_category(), "raw_session: cannot connect to " + host + ":" + service);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{30, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  xid_ = static_cast<std::uint32_t>(::getpid()) << 16;

  try {
    static std::atomic<int> counter{0};
    const std::string owner = "vnfs-bench-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    std::vector<std::byte> reply;
    std::size_t at = 0;

    xdr_writer ex;  // EXCHANGE_ID
    ex.u32(op_exchange_id);
    const std::byte verifier[8] = {std::byte{1}};
    ex.fixed(verifier, 8);
    ex.string(owner);
    ex.u32(exchgid4_flag_use_non_pnfs);
    ex.u32(0);  // state_protect4_a: SP4_NONE
    ex.u32(0);  // eia_client_impl_id<1>: none
    if (std::uint32_t s = compound(ex, 1, false, reply, &at); s != nfs4_ok)
      throw std::runtime_error(status_text("EXCHANGE_ID", s));
    xdr_reader r(reply.data() + at, reply.size() - at);
    r.u32();  // opnum
    r.u32();  // status
    clientid_ = r.u64();
    const std::uint32_t create_seq = r.u32();

    xdr_writer cs;  // CREATE_SESSION: 4 MiB requests and replies, 1024 operations, 16 slots
    cs.u32(op_create_session);
    cs.u64(clientid_);
    cs.u32(create_seq);
    cs.u32(0);  // csa_flags
    channel_attrs(cs, 4u << 20, 4u << 20, 64u << 10, 1024, 16);
    channel_attrs(cs, 4096, 4096, 0, 2, 1);
    cs.u32(0x40000000);  // csa_cb_program
    cs.u32(1);           // csa_sec_parms: one, AUTH_NONE
    cs.u32(auth_none);
    if (std::uint32_t s = compound(cs, 1, false, reply, &at); s != nfs4_ok)
      throw std::runtime_error(status_text("CREATE_SESSION", s));
    xdr_reader c(reply.data() + at, reply.size() - at);
    c.u32();  // opnum
    c.u32();  // status
    std::memcpy(sessionid_, reply.data() + at + c.position(), 16);
    have_session_ = true;
  } catch (...) {
    ::close(std::exchange(fd_, -1));
    throw;
  }
}

raw_session::~raw_session() {
  try {
    std::vector<std::byte> reply;
    std::size_t at = 0;
    if (have_session_) {
      xdr_writer ds;
      ds.u32(op_destroy_session);
      ds.fixed(sessionid_, 16);
      compound(ds, 1, false, reply, &at);
      xdr_writer dc;
      dc.u32(op_destroy_clientid);
      dc.u64(clientid_);
      compound(dc, 1, false, reply, &at);
    }
  } catch (...) {  // the server may be gone already; nothing to clean up then
  }
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::byte> raw_session::lookup(const std::string& name) {
  xdr_writer w;
  w.u32(op_putrootfh);
  for (const auto& component : root_path_) {
    w.u32(op_lookup);
    w.string(component);
  }
  w.u32(op_lookup);
  w.string(name);
  w.u32(op_getfh);
  std::vector<std::byte> reply;
  std::size_t at = 0;
  const auto numops = static_cast<std::uint32_t>(root_path_.size() + 3);
  if (std::uint32_t s = compound(w, numops, true, reply, &at); s != nfs4_ok)
    throw std::runtime_error(status_text("LOOKUP of " + name, s));
  xdr_reader r(reply.data() + at, reply.size() - at);
  r.skip_fixed(8 * (root_path_.size() + 2));  // PUTROOTFH and the LOOKUPs: opnum, status
  if (r.u32() != op_getfh || r.u32() != nfs4_ok) throw std::runtime_error("raw_session: no GETFH result");
  return r.opaque();
}

std::uint32_t raw_session::getattr(const std::vector<std::byte>& fh, const std::vector<std::uint32_t>& attrs) {
  std::uint32_t words[2] = {0, 0};
  for (std::uint32_t a : attrs) words[a / 32] |= 1u << (a % 32);
  xdr_writer w;
  w.u32(op_putfh);
  w.opaque(fh.data(), fh.size());
  w.u32(op_getattr);
  w.u32(2);
  w.u32(words[0]);
  w.u32(words[1]);
  std::vector<std::byte> reply;
  std::size_t at = 0;
  return compound(w, 2, true, reply, &at);
}

std::uint32_t raw_session::read(const std::vector<std::byte>& fh, std::uint64_t offset, std::uint32_t count,
                                std::size_t* got) {
  xdr_writer w;
  w.u32(op_putfh);
  w.opaque(fh.data(), fh.size());
  w.u32(op_read);
  const std::byte anonymous[16] = {};  // seqid 0, other all zero
  w.fixed(anonymous, 16);
  w.u64(offset);
  w.u32(count);
  std::vector<std::byte> reply;
  std::size_t at = 0;
  std::uint32_t s = compound(w, 2, true, reply, &at);
  if (s != nfs4_ok) return s;
  xdr_reader r(reply.data() + at, reply.size() - at);
  r.skip_fixed(8);  // PUTFH
  if (r.u32() != op_read || r.u32() != nfs4_ok) throw std::runtime_error("raw_session: no READ result");
  r.u32();  // eof
  *got = r.u32();
  return s;
}

std::uint32_t raw_session::compound(const xdr_writer& ops, std::uint32_t numops, bool sequenced,
                                    std::vector<std::byte>& reply, std::size_t* results_at) {
  const std::uint32_t xid = xid_++;
  xdr_writer m;
  m.u32(xid);
  m.u32(rpc_call);
  m.u32(rpc_version);
  m.u32(nfs4_program);
  m.u32(nfs_v4);
  m.u32(nfsproc4_compound);
  xdr_writer cred;  // authsys_parms: stamp, machine name, uid 0, gid 0, no groups
  cred.u32(0);
  cred.string("vnfs-bench");
  cred.u32(0);
  cred.u32(0);
  cred.u32(0);
  m.u32(auth_sys);
  m.opaque(cred.bytes().data(), cred.size());
  m.u32(auth_none);  // verifier
  m.u32(0);
  m.u32(0);  // tag: empty
  m.u32(1);  // minor version
  m.u32(numops + (sequenced ? 1 : 0));
  if (sequenced) {
    m.u32(op_sequence);
    m.fixed(sessionid_, 16);
    m.u32(seqid_ + 1);
    m.u32(0);  // slot
    m.u32(0);  // highest slot
    m.u32(0);  // cachethis: false
  }
  std::vector<std::byte> msg = m.bytes();
  msg.insert(msg.end(), ops.bytes().begin(), ops.bytes().end());
  send_record(msg);
  reply = receive_record();

  xdr_reader r(reply.data(), reply.size());
  if (r.u32() != xid) throw std::runtime_error("raw_session: reply xid does not match the call");
  if (r.u32() != rpc_reply) throw std::runtime_error("raw_session: not an RPC reply");
  if (r.u32() != msg_accepted) throw std::runtime_error("raw_session: RPC call denied");
  r.u32();      // verifier flavor
  r.opaque();   // verifier body
  if (std::uint32_t a = r.u32(); a != accept_success)
    throw std::runtime_error("raw_session: RPC call not accepted (accept_stat " + std::to_string(a) + ")");
  const std::uint32_t status = r.u32();
  r.opaque();  // tag
  const std::uint32_t results = r.u32();
  if (sequenced && results > 0) {
    r.u32();  // opnum
    if (r.u32() == nfs4_ok) {
      ++seqid_;  // the slot advanced (unless SEQUENCE itself failed: RFC 8881 §2.10.6.1)
      r.skip_fixed(16 + 5 * 4);  // sessionid, sequence id, slot ids, status flags
    }
  }
  *results_at = r.position();
  return status;
}

void raw_session::send_record(const std::vector<std::byte>& msg) {
  const std::uint32_t mark = static_cast<std::uint32_t>(msg.size()) | last_fragment;
  const std::byte head[4] = {std::byte(mark >> 24), std::byte(mark >> 16), std::byte(mark >> 8), std::byte(mark)};
  iovec iov[2] = {{const_cast<std::byte*>(head), 4}, {const_cast<std::byte*>(msg.data()), msg.size()}};
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = 2;
  std::size_t left = 4 + msg.size();
  while (left > 0) {
    ssize_t n = ::sendmsg(fd_, &mh, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("raw_session: send");
    }
    left -= static_cast<std::size_t>(n);
    for (auto k = static_cast<std::size_t>(n); k > 0;) {  // drop what went out
      std::size_t step = std::min(k, mh.msg_iov->iov_len);
      mh.msg_iov->iov_base = static_cast<char*>(mh.msg_iov->iov_base) + step;
      mh.msg_iov->iov_len -= step;
      k -= step;
      if (mh.msg_iov->iov_len == 0 && mh.msg_iovlen > 1) {
        ++mh.msg_iov;
        --mh.msg_iovlen;
      }
    }
  }
}

std::vector<std::byte> raw_session::receive_record() {
  auto read_exact = [this](std::byte* p, std::size_t n) {
    while (n > 0) {
      ssize_t k = ::recv(fd_, p, n, 0);
      if (k > 0) {
        p += k;
        n -= static_cast<std::size_t>(k);
      } else if (k == 0) {
        throw std::runtime_error("raw_session: connection closed by the server");
      } else if (errno != EINTR) {
        throw_errno("raw_session: receive");
      }
    }
  };
  std::vector<std::byte> record;
  for (;;) {  // fragments until the last one (NFS-Ganesha may send several)
    std::byte h[4];
    read_exact(h, 4);
    const std::uint32_t mark =
        (std::uint32_t(h[0]) << 24) | (std::uint32_t(h[1]) << 16) | (std::uint32_t(h[2]) << 8) | std::uint32_t(h[3]);
    const std::size_t len = mark & ~last_fragment;
    if (record.size() + len > max_record) throw std::runtime_error("raw_session: reply too large");
    const std::size_t at = record.size();
    record.resize(at + len);
    read_exact(record.data() + at, len);
    if (mark & last_fragment) return record;
  }
}

}  // namespace vnfs::bench
