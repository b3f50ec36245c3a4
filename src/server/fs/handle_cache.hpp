// vnfsd export file system: the objects behind recently used filehandles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "server/fs/object.hpp"

namespace vnfs::server::fs {

/// Maps the bytes of filehandles that export_root minted or verified to the objects it
/// opened for them, so that a PUTFH of a handle seen lately costs neither the MAC nor
/// open_by_handle_at. It only saves work: whoever takes an object from it still checks that
/// the object is alive and inside the export (export_root::resolve), exactly as after
/// opening it anew.
///
/// Each entry names its inode (device and inode numbers), so that the server can let go of
/// an object at once when a client removes or renames over its last name (erase_inode):
/// its space is then freed as soon as nothing else holds it.
///
/// Bounded: at most `capacity` entries. An entry not used between two calls of sweep() is
/// dropped by the second, so an object the cache pins (an O_PATH descriptor keeps a removed
/// file's inode and blocks) is let go within two sweep periods of its last use; when the
/// cache is full, an insertion sweeps first and, if every entry was used since the last
/// sweep, drops an arbitrary one.
///
/// Thread-safe.
class handle_cache {
 public:
  static constexpr std::size_t max_handle = 128;  ///< NFS4_FHSIZE: longer handles are not kept

  explicit handle_cache(std::size_t capacity) : capacity_(capacity) {}

  /// The object kept for exactly these handle bytes (sharing its descriptor), if any.
  std::optional<object> find(std::span<const std::byte> fh);
  /// Keeps `obj` (shared), the object of inode `ino` on device `dev`, for these handle
  /// bytes, replacing any older entry.
  void insert(std::span<const std::byte> fh, const object& obj, std::uint64_t dev, std::uint64_t ino);
  /// Forgets these handle bytes.
  void erase(std::span<const std::byte> fh);
  /// Forgets every entry of inode `ino` on device `dev`.
  void erase_inode(std::uint64_t dev, std::uint64_t ino);
  /// Drops the entries not used since the previous sweep.
  void sweep();

  std::size_t size() const;

 private:
  struct key {
    std::size_t len = 0;
    std::byte bytes[max_handle];
    explicit key(std::span<const std::byte> fh) : len(fh.size()) { std::memcpy(bytes, fh.data(), fh.size()); }
    std::string_view view() const noexcept { return {reinterpret_cast<const char*>(bytes), len}; }
    bool operator==(const key& o) const noexcept { return view() == o.view(); }
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept { return std::hash<std::string_view>{}(k.view()); }
  };
  struct entry {
    object obj;
    std::uint64_t dev = 0, ino = 0;
    bool used = false;  ///< looked up since the last sweep
  };

  void sweep_locked();

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<key, entry, key_hash> map_;
};

}  // namespace vnfs::server::fs
