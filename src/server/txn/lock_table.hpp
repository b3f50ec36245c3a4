// vnfsd transactions: the lock table — per-object locks that isolate transactions from each
// other and from plain COMPOUNDs (docs/transactions.md, "Isolation: per-object locks").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace vnfs::server::txn {

/// An object of the export: its device and inode (what a lock is held on).
struct object_key {
  std::uint64_t dev = 0, ino = 0;
  bool operator==(const object_key&) const = default;
};

enum class lock_mode : std::uint8_t { shared, exclusive };

/// One object an operation touches, and how: shared to read it (attributes, data, the names
/// of a directory), exclusive to change it.
struct lock_request {
  object_key key;
  lock_mode mode = lock_mode::shared;
};

/// Transactions are lock owners, named by an id that enroll() hands out, each with an age
/// that the caller gives (smaller is older; vnfsd: when it began, or when the first
/// transaction began whose work it runs again, so a retry keeps its place, becomes the
/// oldest in the end and cannot starve). Of two transactions, the older is the one of
/// smaller (age, id). A transaction holds its locks until release() (strict two-phase
/// locking).
/// Plain COMPOUNDs own nothing: each operation of one pins the objects it touches, until the
/// COMPOUND ends (so it reads and changes nothing a transaction holds, and no transaction
/// changes what it has seen); a COMPOUND never waits while it holds a pin.
///
/// Conflicts between transactions are resolved by age (wait-die, with wounds for idle
/// holders), so no cycle of waits can form:
/// - an older requester waits for a younger holder that is busy (a COMPOUND runs in it);
/// - an older requester wounds a younger holder that is idle (between COMPOUNDs): the
///   caller rolls the holder back (release()) and asks again;
/// - a younger requester dies: the caller rolls it back.
/// A transaction waits for plain pins (they go when their operation ends).
///
/// Thread-safe.
class lock_table {
 public:
  /// A new transaction of age `age`: its id. It starts busy. Waits until no plain COMPOUND
  /// runs unchecked (enter_plain() true), and none starts unchecked until every transaction
  /// is released.
  std::uint64_t enroll(std::uint64_t age);
  /// The age of enrolled transaction `owner`.
  std::uint64_t age_of(std::uint64_t owner);
  /// Whether a COMPOUND runs in transaction `owner` (an idle one can be wounded).
  void set_busy(std::uint64_t owner, bool busy);
  /// Transaction `owner` committed, and keeps shared locks on `keep` (objects it holds)
  /// until its changes to them are durable in place (a redo checkpoint,
  /// docs/transactions.md): its other locks are released, so others may read these objects
  /// but not change them. From now on every transaction that conflicts with it waits,
  /// whatever its age (it can neither be wounded nor make anyone die, and it ends without
  /// waiting for anything), and so does every plain pin, also one of a COMPOUND that holds
  /// pins already.
  void set_committed(std::uint64_t owner, std::span<const object_key> keep);
  /// Releases every lock of `owner` and forgets it.
  void release(std::uint64_t owner);

  enum class verdict { granted, die, wound };
  /// Acquires every request for `owner`, in order, waiting as the rules above say. On
  /// `wound`, `victim` is the idle younger holder to roll back; on `die` the caller rolls
  /// `owner` back. Locks granted before a `die` or `wound` stay held.
  verdict lock(std::uint64_t owner, std::span<const lock_request> reqs, std::uint64_t& victim);

  /// A plain COMPOUND starts: true if no transaction is enrolled, and it may run unchecked
  /// (no pins) until leave_plain(true); enroll() waits for it. False: it pins each operation.
  bool enter_plain();
  void leave_plain(bool unchecked);

  /// Pins the requests of one operation of a plain COMPOUND, all or none. With `may_wait`
  /// (the COMPOUND holds no pin yet), waits while a conflicting transaction is busy, and up
  /// to `idle_wait` for an idle one; without, returns false at once, unless every conflicting
  /// transaction is committed (set_committed): it waits for those. False: not pinned (the
  /// caller answers NFS4ERR_DELAY). True: pinned until unpin().
  bool pin(std::span<const lock_request> reqs, bool may_wait, std::chrono::milliseconds idle_wait);
  void unpin(std::span<const lock_request> reqs);

  /// Locks held in all (entries of the table), for tests.
  std::size_t size();

 private:
  struct key_hash {
    std::size_t operator()(const object_key& k) const noexcept { return k.ino * 0x9E3779B97F4A7C15ull ^ k.dev; }
  };
  struct entry {
    std::uint64_t exclusive = 0;          ///< the transaction holding it exclusively, or 0
    std::vector<std::uint64_t> shared;    ///< transactions holding it shared
    unsigned plain_readers = 0, plain_writers = 0;
    bool empty() const { return exclusive == 0 && shared.empty() && plain_readers == 0 && plain_writers == 0; }
  };
  struct owner_state {
    std::uint64_t age = 0;
    bool busy = true;
    bool committed = false;  ///< set_committed()
    std::vector<object_key> held;
  };
  /// Transactions other than `owner` whose locks on `e` conflict with `mode`.
  static void holders_against(const entry& e, std::uint64_t owner, lock_mode mode, std::vector<std::uint64_t>& out);
  void drop_if_empty(const object_key& k);
  /// Whether transaction `a` is older than `b` (both enrolled). mu_ held.
  bool older(std::uint64_t a, std::uint64_t b) const;

  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, owner_state> owners_;
  std::unordered_map<object_key, entry, key_hash> table_;
  unsigned unchecked_ = 0;  ///< plain COMPOUNDs running without pins
};

}  // namespace vnfs::server::txn
