// vnfs public API: one item of vread / vwrite (papers/000 §3, "vio").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "vnfs/file_stat.hpp"
#include "vnfs/memory_region.hpp"
#include "vnfs/vfile.hpp"

namespace vnfs {

/// Flags of a vio (bitwise or).
namespace vio_flags {
inline constexpr unsigned create = 1;     ///< vwrite: create the file if missing (OPEN4_CREATE, `mode`)
inline constexpr unsigned exclusive = 2;  ///< with create: fail with EEXIST if it exists
inline constexpr unsigned truncate = 4;   ///< vwrite by path: truncate the file to 0 first
inline constexpr unsigned stable = 8;     ///< vwrite: DATA_SYNC4 in the same COMPOUND (no later COMMIT)
inline constexpr unsigned append = 16;    ///< vwrite: at the end of the file (offset 2^64-1, vnfsd's extension)
}  // namespace vio_flags

/// Reads into, or writes from, `region` when it is set, else `buffer` (vwrite never writes
/// into `buffer`). The amount asked for is the buffer's size; at most 1 MiB per item moves
/// in one operation (a longer item is split into several, as the kernel splits by rsize).
struct vio {
  vfile file;
  std::uint64_t offset = 0;
  memory_slice region;
  std::span<std::byte> buffer;
  unsigned flags = 0;
  std::uint32_t mode = 0644;  ///< permission bits of a file vwrite creates
  /// vwrite: attributes the file is given once this item's data is written, in the same
  /// COMPOUND (a SETATTR after its last WRITE): any of attr::mode, attr::atime and
  /// attr::mtime (vattrs.hpp), from `attrs` (another bit, or any in vread: errc::bad_argument).
  /// A copy that stamps each file with its source's mode and times this way needs no
  /// vsetattrs round for them afterwards. 0: none.
  unsigned attrs_after = 0;
  file_stat attrs;

  // ---- results
  std::uint64_t bytes = 0;  ///< bytes moved
  bool eof = false;         ///< vread: the read reached the end of the file

  vio() = default;
  /// A read of buffer.size() bytes at `offset`.
  vio(vnfs::vfile f, std::uint64_t off, std::span<std::byte> dst, unsigned fl = 0)
      : file(std::move(f)), offset(off), buffer(dst), flags(fl) {}
  /// A write of src.size() bytes at `offset` (the data is only read).
  vio(vnfs::vfile f, std::uint64_t off, std::span<const std::byte> src, unsigned fl = 0)
      : file(std::move(f)), offset(off),
        buffer(const_cast<std::byte*>(src.data()), src.size()), flags(fl) {}
  /// Direct I/O to or from a registered slice.
  vio(vnfs::vfile f, std::uint64_t off, memory_slice s, unsigned fl = 0)
      : file(std::move(f)), offset(off), region(std::move(s)), flags(fl) {}

  std::size_t size() const { return region.data() ? region.size() : buffer.size(); }
  std::span<std::byte> data() const {
    return region.data() ? std::span<std::byte>(region.data(), region.size()) : buffer;
  }
};

}  // namespace vnfs
