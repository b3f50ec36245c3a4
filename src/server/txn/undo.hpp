// vnfsd transactions: the undo executor. One code path for a transaction that failed while
// the server runs and for one that a crash left behind (recovery at start-up).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <system_error>
#include <vector>

#include "server/fs/export_root.hpp"
#include "server/txn/journal.hpp"

namespace vnfs::server::txn {

/// Undoes `records` (a journal without rec_commit) in reverse order. A created name that
/// is a directory is removed with everything in it (all of it made by the transaction). Each step tolerates
/// that the change it undoes was never made (the crash came between record and change),
/// so running it twice is harmless. Objects are found by their filehandles; an object that
/// no longer exists (created by this transaction and already removed by an earlier undo
/// step) is skipped. `data_fd` reads the transaction's data file (range backups); `state_fd`
/// is the state directory (graves). `made`: the objects (device, inode) the transaction
/// made, which a rollback while the server runs knows (recovery, with nothing held open,
/// passes none): a regular file among them is cut to size 0 before its name goes, so that
/// its space is back though descriptors still hold it. Returns the first error that left a
/// step undone.
using made_objects = std::set<std::pair<std::uint64_t, std::uint64_t>>;
std::error_code undo(const fs::export_root& exp, int state_fd, int data_fd, const std::vector<record>& records,
                     const made_objects& made = {});

/// Copies `length` bytes from fd `src` at src_offset to fd `dst` at dst_offset
/// (copy_file_range, which may share the blocks where the file system can, falling back to
/// pread/pwrite). Short only at the end of `src`.
std::error_code copy_bytes(int src, std::uint64_t src_offset, int dst, std::uint64_t dst_offset,
                           std::uint64_t length);

}  // namespace vnfs::server::txn
