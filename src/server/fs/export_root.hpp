// vnfsd export file system: the export, its filehandles and its confinement.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include "server/fs/attributes.hpp"
#include "server/fs/error.hpp"
#include "server/fs/handle_cache.hpp"
#include "server/fs/object.hpp"

namespace vnfs::server::fs {

/// File-system totals of an export (fstatvfs on its root).
struct fs_stats {
  std::uint64_t bytes_total = 0;
  std::uint64_t bytes_free = 0;   ///< free for root
  std::uint64_t bytes_avail = 0;  ///< free for unprivileged users
  std::uint64_t files_total = 0;
  std::uint64_t files_free = 0;
  std::uint64_t files_avail = 0;
  std::uint32_t name_max = 0;  ///< longest name component
};

/// One exported directory tree.
///
/// Filehandles. fh_of() builds an opaque handle from the kernel's persistent handle
/// (name_to_handle_at) and authenticates it with a MAC under a per-export secret key:
///
///   byte 0      format version (1)
///   byte 1      n = length of the kernel handle (at most 106)
///   bytes 2-5   kernel handle type (big-endian int32)
///   bytes 6..   the n bytes of the kernel handle
///   last 16     HMAC-SHA256(key, bytes 0 .. 6+n-1), truncated to 16 bytes
///
/// so a handle is 22 + n <= 128 (NFS4_FHSIZE) bytes. The key is 32 random bytes stored in
/// the extended attribute `trusted.vnfs.fhkey` of the export root (trusted.* is visible
/// to and settable by CAP_SYS_ADMIN only, so clients can neither read nor set it): handles
/// survive a restart of vnfsd on the same export, and a handle of another export, or a
/// forged one, never verifies. resolve() only opens objects behind handles this export
/// minted, which is what confines it. Should a local process move an object out of the
/// export, its handle turns stale if it is a directory (resolve checks the directory's
/// path); a non-directory stays reachable by handle, as with knfsd's no_subtree_check
/// (the kernel cannot name the parent of a file opened by handle).
///
/// Mount points inside the export are not crossed: lookup refuses them (EXDEV) and fh_of
/// refuses objects of other mounts (EXDEV).
///
/// The objects of the handles resolved lately stay open (handle_cache), so that a handle
/// used again costs one statx (is it still linked, still inside?) instead of the MAC and
/// open_by_handle_at. A name a client removes or renames over is let go of at once
/// (before_unlinking, after_unlinking); an object removed otherwise (a local process) stays
/// pinned until sweep_handles() has run twice without its handle being used.
///
/// Thread-safe: the handle cache is synchronized, everything else immutable after
/// construction.
class export_root {
 public:
  static constexpr std::size_t max_fh_size = 128;  ///< NFS4_FHSIZE
  static constexpr std::size_t mac_size = 16;
  static constexpr std::size_t key_size = 32;
  static constexpr const char* key_xattr = "trusted.vnfs.fhkey";

  /// Opens the export at `dir` (symlinks in `dir` itself are followed: the administrator
  /// names it) and loads its key, creating it on first use (random bytes from getrandom).
  /// Throws std::system_error with a message naming the directory and the cause, notably
  /// when the file system refuses the trusted.* extended attribute (ENOTSUP, or EPERM
  /// without CAP_SYS_ADMIN) or the stored key is corrupt.
  explicit export_root(const std::filesystem::path& dir);
  ~export_root();

  export_root(export_root&&) noexcept;
  export_root& operator=(export_root&&) noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }
  /// The export's root directory. Usable concurrently; clone() it to own a copy.
  const object& root() const noexcept { return root_; }

  /// The filehandle of `obj` (an object of this export). EXDEV if it lives on another
  /// mount; EOVERFLOW if the kernel handle does not fit; errors of name_to_handle_at.
  /// Made once per object: `obj` and its clones remember it (as resolve() does the
  /// handle it verified), and later calls cost no system call and no MAC.
  std::vector<std::byte> fh_of(const object& obj, std::error_code& ec) const;

  /// The object behind a handle made by fh_of (of this or an earlier instance on the same
  /// export). errc::bad_handle if the size, version or MAC is wrong; ESTALE if it was valid
  /// but the object no longer exists (including a removed file that is still held open) or
  /// is a directory that is no longer inside the export.
  /// Runs open_by_handle_at with the root file-system identity even under a scoped_identity.
  object resolve(std::span<const std::byte> fh, std::error_code& ec) const;
  /// What resolve() read of the inode on its way.
  struct inode_status {
    attributes attrs;  ///< the inode's attributes (statx)
    /// attrs.ctime is older than the coarse real-time clock read just before the statx:
    /// every later change of the inode then sets a different ctime (the kernel stamps
    /// changes from that clock or a finer one), so this ctime identifies the inode's mode,
    /// owner and ACL for as long as it stays the same. False when the inode changed within
    /// the clock's last tick.
    bool ctime_settled = false;
  };
  /// The same, and in `status` what it read of the inode (nothing on error).
  object resolve(std::span<const std::byte> fh, std::error_code& ec, std::optional<inode_status>& status) const;

  /// The parent directory of directory `dir` (LOOKUPP). ENOENT at the export root (never
  /// escapes above it); ENOTDIR if `dir` is not a directory; EACCES without search access.
  object parent(const object& dir, std::error_code& ec) const;

  /// Whether `obj` is the export root (same inode). False on error.
  bool is_root(const object& obj) const noexcept;

  fs_stats statfs(std::error_code& ec) const;

  /// The largest size a file of this export can have: the file system's limit (ext4 with
  /// 4 KiB blocks: 16 TiB less a block), or the file-size resource limit vnfsd was started
  /// with if lower. Found when the export is opened, by growing an unnamed file (O_TMPFILE)
  /// in the root with ftruncate: no name and no data, and nothing of the export changes. A
  /// write ending past it fails (EFBIG); FATTR4_MAXFILESIZE reports it. Where the probe
  /// cannot run (no O_TMPFILE, a read-only file system), Linux's own bound, INT64_MAX.
  std::uint64_t max_file_size() const noexcept { return max_file_size_; }

  /// Lets go of the objects of handles not used since the previous call (handle_cache);
  /// the server calls it periodically.
  void sweep_handles() const;

  /// What before_unlinking() learnt of a name about to be removed or replaced.
  struct name_release {
    bool valid = false;
    std::uint64_t dev = 0, ino = 0;
  };
  /// Call with the directory and name that a REMOVE or RENAME is about to unlink, and
  /// after_unlinking() with its result once it has: the export then keeps no descriptor of
  /// that inode, so a file whose last name went has its space freed as soon as no open
  /// holds it. Costs one statx.
  name_release before_unlinking(const object& dir, std::string_view name) const;
  void after_unlinking(const name_release& r) const;

 private:
  class mac_context;

  bool contains_directory(int fd) const;
  /// Verifies the MAC of a well-formed handle and opens its object (O_PATH).
  unique_fd open_handle(std::span<const std::byte> fh, std::error_code& ec) const;

  std::filesystem::path path_;
  object root_;
  unique_fd mount_fd_;  ///< O_RDONLY on the root: open_by_handle_at refuses O_PATH descriptors
  std::array<unsigned char, key_size> key_{};
  int mount_id_ = -1;
  std::uint64_t root_ino_ = 0;
  std::uint32_t root_dev_major_ = 0, root_dev_minor_ = 0;
  std::uint64_t max_file_size_ = 0;
  std::unique_ptr<mac_context> mac_;
  std::unique_ptr<handle_cache> handles_;
};

}  // namespace vnfs::server::fs
