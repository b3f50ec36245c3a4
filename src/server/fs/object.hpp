// vnfsd export file system: an object of the export (file, directory, symlink, ...).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <compare>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

#include "server/fs/unique_fd.hpp"

namespace vnfs::server::fs {

/// Kinds of objects. The numeric values are those of NFSv4's nfs_ftype4 (NF4REG = 1 ...),
/// so handlers may convert with a static_cast.
enum class file_type : std::uint8_t {
  regular = 1,
  directory = 2,
  block = 3,
  character = 4,
  symlink = 5,
  socket = 6,
  fifo = 7,
};

/// The file_type of a st_mode / stx_mode value (S_IFMT bits). Unknown kinds map to regular.
file_type file_type_of(mode_t mode) noexcept;

/// Which inode an object is: the numbers fstat(2) gives as st_dev and st_ino.
struct inode_id {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
};

/// A file time (statx's timestamps).
struct timestamp {
  std::int64_t sec = 0;
  std::uint32_t nsec = 0;
  friend auto operator<=>(const timestamp&, const timestamp&) = default;
};

/// One object of an export: an O_PATH descriptor plus its type. An O_PATH descriptor pins
/// the inode, grants no access by itself and never follows a symlink (a symlink object
/// refers to the link itself). Move-only and cheap to move; the descriptor may be used from
/// several threads at once (all operations are positional / *at()-relative), and clones
/// share it: it is closed when the last of them goes.
///
/// Objects are made by export_root (root(), resolve(), parent()) and by the directory
/// operations; the public constructors are for those, and require that `type` (and `id`)
/// be those of the inode `fd` refers to.
///
/// A regular file's object may also keep a descriptor open for reading its data (see
/// fs::read): it is shared by the clones and closed with the O_PATH descriptor.
class object {
 public:
  object() noexcept = default;
  /// Throws std::bad_alloc (the descriptor is closed then).
  object(unique_fd fd, file_type type);
  object(unique_fd fd, file_type type, inode_id id);
  object(object&&) noexcept = default;
  object& operator=(object&&) noexcept = default;

  int fd() const noexcept { return fd_ ? fd_->path.get() : -1; }
  file_type type() const noexcept { return type_; }
  bool is_directory() const noexcept { return type_ == file_type::directory; }
  explicit operator bool() const noexcept { return fd_ && fd_->path; }
  /// The inode's numbers when they were known at construction (no system call).
  std::optional<inode_id> id() const noexcept { return fd_ ? fd_->id : std::nullopt; }
  /// The inode's numbers: id() when known, else from one fstat. {} with `ec` set when the
  /// object is empty or fstat fails.
  inode_id inode(std::error_code& ec) const;

  /// The descriptor kept open for reading the data, or -1 if none is kept yet.
  int kept_reader() const noexcept { return fd_ ? fd_->reader.load(std::memory_order_acquire) : -1; }
  /// Keeps `fd` (opened O_RDONLY on this object's inode) as that descriptor, unless another
  /// thread kept one first: then `fd` is closed. Returns the descriptor kept, which lives as
  /// long as the object's last clone.
  int keep_reader(unique_fd fd) const noexcept;

  /// Whether the calling thread's file-system identity (fsuid, fsgid, groups) was granted
  /// read access to the inode (faccessat R_OK) while its ctime was `ctime`: fs::reader's
  /// memory of its last grant, shared by the clones.
  bool read_granted(const timestamp& ctime) const;
  /// Remembers that the calling thread's identity was granted read access at `ctime`,
  /// replacing the grant remembered before.
  void grant_read(const timestamp& ctime) const;

  /// Whether the inode is known to carry no exclusive-create verifier (see
  /// fs::create), shared by the clones. Set by note_no_create_verifier() once that is known:
  /// a file created otherwise, or one whose verifier was looked for and is gone. Only an
  /// exclusive create gives an inode a verifier, as the inode is made, so it stays true.
  bool no_create_verifier() const noexcept {
    return fd_ && fd_->no_create_verifier.load(std::memory_order_relaxed);
  }
  void note_no_create_verifier() const noexcept {
    if (fd_) fd_->no_create_verifier.store(true, std::memory_order_relaxed);
  }

  /// The filehandle `maker` (the export_root that made it) remembered for this inode with
  /// remember_handle(), shared by the clones; empty when none is remembered for `maker`.
  /// An inode's handle never changes, so a handle made once serves the object's whole life.
  std::vector<std::byte> remembered_handle(const void* maker) const;
  void remember_handle(const void* maker, std::span<const std::byte> fh) const;

  /// A second object for the same inode, sharing the descriptor (no system call), e.g. for
  /// SAVEFH. Never fails; `ec` is cleared.
  object clone(std::error_code& ec) const;
  /// The same, for callers that have no error to report.
  object share() const noexcept;

  /// Wraps an O_PATH descriptor, finding its type with statx. On failure the descriptor
  /// is closed and an empty object returned.
  static object from_fd(unique_fd fd, std::error_code& ec);

 private:
  object(const object&) = default;  // share()

  struct read_grant {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
    timestamp ctime;
  };
  struct node {
    unique_fd path;                ///< O_PATH
    std::optional<inode_id> id;
    mutable std::atomic<int> reader{-1};  ///< kept_reader(), owned: closed by ~node
    mutable std::atomic<bool> no_create_verifier{false};  ///< no_create_verifier()
    mutable std::mutex grant_mu;
    mutable std::optional<read_grant> grant;  ///< read_granted(), under grant_mu
    mutable std::mutex handle_mu;
    mutable const void* handle_maker = nullptr;  ///< remembered_handle(), under handle_mu
    mutable std::vector<std::byte> handle;
    ~node();
  };

  std::shared_ptr<const node> fd_;
  file_type type_ = file_type::regular;
};

}  // namespace vnfs::server::fs
