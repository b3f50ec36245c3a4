// vnfs client, nfs backend: the compound planner — turns the items of a vectorized call
// into few COMPOUNDs (papers/000 §4), sends them and merges the results.
//
// Packing. Items are placed in the caller's order, each with the navigation its operations
// need, as many per COMPOUND as fit: at most the operations the server takes (SEQUENCE
// included; session_engine::limits(), see operation_limit.hpp), ca_maxrequestsize (every
// operation's encoded size is measured, not guessed), and ca_maxresponsesize — or
// ca_maxresponsesize_cached when the COMPOUND must be cached — against an upper estimate of
// each operation's reply. No COMPOUND is sent that the session
// would refuse for its size.
//
// Path compression. The planner knows what the current and saved filehandles name as it
// goes, and reaches each item's starting directory by the cheapest of: staying, LOOKUPP and
// LOOKUP from the current directory, RESTOREFH (and LOOKUPs) from the saved one, or PUTFH of
// the root and LOOKUPs. Before an item that leaves the current filehandle on a file, it
// saves the directory (SAVEFH) when returning to it later is cheaper that way. Two-filehandle
// items (LINK, RENAME, COPY) put their first object in the saved filehandle themselves.
//
// Sending and ordering. COMPOUNDs go out at once (the session's slots bound how many are in
// flight), except that one whose items touch a path related to one an item of an earlier
// COMPOUND modified (equal, ancestor or descendant) is held until all earlier COMPOUNDs have
// completed. After a failure, COMPOUNDs not yet sent are not sent.
//
// Opens after a failure. An item whose OPEN succeeded and whose later operation failed
// (a WRITE answering NFS4ERR_NOSPC between OPEN and CLOSE) leaves an open that nothing
// holds: the COMPOUND stopped before the item's CLOSE. Once every COMPOUND of the call has
// completed, one more COMPOUND closes each such open (LOOKUP of its name, CLOSE with the
// stateid the OPEN returned), so the server releases it (and a removed file's space) now
// rather than at the end of the lease. The call's results are those of its own items.
//
// Results. Every operation counts for one caller item (`owner`); an item succeeded if all
// its operations (and the navigation placed for it) did; it failed with the status of the
// first that failed; it was not executed if none of them ran.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/nfs/session_engine.hpp"
#include "client/txn_link.hpp"
#include "client/result_size.hpp"
#include "vnfs/client.hpp"
#include "vnfs/vresult.hpp"

namespace vnfs::detail {

/// One operation of an item.
struct planned_op {
  nfs4::nfs_argop4 op;
  std::size_t owner = 0;         ///< the caller's item it counts for
  std::size_t reply_bytes = small_result_estimate;  ///< upper estimate of its result's encoded size (result_size.hpp)
  /// Runs on the I/O thread with the operation's result when it succeeded, and whether the
  /// transport placed its payload in read_target (a READ's data then views the target;
  /// compound_reply::placed); an error it returns fails the owner (e.g. a reply longer than
  /// the buffer).
  std::function<std::error_code(nfs4::nfs_resop4&, bool placed)> on_ok;
  /// For a READ: where its payload may be received directly (session_engine::submit).
  std::span<std::byte> read_target;
  /// For a READ or WRITE of registered memory: the region its payload lies in, which the
  /// COMPOUND carries to the transport (session_engine::submit's `registered`).
  std::shared_ptr<registration> registered;
};

/// Where an item's operations start.
struct item_start {
  enum class kind {
    directory,  ///< the current filehandle is the directory `path`
    handle,     ///< the current filehandle is `fh`
    two_paths,  ///< saved: `saved_path` (LOOKUP of its last name if `saved_object`); current: directory `path`
    two_handles ///< saved: `saved_fh`; current: `fh`
  };
  kind k = kind::directory;
  std::string path;
  nfs4::nfs_fh4 fh;
  std::string saved_path;
  bool saved_object = false;
  nfs4::nfs_fh4 saved_fh;
};

/// What the current filehandle names after an item's operations.
struct item_end {
  enum class kind {
    unchanged,  ///< still the start (REMOVE, READDIR, SETATTR/GETATTR on the start itself)
    directory,  ///< the directory `path` (CREATE of a directory)
    elsewhere   ///< a file or an object the planner does not track
  };
  kind k = kind::unchanged;
  std::string path;
};

struct planned_item {
  item_start start;
  std::vector<planned_op> ops;
  item_end end;
  /// Paths the item reads or changes, and whether it changes them (ordering, and forgetting
  /// filehandles whose paths a RENAME or REMOVE made stale).
  std::vector<std::string> touches;
  bool modifies = false;
  /// Paths whose objects the item removes or moves away: a filehandle the planner knows by
  /// such a path (or one under it) is stale after it.
  std::vector<std::string> gone;
  /// Its COMPOUND must be cached by the server (running it twice differs from once).
  bool needs_cache = false;
};

/// Plans `items` and runs them over `engine`. `n_owners` is the size of the caller's
/// vector; *out gets one status per owner. `done(first error, ok_count)` runs once, on the
/// I/O thread, after every COMPOUND sent has completed. An item too big for any COMPOUND the
/// session allows fails with NFS4ERR_REP_TOO_BIG / NFS4ERR_REQ_TOO_BIG without being sent.
///
/// With `atomic`, the items run as one transaction (docs/transactions.md): one COMPOUND
/// whose first operation after SEQUENCE is VNFS_TXN, with the outcomes of
/// client_options::atomic_vectors. Items that need more than one COMPOUND are refused with
/// errc::transaction_too_large before anything is sent.
///
/// With `join` (vnfs::transaction), every COMPOUND joins that open transaction (VNFS_TXN
/// TXN_JOIN after SEQUENCE). A failing item whose COMPOUND changed something rolls the
/// whole transaction back on the server (VNFS_TXN's outcome says TXN_ABORTED): the call's
/// items that ran are then errc::rolled_back, and `join` is marked aborted. (One whose
/// COMPOUND changed nothing, e.g. a lookup of a missing name, fails alone.) A call started
/// after that, or a COMPOUND the server refuses to join, runs nothing
/// (errc::transaction_aborted).
///
/// With `commit_last` (and `join`: transaction::committing()), the last COMPOUND carries
/// TXN_COMMIT in place of TXN_JOIN (TXN_ONE_COMPOUND if the transaction has not begun yet),
/// sent once every other COMPOUND of the call has its reply: `join` becomes committed,
/// aborted (a failed commit: its reason is the call's error, its items errc::rolled_back),
/// unknown (the reply was lost and the server could not be asked), or stays open (an item
/// failed having changed nothing, or an earlier COMPOUND failed and the commit was not sent).
void run_planned(session_engine& engine, const nfs4::nfs_fh4& root, std::size_t window_bytes,
                 std::vector<planned_item> items, std::size_t n_owners, vresult* out, done_fn done,
                 bool atomic = false, std::shared_ptr<txn_link> join = nullptr, bool commit_last = false);

/// Largest READ or WRITE payload one operation moves under the session's limits (at most
/// max_io, leaving room for the rest of the COMPOUND).
std::uint32_t max_transfer(const nfs4::channel_attrs4& limits, bool reading);

}  // namespace vnfs::detail
