// vnfsd export file system: file data (read, write, append, sync, copy).
//
// A write opens the object's inode afresh by re-opening its O_PATH descriptor through
// /proc/self/fd: the kernel checks access under the calling thread's identity, and nothing
// is ever reached through a symlink. A read opens it so once per object and keeps that
// descriptor with the object (object::keep_reader); every later read through it is
// checked against its own caller with faccessat(R_OK), the permission check open(2) makes. Only regular
// files carry data: a directory gives EISDIR, a symlink ELOOP, anything else
// errc::wrong_type, before anything is opened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <system_error>

#include "server/fs/error.hpp"
#include "server/fs/object.hpp"

namespace vnfs::server::fs {

struct read_result {
  std::size_t count = 0;  ///< bytes placed at the start of the buffer
  bool eof = false;       ///< the read reached the end of the file
};

/// Reads up to buf.size() bytes at `offset` (short only at end of file) from an already
/// open descriptor; eof says whether the file ends at or before offset + count.
read_result read_at(int fd, std::uint64_t offset, std::span<std::byte> buf, std::error_code& ec);
/// Writes to an already open descriptor with pwritev2 and `rwf_flags` (RWF_DSYNC, RWF_SYNC,
/// RWF_APPEND). With offset -1 and RWF_APPEND each call appends atomically.
std::size_t write_at(int fd, std::int64_t offset, std::span<const std::byte> data, int rwf_flags,
                     std::error_code& ec);

/// The descriptor the data of `file` is read through, checked for the calling thread's
/// identity as open(2) would check it: the one the object keeps (object::keep_reader),
/// checked with faccessat(R_OK), or else one opened now and kept. It lives as long as the
/// object's last clone. -1 with `ec` set when the caller may not read the file.
/// `settled_ctime`, if given, is the inode's ctime as export_root::resolve found it
/// settled (and nothing changed the inode since, as far as the caller knows): a grant
/// remembered for this identity at that ctime (object::read_granted) then stands for the
/// faccessat, and a new grant is remembered with it.
int reader(const object& file, std::error_code& ec, const std::optional<timestamp>& settled_ctime = {});

/// What a read of up to `count` bytes at `offset` through the open descriptor `fd` would
/// give, from the file's size (fstat), reading nothing: the bytes it would place and
/// whether they reach the end of the file.
read_result extent(int fd, std::uint64_t offset, std::size_t count, std::error_code& ec);

/// Whether `count` bytes of the open file `fd` from `offset` are all in the page cache now
/// (cachestat(2), Linux 6.5; false where the kernel has none).
bool in_page_cache(int fd, std::uint64_t offset, std::size_t count);

/// reader(), then read_at().
read_result read(const object& file, std::uint64_t offset, std::span<std::byte> buf,
                 std::error_code& ec, const std::optional<timestamp>& settled_ctime = {});

enum class stability {
  unstable,   ///< page cache; sync() later (NFS UNSTABLE4 + COMMIT)
  data_sync,  ///< O_DSYNC (DATA_SYNC4)
  file_sync,  ///< O_SYNC (FILE_SYNC4)
  writeback,  ///< page cache, its writeback started at once (start_writeback): a later fsync waits less
};

/// Starts writing bytes [offset, offset + count) of the open file `fd` back to the device and
/// returns without waiting (sync_file_range SYNC_FILE_RANGE_WRITE). Durability still needs an
/// fsync; this only lets the device work while the caller goes on (a transaction's WRITEs
/// before the commit that fsyncs them). Errors are left to that fsync.
void start_writeback(int fd, std::uint64_t offset, std::uint64_t count) noexcept;

/// Writes all of `data` at `offset`; returns the bytes written (fewer only with an error
/// such as ENOSPC after partial progress, in which case ec is set too). Drops an
/// exclusive-create verifier first.
std::size_t write(const object& file, std::uint64_t offset, std::span<const std::byte> data,
                  stability how, std::error_code& ec);

struct append_result {
  std::uint64_t offset = 0;  ///< where the data landed
  std::size_t count = 0;     ///< bytes written
};

/// Appends `data` at the end of the file atomically with O_APPEND: concurrent appends
/// (from any thread or process) never interleave or overlap. One write(2): on a short
/// write (ENOSPC, EFBIG) count says how much landed.
append_result append(const object& file, std::span<const std::byte> data, stability how,
                     std::error_code& ec);

/// Flushes the file to stable storage: fdatasync if data_only, else fsync. Directories
/// are accepted too (fsync of the directory). The flush is done with the root file-system
/// identity: it reads and writes no data, and COMMIT must work for write-only files.
void sync(const object& file, bool data_only, std::error_code& ec);

/// Copies `count` bytes (0: up to the end of `src`) from `src` at src_offset to `dst` at
/// dst_offset with copy_file_range, looping until done or end of file (falls back to
/// read/write where the kernel cannot copy, e.g. across file systems). Returns the bytes
/// copied; fewer than `count` only at end of `src` or with ec set. EINVAL for overlapping
/// ranges of one file (with count 0 the ranges extend to the end).
std::uint64_t copy(const object& src, std::uint64_t src_offset, const object& dst,
                   std::uint64_t dst_offset, std::uint64_t count, std::error_code& ec);

}  // namespace vnfs::server::fs
