// vnfsd: READ payload buffers, reused from one READ to the next.
//
// A READ's data lives in a buffer until its reply has gone (compound_context::keepalive).
// Allocating and freeing one per READ costs more than the read itself for large payloads:
// glibc gives freed memory above its trim threshold back to the kernel, so the next READ
// faults its pages in (zeroed) again, and every give-back flushes the TLBs of the server's
// other threads. Over RPC-over-RDMA with 16 READs of 256 KiB to 4 MiB in flight, that cut
// vnfsd's bandwidth to a quarter or less (bench/README.md). Buffers of min_pooled bytes and
// more come from here instead.
#pragma once

#include <cstddef>
#include <memory>

namespace vnfs::server {

class payload_buffers {
 public:
  /// Below this, a buffer comes from the allocator as usual (it does not trim for them).
  static constexpr std::size_t min_pooled = 64 * 1024;

  /// Keeps at most `retained_bytes` of idle buffers; what comes back beyond that is freed.
  explicit payload_buffers(std::size_t retained_bytes = std::size_t(64) << 20);

  /// A buffer of at least `n` bytes (n > 0). It goes back to the pool when the last copy of
  /// the pointer goes, also after the pool itself is gone. Thread-safe.
  std::shared_ptr<std::byte[]> get(std::size_t n);

  /// Idle bytes kept now (for tests).
  std::size_t retained() const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace vnfs::server
