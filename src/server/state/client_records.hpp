// vnfsd: the stable client records that survive a restart (RFC 8881 §8.4.2.1).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include "server/state/client_principal.hpp"

namespace vnfs::server {

/// The clients that may reclaim state after a restart: for each, its co_ownerid and the
/// principal that established it. Kept as one file, `clients`, in a recovery directory.
///
/// The file is text: a first line `vnfsd-clients 1`, then one line per client,
/// `FLAVOR UID GID OWNER` with the three numbers in decimal and OWNER the co_ownerid's bytes
/// in lower-case hex. store() replaces it atomically (a temporary file written and fsynced,
/// renamed over the old one, the directory fsynced), so a crash leaves either the old list
/// or the new one. The directory is created (mode 0700) by the first store().
///
/// Not thread-safe: its owner (client_table) serialises the calls. Every file operation runs
/// with the server's own file-system identity (fs::scoped_fs_root), whatever client the
/// calling worker thread is serving.
class client_records {
 public:
  using list = std::map<std::string, client_principal>;  ///< by co_ownerid

  /// The recovery directory `dir`; an empty path keeps nothing (load() finds no clients,
  /// store() does nothing).
  explicit client_records(std::filesystem::path dir);

  /// The list as stored; empty if there is no file yet. Throws std::runtime_error naming
  /// the file when it cannot be read or is not in the format above.
  list load() const;

  /// Replaces the stored list by `clients` (see above). On failure the stored list is
  /// unchanged and the error is returned (ENOSPC, EIO, ...).
  std::error_code store(const list& clients);

  const std::filesystem::path& dir() const noexcept { return dir_; }

  /// The name of the file in the recovery directory.
  static constexpr const char* file_name = "clients";

 private:
  std::filesystem::path dir_;
};

}  // namespace vnfs::server
