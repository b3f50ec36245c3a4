// vnfs Berkeley DB adapter: Berkeley DB 5.3's files under mapped local prefixes, on vnfs.
//
// attach() installs Berkeley DB's I/O hooks (db_env_set_func_open, close, read, write,
// pread, pwrite, seek, fsync, ftruncate, ioinfo, exists, unlink, rename, dirlist, dirfree,
// file_map, region_map, yield). They are process-wide, so every environment and database
// of the process is concerned: a path under a mapping's prefix goes to that mapping's
// vnfs client (connected on first use), every other path to the local file system with
// the calls Berkeley DB makes itself. Nothing under a mapped prefix touches the local disk.
//
// One cache, direct I/O. The adapter keeps no cache: every page Berkeley DB reads or writes
// is one READ or WRITE COMPOUND (after a seek, which costs nothing). The regions of a shared
// environment (not DB_PRIVATE) are provided by region_map in this process's memory and
// registered with every client, so a page moves between the server and its buffer in
// Berkeley DB's cache with no copy (client_stats::payload_bytes_copied stays 0).
// Buffers outside the regions (a DB opened without an environment, DB_PRIVATE) work too,
// through a library buffer on reads.
//
// Durability: Berkeley DB's fsync is a COMMIT of the file; files opened with O_DSYNC
// (DB_LOG_DSYNC) commit after every write. O_DIRECT is dropped (there is no client cache
// to bypass).
//
// What Berkeley DB does outside its hooks, and how it is handled for mapped paths:
// - stat(), mkdir(), chmod() and fopen() (file ids at database creation, intermediate
//   directories, DB_CONFIG) are called by libdb directly: this library defines them,
//   serving mapped paths through vnfs and passing every other path on to the C library.
//   fopen of a mapped path reads it (DB_CONFIG); writing through fopen is refused (ENOTSUP).
// - fcntl locks (DB_REGISTER's __db.register) cannot reach the server: opening
//   __db.register under a prefix is refused with ENOTSUP and one line on stderr.
// - mmap of database files (file_map) is refused for mapped files, so Berkeley DB reads
//   them instead.
// - Regions (region_map, process-wide like the other hooks): a region file that exists on
//   local disk is mapped as Berkeley DB would; every other region is memory of this process,
//   registered with the clients, from its creation to its unmapping. So no region file is
//   ever written (Berkeley DB asks the hook to create one even when it only tries to join),
//   and an environment created while attached, on vnfs or local, belongs to the process that
//   opened it: its threads share it, other processes cannot join it at the same time.
//   Processes one after the other (the db5.3 utilities) work: each creates the regions anew;
//   after a crash, recovery is the application's as always.
// - Reads past the end of a file (of any file, mapped or not, while attached) return
//   zeros for the missing part: Berkeley DB treats a short read as an error when a read
//   hook is set, and zeros are what it substitutes itself without one.
//
// Errors reach Berkeley DB as errno values (ENOENT, EACCES, EIO for transport failures,
// ...); a mapping whose server cannot be reached prints one line naming the path and the
// URL on stderr.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "vnfs/bdb/vnfs_map.hpp"
#include "vnfs/client.hpp"

namespace vnfs::bdb {

/// How the regions are used. register_regions = false leaves them unregistered, so every
/// page read goes through a library buffer and is copied (the baseline bench/bdb_fig7
/// measures direct placement against).
struct region_options {
  bool register_regions = true;
};

/// Installs the hooks for these mappings (replacing an earlier attach). Clients connect
/// lazily, on the first call under their prefix, with `options`. Call it before opening
/// any Berkeley DB handle.
void attach(std::vector<mapping> maps, client_options options = {}, region_options regions = {});

/// Restores Berkeley DB's own I/O and closes the clients. No handle may be open.
void detach();

/// The counters of the client serving `prefix` (one of the attached mappings' prefixes);
/// nothing if that client has not connected yet.
std::optional<client_stats> stats(std::string_view prefix);

}  // namespace vnfs::bdb
