// vnfs public API: the client — one connection to a file service, named by a URL.
//
// Threading model. A client owns the threads that do its I/O; the application owns none of
// them and needs none:
// - nfs://: one I/O thread per client runs the TCP connection (sends, receives, session
//   upkeep: lease renewal, reconnection and retransmission). Replies are decoded there and
//   READ payload is received there straight into the caller's memory.
// - file://: a small pool of worker threads makes the POSIX calls.
// Completions are delivered from those threads: into a completion_group (the application
// polls or waits on it from any thread), or to an Asio completion handler, which is invoked
// through the handler's associated executor (asio::post); a handler without one runs on a
// client thread and must not block. The synchronous calls are a wait on the asynchronous ones
// and may be called from any thread except the client's own (i.e. not from a handler).
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
#include <vector>

#include <utility>  // before Asio (Boost 1.74's awaitable.hpp needs std::exchange)
#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include "vnfs/completion_group.hpp"
#include "vnfs/error.hpp"
#include "vnfs/file.hpp"
#include "vnfs/file_stat.hpp"
#include "vnfs/memory_region.hpp"

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

  // ---- Asynchronous, Asio completion-token form (callback, asio::use_future,
  // asio::use_awaitable, ...), signature void(std::error_code, std::size_t).
  template <class Token>
  auto async_read(const file& f, std::uint64_t offset, memory_slice dst, Token&& token) {
    return initiate(std::forward<Token>(token), [this, f, offset, dst](detail::done_fn d) mutable {
      start_read(f, offset, dst, std::move(d));
    });
  }
  template <class Token>
  auto async_write(const file& f, std::uint64_t offset, memory_slice src, Token&& token) {
    return initiate(std::forward<Token>(token), [this, f, offset, src](detail::done_fn d) mutable {
      start_write(f, offset, src, std::move(d));
    });
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

  client_stats stats() const;

  // ---- For the library's own layers (vectorized API, adapters): the backend behind it.
  detail::backend& backend() const { return *backend_; }
  void start_read(const file& f, std::uint64_t offset, memory_slice dst, detail::done_fn done);
  void start_write(const file& f, std::uint64_t offset, memory_slice src, detail::done_fn done);

 private:
  explicit client(std::unique_ptr<detail::backend> b);

  template <class Token, class Start>
  static auto initiate(Token&& token, Start start) {
    return boost::asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [start = std::move(start)](auto handler) mutable {
          auto ex = boost::asio::get_associated_executor(handler, boost::asio::system_executor());
          auto h = std::make_shared<decltype(handler)>(std::move(handler));
          start([h, ex](std::error_code ec, std::size_t n) {
            boost::asio::post(ex, [h, ec, n]() mutable { std::move (*h)(ec, n); });
          });
        },
        token);
  }

  std::unique_ptr<detail::backend> backend_;
};

}  // namespace vnfs
