// vnfs TPIE adapter: what one accessor's block transfer engine did. C++17.
#pragma once

#include <cstdint>

namespace vnfs::tpie {

/// Counters of one accessor since it was constructed (over all the files it opened). Only
/// files on vnfs count; local files leave them at zero.
struct transfer_stats {
  std::uint64_t read_requests = 0;    ///< READ COMPOUNDs issued (read-ahead included)
  std::uint64_t write_requests = 0;   ///< WRITE COMPOUNDs issued
  std::uint64_t bytes_read_ahead = 0; ///< of the bytes read, those fetched before read_i asked for them
  std::uint64_t bytes_discarded = 0;  ///< read ahead but never delivered (a seek or a write elsewhere, close)
  std::uint64_t waits = 0;            ///< times a call blocked for the server (a read not yet arrived, a full write-behind queue, a drain)
};

}  // namespace vnfs::tpie
