// vnfs command line: copying a file or a whole tree between two locations (any pair of
// clients) with the vectorized calls:
//   vlistdir (recursive, with attributes) of the source;
//   vmkdir of the directories, parents first;
//   vreadlink + vsymlink for the symlinks (copied as symlinks, never followed);
//   the data: vscopy when both ends are on one client (server-side COPY where the server
//   has it), else vread/vwrite batches of at most 64 MiB and 4096 files, each file created
//   with the source's permission bits plus owner write (so that a read-only file can take
//   its later batches; read-only files over 64 MiB take this way on one client too), and
//   given its source's mode, atime and mtime with its last piece (vio::attrs_after: in the
//   same COMPOUND);
//   vsetattrs last: the same on every other file and on every directory (directories
//   deepest first, after everything inside them is written) and the times on every
//   symlink; only the times on a file that a file:// vscopy created (it has its source's
//   mode already, unless that has set-id or sticky bits).
#pragma once

#include "location.hpp"
#include "progress.hpp"
#include "vnfs/client.hpp"

namespace vnfs::cli {

struct copy_job {
  vnfs::client* src = nullptr;
  location src_loc;
  vnfs::client* dst = nullptr;
  location dst_loc;  ///< the object to create (or to copy over), not a directory to copy into
  bool same_client = false;
  bool dst_missing = false;  ///< dst_loc was found missing just before (landing): not looked at again
};

/// Copies the object at src_loc (attributes `src_stat`, from attr::type|mode|size|atime|mtime;
/// a directory is copied with everything in it) to dst_loc. An existing destination is
/// merged into (directory onto directory: existing files are overwritten, others kept) or
/// replaced (file or symlink onto a non-directory); a directory onto a non-directory or the
/// reverse is refused. Throws command_error at the first failure; special files (devices,
/// fifos, sockets) are skipped with a report().
void copy_tree(const copy_job& job, const file_stat& src_stat, progress& bar);

/// The attributes copy_tree needs of its source.
inline constexpr unsigned copy_attrs = attr::type | attr::mode | attr::size | attr::atime | attr::mtime;

}  // namespace vnfs::cli
