// vnfs public API: the client — one connection to a file service, named by a URL.
//
// Threading model. A client owns the threads that do its I/O; the application owns none of
// them and needs none:
// - nfs://: one I/O thread per client runs the TCP connection (sends, receives, session
//   upkeep: lease renewal, reconnection and retransmission). Replies are decoded there and
//   READ payload is received there straight into the caller's registered memory.
// - file://: a small pool of worker threads makes the POSIX calls.
// Completions are delivered from those threads: into a completion_group (the application
// polls or waits on it from any thread), or to an Asio completion handler, which is invoked
// through the handler's associated executor (asio::post); a handler without one runs on a
// client thread and must not block. The synchronous calls are a wait on the asynchronous ones
// and may be called from any thread except the client's own (i.e. not from a handler).
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
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include <utility>  // before Asio (Boost 1.74's awaitable.hpp needs std::exchange)
#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

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
  ///    failed_index is npos and every status errc::not_executed.
  /// vscopy is not transactional yet: it fails with errc::bad_argument. The composed calls
  /// (vcopy, ensure_directory, remove_tree) run each of their mutating steps as its own
  /// transaction, not the whole. Reading calls are unaffected. connect() refuses the option for file:// and without
  /// compound_vectors (errc::bad_argument).
  bool atomic_vectors = false;
  /// file://: worker threads making the POSIX calls.
  unsigned local_threads = 4;
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
};

namespace detail {
class backend;
/// Completion of a backend operation: status and bytes moved. Called exactly once, on a
/// client thread.
using done_fn = std::function<void(std::error_code, std::size_t)>;
/// Delivers a backend completion to a group: counts it outstanding at once.
done_fn to_group(completion_group& g, std::uint64_t tag);
}  // namespace detail

/// A directory being listed (opendir / readdir).
struct dir_stream {
  std::string path;
  std::vector<dir_entry> entries;  ///< read so far, not yet returned
  std::uint64_t cookie = 0;        ///< where the next page starts
  std::uint64_t verifier = 0;      ///< the server's cookie verifier (opaque to callers)
  bool eof = false;
};

class transaction;

class client {
 public:
  /// Connects to nfs://HOST[:PORT]/PATH (TCP, port 2049 by default) or file:///PATH.
  /// Throws std::system_error (errc::bad_url, connection errors, NFS errors of the session
  /// set-up, NFS4ERR_NOENT if PATH does not exist).
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

  // ---- Asynchronous, completion-group form. The completion's `bytes` is the byte count for
  // reads and writes, 0 otherwise. Out-parameters must stay valid until the completion.
  // Unregistered buffers (std::span) work too: reads go through a library buffer and are
  // copied into them; writes are sent from them by scatter-gather, without a copy, so they
  // must stay unchanged until the completion (counted in stats as copied / direct).
  void open(std::string path, int flags, std::uint32_t mode, file* out, completion_group& g, std::uint64_t tag);
  void close(const file& f, completion_group& g, std::uint64_t tag);
  void read(const file& f, std::uint64_t offset, memory_slice dst, completion_group& g, std::uint64_t tag);
  void read(const file& f, std::uint64_t offset, std::span<std::byte> dst, completion_group& g, std::uint64_t tag);
  void write(const file& f, std::uint64_t offset, memory_slice src, completion_group& g, std::uint64_t tag);
  void write(const file& f, std::uint64_t offset, std::span<const std::byte> src, completion_group& g, std::uint64_t tag);
  void fsync(const file& f, completion_group& g, std::uint64_t tag);
  void stat(std::string path, file_stat* out, completion_group& g, std::uint64_t tag);
  void fstat(const file& f, file_stat* out, completion_group& g, std::uint64_t tag);
  void truncate(std::string path, std::uint64_t size, completion_group& g, std::uint64_t tag);
  void mkdir(std::string path, std::uint32_t mode, completion_group& g, std::uint64_t tag);
  void unlink(std::string path, completion_group& g, std::uint64_t tag);
  void rmdir(std::string path, completion_group& g, std::uint64_t tag);
  void rename(std::string from, std::string to, completion_group& g, std::uint64_t tag);
  void link(std::string existing, std::string new_path, completion_group& g, std::uint64_t tag);
  void symlink(std::string target, std::string link_path, completion_group& g, std::uint64_t tag);
  void readlink(std::string path, std::string* out, completion_group& g, std::uint64_t tag);
  /// One page of a listing into *out (replacing its contents); see dir_stream.
  void readdir(dir_stream* d, completion_group& g, std::uint64_t tag);

  // ---- Asynchronous, callback form: `done(status, bytes)` runs once on a client thread
  // (the building block of the other two forms and of the library's own layers).
  void open(std::string path, int flags, std::uint32_t mode, file* out, detail::done_fn done);
  void close(const file& f, detail::done_fn done);
  void read(const file& f, std::uint64_t offset, memory_slice dst, detail::done_fn done);
  void read(const file& f, std::uint64_t offset, std::span<std::byte> dst, detail::done_fn done);
  void write(const file& f, std::uint64_t offset, memory_slice src, detail::done_fn done);
  void write(const file& f, std::uint64_t offset, std::span<const std::byte> src, detail::done_fn done);
  void fsync(const file& f, detail::done_fn done);
  void stat(std::string path, file_stat* out, detail::done_fn done);
  void fstat(const file& f, file_stat* out, detail::done_fn done);
  void truncate(std::string path, std::uint64_t size, detail::done_fn done);
  void mkdir(std::string path, std::uint32_t mode, detail::done_fn done);
  void unlink(std::string path, detail::done_fn done);
  void rmdir(std::string path, detail::done_fn done);
  void rename(std::string from, std::string to, detail::done_fn done);
  void link(std::string existing, std::string new_path, detail::done_fn done);
  void symlink(std::string target, std::string link_path, detail::done_fn done);
  void readlink(std::string path, std::string* out, detail::done_fn done);
  void readdir(dir_stream* d, detail::done_fn done);

  // ---- Asynchronous, Asio completion-token form (callback, asio::use_future,
  // asio::use_awaitable, ...). Reads and writes complete with void(std::error_code, std::size_t),
  // operations that produce a value with void(std::error_code, T), the others with
  // void(std::error_code). Boost 1.74's use_future and use_awaitable treat only
  // boost::system::error_code as an error, so with them the std::error_code comes back as the
  // first element of a tuple rather than as an exception.
  template <class Token>
  auto async_read(const file& f, std::uint64_t offset, memory_slice dst, Token&& token) {
    return initiate_bytes(std::forward<Token>(token), [this, f, offset, dst](detail::done_fn d) mutable {
      read(f, offset, dst, std::move(d));
    });
  }
  template <class Token>
  auto async_write(const file& f, std::uint64_t offset, memory_slice src, Token&& token) {
    return initiate_bytes(std::forward<Token>(token), [this, f, offset, src](detail::done_fn d) mutable {
      write(f, offset, src, std::move(d));
    });
  }
  template <class Token>
  auto async_open(std::string path, int flags, std::uint32_t mode, Token&& token) {
    return initiate_value<file>(std::forward<Token>(token), [this, path, flags, mode](file* out, detail::done_fn d) {
      open(path, flags, mode, out, std::move(d));
    });
  }
  template <class Token>
  auto async_close(const file& f, Token&& token) {
    return initiate_status(std::forward<Token>(token), [this, f](detail::done_fn d) { close(f, std::move(d)); });
  }
  template <class Token>
  auto async_fsync(const file& f, Token&& token) {
    return initiate_status(std::forward<Token>(token), [this, f](detail::done_fn d) { fsync(f, std::move(d)); });
  }
  template <class Token>
  auto async_stat(std::string path, Token&& token) {
    return initiate_value<file_stat>(std::forward<Token>(token), [this, path](file_stat* out, detail::done_fn d) {
      stat(path, out, std::move(d));
    });
  }
  template <class Token>
  auto async_fstat(const file& f, Token&& token) {
    return initiate_value<file_stat>(std::forward<Token>(token), [this, f](file_stat* out, detail::done_fn d) {
      fstat(f, out, std::move(d));
    });
  }
  template <class Token>
  auto async_truncate(std::string path, std::uint64_t size, Token&& token) {
    return initiate_status(std::forward<Token>(token),
                           [this, path, size](detail::done_fn d) { truncate(path, size, std::move(d)); });
  }
  template <class Token>
  auto async_mkdir(std::string path, std::uint32_t mode, Token&& token) {
    return initiate_status(std::forward<Token>(token), [this, path, mode](detail::done_fn d) { mkdir(path, mode, std::move(d)); });
  }
  template <class Token>
  auto async_unlink(std::string path, Token&& token) {
    return initiate_status(std::forward<Token>(token), [this, path](detail::done_fn d) { unlink(path, std::move(d)); });
  }
  template <class Token>
  auto async_rmdir(std::string path, Token&& token) {
    return initiate_status(std::forward<Token>(token), [this, path](detail::done_fn d) { rmdir(path, std::move(d)); });
  }
  template <class Token>
  auto async_rename(std::string from, std::string to, Token&& token) {
    return initiate_status(std::forward<Token>(token), [this, from, to](detail::done_fn d) { rename(from, to, std::move(d)); });
  }
  template <class Token>
  auto async_link(std::string existing, std::string new_path, Token&& token) {
    return initiate_status(std::forward<Token>(token),
                           [this, existing, new_path](detail::done_fn d) { link(existing, new_path, std::move(d)); });
  }
  template <class Token>
  auto async_symlink(std::string target, std::string link_path, Token&& token) {
    return initiate_status(std::forward<Token>(token),
                           [this, target, link_path](detail::done_fn d) { symlink(target, link_path, std::move(d)); });
  }
  template <class Token>
  auto async_readlink(std::string path, Token&& token) {
    return initiate_value<std::string>(std::forward<Token>(token), [this, path](std::string* out, detail::done_fn d) {
      readlink(path, out, std::move(d));
    });
  }
  /// One page of a listing into d (as readdir with a group); `d` must outlive the operation.
  template <class Token>
  auto async_readdir(dir_stream& d, Token&& token) {
    return initiate_status(std::forward<Token>(token), [this, &d](detail::done_fn done) { readdir(&d, std::move(done)); });
  }

  // ---- Synchronous (a wait on the asynchronous form). Throw std::system_error.
  file open(std::string path, int flags, std::uint32_t mode = 0644);
  void close(const file& f);
  std::size_t pread(const file& f, std::uint64_t offset, memory_slice dst);
  std::size_t pread(const file& f, std::uint64_t offset, std::span<std::byte> dst);
  std::size_t pwrite(const file& f, std::uint64_t offset, memory_slice src);
  std::size_t pwrite(const file& f, std::uint64_t offset, std::span<const std::byte> src);
  void fsync(const file& f);
  file_stat stat(std::string path);
  file_stat fstat(const file& f);
  void truncate(std::string path, std::uint64_t size);
  void mkdir(std::string path, std::uint32_t mode = 0755);
  void unlink(std::string path);
  void rmdir(std::string path);
  void rename(std::string from, std::string to);
  void link(std::string existing, std::string new_path);
  void symlink(std::string target, std::string link_path);
  std::string readlink(std::string path);
  dir_stream opendir(std::string path);
  /// The next entry, or nothing at the end (reads the next page when needed).
  std::optional<dir_entry> readdir(dir_stream& d);

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
  // (vresult::status says which ran). Over file://, and with client_options::compound_vectors
  // off, each item runs as the scalar calls, one after another, with the same results.
  //
  // Four forms each: callback (`done(first error, ok_count)` after *out is written), group
  // (completion: status = first error, bytes = ok_count), Asio token (void(std::error_code,
  // vresult)) and synchronous (returns the vresult; does not throw for item failures).
  // Items, spans and out-parameters must stay valid until the completion.
  /// Opens every item's path with its own flags and mode; item.result is the open file.
  void vopen(std::span<vopen_item> items, vresult* out, detail::done_fn done);
  vresult vopen(std::span<vopen_item> items);
  void async_vopen(std::span<vopen_item> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vopen(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vopen(std::span<vopen_item> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vopen(items, out, std::move(d));
    });
  }
  /// Closes many files (committing unstable writes, as close does).
  void vclose(std::span<const file> files, vresult* out, detail::done_fn done);
  vresult vclose(std::span<const file> files);
  void async_vclose(std::span<const file> files, vresult* out, completion_group& g, std::uint64_t tag) {
    vclose(files, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vclose(std::span<const file> files, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, files](vresult* out, detail::done_fn d) {
      vclose(files, out, std::move(d));
    });
  }
  /// Reads every item (see vio); files named by path are opened and closed around their reads.
  void vread(std::span<vio> ios, vresult* out, detail::done_fn done);
  vresult vread(std::span<vio> ios);
  void async_vread(std::span<vio> ios, vresult* out, completion_group& g, std::uint64_t tag) {
    vread(ios, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vread(std::span<vio> ios, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, ios](vresult* out, detail::done_fn d) {
      vread(ios, out, std::move(d));
    });
  }
  /// Writes every item (see vio, vio_flags: create, stable, append).
  void vwrite(std::span<vio> ios, vresult* out, detail::done_fn done);
  vresult vwrite(std::span<vio> ios);
  void async_vwrite(std::span<vio> ios, vresult* out, completion_group& g, std::uint64_t tag) {
    vwrite(ios, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vwrite(std::span<vio> ios, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, ios](vresult* out, detail::done_fn d) {
      vwrite(ios, out, std::move(d));
    });
  }
  /// Fills each item's stat (and handle) with the attributes its mask names.
  void vgetattrs(std::span<vattr> items, vresult* out, detail::done_fn done);
  vresult vgetattrs(std::span<vattr> items);
  void async_vgetattrs(std::span<vattr> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vgetattrs(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vgetattrs(std::span<vattr> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vgetattrs(items, out, std::move(d));
    });
  }
  /// Sets each item's masked attributes, all of one item in one SETATTR.
  void vsetattrs(std::span<const vattr> items, vresult* out, detail::done_fn done);
  vresult vsetattrs(std::span<const vattr> items);
  void async_vsetattrs(std::span<const vattr> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vsetattrs(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vsetattrs(std::span<const vattr> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vsetattrs(items, out, std::move(d));
    });
  }
  /// Copies through the client: reads and writes in batches (for many files, few COMPOUNDs).
  void vcopy(std::span<vcopy_item> items, vresult* out, detail::done_fn done);
  vresult vcopy(std::span<vcopy_item> items);
  void async_vcopy(std::span<vcopy_item> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vcopy(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vcopy(std::span<vcopy_item> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vcopy(items, out, std::move(d));
    });
  }
  /// Server-side copy (NFSv4.2 COPY); falls back to vcopy when the server answers NFS4ERR_NOTSUPP.
  void vscopy(std::span<vcopy_item> items, vresult* out, detail::done_fn done);
  vresult vscopy(std::span<vcopy_item> items);
  void async_vscopy(std::span<vcopy_item> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vscopy(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vscopy(std::span<vcopy_item> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vscopy(items, out, std::move(d));
    });
  }
  /// Creates directories, in order (a parent listed before its children works).
  void vmkdir(std::span<const vmkdir_item> items, vresult* out, detail::done_fn done);
  vresult vmkdir(std::span<const vmkdir_item> items);
  void async_vmkdir(std::span<const vmkdir_item> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vmkdir(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vmkdir(std::span<const vmkdir_item> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vmkdir(items, out, std::move(d));
    });
  }
  /// Lists directories (see vlistdir.hpp); status[i] covers dirs[i] and, when recursive, its subtree.
  void vlistdir(std::span<const std::string> dirs, vlistdir_options options, vresult* out, detail::done_fn done);
  vresult vlistdir(std::span<const std::string> dirs, vlistdir_options options);
  void async_vlistdir(std::span<const std::string> dirs, vlistdir_options options, vresult* out, completion_group& g, std::uint64_t tag) {
    vlistdir(dirs, options, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vlistdir(std::span<const std::string> dirs, vlistdir_options options, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, dirs, options](vresult* out, detail::done_fn d) {
      vlistdir(dirs, options, out, std::move(d));
    });
  }
  /// Creates symlinks: item.path containing item.target.
  void vsymlink(std::span<const vlink> items, vresult* out, detail::done_fn done);
  vresult vsymlink(std::span<const vlink> items);
  void async_vsymlink(std::span<const vlink> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vsymlink(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vsymlink(std::span<const vlink> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vsymlink(items, out, std::move(d));
    });
  }
  /// Reads symlinks: (*targets)[i] is the contents of paths[i] (resized to paths.size()).
  void vreadlink(std::span<const std::string> paths, std::vector<std::string>* targets, vresult* out, detail::done_fn done);
  vresult vreadlink(std::span<const std::string> paths, std::vector<std::string>* targets);
  void async_vreadlink(std::span<const std::string> paths, std::vector<std::string>* targets, vresult* out, completion_group& g, std::uint64_t tag) {
    vreadlink(paths, targets, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vreadlink(std::span<const std::string> paths, std::vector<std::string>* targets, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, paths, targets](vresult* out, detail::done_fn d) {
      vreadlink(paths, targets, out, std::move(d));
    });
  }
  /// Creates hard links: item.path as a new name of item.target.
  void vhardlink(std::span<const vlink> items, vresult* out, detail::done_fn done);
  vresult vhardlink(std::span<const vlink> items);
  void async_vhardlink(std::span<const vlink> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vhardlink(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vhardlink(std::span<const vlink> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vhardlink(items, out, std::move(d));
    });
  }
  /// Removes files, symlinks and empty directories, in order.
  void vremove(std::span<const std::string> paths, vresult* out, detail::done_fn done);
  vresult vremove(std::span<const std::string> paths);
  void async_vremove(std::span<const std::string> paths, vresult* out, completion_group& g, std::uint64_t tag) {
    vremove(paths, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vremove(std::span<const std::string> paths, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, paths](vresult* out, detail::done_fn d) {
      vremove(paths, out, std::move(d));
    });
  }
  /// Renames, in order.
  void vrename(std::span<const vrename_item> items, vresult* out, detail::done_fn done);
  vresult vrename(std::span<const vrename_item> items);
  void async_vrename(std::span<const vrename_item> items, vresult* out, completion_group& g, std::uint64_t tag) {
    vrename(items, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_vrename(std::span<const vrename_item> items, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, items](vresult* out, detail::done_fn d) {
      vrename(items, out, std::move(d));
    });
  }
  /// Creates `path` and any missing ancestors (like mkdir -p): finds the existing ones with one vgetattrs, creates the rest with one vmkdir. The result has one item per created directory.
  void ensure_directory(std::string path, std::uint32_t mode, vresult* out, detail::done_fn done);
  vresult ensure_directory(std::string path, std::uint32_t mode);
  void async_ensure_directory(std::string path, std::uint32_t mode, vresult* out, completion_group& g, std::uint64_t tag) {
    ensure_directory(path, mode, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_ensure_directory(std::string path, std::uint32_t mode, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, path, mode](vresult* out, detail::done_fn d) {
      ensure_directory(path, mode, out, std::move(d));
    });
  }
  /// Removes `path` and everything under it (like rm -r): lists it with vlistdir, then removes with vremove, children first. The result has one item per object removed.
  void remove_tree(std::string path, vresult* out, detail::done_fn done);
  vresult remove_tree(std::string path);
  void async_remove_tree(std::string path, vresult* out, completion_group& g, std::uint64_t tag) {
    remove_tree(path, out, detail::to_group(g, tag));
  }
  template <class Token>
  auto async_remove_tree(std::string path, Token&& token) {
    return initiate_value<vresult>(std::forward<Token>(token), [this, path](vresult* out, detail::done_fn d) {
      remove_tree(path, out, std::move(d));
    });
  }
  /// vopen with the same flags and mode for every path (papers/000's vopen_simple).
  vresult vopen_simple(std::span<const std::string> paths, int flags, std::uint32_t mode, std::vector<file>* files);

  client_stats stats() const;

  // ---- For the library's own layers and their tests (tests/transport/rdma reads the nfs
  // backend's registrations through it): the backend behind the client. Not for applications.
  detail::backend& backend() const { return *backend_; }

 private:
  // ---- vnfs::transaction (include/vnfs/transaction.hpp) makes its view client from a
  // backend and uses the completion-token helpers below.
  friend class transaction;

  explicit client(std::unique_ptr<detail::backend> b);

  /// What associated_executor names for a handler that has no executor of its own.
  struct no_associated_executor {};

  /// Runs `start(done)` and hands the completion to the token's handler: through its
  /// associated executor (asio::post, with work outstanding on it until then) when it has
  /// one, else directly on the client thread that completes the operation (see the
  /// threading model above). The handler's signature
  /// is Signature; `complete` calls it with the status, the byte count and the result holder.
  template <class Signature, class Token, class Start, class Complete>
  static auto initiate(Token&& token, Start start, Complete complete) {
    return boost::asio::async_initiate<Token, Signature>(
        [start = std::move(start), complete](auto handler) mutable {
          using handler_type = decltype(handler);
          auto h = std::make_shared<handler_type>(std::move(handler));
          if constexpr (std::is_same_v<boost::asio::associated_executor_t<handler_type, no_associated_executor>,
                                       no_associated_executor>) {
            start([h, complete](std::error_code ec, std::size_t n) { complete(std::move(*h), ec, n); });
          } else {
            auto ex = boost::asio::get_associated_executor(*h);
            // Outstanding work on the handler's executor until its completion is posted, as
            // Asio's own operations keep it: an io_context's run() waits for the completion
            // instead of returning for lack of work.
            auto work = std::make_shared<decltype(boost::asio::make_work_guard(ex))>(boost::asio::make_work_guard(ex));
            start([h, ex, work, complete](std::error_code ec, std::size_t n) {
              boost::asio::post(ex, [h, ec, n, complete]() mutable { complete(std::move(*h), ec, n); });
              work->reset();
            });
          }
        },
        token);
  }
  template <class Token, class Start>
  static auto initiate_bytes(Token&& token, Start start) {
    return initiate<void(std::error_code, std::size_t)>(
        std::forward<Token>(token), std::move(start),
        [](auto&& handler, std::error_code ec, std::size_t n) { std::move(handler)(ec, n); });
  }
  template <class Token, class Start>
  static auto initiate_status(Token&& token, Start start) {
    return initiate<void(std::error_code)>(std::forward<Token>(token), std::move(start),
                                           [](auto&& handler, std::error_code ec, std::size_t) { std::move(handler)(ec); });
  }
  /// For operations with an out-parameter: the value lives in a holder until the handler runs.
  template <class T, class Token, class Start>
  static auto initiate_value(Token&& token, Start start) {
    auto out = std::make_shared<T>();
    return initiate<void(std::error_code, T)>(
        std::forward<Token>(token), [out, start = std::move(start)](detail::done_fn d) mutable { start(out.get(), std::move(d)); },
        [out](auto&& handler, std::error_code ec, std::size_t) { std::move(handler)(ec, std::move(*out)); });
  }

  std::unique_ptr<detail::backend> backend_;
};

}  // namespace vnfs
