// vnfsd: the state one COMPOUND carries from operation to operation (RFC 8881 §16.2.3).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "server/caller.hpp"
#include "server/fs/attributes.hpp"
#include "server/fs/object.hpp"
#include "server/server_state.hpp"
#include "server/state/session.hpp"
#include "vnfs/nfs4/types.hpp"

namespace vnfs::server {

namespace txn {
class transaction;
}

/// A filehandle held by a COMPOUND: the wire handle and the object it resolved to.
struct held_fh {
  nfs4::nfs_fh4 fh;
  fs::object obj;
  /// The inode's ctime as PUTFH found it settled (export_root::inode_status), while no
  /// operation of the COMPOUND since may have changed anything; else nothing.
  std::optional<fs::timestamp> ctime;
  /// The inode's attributes as PUTFH read them, while no operation of the COMPOUND since
  /// may have changed any of them (atime included); else nothing.
  std::optional<fs::attributes> attrs;
  explicit operator bool() const { return static_cast<bool>(obj); }
};

/// Per-COMPOUND execution state, owned by the dispatcher and passed to every handler.
/// Handlers run on a worker thread that already acts as `who` (fs::scoped_identity).
struct compound_context {
  compound_context(server_state& s, caller w) : server(s), who(std::move(w)) {}

  server_state& server;
  caller who;
  /// The credential's principal as sent (EXCHANGE_ID and CREATE_SESSION compare it).
  client_principal principal;
  std::uint32_t minorversion = 1;

  held_fh current;  ///< the current filehandle (empty: NFS4ERR_NOFILEHANDLE)
  held_fh saved;    ///< SAVEFH / RESTOREFH

  /// The current and saved stateids (§16.2.3.1.2); `has_*` false until an operation sets one.
  nfs4::stateid4 current_stateid{};
  bool has_current_stateid = false;
  nfs4::stateid4 saved_stateid{};
  bool has_saved_stateid = false;

  /// Set by SEQUENCE (first operation); null for the session-less operations.
  std::shared_ptr<session> sess;
  nfs4::clientid4 clientid = 0;

  /// Memory referenced (not copied) by results, e.g. READ data: kept alive until the reply
  /// has been written to the connection.
  std::vector<std::shared_ptr<const void>> keepalive;

  /// Whether the operation being executed may leave a READ payload in its file
  /// (xdr::file_range), for the transport to send from the page cache: set by the
  /// dispatcher when the reply goes over TCP, is not kept by the reply cache, the COMPOUND
  /// runs outside any transaction, and no later operation of it changes file data.
  bool file_payloads = false;

  /// Whether the operation being executed is directly followed by a WRITE at offset 0: set
  /// by the dispatcher. An OPEN that truncates an existing file it opens for writing then
  /// leaves the truncation to that WRITE (`truncation`).
  bool truncation_may_wait = false;
  /// An OPEN's truncation to size 0, not done yet. The WRITE after it takes it: it writes
  /// over the old bytes and then cuts the file where its data ends. That leaves what
  /// truncating first leaves, without freeing the file's blocks and allocating them again
  /// (bench/txn_overhead on ext4, plain overwrite of 1,000 files of 1 KiB: 0.185 s
  /// truncating first, 0.068 s this way). Any path of that WRITE that does not write at
  /// offset 0 truncates first (finish_truncation), and so does the dispatcher when the
  /// COMPOUND stops before the WRITE ran.
  struct pending_truncation {
    fs::object file;
    std::shared_ptr<const fs::unique_fd> fd;  ///< the open's, writable
  };
  std::optional<pending_truncation> truncation;

  /// The transaction this COMPOUND runs in (docs/transactions.md), or null. A handler calls
  /// its protect_* before each change it makes to the export.
  txn::transaction* txn = nullptr;

  /// The stateid an operation should use: the current stateid when `s` is the special
  /// "current stateid" (seqid 1, other 0), else `s` itself. NFS4ERR_BAD_STATEID when the
  /// current stateid is requested but none is set.
  nfs4::nfsstat4 resolve_stateid(const nfs4::stateid4& s, nfs4::stateid4& out) const {
    if (!s.is_current()) {
      out = s;
      return nfs4::nfsstat4::NFS4_OK;
    }
    if (!has_current_stateid) return nfs4::nfsstat4::NFS4ERR_BAD_STATEID;
    out = current_stateid;
    return nfs4::nfsstat4::NFS4_OK;
  }
  void set_current_stateid(const nfs4::stateid4& s) {
    current_stateid = s;
    has_current_stateid = true;
  }
  /// Replaces the current filehandle; an operation that changes it clears the current
  /// stateid unless it sets a new one itself (§16.2.3.1.2).
  void set_current_fh(held_fh fh) {
    current = std::move(fh);
    has_current_stateid = false;
  }
};

}  // namespace vnfs::server
