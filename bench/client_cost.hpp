// What a measured stretch of vnfs::client work cost, taken the same way by every client
// benchmark (bench/client_io, bench/rdma_io).
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <ostream>

#include "bench_util.hpp"
#include "vnfs/client.hpp"

namespace vnfs::bench {

/// Wall time; CPU time and context switches of the process (every thread: the measuring
/// thread and the library's I/O threads; vnfsd runs as a process of its own) and of the
/// measuring thread alone; the client's COMPOUNDs and payload bytes.
struct client_cost {
  double seconds = 0;
  process_usage process, caller;  // caller: the measuring (application) thread
  std::uint64_t compounds = 0, bytes_direct = 0, bytes_copied = 0;

  double cpu_seconds() const { return process.cpu_seconds; }
  /// The library's threads: the process less the measuring thread.
  process_usage library() const { return process - caller; }

  /// The fields as JSON members, each led by ", ": seconds, cpu_seconds,
  /// voluntary_switches and involuntary_switches (the process's), the same three of the
  /// measuring thread prefixed "caller_", compounds, payload_bytes_direct and _copied.
  void write_json(std::ostream& o) const {
    o << ", \"seconds\": " << seconds << ", \"cpu_seconds\": " << process.cpu_seconds
      << ", \"voluntary_switches\": " << process.voluntary_switches
      << ", \"involuntary_switches\": " << process.involuntary_switches
      << ", \"caller_cpu_seconds\": " << caller.cpu_seconds
      << ", \"caller_voluntary_switches\": " << caller.voluntary_switches
      << ", \"caller_involuntary_switches\": " << caller.involuntary_switches << ", \"compounds\": " << compounds
      << ", \"payload_bytes_direct\": " << bytes_direct << ", \"payload_bytes_copied\": " << bytes_copied;
  }
};

/// Starts measuring when made, on the thread that will do the work; cost() is what was
/// spent since, and must be called on that same thread.
class client_meter {
 public:
  explicit client_meter(const vnfs::client& c)
      : client_(c), stats0_(c.stats()), process0_(usage_now()), caller0_(usage_now(RUSAGE_THREAD)),
        start_(std::chrono::steady_clock::now()) {}

  client_cost cost() const {
    client_cost k;
    k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    k.process = usage_now() - process0_;
    k.caller = usage_now(RUSAGE_THREAD) - caller0_;
    const vnfs::client_stats s = client_.stats();
    k.compounds = s.compounds - stats0_.compounds;
    k.bytes_direct = s.payload_bytes_direct - stats0_.payload_bytes_direct;
    k.bytes_copied = s.payload_bytes_copied - stats0_.payload_bytes_copied;
    return k;
  }

 private:
  const vnfs::client& client_;
  vnfs::client_stats stats0_;
  process_usage process0_, caller0_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace vnfs::bench
