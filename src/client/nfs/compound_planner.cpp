#include "client/nfs/compound_planner.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_set>

#include "client/memory/registration.hpp"
#include "client/path.hpp"
#include "client/vector/item_runner.hpp"
#include "vnfs/xdr/codec.hpp"

namespace vnfs::detail {

using namespace vnfs::nfs4;

namespace {

/// Room for what surrounds the operations: RPC call header with AUTH_SYS credentials,
/// COMPOUND header and SEQUENCE on the way out; reply header, COMPOUND status and SEQUENCE
/// result on the way back.
constexpr std::size_t request_overhead = 512;
constexpr std::size_t reply_overhead = 256;

std::size_t depth(std::string_view p) { return split_path(p).size(); }

/// Components `a` and `b` share from the root.
std::size_t common_depth(std::string_view a, std::string_view b) {
  auto ca = split_path(a), cb = split_path(b);
  std::size_t n = 0;
  while (n < ca.size() && n < cb.size() && ca[n] == cb[n]) ++n;
  return n;
}

/// What a filehandle (current or saved) is known to name.
struct position {
  enum class kind { unknown, directory, object, handle } k = kind::unknown;
  std::string path;  ///< directory, object
  nfs_fh4 fh;        ///< handle
  bool is_dir(std::string_view p) const { return k == kind::directory && path == p; }
};

/// One COMPOUND being packed, then sent.
struct compound {
  /// What it carries, to pack again under a lower limit: each item without its operations,
  /// which are ops[item_begins[i], item_ends[i]) (after the navigation placed before them).
  std::vector<planned_item> items;
  std::vector<planned_op> ops;
  std::vector<std::size_t> item_begins;  ///< per item: the index in ops of its first operation
  std::vector<std::size_t> item_ends;    ///< per item: the index in ops past its last operation
  std::size_t request_bytes = request_overhead;
  std::size_t reply_bytes = reply_overhead;
  bool needs_cache = false;
  bool barrier = false;  ///< wait for every earlier COMPOUND first
  bool begins = false;   ///< carries the transaction's TXN_BEGIN (txn_link: begun lazily)
  bool commits = false;  ///< the last of a committing call (run_planned's commit_last): ends the transaction
  bool whole = false;    ///< sent as TXN_ONE_COMPOUND: the transaction is this COMPOUND
  position cur, saved;
};

/// The packer: walks the items in order, appending navigation and operations.
class packer {
 public:
  packer(const channel_attrs4& limits, const nfs_fh4& root) : limits_(limits), root_(root) {}

  /// Places `item`, which it takes (moved from) on success; false if it does not fit even
  /// in an empty COMPOUND (error in `ec`; `item` is left as it was).
  bool place(planned_item& item, std::error_code& ec) {
    if (compounds_.empty()) start_compound();
    for (int attempt = 0; attempt < 2; ++attempt) {
      compound& c = compounds_.back();
      compound trial_state;
      trial_state.cur = c.cur;
      trial_state.saved = c.saved;
      std::vector<planned_op> nav;
      navigate(item, trial_state, nav);
      std::size_t req = 0, rep = 0, n = nav.size() + item.ops.size();
      for (const auto& o : nav) req += encoded_size(o.op), rep += o.reply_bytes;
      for (const auto& o : item.ops) req += encoded_size(o.op), rep += o.reply_bytes;
      bool cache = c.needs_cache || item.needs_cache;
      std::size_t rep_limit = cache ? std::min(limits_.ca_maxresponsesize, limits_.ca_maxresponsesize_cached)
                                    : limits_.ca_maxresponsesize;
      bool fits = c.ops.size() + n + 1 <= limits_.ca_maxoperations && c.request_bytes + req <= limits_.ca_maxrequestsize &&
                  c.reply_bytes + rep <= rep_limit;
      if (!fits) {
        if (c.ops.empty()) {
          ec = c.request_bytes + req > limits_.ca_maxrequestsize ? std::error_code(nfsstat4::NFS4ERR_REQ_TOO_BIG)
               : n + 1 > limits_.ca_maxoperations              ? std::error_code(nfsstat4::NFS4ERR_TOO_MANY_OPS)
                                                                : std::error_code(nfsstat4::NFS4ERR_REP_TOO_BIG);
          return false;
        }
        start_compound();
        continue;
      }
      std::size_t owner = item.ops.empty() ? 0 : item.ops.front().owner;
      for (auto& o : nav) o.owner = owner;
      order(item, c);
      for (auto& o : nav) c.ops.push_back(std::move(o));
      c.item_begins.push_back(c.ops.size());
      for (auto& o : item.ops) c.ops.push_back(std::move(o));
      c.item_ends.push_back(c.ops.size());
      item.ops.clear();
      c.items.push_back(std::move(item));
      c.request_bytes += req;
      c.reply_bytes += rep;
      c.needs_cache = cache;
      c.cur = trial_state.cur;
      c.saved = trial_state.saved;
      after(c.items.back(), c);
      return true;
    }
    ec = std::error_code(nfsstat4::NFS4ERR_REP_TOO_BIG);
    return false;
  }

  std::vector<std::unique_ptr<compound>> take() {
    if (!compounds_.empty() && compounds_.back().ops.empty()) compounds_.pop_back();
    std::vector<std::unique_ptr<compound>> out;
    for (auto& c : compounds_) out.push_back(std::make_unique<compound>(std::move(c)));
    return out;
  }

 private:
  /// The encoded size of `op`: encoded into sizer_, which keeps its buffers, so that sizing
  /// allocates nothing once they are large enough.
  std::size_t encoded_size(const nfs_argop4& op) {
    sizer_.truncate({});
    xdr::encode(sizer_, op);
    return sizer_.size();
  }

  // ---- navigation

  static planned_op op(nfs_argop4 a, std::size_t reply = 32) { return planned_op{std::move(a), 0, reply, {}}; }
  static planned_op lookup(std::string_view name) { return op(LOOKUP4args{std::string(name)}); }

  /// Makes the current filehandle the directory `dir`, the cheapest way; `use_saved` allows
  /// RESTOREFH (not while the saved filehandle holds a two-filehandle item's first object).
  void to_dir(const std::string& dir, compound& s, std::vector<planned_op>& out, bool use_saved) {
    if (s.cur.is_dir(dir)) return;
    const std::size_t d = depth(dir);
    std::size_t best = 1 + d;  // PUTFH of the root, LOOKUP each component
    int how = 0;
    if (s.cur.k == position::kind::directory) {
      std::size_t c = common_depth(s.cur.path, dir);
      std::size_t cost = (depth(s.cur.path) - c) + (d - c);
      if (cost < best) best = cost, how = 1;
    }
    if (use_saved && s.saved.k == position::kind::directory) {
      std::size_t c = common_depth(s.saved.path, dir);
      std::size_t cost = 1 + (depth(s.saved.path) - c) + (d - c);
      if (cost < best) best = cost, how = 2;
    }
    std::string_view from;
    if (how == 0) {
      out.push_back(op(PUTFH4args{root_}));
    } else {
      if (how == 2) out.push_back(op(RESTOREFH4args{}));
      from = how == 1 ? std::string_view(s.cur.path) : std::string_view(s.saved.path);
    }
    std::size_t c = common_depth(from, dir);
    for (std::size_t i = depth(from); i > c; --i) out.push_back(op(LOOKUPP4args{}));
    auto parts = split_path(dir);
    for (std::size_t i = c; i < parts.size(); ++i) out.push_back(lookup(parts[i]));
    s.cur = position{position::kind::directory, dir, {}};
  }

  void navigate(const planned_item& item, compound& s, std::vector<planned_op>& out) {
    const item_start& st = item.start;
    switch (st.k) {
      case item_start::kind::directory:
        to_dir(st.path, s, out, true);
        // Returning here after the item leaves the current filehandle on a file: RESTOREFH
        // (one operation) instead of PUTFH and a LOOKUP per component.
        if (item.end.k == item_end::kind::elsewhere && !st.path.empty() && !s.saved.is_dir(st.path)) {
          out.push_back(op(SAVEFH4args{}));
          s.saved = s.cur;
        }
        break;
      case item_start::kind::handle:
        if (!(s.cur.k == position::kind::handle && s.cur.fh == st.fh)) {
          out.push_back(op(PUTFH4args{st.fh}));
          s.cur = position{position::kind::handle, {}, st.fh};
        }
        break;
      case item_start::kind::two_paths: {
        const bool have = st.saved_object ? (s.saved.k == position::kind::object && s.saved.path == st.saved_path)
                                          : s.saved.is_dir(st.saved_path);
        if (!have) {
          if (st.saved_object) {
            auto [dir, name] = split_parent(st.saved_path);
            to_dir(std::string(dir), s, out, true);
            out.push_back(lookup(name));
            s.cur = position{position::kind::object, st.saved_path, {}};
          } else {
            to_dir(st.saved_path, s, out, true);
          }
          out.push_back(op(SAVEFH4args{}));
          s.saved = s.cur;
        }
        to_dir(st.path, s, out, false);
        break;
      }
      case item_start::kind::two_handles:
        out.push_back(op(PUTFH4args{st.saved_fh}));
        out.push_back(op(SAVEFH4args{}));
        out.push_back(op(PUTFH4args{st.fh}));
        s.saved = position{position::kind::handle, {}, st.saved_fh};
        s.cur = position{position::kind::handle, {}, st.fh};
        break;
    }
  }

  /// The filehandles after the item's own operations.
  static void after(const planned_item& item, compound& c) {
    switch (item.end.k) {
      case item_end::kind::unchanged: break;
      case item_end::kind::directory: c.cur = position{position::kind::directory, item.end.path, {}}; break;
      case item_end::kind::elsewhere: c.cur = position{}; break;
    }
    // A filehandle known by a path at or under one that went away now names something else.
    for (const auto& g : item.gone)
      for (position* p : {&c.cur, &c.saved})
        if ((p->k == position::kind::directory || p->k == position::kind::object) && under(p->path, g)) *p = position{};
  }

  static bool under(std::string_view x, std::string_view anc) {
    return anc.empty() || x == anc || (x.size() > anc.size() && x.substr(0, anc.size()) == anc && x[anc.size()] == '/');
  }

  // ---- ordering between COMPOUNDs

  void start_compound() {
    for (const auto& t : current_mods_) add_modified(t);
    current_mods_.clear();
    compounds_.emplace_back();
  }

  /// A path related to one an earlier COMPOUND changes: this COMPOUND waits for them all.
  void order(const planned_item& item, compound& c) {
    for (const auto& t : item.touches) {
      if (c.barrier) break;
      if (modified_ancestors_.count(t)) c.barrier = true;  // t is, or is above, a changed path
      for (std::string_view a = t; !c.barrier;) {          // t is below a changed path
        if (modified_.count(std::string(a))) c.barrier = true;
        if (a.empty()) break;
        auto slash = a.rfind('/');
        a = slash == std::string_view::npos ? std::string_view() : a.substr(0, slash);
      }
    }
    if (item.modifies) current_mods_.insert(current_mods_.end(), item.touches.begin(), item.touches.end());
  }

  void add_modified(const std::string& t) {
    modified_.insert(t);
    std::string_view a = t;
    modified_ancestors_.insert(t);
    while (!a.empty()) {
      auto slash = a.rfind('/');
      a = slash == std::string_view::npos ? std::string_view() : a.substr(0, slash);
      modified_ancestors_.insert(std::string(a));
    }
  }

  channel_attrs4 limits_;
  nfs_fh4 root_;
  xdr::encoder sizer_;
  std::vector<compound> compounds_;
  std::unordered_set<std::string> modified_, modified_ancestors_;
  std::vector<std::string> current_mods_;  ///< paths the COMPOUND being filled changes
};

/// Sends the packed COMPOUNDs and merges their results.
struct plan_run : std::enable_shared_from_this<plan_run> {
  session_engine* engine = nullptr;
  nfs_fh4 root;
  vresult* out = nullptr;
  done_fn done;
  std::vector<std::size_t> planned_ops, ok_ops;  ///< per owner
  std::vector<bool> failed;
  std::vector<bool> no_ops;  ///< owners planned with no operations
  /// A transaction (run_planned's `atomic`): its one COMPOUND begins with VNFS_TXN.
  bool atomic = false;
  std::uint64_t txnid = 0;
  std::shared_ptr<txn_link> join;  ///< run_planned's `join`: every COMPOUND joins it
  std::error_code refused;        ///< the transaction did not begin: nothing ran
  std::error_code commit_failed;  ///< every item ran, then the commit failed: all undone

  /// An OPEN that succeeded in an item that then failed: no item holds it, and the CLOSE the
  /// item carried did not run. It is closed by name once the call's COMPOUNDs are done.
  struct orphan {
    std::string path;
    stateid4 sid;
  };
  vresult orphan_closes;  ///< the statuses of those CLOSEs (not reported: best effort)

  std::mutex mu;  // guards what follows
  std::vector<std::unique_ptr<compound>> compounds;  // in sending order; elements never move
  std::size_t window_bytes = SIZE_MAX;  ///< bytes() of the COMPOUNDs in flight at most (the first always goes)
  std::size_t next = 0, in_flight = 0, in_flight_bytes = 0;
  bool stopped = false, finished = false;
  std::vector<orphan> orphans;

  static std::size_t bytes(const compound& c) { return c.request_bytes + c.reply_bytes; }

  /// The session's limits, less room for VNFS_TXN in a transaction.
  channel_attrs4 packing_limits() const {
    channel_attrs4 limits = engine->limits();
    if (atomic || join) {
      limits.ca_maxoperations = limits.ca_maxoperations > 1 ? limits.ca_maxoperations - 1 : 0;
      limits.ca_maxrequestsize = limits.ca_maxrequestsize > 32 ? limits.ca_maxrequestsize - 32 : 0;
    }
    return limits;
  }

  void count(const compound& c, int sign) {
    for (const auto& o : c.ops) planned_ops[o.owner] += sign;
  }

  void pump() {
    std::vector<compound*> send;
    bool finish_now = false;
    {
      std::lock_guard lock(mu);
      while (!stopped && next < compounds.size()) {
        const bool first = in_flight + send.size() == 0;
        if (!first && (compounds[next]->barrier || in_flight_bytes + bytes(*compounds[next]) > window_bytes)) break;
        in_flight_bytes += bytes(*compounds[next]);
        send.push_back(compounds[next++].get());
      }
      in_flight += send.size();
      if (in_flight == 0 && (stopped || next == compounds.size()) && !finished) finish_now = finished = true;
    }
    for (compound* c : send) submit(c);
    if (finish_now) close_orphans();
  }

  void submit(compound* c) {
    std::vector<nfs_argop4> ops;
    ops.reserve(c->ops.size());
    std::vector<std::span<std::byte>> targets;
    registered_regions registered;
    bool any_target = false;
    if (atomic) ops.push_back(VNFS_TXN4args{static_cast<std::uint32_t>(txn_action4::TXN_ONE_COMPOUND), txnid, 0});
    if (join) {
      const std::optional<std::uint32_t> action =
          join->action_for_next([self = shared_from_this(), c] { self->submit(c); }, c->commits);
      if (!action) return;  // sent once the COMPOUND carrying TXN_BEGIN has its reply
      c->begins = *action == static_cast<std::uint32_t>(txn_action4::TXN_BEGIN);
      c->whole = *action == static_cast<std::uint32_t>(txn_action4::TXN_ONE_COMPOUND);
      ops.push_back(VNFS_TXN4args{*action, join->txnid, 0});
    }
    for (auto& o : c->ops) {
      ops.push_back(o.op);  // kept: a refused COMPOUND is packed again
      if (std::holds_alternative<READ4args>(o.op)) {
        targets.push_back(o.read_target);
        any_target = any_target || !o.read_target.empty();
      }
      if (o.registered && std::find(registered.begin(), registered.end(), o.registered) == registered.end())
        registered.push_back(o.registered);
    }
    if (!any_target) targets.clear();
    engine->submit(
        std::move(ops), [self = shared_from_this(), c](std::error_code ec, compound_reply& r) { self->on_reply(*c, ec, r); },
        std::move(targets), c->needs_cache || atomic, std::move(registered));
  }

  void on_reply(compound& c, std::error_code ec, compound_reply& r) {
    auto& res = r.res.resarray;
    bool stop = false;
    if (c.begins) {
      // The COMPOUNDs waiting for the TXN_BEGIN go now: after a failed one they find the
      // transaction not open (NFS4ERR_EXPIRED) and run nothing; if VNFS_TXN did not run
      // (refused whole, say for its number of operations), the next one carries TXN_BEGIN.
      c.begins = false;
      const bool ran = res.size() >= 2 && status_of(res[0]) == nfsstat4::NFS4_OK;
      if (ran && (opnum_of(res[1]) == nfs_opnum4::OP_ILLEGAL || status_of(res[1]) == nfsstat4::NFS4ERR_OP_ILLEGAL ||
                  status_of(res[1]) == nfsstat4::NFS4ERR_NOTSUPP)) {
        join->st = txn_link::aborted;  // a server without the extension (restarted so?) ran nothing
        ec = make_error_code(errc::transactions_unsupported);
      }
      join->begin_done(ran);
    }
    if (c.whole && !(res.size() >= 2 && status_of(res[0]) == nfsstat4::NFS4_OK))
      join->begin_done(false);  // the transaction in one COMPOUND did not run: it has not begun
    if (res.empty() && ec == nfsstat4::NFS4ERR_TOO_MANY_OPS && c.ops.size() > 1) {
      if (!atomic) return repack(c);
      ec = make_error_code(errc::transaction_too_large);  // it cannot be split
    }
    if (!ec && (res.empty() || status_of(res[0]) != nfsstat4::NFS4_OK))
      ec = res.empty() ? std::error_code(r.res.status) : std::error_code(status_of(res[0]));
    const std::size_t first = atomic || join ? 2 : 1;  // results of c.ops start here
    if (!ec && join) {
      if (res.size() < 2) {
        ec = make_error_code(errc::protocol_error);
      } else if (status_of(res[1]) != nfsstat4::NFS4_OK) {
        // Not joined: nothing of it ran (its items stay not_executed); the transaction was
        // rolled back, by a failure elsewhere or by the server. Or, with results after it,
        // the commit this COMPOUND carried failed after its operations ran: all undone.
        join->st = txn_link::aborted;
        if (c.commits) commit_failed = std::error_code(status_of(res[1]));
        if (!c.commits || res.size() == 2) stop = true;
      } else if (const auto* t = std::get_if<VNFS_TXN4res>(&res[1]);
                 t && t->outcome == static_cast<std::uint32_t>(txn_outcome4::TXN_ABORTED)) {
        join->st = txn_link::aborted;  // an item failed after this COMPOUND changed something: all undone
      }
    }
    if (ec && c.commits && res.empty()) {
      // The reply of the COMMIT was lost: the engine asked how the transaction ended, or
      // could not (then it may have committed: unknown, for transaction::resolve()).
      join->st = ec == errc::transaction_aborted || ec == errc::transactions_unsupported ? txn_link::aborted
                                                                                         : txn_link::unknown;
    }
    if (!ec && atomic) {
      const nfsstat4 s = res.size() < 2 ? nfsstat4::NFS4ERR_SERVERFAULT : status_of(res[1]);
      if (res.size() >= 2 && (opnum_of(res[1]) == nfs_opnum4::OP_ILLEGAL || s == nfsstat4::NFS4ERR_OP_ILLEGAL ||
                              s == nfsstat4::NFS4ERR_NOTSUPP))
        refused = make_error_code(errc::transactions_unsupported);
      else if (res.size() < 2)
        refused = make_error_code(errc::protocol_error);
      else if (s != nfsstat4::NFS4_OK && res.size() == 2)
        refused = std::error_code(s);  // the transaction did not begin
      else if (s != nfsstat4::NFS4_OK)
        commit_failed = std::error_code(s);  // its operations ran, the commit did not
    }
    if (stop) {
    } else if (atomic && refused) {
      stop = true;
    } else if (ec && atomic) {
      refused = ec;  // nothing executed, or the outcome is unknown (the connection died)
      stop = true;
    } else if (ec) {
      if (!c.ops.empty()) fail(c.ops.front().owner, ec);
      stop = true;
    } else if ((atomic || c.commits) && r.results_lost) {
      // Committed, but the reply was lost with the session (session_engine asked how the
      // transaction ended): every operation succeeded; what their results said is lost.
      for (const planned_op& o : c.ops) ++ok_ops[o.owner];
      if (c.commits) join->st = txn_link::committed;
    } else {
      for (std::size_t k = 0; k < c.ops.size() && k + first < res.size(); ++k) {
        planned_op& o = c.ops[k];
        nfsstat4 s = status_of(res[k + first]);
        if (s != nfsstat4::NFS4_OK) {
          fail(o.owner, std::error_code(s));
          note_orphans(c, k, res, first);
          stop = true;
          break;
        }
        std::error_code e = o.on_ok ? o.on_ok(res[k + first], r.placed_at(k + first)) : std::error_code();
        if (e) fail(o.owner, e), stop = true;
        else ++ok_ops[o.owner];
      }
      if (!stop && res.size() < c.ops.size() + first) {  // a reply that ends early without an error
        fail(c.ops[res.size() - first].owner, make_error_code(errc::protocol_error));
        stop = true;
      }
      // The COMPOUND that commits: every operation ran, and the commit with them; or, sent
      // as the whole transaction, one failed and undid it.
      if (c.commits && join->st == txn_link::open) {
        if (!stop) join->st = txn_link::committed;
        else if (c.whole) join->st = txn_link::aborted;
      }
    }
    {
      std::lock_guard lock(mu);
      --in_flight;
      in_flight_bytes -= bytes(c);
      if (stop) stopped = true;
    }
    pump();
  }

  /// A COMPOUND the server refused whole for its length (session_engine::submit): nothing
  /// ran, and the engine has learned the server's real limit, under which its items are
  /// packed again.
  void repack(compound& c) {
    packer p(packing_limits(), root);
    std::error_code ec;
    for (std::size_t i = 0; i < c.items.size(); ++i) {
      planned_item item = c.items[i];
      item.ops.assign(c.ops.begin() + static_cast<std::ptrdiff_t>(c.item_begins[i]),
                      c.ops.begin() + static_cast<std::ptrdiff_t>(c.item_ends[i]));
      if (!p.place(item, ec)) break;
    }
    auto again = p.take();
    {
      std::lock_guard lock(mu);
      --in_flight;
      in_flight_bytes -= bytes(c);
      count(c, -1);
      if (ec) {
        stopped = true;
        if (!c.items.empty() && c.item_begins.front() < c.item_ends.front())
          fail(c.ops[c.item_begins.front()].owner, ec);
      }
      if (!again.empty()) again.front()->barrier = true;  // in the refused one's place
      if (!again.empty() && c.commits) again.back()->commits = again.back()->barrier = true;
      for (auto& a : again) count(*a, +1);
      compounds.insert(compounds.begin() + static_cast<std::ptrdiff_t>(next), std::make_move_iterator(again.begin()),
                       std::make_move_iterator(again.end()));
    }
    pump();
  }

  /// The OPENs of the item whose operation `failed` (an index in c.ops) did not succeed, that
  /// ran before it and were not closed before it. Opens by name (CLAIM_NULL) in the item's
  /// starting directory are the only ones the vectorized calls make.
  void note_orphans(const compound& c, std::size_t failed, const std::vector<nfs_resop4>& res, std::size_t first) {
    std::size_t item = 0, begin = 0;
    while (item < c.item_ends.size() && c.item_ends[item] <= failed) begin = c.item_ends[item++];
    if (item == c.items.size() || c.items[item].start.k != item_start::kind::directory) return;
    std::vector<orphan> found;
    for (std::size_t j = begin; j < failed && j + first < res.size(); ++j) {
      if (status_of(res[j + first]) != nfsstat4::NFS4_OK) continue;
      if (std::holds_alternative<CLOSE4args>(c.ops[j].op) && !found.empty()) found.pop_back();
      const auto* open = std::get_if<OPEN4args>(&c.ops[j].op);
      const auto* opened = std::get_if<OPEN4res>(&res[j + first]);
      if (open && opened && open->claim.claim == open_claim_type4::CLAIM_NULL)
        found.push_back({join_path(c.items[item].start.path, open->claim.file), opened->resok4.stateid});
    }
    std::lock_guard lock(mu);
    orphans.insert(orphans.end(), found.begin(), found.end());
  }

  /// After the last COMPOUND: CLOSE of each orphaned open (LOOKUP of its name, CLOSE with
  /// its stateid), then finish(). Best effort: a CLOSE that fails (the name was removed or
  /// now names another file, the session is gone) leaves the open to the server's lease.
  void close_orphans() {
    std::vector<orphan> todo;
    {
      std::lock_guard lock(mu);
      todo.swap(orphans);
    }
    if (todo.empty()) return finish();
    std::vector<planned_item> plan;
    for (std::size_t i = 0; i < todo.size(); ++i) {
      auto [dir, name] = split_parent(todo[i].path);
      planned_item it;
      it.start.path = std::string(dir);
      it.ops.push_back(planned_op{LOOKUP4args{std::string(name)}, i});
      it.ops.push_back(planned_op{CLOSE4args{0, todo[i].sid}, i});
      it.end.k = item_end::kind::elsewhere;
      it.touches.push_back(todo[i].path);
      it.needs_cache = true;
      plan.push_back(std::move(it));
    }
    run_planned(*engine, root, 0, std::move(plan), todo.size(), &orphan_closes,
                [self = shared_from_this()](std::error_code, std::size_t) { self->finish(); });
  }

  void fail(std::size_t owner, std::error_code ec) {
    if (!failed[owner]) out->status[owner] = ec;
    failed[owner] = true;
  }

  void finish() {
    if (atomic && refused) {
      reset_result(*out, out->status.size());
      out->error = refused;
      return done(out->error, 0);
    }
    const bool aborted = (atomic && (commit_failed || std::find(failed.begin(), failed.end(), true) != failed.end())) ||
                         (join && join->st == txn_link::aborted);
    for (std::size_t o = 0; o < out->status.size(); ++o)
      if (!failed[o] && (no_ops[o] || (planned_ops[o] > 0 && ok_ops[o] == planned_ops[o])))
        out->status[o] = aborted ? make_error_code(errc::rolled_back) : std::error_code();
    finish_result(*out);
    if (aborted && !out->error) out->error = commit_failed ? commit_failed : make_error_code(errc::transaction_aborted);
    done(out->error, out->ok_count);
  }
};

}  // namespace

/// A transaction id unique among this process's transactions (and, by its random start,
/// unlikely to repeat across processes): names the transaction in the server's journal.
static std::uint64_t next_txnid() {
  static std::atomic<std::uint64_t> next{std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32)};
  return next++;
}

std::uint32_t max_transfer(const channel_attrs4& limits, bool reading) {
  std::size_t room = reading ? limits.ca_maxresponsesize : limits.ca_maxrequestsize;
  room = room > 4096 ? room - 4096 : 512;  // headers and the OPEN/CLOSE around the transfer
  std::size_t n = std::min<std::size_t>(room, max_io);
  return static_cast<std::uint32_t>(n >= 8192 ? n & ~std::size_t(4095) : n);
}

void run_planned(session_engine& engine, const nfs_fh4& root, std::size_t window_bytes, std::vector<planned_item> items,
                 std::size_t n_owners, vresult* out, done_fn done, bool atomic, std::shared_ptr<txn_link> join,
                 bool commit_last) {
  reset_result(*out, n_owners);
  if (join && join->st != txn_link::open) {  // nothing runs in a transaction that ended
    out->error = make_error_code(join->st == txn_link::aborted ? errc::transaction_aborted : errc::closed);
    return done(out->error, 0);
  }
  auto run = std::make_shared<plan_run>();
  run->engine = &engine;
  run->root = root;
  run->window_bytes = window_bytes == 0 ? SIZE_MAX : window_bytes;
  run->out = out;
  run->done = std::move(done);
  run->planned_ops.assign(n_owners, 0);
  run->ok_ops.assign(n_owners, 0);
  run->failed.assign(n_owners, false);
  run->join = std::move(join);
  run->no_ops.assign(n_owners, false);
  run->atomic = atomic;
  run->txnid = atomic ? next_txnid() : 0;
  packer p(run->packing_limits(), root);
  std::size_t cut = n_owners;  // owners from here on were not planned
  for (auto& item : items) {
    if (item.ops.empty()) continue;  // nothing to do (e.g. a listing already at its end)
    std::error_code ec;
    if (!p.place(item, ec)) {
      cut = item.ops.front().owner;
      if (atomic) run->refused = make_error_code(errc::transaction_too_large);
      else run->fail(cut, ec);
      break;
    }
  }
  run->compounds = p.take();
  if (atomic && (run->refused || run->compounds.size() > 1)) {  // nothing is sent
    run->refused = make_error_code(errc::transaction_too_large);
    run->compounds.clear();
  }
  if (commit_last && run->join && cut == n_owners) {
    // The last COMPOUND commits, once every other one has its reply (a call with nothing
    // to send sends the commit alone).
    if (run->compounds.empty()) run->compounds.push_back(std::make_unique<compound>());
    run->compounds.back()->commits = run->compounds.back()->barrier = true;
  }
  for (const auto& c : run->compounds) run->count(*c, +1);
  // An owner with no operations needs none: it succeeds with the call, if it was reached.
  for (std::size_t o = 0; o < cut; ++o) run->no_ops[o] = run->planned_ops[o] == 0;
  run->pump();
}

}  // namespace vnfs::detail
