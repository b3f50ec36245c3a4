// vnfs client: the interface every way of reaching files implements — the client's "Env"
// (as in LevelDB): client is a thin, backend-neutral front; nfs/ speaks NFSv4.1 over a
// session, local/ makes POSIX calls (file://).
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "client/internals.hpp"  // backends make files and read slices' registrations through it
#include "client/txn_link.hpp"
#include "vnfs/client.hpp"
#include "vnfs/error.hpp"
#include "vnfs/vattrs.hpp"
#include "vnfs/vcopy.hpp"
#include "vnfs/vio.hpp"
#include "vnfs/vnames.hpp"
#include "vnfs/vresult.hpp"

namespace vnfs::detail {

/// Base of the backends' per-open-file state (internals::state_of(file)).
struct open_file {
  virtual ~open_file() = default;
  std::string path;
};

/// The path a handle of the default vectorized calls names: its bytes are the path's (as
/// vgetattrs' attr::handle gives them over file://).
inline std::string handle_path(const file_handle& h) {
  return std::string(reinterpret_cast<const char*>(h.bytes.data()), h.bytes.size());
}

/// The path an item of the default vectorized calls names: its path, its open file's, or
/// its handle's (handle_path).
inline std::string path_of(const vfile& f) {
  if (const std::string* p = f.path()) return *p;
  if (const file* d = f.descriptor()) return d->path();
  return handle_path(*f.handle());
}

/// The open(2) flags with which the default vectorized calls open the path of a vread item
/// (writing false: O_RDONLY) or of a vwrite item (O_WRONLY, with O_CREAT, O_EXCL and O_TRUNC
/// as its vio_flags ask).
inline int open_flags_of(const vio& item, bool writing) {
  if (!writing) return O_RDONLY;
  int flags = O_WRONLY;
  if (item.flags & vio_flags::create) flags |= O_CREAT;
  if (item.flags & vio_flags::exclusive) flags |= O_EXCL;
  if (item.flags & vio_flags::truncate) flags |= O_TRUNC;
  return flags;
}

/// A destination for read data: a registered slice, or plain memory.
struct read_target {
  memory_slice registered;        ///< used when registered.data() != nullptr
  std::span<std::byte> plain;     ///< otherwise
  std::span<std::byte> bytes() const {
    return registered.data() ? std::span<std::byte>(registered.data(), registered.size()) : plain;
  }
};
/// A source of write data.
struct write_source {
  memory_slice registered;
  std::span<const std::byte> plain;
  std::span<const std::byte> bytes() const {
    return registered.data() ? std::span<const std::byte>(registered.data(), registered.size()) : plain;
  }
};

/// Asynchronous primitives. Every call returns at once and calls `done` exactly once, on a
/// backend thread, after writing any out-parameter (which the caller keeps valid until then).
/// After close_all() begins, new and in-flight calls complete with errc::closed.
/// Paths are relative to the client's root and already normalized (no "", ".", ".."
/// components; components separated by single '/'; "" is the root itself).
class backend {
 public:
  virtual ~backend() = default;

  virtual void open(const std::string& path, int flags, std::uint32_t mode, file* out, done_fn done) = 0;
  virtual void close(const file& f, done_fn done) = 0;
  virtual void read(const file& f, std::uint64_t offset, read_target dst, done_fn done) = 0;
  virtual void write(const file& f, std::uint64_t offset, write_source src, done_fn done) = 0;
  virtual void fsync(const file& f, done_fn done) = 0;
  virtual void stat(const std::string& path, file_stat* out, done_fn done) = 0;
  virtual void fstat(const file& f, file_stat* out, done_fn done) = 0;
  virtual void truncate(const std::string& path, std::uint64_t size, done_fn done) = 0;
  /// Sets the attributes `mask` names (attr::settable bits) to the values in `values`, in one
  /// step where the backend can; does not follow a final symlink.
  virtual void setattr(const std::string& path, unsigned mask, const file_stat& values, done_fn done) = 0;
  virtual void mkdir(const std::string& path, std::uint32_t mode, done_fn done) = 0;
  virtual void unlink(const std::string& path, done_fn done) = 0;
  virtual void rmdir(const std::string& path, done_fn done) = 0;
  virtual void rename(const std::string& from, const std::string& to, done_fn done) = 0;
  virtual void link(const std::string& existing, const std::string& new_path, done_fn done) = 0;
  virtual void symlink(const std::string& target, const std::string& link_path, done_fn done) = 0;
  virtual void readlink(const std::string& path, std::string* out, done_fn done) = 0;
  /// Appends the entries after d->cookie to d->entries, advances d->cookie, sets d->eof.
  virtual void readdir(dir_stream* d, done_fn done) = 0;

  // ---- Vectorized operations (client/vector/). Items carry normalized paths; `done` gets
  // out->ok_count as its byte count, after *out (sized to the items) and the items' result
  // fields are written. The defaults run the scalar calls above one item after another,
  // stopping at the first failure (vNFS's POSIX fallback: the scalar baseline, with
  // compound_vectors off); the nfs backend packs them into COMPOUNDs instead, and file://
  // runs each call's items on one worker.
  virtual void vopen(std::span<vopen_item> items, vresult* out, done_fn done);
  virtual void vclose(std::span<const file> files, vresult* out, done_fn done);
  virtual void vread(std::span<vio> items, vresult* out, done_fn done);
  virtual void vwrite(std::span<vio> items, vresult* out, done_fn done);
  virtual void vgetattrs(std::span<vattr> items, vresult* out, done_fn done);
  virtual void vsetattrs(std::span<const vattr> items, vresult* out, done_fn done);
  virtual void vmkdir(std::span<const vmkdir_item> items, vresult* out, done_fn done);
  virtual void vsymlink(std::span<const vlink> items, vresult* out, done_fn done);
  virtual void vhardlink(std::span<const vlink> items, vresult* out, done_fn done);
  /// targets[i] receives the contents of paths[i].
  virtual void vreadlink(std::span<const std::string> paths, std::string* targets, vresult* out, done_fn done);
  /// Removes files, symlinks and empty directories.
  virtual void vremove(std::span<const std::string> paths, vresult* out, done_fn done);
  virtual void vrename(std::span<const vrename_item> items, vresult* out, done_fn done);
  /// One page of each listing (as readdir), with the attributes `mask` asks for.
  virtual void vreaddir(std::span<dir_stream* const> dirs, unsigned mask, vresult* out, done_fn done);
  /// Server-side copy. The default fails every item with NFS4ERR_NOTSUPP (the caller then
  /// copies through the client with vread/vwrite).
  virtual void vscopy(std::span<vcopy_item> items, vresult* out, done_fn done);

  // ---- Transactions spanning COMPOUNDs (vnfs::transaction, docs/transactions.md). The
  // defaults: errc::transactions_unsupported (file://).
  /// Sends VNFS_TXN `action` (nfs4::txn_action4: TXN_BEGIN, TXN_COMMIT, TXN_ABORT,
  /// TXN_STATUS) for `txnid` alone in a COMPOUND; with TXN_BEGIN, `retries` names the
  /// transaction whose work it runs again (flag TXN_RETRY: it keeps that one's age). *outcome
  /// gets TXN_STATUS's answer (nfs4::txn_outcome4), or txn_outcome_unanswered when no answer
  /// arrived. A server without the extension: errc::transactions_unsupported.
  virtual void txn_control(std::uint32_t action, std::uint64_t txnid, std::optional<std::uint64_t> retries,
                           std::uint32_t* outcome, done_fn done) {
    (void)action, (void)txnid, (void)retries, (void)outcome;
    done(make_error_code(errc::transactions_unsupported), 0);
  }
  /// A backend whose vectorized calls run in the open transaction `link` (their COMPOUNDs
  /// join it); its scalar calls fail with errc::bad_argument. It shares this backend's
  /// session, which must outlive it; null where there are no transactions.
  /// With `commits`, a call's last COMPOUND commits the transaction (transaction::committing()).
  virtual std::unique_ptr<backend> txn_view(std::shared_ptr<txn_link> link, bool commits) {
    (void)link, (void)commits;
    return nullptr;
  }
  /// Whether the server answered a VNFS_TXN on this session (it has the extension): then a
  /// transaction need not begin with a COMPOUND of its own (txn_link::pending).
  virtual bool transactions_known() const { return false; }
  /// Whether a vectorized call here ends a transaction (transaction::committing()): the
  /// composed calls, which make several, are refused on it.
  virtual bool call_commits() const { return false; }

  /// Ends the session (or stops the workers); in-flight operations complete first or with
  /// errc::closed. Blocks until done. Idempotent.
  virtual void close_all() = 0;
  virtual client_stats stats() const = 0;
  /// The registration table shared by register_memory and the transport.
  virtual class registration_table& registrations() = 0;
};

}  // namespace vnfs::detail
