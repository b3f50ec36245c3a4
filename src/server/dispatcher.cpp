#include "server/dispatcher.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <type_traits>
#include <variant>

#include "server/caller.hpp"
#include "server/compound_context.hpp"
#include "server/fs/identity.hpp"
#include "server/ops/handlers.hpp"
#include "server/ops/status_mapping.hpp"
#include "server/state/open_state_table.hpp"
#include "server/txn/op_locks.hpp"
#include "server/txn/planner.hpp"
#include "server/txn/transaction.hpp"
#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/message.hpp"

namespace vnfs::server {

using nfs4::nfs_opnum4;
using nfs4::nfsstat4;

namespace {

caller caller_of(const rpc::call_header& call, bool root_squash) {
  caller who;  // AUTH_NONE: nobody
  if (call.cred.flavor == rpc::auth_flavor::sys) {
    rpc::authsys_parms p = rpc::parse_authsys(call.cred);  // validated by decode_call
    who.uid = p.uid;
    who.gid = p.gid;
    who.gids.assign(p.gids.begin(), p.gids.end());
  }
  if (root_squash && who.uid == 0) {
    who.uid = caller::nobody_uid;
    who.gid = caller::nobody_gid;
    who.gids.clear();
  }
  return who;
}

client_principal principal_of(const rpc::call_header& call) {
  client_principal p;
  p.flavor = static_cast<std::uint32_t>(call.cred.flavor);
  if (call.cred.flavor == rpc::auth_flavor::sys) {
    rpc::authsys_parms sys = rpc::parse_authsys(call.cred);
    p.uid = sys.uid;
    p.gid = sys.gid;
  }
  return p;
}

/// Operations that may open a COMPOUND without SEQUENCE, and then only alone (§2.10.6.3,
/// §18.33.3, §18.35.3, §18.36.3, §18.37.3, §18.50.3).
bool is_sessionless(nfs_opnum4 op) {
  switch (op) {
    case nfs_opnum4::OP_EXCHANGE_ID:
    case nfs_opnum4::OP_CREATE_SESSION:
    case nfs_opnum4::OP_DESTROY_SESSION:
    case nfs_opnum4::OP_DESTROY_CLIENTID:
    case nfs_opnum4::OP_BIND_CONN_TO_SESSION:
      return true;
    default:
      return false;
  }
}

/// NFSv4.2 operations (RFC 7862) exist only in minor version 2.
bool is_v42_only(nfs_opnum4 op) {
  return static_cast<std::uint32_t>(op) >= static_cast<std::uint32_t>(nfs_opnum4::OP_ALLOCATE) &&
         op != nfs_opnum4::OP_ILLEGAL && op != nfs_opnum4::OP_VNFS_TXN;
}

/// Whether `op` leaves every file's data and size as they are (a READ before it may leave
/// its payload in the file until sent).
bool leaves_data_alone(const nfs4::nfs_argop4& op) {
  if (txn::changes_nothing(op) || std::holds_alternative<nfs4::CLOSE4args>(op)) return true;
  const auto* open = std::get_if<nfs4::OPEN4args>(&op);
  return open != nullptr && open->openhow.opentype == nfs4::opentype4::OPEN4_NOCREATE;
}

/// Whether `op` is a WRITE at offset 0: one an OPEN just before may leave its truncation to
/// (compound_context::truncation).
bool writes_from_start(const nfs4::nfs_argop4& op) {
  const auto* w = std::get_if<nfs4::WRITE4args>(&op);
  return w != nullptr && w->offset == 0;
}

/// Whether `op` leaves the current filehandle's attributes, atime included, as PUTFH read
/// them (PUTFH itself reads them anew).
bool keeps_attributes(const nfs4::nfs_argop4& op) {
  return std::holds_alternative<nfs4::PUTFH4args>(op) || std::holds_alternative<nfs4::GETATTR4args>(op) ||
         std::holds_alternative<nfs4::GETFH4args>(op) || std::holds_alternative<nfs4::ACCESS4args>(op) ||
         std::holds_alternative<nfs4::SAVEFH4args>(op) || std::holds_alternative<nfs4::VERIFY4args>(op) ||
         std::holds_alternative<nfs4::NVERIFY4args>(op);
}

/// Holds a plain COMPOUND's place among those running unchecked (txn::lock_table) until
/// its reply, which reads payloads from their files as it is sent, is released.
class unchecked_until_sent {
 public:
  explicit unchecked_until_sent(txn::lock_table& locks) : locks_(locks) {}
  ~unchecked_until_sent() { locks_.leave_plain(true); }
  unchecked_until_sent(const unchecked_until_sent&) = delete;
  unchecked_until_sent& operator=(const unchecked_until_sent&) = delete;

 private:
  txn::lock_table& locks_;
};

/// Executes one COMPOUND and encodes COMPOUND4res into `body`.
class compound_run {
 public:
  compound_run(server_state& state, caller who, const client_principal& principal,
               std::size_t request_size, reply_payloads payloads)
      : state_(state), ctx_(state, std::move(who)), request_size_(request_size), payloads_(payloads) {
    ctx_.principal = principal;
  }
  /// A COMPOUND that ended by an exception still frees its slot (uncached), so the client
  /// can go on with the next sequence id.
  /// A transaction it ran in is rolled back, its locks released.
  ~compound_run() {
    unpin();
    if (holding_ == holding::single || holding_ == holding::open) end_transaction(nfsstat4::NFS4ERR_SERVERFAULT);
    release_lock();
    finish_slot(nullptr);
  }

  /// Encodes COMPOUND4res of `c` (a decoded COMPOUND) into `body` (the cached one for a
  /// replay); memory that results reference is handed over in `keepalive`.
  void run(const decoded_call& c, xdr::encoder& body, std::vector<std::shared_ptr<const void>>& keepalive);

 private:
  /// SEQUENCE as the first operation: validates the slot and either admits the request or
  /// answers it from the reply cache.
  enum class admission { execute, replay, refuse };
  admission sequence(const nfs4::SEQUENCE4args& a, std::uint32_t numops,
                     std::size_t reply_header, nfs4::SEQUENCE4res& res,
                     std::shared_ptr<const cached_reply>& replay);
  nfs4::nfs_resop4 execute(const nfs4::nfs_argop4& op);
  void finish_slot(const xdr::encoder* reply);
  /// VNFS_TXN right after SEQUENCE: begins, joins or ends a transaction (docs/transactions.md);
  /// on NFS4_OK with `rest` true, the rest of the COMPOUND runs in ctx_.txn.
  nfs4::VNFS_TXN4res start_transaction(const nfs4::VNFS_TXN4args& a, std::uint32_t numops);
  /// After the last operation: commits, keeps open or rolls back the transaction this
  /// COMPOUND ran in (`status` NFS4_OK or not). Returns the COMPOUND's final status (a
  /// failed commit rolls back and reports its error).
  nfsstat4 end_transaction(nfsstat4 status);
  /// Leaves the lock table (a plain COMPOUND).
  void release_lock() {
    if (holding_ == holding::plain || holding_ == holding::unchecked)
      state_.txns.locks().leave_plain(holding_ == holding::unchecked);
    holding_ = holding::none;
  }
  /// Before an operation of a plain COMPOUND or a transaction: takes the locks or pins it
  /// needs (a plain COMPOUND's pins add up in pinned_). NFS4_OK; NFS4ERR_DELAY (a plain
  /// COMPOUND meets a transaction); NFS4ERR_DEADLOCK (this transaction must die).
  /// The locks `op` needs; `planned`: txn::plan already took those of the objects its names
  /// find, which it need not look up again.
  nfsstat4 lock_for(const nfs4::nfs_argop4& op, bool planned);
  /// After an operation of a plain COMPOUND: notes the open states it made (which a
  /// refusal closes again) and whether it changed anything else. `closing`: the open
  /// stateid a CLOSE named, resolved before it ran.
  void after_plain(const nfs4::nfs_argop4& op, const nfs4::nfs_resop4& r, const nfs4::stateid4& closing);
  /// A plain COMPOUND refused whole: closes the open states it made, drops its pins.
  void undo_plain();
  void unpin() {
    if (!pinned_.empty()) state_.txns.locks().unpin(pinned_);
    pinned_.clear();
  }

  server_state& state_;
  compound_context ctx_;
  std::size_t request_size_;
  reply_payloads payloads_;
  slot* slot_ = nullptr;
  bool cachethis_ = false;
  // Isolation (txn::manager's lock table): how this COMPOUND takes part. A plain one runs
  // `unchecked` while no transaction exists, else pins each operation's objects (`plain`).
  enum class holding { none, unchecked, plain, single, open } holding_ = holding::none;
  std::vector<txn::lock_request> pinned_;     ///< holding::plain: its pins so far
  bool changed_ = false;                      ///< holding::plain: it changed what a refusal cannot undo
  struct own_open {
    file_key file;
    nfs4::stateid4 sid;
  };
  std::vector<own_open> own_opens_;           ///< holding::plain: open states it made, still open
  bool died_ = false;                         ///< a transaction's lock conflict: rolled back
  std::unique_ptr<txn::transaction> single_;  ///< holding::single: its transaction
  std::uint64_t open_txnid_ = 0;              ///< holding::open: the client's txnid
  bool commit_at_end_ = false;                ///< holding::open: TXN_COMMIT
  std::size_t records_at_start_ = 0;          ///< holding::open: its changes() before this COMPOUND
  std::size_t planned_until_ = 0;             ///< ops before this index were planned (txn::plan)
  nfs4::txn_outcome4 outcome_ = nfs4::txn_outcome4::TXN_NONE;  ///< holding::open: how it stands after
};

nfs4::VNFS_TXN4res compound_run::start_transaction(const nfs4::VNFS_TXN4args& a, std::uint32_t numops) {
  using nfs4::txn_action4;
  nfs4::VNFS_TXN4res res;
  res.status = nfsstat4::NFS4ERR_INVAL;
  txn::manager& m = state_.txns;
  const auto action = static_cast<txn_action4>(a.action);
  if ((a.flags & ~nfs4::TXN_RETRY) != 0 || ((a.flags & nfs4::TXN_RETRY) && action != txn_action4::TXN_BEGIN)) return res;
  const bool alone = numops == 2;
  switch (action) {
    case txn_action4::TXN_ONE_COMPOUND:
      res.status = m.begin_single(ctx_.clientid, a.txnid, single_);
      if (res.status == nfsstat4::NFS4_OK) {
        holding_ = holding::single;
        ctx_.txn = single_.get();
      }
      return res;
    case txn_action4::TXN_BEGIN:
    case txn_action4::TXN_JOIN:
    case txn_action4::TXN_COMMIT:
    case txn_action4::TXN_ABORT:
      if (action == txn_action4::TXN_ABORT && !alone) return res;
      if (action == txn_action4::TXN_BEGIN) {
        const auto retries = a.flags & nfs4::TXN_RETRY ? std::optional<std::uint64_t>(a.retries) : std::nullopt;
        res.status = m.begin_open(ctx_.clientid, a.txnid, retries, ctx_.txn);
      } else {
        res.status = m.join_open(ctx_.clientid, a.txnid, ctx_.txn);
      }
      if (res.status != nfsstat4::NFS4_OK) return res;
      holding_ = holding::open;
      open_txnid_ = a.txnid;
      commit_at_end_ = action == txn_action4::TXN_COMMIT;
      records_at_start_ = ctx_.txn->changes();
      res.outcome = static_cast<std::uint32_t>(nfs4::txn_outcome4::TXN_OPEN);
      if (action == txn_action4::TXN_ABORT) {
        holding_ = holding::none;
        ctx_.txn = nullptr;
        res.status = m.leave_open(a.txnid, txn::manager::ending::abort);
        res.outcome = static_cast<std::uint32_t>(nfs4::txn_outcome4::TXN_ABORTED);
      }
      return res;
    case txn_action4::TXN_STATUS:
      if (!alone) return res;
      res.status = nfsstat4::NFS4_OK;
      res.outcome = static_cast<std::uint32_t>(m.outcome_of(a.txnid));
      return res;
  }
  return res;
}

nfsstat4 compound_run::end_transaction(nfsstat4 status) {
  const bool ok = status == nfsstat4::NFS4_OK;
  nfsstat4 ended = nfsstat4::NFS4_OK;
  if (ctx_.txn) ctx_.txn->end_compound();
  if (holding_ == holding::single) {
    // One that died is answered as not begun and comes again with its txnid: no outcome,
    // and its age is kept for that run.
    ended = state_.txns.end_single(std::move(single_), ok, died_);
  } else if (holding_ == holding::open) {
    // A failure rolls the transaction back if this COMPOUND changed anything; one that
    // changed nothing leaves it as it was. One that died keeps its age for a retry.
    using ending = txn::manager::ending;
    const ending e = !ok ? (died_ ? ending::die : ctx_.txn->changes() != records_at_start_ ? ending::abort : ending::keep)
                     : commit_at_end_ ? ending::commit
                                      : ending::keep;
    ended = state_.txns.leave_open(open_txnid_, e);
    using nfs4::txn_outcome4;
    outcome_ = e == ending::keep ? txn_outcome4::TXN_OPEN
               : e == ending::commit && ended == nfsstat4::NFS4_OK ? txn_outcome4::TXN_COMMITTED
                                                                  : txn_outcome4::TXN_ABORTED;
  }
  ctx_.txn = nullptr;
  holding_ = holding::none;
  return ok ? ended : status;
}

nfsstat4 compound_run::lock_for(const nfs4::nfs_argop4& op, bool planned) {
  if (holding_ == holding::none || holding_ == holding::unchecked) return nfsstat4::NFS4_OK;
  std::vector<txn::lock_request> reqs;
  // A plain COMPOUND pins no object it reaches by a name but the file an OPEN truncates (a
  // transaction may hold it, or a committed one's replay may be due to write it).
  using txn::named_objects;
  txn::op_locks(op, ctx_,
                holding_ == holding::plain ? named_objects::truncated
                : planned                  ? named_objects::none
                                           : named_objects::all,
                reqs);
  nfsstat4 s = nfsstat4::NFS4_OK;
  if (holding_ != holding::plain) {
    if (!reqs.empty()) s = state_.txns.lock(*ctx_.txn, reqs);
  } else if (!reqs.empty()) {
    // Holding pins, it never waits (a transaction may wait for them). Holding none, it
    // waits for a running transaction; for an idle one only if it changed something (a
    // while), else it is refused whole at once and the client sends it again.
    using std::chrono::milliseconds;
    const bool holds = !pinned_.empty();
    if (state_.txns.locks().pin(reqs, !holds, changed_ && !holds ? milliseconds(1000) : milliseconds(0)))
      pinned_.insert(pinned_.end(), reqs.begin(), reqs.end());
    else
      s = nfsstat4::NFS4ERR_DELAY;
  }
  return s;
}

void compound_run::after_plain(const nfs4::nfs_argop4& op, const nfs4::nfs_resop4& r,
                               const nfs4::stateid4& closing) {
  if (changed_ || txn::changes_nothing(op)) return;
  const bool ok = nfs4::status_of(r) == nfsstat4::NFS4_OK;
  if (auto* o = std::get_if<nfs4::OPEN4args>(&op)) {
    // An OPEN that made a new open state and created or truncated nothing can be undone.
    if (!ok) return;
    const nfs4::stateid4 sid = std::get<nfs4::OPEN4res>(r).resok4.stateid;
    std::error_code ec;
    const file_key key = open_state_table::key_of(ctx_.current.obj, ec);
    if (o->openhow.opentype == nfs4::opentype4::OPEN4_CREATE || sid.seqid != 1 || ec) {
      changed_ = true;
      return;
    }
    own_opens_.push_back({key, sid});
  } else if (std::holds_alternative<nfs4::CLOSE4args>(op)) {
    // Closing an open state it made itself leaves nothing to undo.
    if (!ok) return;
    auto mine = std::find_if(own_opens_.begin(), own_opens_.end(),
                             [&](const own_open& m) { return m.sid.other == closing.other; });
    if (mine == own_opens_.end()) {
      changed_ = true;
      return;
    }
    own_opens_.erase(mine);
  } else if (!(std::holds_alternative<nfs4::RECLAIM_COMPLETE4args>(op) && own_opens_.empty())) {
    // RECLAIM_COMPLETE in front (how a client sends its first call) is answered before the
    // refusal: the client takes its result off and sends the rest again.
    changed_ = true;
  }
}

void compound_run::undo_plain() {
  for (const own_open& m : own_opens_) state_.opens.close(ctx_.clientid, m.file, nfs4::stateid4{0, m.sid.other});
  own_opens_.clear();
  unpin();
}

compound_run::admission compound_run::sequence(const nfs4::SEQUENCE4args& a,
                                               std::uint32_t numops, std::size_t reply_header,
                                               nfs4::SEQUENCE4res& res,
                                               std::shared_ptr<const cached_reply>& replay) {
  auto sess = state_.clients.find_session(a.sa_sessionid);
  if (!sess) {
    res.status = nfsstat4::NFS4ERR_BADSESSION;
    return admission::refuse;
  }
  std::lock_guard lock(sess->mu);
  if (a.sa_slotid >= sess->slots.size()) {
    res.status = nfsstat4::NFS4ERR_BADSLOT;
    return admission::refuse;
  }
  slot& sl = sess->slots[a.sa_slotid];
  if (a.sa_sequenceid == sl.seqid) {  // a retransmission (§2.10.6.1.3)
    if (sl.in_progress) {
      res.status = nfsstat4::NFS4ERR_DELAY;
    } else if (sl.cached) {
      replay = sl.cached;
      return admission::replay;
    } else {
      res.status = nfsstat4::NFS4ERR_RETRY_UNCACHED_REP;
    }
    return admission::refuse;
  }
  if (a.sa_sequenceid != sl.seqid + 1 || sl.in_progress) {
    res.status = nfsstat4::NFS4ERR_SEQ_MISORDERED;
    return admission::refuse;
  }
  // Limits are checked before the slot is taken: a refused request does not advance it.
  if (numops > sess->fore.ca_maxoperations) {
    res.status = nfsstat4::NFS4ERR_TOO_MANY_OPS;
    return admission::refuse;
  }
  if (request_size_ > sess->fore.ca_maxrequestsize) {
    res.status = nfsstat4::NFS4ERR_REQ_TOO_BIG;
    return admission::refuse;
  }
  // The smallest reply is this SEQUENCE's own result: when even that exceeds what the
  // session may cache (a client may ask for a tiny ca_maxresponsesize_cached), a request to
  // cache it fails here, before the slot is taken (§2.10.6.4, §18.46.3).
  if (a.sa_cachethis) {
    nfs4::SEQUENCE4res probe;
    probe.status = nfsstat4::NFS4_OK;
    xdr::encoder e;
    nfs4::encode_resop(e, nfs4::nfs_resop4{probe});
    if (reply_header + e.size() > sess->fore.ca_maxresponsesize_cached) {
      res.status = nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE;
      return admission::refuse;
    }
  }
  sl.seqid = a.sa_sequenceid;
  sl.in_progress = true;
  sl.cached.reset();
  slot_ = &sl;
  cachethis_ = a.sa_cachethis;
  ctx_.sess = sess;
  ctx_.clientid = sess->clientid;
  state_.clients.renew(sess->clientid);

  auto& ok = res.resok4;
  ok.sr_sessionid = a.sa_sessionid;
  ok.sr_sequenceid = a.sa_sequenceid;
  ok.sr_slotid = a.sa_slotid;
  ok.sr_highest_slotid = static_cast<nfs4::slotid4>(sess->slots.size() - 1);
  ok.sr_target_highest_slotid = ok.sr_highest_slotid;
  ok.sr_status_flags = 0;
  res.status = nfsstat4::NFS4_OK;
  return admission::execute;
}

nfs4::nfs_resop4 compound_run::execute(const nfs4::nfs_argop4& op) {
  return std::visit(
      [&](const auto& args) -> nfs4::nfs_resop4 {
        using T = std::decay_t<decltype(args)>;
        if constexpr (std::is_same_v<T, nfs4::illegal_op4>) {
          return nfs4::ILLEGAL4res{nfsstat4::NFS4ERR_OP_ILLEGAL};
        } else if constexpr (std::is_same_v<T, nfs4::unsupported_op4>) {
          return nfs4::make_result(args.opnum, nfsstat4::NFS4ERR_NOTSUPP);
        } else if constexpr (std::is_same_v<T, nfs4::SEQUENCE4args>) {
          return nfs4::make_result(T::opnum, nfsstat4::NFS4ERR_SEQUENCE_POS);
        } else {
          try {
            return handle(ctx_, args);
          } catch (const std::exception&) {
            return nfs4::make_result(T::opnum, nfsstat4::NFS4ERR_SERVERFAULT);
          }
        }
      },
      op);
}

void compound_run::finish_slot(const xdr::encoder* reply) {
  if (slot_ == nullptr) return;
  // Copied before the lock is taken: other slots of the session need it meanwhile.
  auto cached = reply != nullptr ? std::make_shared<const cached_reply>(*reply) : nullptr;
  std::lock_guard lock(ctx_.sess->mu);
  slot_->cached = std::move(cached);
  slot_->in_progress = false;
  slot_ = nullptr;
}

void compound_run::run(const decoded_call& c, xdr::encoder& body,
                       std::vector<std::shared_ptr<const void>>& keepalive) {
  const nfs4::compound_header& hdr = c.hdr;
  ctx_.minorversion = hdr.minorversion;
  std::size_t status_at = body.reserve_u32();
  xdr::encode(body, hdr.tag);
  std::size_t count_at = body.reserve_u32();
  std::uint32_t count = 0;
  nfsstat4 status = nfsstat4::NFS4_OK;
  auto add = [&](const xdr::encoder& result, nfsstat4 st) {
    body.append(result);
    ++count;
    status = st;
  };
  auto add_result = [&](const nfs4::nfs_resop4& r) {
    xdr::encoder e;
    nfs4::encode_resop(e, r);
    add(e, nfs4::status_of(r));
  };

  if (hdr.minorversion != 1 && hdr.minorversion != 2) {
    status = nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH;  // and no results (§16.2.3)
  }
  std::size_t max_reply = SIZE_MAX, max_cached = SIZE_MAX;
  std::size_t txn_status_at = 0;
  // To answer a plain COMPOUND as if refused whole: where its first operation's result
  // starts (after SEQUENCE, or after a RECLAIM_COMPLETE in front), the results before it,
  // and that operation.
  xdr::encoder::mark_t refuse_at, after_txn;
  std::uint32_t refuse_count = 1;
  nfs_opnum4 first_opnum = nfs_opnum4::OP_ILLEGAL;
  // Operations after the last one that may change file data may leave READ payloads in
  // their files.
  std::size_t payloads_from = c.ops.size();
  if (payloads_ == reply_payloads::files && c.ops.size() == hdr.numops) {
    while (payloads_from > 0 && leaves_data_alone(c.ops[payloads_from - 1])) --payloads_from;
  }
  for (std::uint32_t i = 0; status == nfsstat4::NFS4_OK && i < hdr.numops; ++i) {
    if (i == c.ops.size()) {  // the first operation that did not decode, named if possible
      add_result(nfs4::make_result(c.bad_op.value_or(nfs_opnum4::OP_ILLEGAL), nfsstat4::NFS4ERR_BADXDR));
      break;
    }
    const nfs4::nfs_argop4& op = c.ops[i];
    const nfs_opnum4 opnum = nfs4::opnum_of(op);
    if (i == 0) {
      if (auto* seq = std::get_if<nfs4::SEQUENCE4args>(&op)) {
        nfs4::SEQUENCE4res res;
        std::shared_ptr<const cached_reply> replay;
        switch (sequence(*seq, hdr.numops, body.size(), res, replay)) {
          case admission::replay: {
            // The cached COMPOUND4res replaces everything encoded so far; its payloads are
            // referenced where the cache keeps them.
            body = xdr::encoder();
            replay->encode(body);
            keepalive.push_back(std::move(replay));
            return;
          }
          case admission::refuse:
            add_result(res);
            continue;
          case admission::execute:
            add_result(res);
            refuse_at = body.mark();
            max_reply = ctx_.sess->fore.ca_maxresponsesize;
            max_cached = cachethis_ ? ctx_.sess->fore.ca_maxresponsesize_cached : SIZE_MAX;
            continue;
        }
      }
      bool undecoded = std::holds_alternative<nfs4::illegal_op4>(op) ||
                       std::holds_alternative<nfs4::unsupported_op4>(op);
      if (!is_sessionless(opnum) && !undecoded) {
        add_result(nfs4::make_result(opnum, nfsstat4::NFS4ERR_OP_NOT_IN_SESSION));
        break;
      }
      if (is_sessionless(opnum) && hdr.numops != 1) {
        add_result(nfs4::make_result(opnum, nfsstat4::NFS4ERR_NOT_ONLY_OP));
        break;
      }
    }
    const bool txn_op = std::holds_alternative<nfs4::VNFS_TXN4args>(op);
    if (txn_op && !state_.txns.enabled()) {  // as a server without the extension answers
      add_result(nfs4::ILLEGAL4res{nfsstat4::NFS4ERR_OP_ILLEGAL});
      break;
    }
    if (i == 1 && ctx_.sess) {
      if (txn_op) {
        txn_status_at = body.size() + 4;  // after the result's opnum
        add_result(start_transaction(std::get<nfs4::VNFS_TXN4args>(op), hdr.numops));
        after_txn = body.mark();
        // The undo records of every change it can foresee, durable before the first runs.
        if (ctx_.txn && c.ops.size() > 2) planned_until_ = 2 + txn::plan(*ctx_.txn, ctx_, std::span(c.ops).subspan(2));
        continue;
      }
      holding_ = state_.txns.locks().enter_plain() ? holding::unchecked : holding::plain;
    }
    if (hdr.minorversion < 2 && is_v42_only(opnum)) {
      add_result(nfs4::ILLEGAL4res{nfsstat4::NFS4ERR_OP_ILLEGAL});
      break;
    }
    if (nfsstat4 s = lock_for(op, i < planned_until_); s != nfsstat4::NFS4_OK) {
      if (s == nfsstat4::NFS4ERR_DELAY && !changed_) {
        // Nothing it did remains: refused whole, at its first operation.
        undo_plain();
        const nfs_opnum4 first = i == refuse_count ? opnum : first_opnum;
        body.truncate(refuse_at);
        count = refuse_count;
        add_result(nfs4::make_result(first, s));
      } else if (s == nfsstat4::NFS4ERR_DEADLOCK && holding_ == holding::single) {
        died_ = true;  // rolled back below, then refused whole at VNFS_TXN
      } else {
        died_ = s == nfsstat4::NFS4ERR_DEADLOCK;
        add_result(nfs4::make_result(opnum, s));
      }
      break;
    }
    if (i == refuse_count) first_opnum = opnum;
    nfs4::stateid4 closing{};
    if (auto* c = std::get_if<nfs4::CLOSE4args>(&op); c && holding_ == holding::plain)
      (void)ctx_.resolve_stateid(c->open_stateid, closing);
    ctx_.file_payloads = i >= payloads_from && !cachethis_ && holding_ == holding::unchecked && !ctx_.txn;
    ctx_.truncation_may_wait = i + 1 < c.ops.size() && writes_from_start(c.ops[i + 1]);
    nfs4::nfs_resop4 r = execute(op);
    if (!txn::changes_nothing(op)) {  // it may have changed what a held ctime stood for
      ctx_.current.ctime.reset();
      ctx_.saved.ctime.reset();
    }
    if (!keeps_attributes(op)) {
      ctx_.current.attrs.reset();
      ctx_.saved.attrs.reset();
    }
    if (holding_ == holding::plain) after_plain(op, r, closing);
    xdr::encoder e;
    nfs4::encode_resop(e, r);
    // RPC reply header and record mark are not part of the session's response size; the
    // COMPOUND4res is (a conservative reading of §2.10.6.4 that never overshoots).
    if (body.size() + e.size() > max_reply || body.size() + e.size() > max_cached) {
      add_result(nfs4::make_result(opnum, body.size() + e.size() > max_reply
                                         ? nfsstat4::NFS4ERR_REP_TOO_BIG
                                         : nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE));
      break;
    }
    add(e, nfs4::status_of(r));
    if (i == 1 && opnum == nfs_opnum4::OP_RECLAIM_COMPLETE && status == nfsstat4::NFS4_OK) {
      refuse_at = body.mark();
      refuse_count = 2;
    }
    if (ctx_.txn) ctx_.txn->after_operation(status == nfsstat4::NFS4_OK ? &ctx_.current.obj : nullptr);
  }
  // An OPEN's truncation that the WRITE after it did not take, the COMPOUND having stopped
  // before it: done now, before a rollback puts back what the transaction changed. (No
  // operation is left to report a failure.)
  (void)finish_truncation(ctx_);
  if (died_ && holding_ == holding::single) {
    // Rolled back whole: answered as a transaction that did not begin (the client sends
    // the COMPOUND again).
    end_transaction(nfsstat4::NFS4ERR_DELAY);
    body.truncate(after_txn);
    count = 2;
    status = nfsstat4::NFS4ERR_DELAY;
    body.patch_u32(txn_status_at, static_cast<std::uint32_t>(status));
  } else if (holding_ == holding::single || holding_ == holding::open) {
    const bool open = holding_ == holding::open;
    nfsstat4 ended = end_transaction(status);
    if (ended != status) {  // the commit failed: VNFS_TXN's result and the COMPOUND say why
      body.patch_u32(txn_status_at, static_cast<std::uint32_t>(ended));
      status = ended;
    }
    if (open) body.patch_u32(txn_status_at + 4, static_cast<std::uint32_t>(outcome_));  // how it stands now
  }
  unpin();
  if (holding_ == holding::unchecked && body.has_file_payloads()) {
    ctx_.keepalive.push_back(std::make_shared<const unchecked_until_sent>(state_.txns.locks()));
    holding_ = holding::none;
  }
  release_lock();
  body.patch_u32(status_at, static_cast<std::uint32_t>(status));
  body.patch_u32(count_at, count);
  keepalive = std::move(ctx_.keepalive);
  finish_slot(cachethis_ ? &body : nullptr);
}

}  // namespace

std::optional<rpc_reply> dispatcher::handle(const decoded_call& c, reply_payloads payloads) {
  rpc_reply reply;
  if (c.header_error) {
    if (!c.header_error->encode_reply(reply.msg)) return std::nullopt;
    return reply;
  }
  const rpc::call_header& call = c.call;
  if (call.prog != nfs4::NFS4_PROGRAM) {
    rpc::encode_accepted_reply(reply.msg, call.xid, rpc::accept_stat::prog_unavail);
    return reply;
  }
  if (call.vers != nfs4::NFS_V4) {
    rpc::encode_accepted_reply(reply.msg, call.xid, rpc::accept_stat::prog_mismatch, {},
                               {nfs4::NFS_V4, nfs4::NFS_V4});
    return reply;
  }
  if (call.cred.flavor != rpc::auth_flavor::none && call.cred.flavor != rpc::auth_flavor::sys) {
    rpc::encode_denied_reply(reply.msg, call.xid, rpc::auth_stat::badcred);
    return reply;
  }
  if (call.proc == nfs4::NFSPROC4_NULL) {
    rpc::encode_accepted_reply(reply.msg, call.xid, rpc::accept_stat::success);
    return reply;
  }
  if (call.proc != nfs4::NFSPROC4_COMPOUND) {
    rpc::encode_accepted_reply(reply.msg, call.xid, rpc::accept_stat::proc_unavail);
    return reply;
  }
  if (!c.compound) {
    rpc::encode_accepted_reply(reply.msg, call.xid, rpc::accept_stat::garbage_args);
    return reply;
  }

  caller who = caller_of(call, state_.options.root_squash);
  xdr::encoder body;
  std::vector<std::shared_ptr<const void>> keepalive;
  try {
    fs::scoped_identity as_caller(who.uid, who.gid, who.gids);
    compound_run(state_, who, principal_of(call), c.record_size, payloads).run(c, body, keepalive);
  } catch (const std::exception&) {  // e.g. the identity switch failed: nothing ran
    rpc::encode_accepted_reply(reply.msg, call.xid, rpc::accept_stat::system_err);
    return reply;
  }
  rpc::encode_accepted_reply(reply.msg, call.xid, rpc::accept_stat::success);
  reply.msg.append(body);
  if (!keepalive.empty()) {
    // `body` was copied into msg except for referenced payloads, which keepalive owns.
    reply.keepalive = std::make_shared<std::vector<std::shared_ptr<const void>>>(std::move(keepalive));
  }
  return reply;
}

}  // namespace vnfs::server
