// vnfsd transactions: applying deferred changes of file data (redo records), after a commit
// and again by recovery (docs/transactions.md, "Redo for file data").
#pragma once

#include <cstdint>
#include <span>
#include <system_error>
#include <vector>

#include "server/fs/export_root.hpp"
#include "server/txn/journal.hpp"

namespace vnfs::server::txn {

/// Writes `data` at `offset` of the regular file open for writing at `fd`; with `cut`,
/// then sets its size to where `data` ends. Doing it twice leaves what doing it once does.
std::error_code redo_write(int fd, std::uint64_t offset, std::span<const std::byte> data, bool cut);

/// Replays the redo records (rec_redo_write, rec_redo_size) of `records`, the journal of a
/// committed transaction whose checkpoint is missing, in order; files are found by their
/// filehandles, as root. A file that no longer exists is skipped (nothing can have removed
/// it while the transaction held its lock; only a change outside vnfsd could). Returns the
/// first error.
std::error_code replay(const fs::export_root& exp, const std::vector<record>& records);

}  // namespace vnfs::server::txn
