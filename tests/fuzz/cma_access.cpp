// Fuzzes the cma provider's validation of remote accesses (transport/rdma/cma): the owner
// of an arena registers ranges of it; its peer RDMA-Reads and RDMA-Writes through the real
// endpoints with steering tags (handles), addresses and lengths the input chooses, live,
// deregistered or made up. Every access is decided by the owner's registration table and
// carried out with process_vm_readv/writev, as between two processes.
// Input: a byte r (r % 5 registrations), per registration 5 bytes: offset (2), length (2),
// access (1: bits 0-1 remote_access, bit 2: deregistered at once, bit 3: pre-authorized for
// the peer first, endpoint::grant, so that the peer checks its accesses itself; bit 4 with
// bit 2: deregistered in a handler on the io thread, which does not wait for the peer, else
// from a thread that does not run the io_context, as an application does, which waits for
// the peer to acknowledge the revoke); then the owner sends the peer a message, which the
// peer receives after the grants and the revokes of deregistered registrations (this
// input's and the previous ones'); then accesses until the input ends (at most 16): kind
// (bit 0 write; bits 1-2 how the handle is chosen: 0 and 1 a registration's, live or
// deregistered; 2 another fabric's; 3 four bytes of the input; bit 5: first the
// registration chosen by the next byte is deregistered as an application does, and the
// access follows at once, with nothing sent in between), a registration index, then a
// signed offset from its start (2) and a length (2); or for another fabric's handle a
// length (2, at most its 64 bytes) and 2 bytes unused; or the raw handle (4), an address
// (4, added to the arena's address when bit 3 of kind is set) and a length (2). With bit 4
// of kind, a read's local buffer is one byte longer than the segment.
// Properties: an access succeeds exactly when its handle is live in the owner's fabric,
// grants the access and [address, address + length) lies inside the registration, whether
// the owner or (pre-authorized) the peer checks it; otherwise it fails with
// permission_denied (invalid_argument for a read whose buffer differs from the segment).
// A registration is no longer live once its deregistration returned (as an application
// does it) or, deregistered on the io thread, once the owner's next message arrived. The
// connection stays up (so every revoke was answered within its bound). The arena equals a
// model that applies the granted writes, byte for byte (nothing outside a registration
// ever changes); a granted read yields the model's bytes, and writes nothing past the
// read's buffer. Registrations are all released at the end.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "fuzz_input.hpp"
#include "io_loop.hpp"
#include "transport/rdma/fabric.hpp"

using namespace vnfs;
namespace asio = boost::asio;
namespace rdma = vnfs::transport::rdma;

namespace {

constexpr std::size_t arena_size = 8192;
constexpr std::size_t max_accesses = 16;
constexpr std::size_t max_length = 0xffff;  // a segment's length comes from 2 bytes
constexpr std::size_t guard_size = 16;
constexpr std::byte guard_byte{0xa5};

/// The bytes j * M (mod 256) for j < N: pattern<M, N>()[s + i] is a pattern that varies with s.
template <unsigned M, std::size_t N>
const std::array<std::byte, N>& pattern() {
  static const auto table = [] {
    std::array<std::byte, N> t;
    for (std::size_t j = 0; j < N; ++j) t[j] = std::byte(j * M);
    return t;
  }();
  return table;
}
/// What the arena holds at the start of an input, shifted by `shift` (< 256).
std::span<const std::byte> arena_pattern(std::size_t shift) {
  return std::span(pattern<7, arena_size + 256>()).subspan(shift, arena_size);
}
/// The bytes an access sends (write) or starts its buffer with (read): `n` bytes, shifted by
/// `shift` (< 256).
std::span<const std::byte> access_pattern(std::size_t shift, std::size_t n) {
  return std::span(pattern<13, max_length + 1 + 256>()).subspan(shift, n);
}
bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// Cost per input: the connection, both fabrics, the io_context and the application's thread
// are made once for the process; an input makes its registrations and its accesses (two
// packets and one process_vm_* call each), in buffers kept from input to input. The
// harness's own byte work (patterns, comparisons over up to 64 KiB per access) is memcpy and
// memcmp: as byte loops, which the fuzzer instruments compare by compare, it took three
// quarters of the time (perf).

/// The application's own thread, which never runs the io_context. One thread for the
/// process: a thread started per deregistration cost half the harness's time (perf).
class application_thread {
 public:
  application_thread() : thread_([this] { loop(); }) {}
  /// Hands `job` to the thread and returns at once; the job signals its own completion, and
  /// the next run() comes only after it (one job at a time).
  void run(std::function<void()> job) {
    std::lock_guard lock(mutex_);
    job_ = std::move(job);
    wake_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return job_ != nullptr; });
        job = std::exchange(job_, nullptr);
      }
      job();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> job_;
  std::thread thread_;  // never joined: the harness lives as long as the process
};

struct harness {
  application_thread application;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::unique_ptr<rdma::fabric> owner_fabric = rdma::make_fabric("cma", io);
  std::unique_ptr<rdma::fabric> peer_fabric = rdma::make_fabric("cma", io);
  std::unique_ptr<rdma::listener> lst;
  std::shared_ptr<rdma::endpoint> owner, peer;
  bool closed = false;
  std::size_t peer_messages = 0;  // messages the peer received from the owner
  std::vector<std::byte> arena = std::vector<std::byte>(arena_size);
  std::vector<std::byte> model = std::vector<std::byte>(arena_size);  // what the arena must hold
  // A read's buffer, and guard bytes after it that no read may change.
  std::vector<std::byte> read_buffer = std::vector<std::byte>(max_length + 1 + guard_size);
  // A registration of the peer's fabric: its handle means nothing to the owner.
  std::vector<std::byte> elsewhere = std::vector<std::byte>(64);
  std::unique_ptr<rdma::memory_registration> foreign =
      peer_fabric->register_memory(elsewhere.data(), elsewhere.size(), rdma::remote_access::read_write);

  harness() {
    lst = owner_fabric->listen("127.0.0.1", 0, {}, [this](std::shared_ptr<rdma::endpoint> ep) { owner = ep; });
    std::error_code ec{std::make_error_code(std::errc::operation_in_progress)};
    peer_fabric->connect("127.0.0.1", lst->port(), {}, [&](std::error_code e, std::shared_ptr<rdma::endpoint> ep) {
      ec = e;
      peer = ep;
    });
    fuzz::run_until(io, [&] { return owner && ec != std::errc::operation_in_progress; });
    fuzz::require(!ec && peer, "connect");
    owner->start([](std::span<const std::byte>) {}, [this](std::error_code) { closed = true; });
    peer->start([this](std::span<const std::byte>) { ++peer_messages; }, [this](std::error_code) { closed = true; });
  }

  /// A message from the owner, received by the peer: what the owner sent before it (grants,
  /// revokes) has reached the peer.
  void sync() {
    const std::size_t before = peer_messages;
    peer->post_recv(1);
    static constexpr std::byte m[4] = {};
    bool sent = false;
    owner->post_send({std::span<const std::byte>(m)}, [&](std::error_code ec) {
      fuzz::require(!ec, "the owner's message is sent");
      sent = true;
    });
    fuzz::run_until(io, [&] { return sent && peer_messages > before; });
  }

  /// Deregisters `reg` as an application does, from a thread that does not run the
  /// io_context (this one runs it meanwhile, so that the peer can answer the revoke).
  void deregister(std::unique_ptr<rdma::memory_registration>& reg) {
    std::atomic<bool> done{false};
    application.run([&] {
      reg.reset();
      done = true;
      asio::post(io, [] {});  // wakes run_until
    });
    fuzz::run_until(io, [&] { return done.load(); });
  }
  /// Deregisters `reg` in a handler on the io thread, as the RPC client does when a reply
  /// arrives: it does not wait for the peer.
  void deregister_on_io(std::unique_ptr<rdma::memory_registration>& reg) {
    bool done = false;
    asio::post(io, [&] {
      reg.reset();
      done = true;
    });
    fuzz::run_until(io, [&] { return done; });
  }

  /// Runs an RDMA Write of `from`, or an RDMA Read into `into`, and returns its completion code.
  std::error_code write(rpc::rdma::segment seg, std::span<const std::byte> from) {
    std::optional<std::error_code> result;
    peer->rdma_write(seg, {from}, [&](std::error_code ec) { result = ec; });
    fuzz::run_until(io, [&] { return result.has_value(); });
    return *result;
  }
  std::error_code read(rpc::rdma::segment seg, std::span<std::byte> into) {
    std::optional<std::error_code> result;
    peer->rdma_read(seg, into, [&](std::error_code ec) { result = ec; });
    fuzz::run_until(io, [&] { return result.has_value(); });
    return *result;
  }
};

struct registration {
  std::unique_ptr<rdma::memory_registration> reg;  // null once deregistered
  std::size_t offset = 0, length = 0;
  rdma::remote_access access = rdma::remote_access::none;
  std::uint32_t handle = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static harness* h = new harness;  // lives for the process, as the fuzzer does
  fuzz::input_reader in(fuzz::bytes_of(data, size));
  const auto start = arena_pattern(size % 256);
  std::memcpy(h->arena.data(), start.data(), arena_size);
  std::memcpy(h->model.data(), start.data(), arena_size);
  auto& model = h->model;
  const auto base = reinterpret_cast<std::uint64_t>(h->arena.data());

  std::vector<registration> regs(in.u8() % 5);
  for (auto& r : regs) {
    r.offset = in.u16() % arena_size;
    r.length = in.u16() % (arena_size - r.offset + 1);
    const std::uint8_t a = in.u8();
    r.access = static_cast<rdma::remote_access>(a & 3);
    if (r.length == 0) {
      bool refused = false;
      try {
        h->owner_fabric->register_memory(h->arena.data() + r.offset, 0, r.access);
      } catch (const std::system_error& e) {
        refused = e.code() == std::errc::invalid_argument;
      }
      fuzz::require(refused, "an empty registration is refused");
      continue;
    }
    r.reg = h->owner_fabric->register_memory(h->arena.data() + r.offset, r.length, r.access);
    r.handle = r.reg->handle();
    if (a & 8) h->owner->grant(*r.reg);
    if ((a & 4) && (a & 16)) h->deregister_on_io(r.reg);
    else if (a & 4) h->deregister(r.reg);
  }
  h->sync();

  for (std::size_t k = 0; k < max_accesses; ++k) {
    const std::uint8_t kind = in.u8();
    if (kind & 32) {
      const std::size_t gone = in.u8();
      if (!regs.empty() && regs[gone % regs.size()].reg) h->deregister(regs[gone % regs.size()].reg);
    }
    const std::size_t which = in.u8();
    const bool write = kind & 1;
    const registration* r = regs.empty() ? nullptr : &regs[which % regs.size()];
    rpc::rdma::segment seg;
    switch ((kind >> 1) & 3) {
      case 0:  // a registration's handle (live or not), at an offset from its start
      case 1: {
        const auto delta = static_cast<std::int16_t>(in.u16());
        seg.handle = r ? r->handle : 0;
        seg.offset = base + (r ? r->offset : 0) + static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
        seg.length = in.u16();
        break;
      }
      case 2:  // another fabric's registration
        seg = h->foreign->segment(0, 64);
        seg.length = in.u16() % 65;
        in.u16();
        break;
      default: {  // as the input has it
        const std::uint32_t handle_hi = in.u16();
        seg.handle = handle_hi << 16 | in.u16();
        const std::uint64_t addr_hi = in.u16();
        const std::uint64_t addr = addr_hi << 16 | in.u16();
        seg.offset = (kind & 8) ? base + addr : addr;
        seg.length = in.u16();
        break;
      }
    }
    // The model's verdict: a live registration of the owner with this handle, the right,
    // the range inside it.
    const registration* live = nullptr;
    for (const auto& x : regs)
      if (x.reg && x.handle == seg.handle) live = &x;
    const bool allowed = live && rdma::allows(live->access, write ? rdma::remote_access::write : rdma::remote_access::read) &&
                         seg.offset >= base + live->offset && seg.length <= live->length &&
                         seg.offset - (base + live->offset) <= live->length - seg.length;
    const bool odd_buffer = !write && (kind & 16);
    const auto sent = access_pattern(k + 1, seg.length + (odd_buffer ? 1 : 0));
    const std::span<std::byte> local = std::span(h->read_buffer).first(write ? 0 : sent.size());  // a read's buffer
    if (!local.empty()) std::memcpy(local.data(), sent.data(), local.size());
    const auto guard = std::span(h->read_buffer).subspan(local.size(), guard_size);
    std::fill(guard.begin(), guard.end(), guard_byte);
    const std::error_code ec = write ? h->write(seg, sent) : h->read(seg, local);
    if (odd_buffer) {
      fuzz::require(ec == std::errc::invalid_argument, "a read into a buffer of another size is refused");
    } else if (allowed) {
      fuzz::require(!ec, "an access inside a live registration with its right succeeds");
      const std::size_t at = static_cast<std::size_t>(seg.offset - base);
      if (seg.length == 0) {
      } else if (write) {
        std::memcpy(model.data() + at, sent.data(), seg.length);
      } else {
        fuzz::require(std::memcmp(local.data(), model.data() + at, seg.length) == 0, "a read yields the bytes there");
      }
    } else {
      fuzz::require(ec == std::errc::permission_denied, "any other access is refused with permission_denied");
      if (!write) fuzz::require(same_bytes(local, sent), "a refused read leaves the buffer alone");
    }
    fuzz::require(same_bytes(h->arena, model), "the arena changes only by granted writes");
    fuzz::require(std::all_of(guard.begin(), guard.end(), [](std::byte b) { return b == guard_byte; }),
                  "a read writes nothing past its buffer");
    fuzz::require(!h->closed && h->owner->is_open() && h->peer->is_open(), "the connection stays up");
    if (in.at_end()) break;
  }
  for (auto& r : regs)
    if (r.reg) h->deregister(r.reg);
  fuzz::require(h->owner_fabric->registrations().live == 0, "every registration released");
  return 0;
}
