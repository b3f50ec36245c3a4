// vnfs public API: the client — one connection to a file service, named by a URL.
//
// Threading model. A client owns the threads that do its I/O; the application owns none of
// them and needs none:
// - nfs://: one I/O thread per client runs the TCP connection (sends, receives, session
//   upkeep: lease renewal, reconnection and retransmission). Replies are decoded there and
//   READ payload is received there straight into the caller's registered memory.
// - file://: a small pool of worker threads makes the POSIX calls.
// Completions are delivered from those threads. Where each form's completion runs:
// - completion group: queued in the group; the application polls or waits on it from any
//   thread;
// - callback (detail::done_fn): called on the client thread that completes the operation;
// - Asio completion token: the handler is posted (asio::post) to its associated executor
//   when it has one (asio::bind_executor, a strand, a coroutine's executor, use_future's);
//   else to client_options::executor when the application gave one (e.g. its io_context's:
//   the handler runs on a thread running that io_context); else it is called on the client
//   thread that completes the operation. Each post keeps work outstanding on the executor
//   until the handler is posted, so io_context::run() does not return while an operation is
//   in flight. A handler or callback that runs on a client thread must not block.
// The synchronous calls are a wait on the asynchronous ones and may be called from any
// thread except the client's own (i.e. not from a callback or a handler that runs there).
// nfs://: while it waits, the calling thread does the client's I/O itself in place of the
// I/O thread (one sleep per round trip instead of two threads handing the call over and
// back); it then also completes what it receives of other threads' calls, so a callback or
// handler may run on an application thread that is inside a synchronous call on the same
// client — as on the I/O thread, it must not block.
// One client may be used by many application threads at once: every call is thread-safe,
// and concurrent calls share the session's slots.
//
// Paths are relative to the URL's path: with nfs://host/exp/a, "b/c" and "/b/c" both name
// exp/a/b/c on the server. Names are not resolved through symlinks by the server; the
// scalar calls follow none (like the *at() calls with AT_SYMLINK_NOFOLLOW), except open,
// which refuses a symlink (ELOOP as NFS4ERR_SYMLINK).
//
// Errors: std::error_code (see error.hpp); the synchronous calls throw std::system_error.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <utility>  // before Asio (Boost 1.74's awaitable.hpp needs std::exchange)
#include <boost/asio/any_io_executor.hpp>

#include "vnfs/call_forms.hpp"
#include "vnfs/completion_group.hpp"
#include "vnfs/error.hpp"
#include "vnfs/file.hpp"
#include "vnfs/file_stat.hpp"
#include "vnfs/memory_region.hpp"
#include "vnfs/vattrs.hpp"
#include "vnfs/vcopy.hpp"
#include "vnfs/vio.hpp"
#include "vnfs/vlistdir.hpp"
#include "vnfs/vnames.hpp"
#include "vnfs/vresult.hpp"

namespace vnfs {

struct client_options {
  /// AUTH_SYS identity sent with every call; by default the process's (getuid/getgid).
  std::optional<std::uint32_t> uid, gid;
  std::vector<std::uint32_t> gids;
  /// Cap on bytes registered at once (register_memory fails with errc::registration_limit).
  std::size_t max_registered_bytes = std::size_t(1) << 30;
  /// Session slots asked for: COMPOUNDs in flight at once on the connection.
  std::uint32_t slots = 64;
  /// How long connect() and each reconnection attempt may take.
  std::chrono::milliseconds connect_timeout{10'000};
  /// After a connection loss, how long to keep reconnecting before failing what is in
  /// flight with the transport error.
  std::chrono::milliseconds reconnect_for{30'000};
  /// COMPOUND operations asked for at CREATE_SESSION (the server may grant fewer).
  std::uint32_t max_operations = 1024;
  /// nfs://: pack the vectorized calls into COMPOUNDs. Off, each item runs as the scalar
  /// calls (one kernel-client-like round trip pattern each): the baseline they are measured
  /// against.
  bool compound_vectors = true;
  /// nfs://, with compound_vectors: one vectorized call keeps at most this many bytes of
  /// COMPOUNDs in flight (requests plus the upper estimates of their replies; the first
  /// always goes). It bounds the memory a large vread or vwrite holds in buffers and keeps
  /// them in cache: on loopback, 8 x 16 MiB vreads took 0.05-0.06 s with 16 MiB, 0.07-0.08 s
  /// with 64 MiB and 0.07-0.11 s unbounded (bench/vnfs_experiments --vector-window-mib).
  /// 0: no bound.
  std::size_t vector_window_bytes = std::size_t(16) << 20;
  /// nfs://, with compound_vectors: every mutating vectorized call (vwrite, vsetattrs, vmkdir,
  /// vsymlink, vhardlink, vremove, vrename) runs as one transaction on the server
  /// (docs/transactions.md): all its items take effect, or none. The vresult says which:
  ///  - committed: ok();
  ///  - aborted: `error` and `failed_index` name the item that failed, status[failed_index]
  ///    is its error, items before it are errc::rolled_back, the rest errc::not_executed,
  ///    ok_count is 0, and nothing of the call remains on the server;
  ///  - refused before anything ran: `error` is errc::transactions_unsupported (a server
  ///    without the extension, e.g. NFS-Ganesha), errc::transaction_too_large (more than one
  ///    COMPOUND's worth of operations, request or reply), or the server's reason;
  ///    failed_index is npos and every status errc::not_executed;
  ///  - its reply lost with the session (the server restarted while it ran): the client does
  ///    not send it again but asks the server how it ended (docs/transactions.md, "Unknown
  ///    outcomes"): committed, ok() — but what only the reply carried is not filled in
  ///    (vwrite's vio::bytes stays 0); errc::transaction_aborted when it never committed
  ///    (nothing of it remains; failed_index npos, every status errc::not_executed); or
  ///    errc::outcome_unknown when the server could not be asked (it did not come back
  ///    within reconnect_for, or the client was closed): all of it took effect, or none.
  /// vscopy is not transactional yet: it fails with errc::bad_argument. The composed calls
  /// (vcopy, ensure_directory, remove_tree) run each of their mutating steps as its own
  /// transaction, not the whole. Reading calls are unaffected. connect() refuses the option for file:// and without
  /// compound_vectors (errc::bad_argument).
  bool atomic_vectors = false;
  /// file://: worker threads making the POSIX calls.
  unsigned local_threads = 4;
  /// Where handlers of the Asio token form that have no associated executor run (see the
  /// threading model above), e.g. `io.get_executor()` of the application's io_context. It
  /// must outlive the client's operations; until a handler is posted, work is outstanding
  /// on it. Empty (the default): such handlers run on the client thread that completes the
  /// operation.
  boost::asio::any_io_executor executor;
};

/// Counters since connect. Round trips are exact: tests assert them.
struct client_stats {
  std::uint64_t compounds = 0;        ///< COMPOUNDs sent (retransmissions included)
  std::uint64_t operations = 0;       ///< operations in them, SEQUENCE included
  std::uint64_t bytes_sent = 0;       ///< on the wire, record marks included
  std::uint64_t bytes_received = 0;
  std::uint64_t payload_bytes_copied = 0;  ///< READ/WRITE payload that went through a library buffer
  std::uint64_t payload_bytes_direct = 0;  ///< payload moved straight between socket and caller memory
  std::uint64_t reconnects = 0;
  std::uint64_t retransmissions = 0;
  /// Replies an application thread received itself while it waited for a synchronous call,
  /// running the client's I/O in place of the client's I/O thread (nfs://; see the threading
  /// model above).
  std::uint64_t replies_to_waiting_callers = 0;
};

namespace detail {
class backend;
struct internals;
}  // namespace detail

/// A directory being listed (opendir / readdir).
struct dir_stream {
  std::string path;
  std::vector<dir_entry> entries;  ///< read so far, not yet returned
  std::uint64_t cookie = 0;        ///< where the next page starts
  std::uint64_t verifier = 0;      ///< the server's cookie verifier (opaque to callers)
  bool eof = false;
  /// The directory's handle, once a backend learned it (nfs://: with the second page); later
  /// pages start from it instead of looking the path up again. Opaque to callers.
  file_handle handle;
};

class transaction;

class client {
 public:
  /// Connects to nfs://HOST[:PORT]/PATH (TCP, port 2049 by default) or file:///PATH.
  /// Throws std::system_error (errc::bad_url, connection errors, NFS errors of the session
  /// set-up, NFS4ERR_NOENT if PATH does not exist).
  /// Over nfs://, connecting costs two round trips (EXCHANGE_ID, CREATE_SESSION) and, when
  /// PATH is not the server's root, a third that looks PATH up; what else the session needs
  /// first (RECLAIM_COMPLETE, the lease time) rides on the first call's COMPOUND.
  static client connect(std::string_view url, client_options options = {});

  client(client&&) noexcept;
  client& operator=(client&&) noexcept;
  /// close(), then releases the threads.
  ~client();

  /// Ends the session in order (DESTROY_SESSION, DESTROY_CLIENTID). Operations still in flight
  /// complete with errc::closed; later calls fail with errc::closed. Idempotent.
  void close();

  completion_group make_group() const { return completion_group(); }

  /// Registers [ptr, ptr + len) for direct I/O. Throws std::system_error(errc::registration_limit)
  /// when the cap would be exceeded, errc::bad_argument for a null or empty range.
  memory_region register_memory(void* ptr, std::size_t len, access a = access::read_write);

  // ---- The calls. Each is described once (vnfs/call_forms.hpp) and comes in four forms:
  //  - callback: `void NAME(args..., [T* out,] detail::done_fn done)`; `done(status, bytes)`
  //    runs once on a client thread (the building block of the other three forms and of the
  //    library's own layers);
  //  - completion group: `void NAME(args..., [T* out,] completion_group& g, std::uint64_t tag)`
  //    (vectorized calls: `async_NAME(args..., vresult* out, g, tag)`); the completion's
  //    `bytes` is the byte count for reads and writes, ok_count for vectorized calls, 0
  //    otherwise;
  //  - Asio completion token (callback, asio::use_future, asio::use_awaitable, ...):
  //    `async_NAME(args..., token)`. Reads and writes complete with void(std::error_code,
  //    std::size_t), calls that produce a value T with void(std::error_code, T), the others
  //    with void(std::error_code). Boost 1.74's use_future and use_awaitable treat only
  //    boost::system::error_code as an error, so with them the std::error_code comes back as
  //    the first element of a tuple rather than as an exception. Where the handler runs: see
  //    the threading model at the top of this file;
  //  - synchronous: `NAME(args...)` (reads and writes: pread, pwrite), a wait on the callback
  //    form, returning the value; the scalar calls throw std::system_error.
  // Out-parameters, items and spans must stay valid until the completion. Unregistered
  // buffers (std::span) work too: reads go through a library buffer and are copied into
  // them; writes are sent from them by scatter-gather, without a copy, so they must stay
  // unchanged until the completion (counted in stats as copied / direct).

  /// Opens `path` with open(2) flags (O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC)
  /// and, when it creates the file, `mode` (synchronous form: 0644 by default); yields the
  /// open file. A symlink is refused.
  VNFS_VALUE_CALL(open, file, (std::string path, int flags, std::uint32_t mode), (path, flags, mode), path)
  file open(std::string path, int flags) { return open(std::move(path), flags, 0644); }
  /// Closes an open file, committing unstable writes.
  VNFS_STATUS_CALL(close, (const file& f), (f), f.path())
  /// Reads up to dst.size() bytes at `offset` into registered memory (received straight into
  /// it); yields the byte count, which like pread(2)'s may be short: at the end of the file,
  /// or beyond the largest transfer one call makes.
  VNFS_BYTES_CALL(read, pread, (const file& f, std::uint64_t offset, memory_slice dst), (f, offset, dst), f.path())
  /// As above, into plain memory (through a library buffer).
  VNFS_BYTES_CALL(read, pread, (const file& f, std::uint64_t offset, std::span<std::byte> dst), (f, offset, dst),
                  f.path())
  /// Writes src at `offset` from registered memory; yields the byte count, which like
  /// pwrite(2)'s may be short (beyond the largest transfer one call makes).
  VNFS_BYTES_CALL(write, pwrite, (const file& f, std::uint64_t offset, memory_slice src), (f, offset, src), f.path())
  /// As above, from plain memory.
  VNFS_BYTES_CALL(write, pwrite, (const file& f, std::uint64_t offset, std::span<const std::byte> src),
                  (f, offset, src), f.path())
  /// Makes the file's writes stable (COMMIT).
  VNFS_STATUS_CALL(fsync, (const file& f), (f), f.path())
  /// The attributes of `path` (a final symlink is not followed).
  VNFS_VALUE_CALL(stat, file_stat, (std::string path), (path), path)
  /// The attributes of an open file.
  VNFS_VALUE_CALL(fstat, file_stat, (const file& f), (f), f.path())
  /// Sets the size of `path`.
  VNFS_STATUS_CALL(truncate, (std::string path, std::uint64_t size), (path, size), path)
  /// Creates a directory with `mode` (synchronous form: 0755 by default).
  VNFS_STATUS_CALL(mkdir, (std::string path, std::uint32_t mode), (path, mode), path)
  void mkdir(std::string path) { mkdir(std::move(path), 0755); }
  /// Removes a file or symlink.
  VNFS_STATUS_CALL(unlink, (std::string path), (path), path)
  /// Removes an empty directory.
  VNFS_STATUS_CALL(rmdir, (std::string path), (path), path)
  /// Renames `from` to `to` (replacing `to` as rename(2) does).
  VNFS_STATUS_CALL(rename, (std::string from, std::string to), (from, to), from + " -> " + to)
  /// Makes `new_path` a hard link to `existing`.
  VNFS_STATUS_CALL(link, (std::string existing, std::string new_path), (existing, new_path),
                   existing + " -> " + new_path)
  /// Creates the symlink `link_path` containing `target` (stored as given, never resolved).
  VNFS_STATUS_CALL(symlink, (std::string target, std::string link_path), (target, link_path),
                   link_path + " -> " + target)
  /// The contents of the symlink `path`.
  VNFS_VALUE_CALL(readlink, std::string, (std::string path), (path), path)

  /// Listing a directory: opendir, then readdir until it returns nothing. The asynchronous
  /// forms read one page of the listing into d->entries (replacing its contents) and advance
  /// the stream; at the end they complete at once with d->eof set. `d` must outlive them.
  dir_stream opendir(std::string path);
  /// The next entry, or nothing at the end (reads the next page when needed).
  std::optional<dir_entry> readdir(dir_stream& d);
  void readdir(dir_stream* d, detail::done_fn done);
  void readdir(dir_stream* d, completion_group& g, std::uint64_t tag) { readdir(d, detail::to_group(g, tag)); }
  template <class Token>
  auto async_readdir(dir_stream& d, Token&& token) {
    return detail::initiate_status(std::forward<Token>(token), executor_,
                                   [this, &d](detail::done_fn done) { readdir(&d, std::move(done)); });
  }

  // ---- Vectorized calls (papers/000 Table 1): many file-system operations per call, packed
  // by the nfs backend into few COMPOUNDs (see client/nfs/compound_planner.hpp): as many
  // operations per COMPOUND as the session allows, split by the request size, reply size and
  // operation count negotiated at CREATE_SESSION, with path compression. COMPOUNDs of one
  // call run concurrently over the session's slots, except that a COMPOUND whose items touch
  // a path that an item of an earlier COMPOUND of the call modifies (the same path, an
  // ancestor or a descendant) waits for the earlier ones: so vmkdir, vremove, vrename,
  // vsymlink, vhardlink, vwrite and vcopy take effect in the caller's order wherever order
  // can matter, and vread, vgetattrs, vreadlink and vlistdir are fully concurrent.
  // A call stops at the first failure, as a COMPOUND does: later items are not executed
  // (vresult::status says which ran). With client_options::compound_vectors off, each item
  // runs as the scalar calls, one after another, with the same results; over file://, a
  // call's items run one after another on one worker thread, each making the POSIX calls its
  // scalar calls would (same results and errors).
  //
  // Four forms each (above): callback (`done(first error, ok_count)` after *out is written),
  // group (`async_NAME(..., vresult* out, g, tag)`; completion: status = first error, bytes =
  // ok_count), Asio token (void(std::error_code, vresult)) and synchronous (returns the
  // vresult; does not throw for item failures).
  // Items, spans and out-parameters must stay valid until the completion.
  /// Opens every item's path with its own flags and mode; item.result is the open file.
  VNFS_VECTOR_CALL(vopen, (std::span<vopen_item> items), (items))
  /// Closes many files (committing unstable writes, as close does).
  VNFS_VECTOR_CALL(vclose, (std::span<const file> files), (files))
  /// Reads every item (see vio); files named by path are opened and closed around their reads.
  VNFS_VECTOR_CALL(vread, (std::span<vio> ios), (ios))
  /// Writes every item (see vio, vio_flags: create, stable, append).
  VNFS_VECTOR_CALL(vwrite, (std::span<vio> ios), (ios))
  /// Fills each item's stat (and handle) with the attributes its mask names.
  VNFS_VECTOR_CALL(vgetattrs, (std::span<vattr> items), (items))
  /// Sets each item's masked attributes, all of one item in one SETATTR.
  VNFS_VECTOR_CALL(vsetattrs, (std::span<const vattr> items), (items))
  /// Copies through the client: reads and writes in batches (for many files, few COMPOUNDs).
  VNFS_VECTOR_CALL(vcopy, (std::span<vcopy_item> items), (items))
  /// Server-side copy (NFSv4.2 COPY); falls back to vcopy when the server answers NFS4ERR_NOTSUPP.
  VNFS_VECTOR_CALL(vscopy, (std::span<vcopy_item> items), (items))
  /// Creates directories, in order (a parent listed before its children works).
  VNFS_VECTOR_CALL(vmkdir, (std::span<const vmkdir_item> items), (items))
  /// Lists directories (see vlistdir.hpp); status[i] covers dirs[i] and, when recursive, its subtree.
  VNFS_VECTOR_CALL(vlistdir, (std::span<const std::string> dirs, vlistdir_options options), (dirs, options))
  /// Creates symlinks: item.path containing item.target.
  VNFS_VECTOR_CALL(vsymlink, (std::span<const vlink> items), (items))
  /// Reads symlinks: (*targets)[i] is the contents of paths[i] (resized to paths.size()).
  VNFS_VECTOR_CALL(vreadlink, (std::span<const std::string> paths, std::vector<std::string>* targets),
                   (paths, targets))
  /// Creates hard links: item.path as a new name of item.target.
  VNFS_VECTOR_CALL(vhardlink, (std::span<const vlink> items), (items))
  /// Removes files, symlinks and empty directories, in order.
  VNFS_VECTOR_CALL(vremove, (std::span<const std::string> paths), (paths))
  /// Renames, in order.
  VNFS_VECTOR_CALL(vrename, (std::span<const vrename_item> items), (items))
  /// Creates `path` and any missing ancestors (like mkdir -p): finds the existing ones with one vgetattrs, creates the rest with one vmkdir. The result has one item per created directory.
  VNFS_VECTOR_CALL(ensure_directory, (std::string path, std::uint32_t mode), (path, mode))
  /// Removes `path` and everything under it (like rm -r): lists it with vlistdir, then removes with vremove, children first. The result has one item per object removed.
  VNFS_VECTOR_CALL(remove_tree, (std::string path), (path))
  /// vopen with the same flags and mode for every path (papers/000's vopen_simple).
  vresult vopen_simple(std::span<const std::string> paths, int flags, std::uint32_t mode, std::vector<file>* files);

  client_stats stats() const;

 private:
  friend struct detail::internals;  // the library's access (src/client/internals.hpp)
  explicit client(std::unique_ptr<detail::backend> b, boost::asio::any_io_executor executor);
  friend class transaction;  // makes its view client from a backend (include/vnfs/transaction.hpp)

  std::unique_ptr<detail::backend> backend_;
  /// client_options::executor: where token-form handlers without an executor of their own run.
  boost::asio::any_io_executor executor_;
};

}  // namespace vnfs
