// vnfs TPIE adapter: the settings of the block transfer engine (papers/003 §5.1). C++17.
#pragma once

#include <cstddef>

namespace vnfs::tpie {

/// How a file on vnfs moves its bytes. Every transfer goes between the server and memory
/// the engine registered with the client (one region per open file, sized
/// max(read_ahead_bytes, write_behind_bytes), allocated at the first read or write), so the
/// transport copies nothing; the accessor interface hands over the caller's memory only
/// during a call, so the engine copies once between that memory and its own.
struct engine_options {
  /// Bytes per READ or WRITE COMPOUND (at most 1 MiB, the client's largest transfer;
  /// rounded down to it).
  std::size_t request_bytes = std::size_t(1) << 20;
  /// Sequential reads keep up to this many bytes of READs in flight ahead of the
  /// application (a whole number of requests, at least one).
  bool read_ahead = true;
  std::size_t read_ahead_bytes = std::size_t(4) << 20;
  /// write_i returns once its bytes are queued; at most this many bytes are queued or in
  /// flight (a write beyond waits for earlier ones). Off: write_i returns when the server
  /// has answered every WRITE.
  bool write_behind = true;
  std::size_t write_behind_bytes = std::size_t(4) << 20;
};

/// The settings new accessors start with (process-wide; initially engine_options{} adjusted
/// by the environment: VNFS_TPIE_REQUEST_KIB, VNFS_TPIE_READ_AHEAD_KIB and
/// VNFS_TPIE_WRITE_BEHIND_KIB, where 0 turns read-ahead or write-behind off). Thread-safe.
engine_options default_engine_options();
void set_default_engine_options(const engine_options& options);

}  // namespace vnfs::tpie
