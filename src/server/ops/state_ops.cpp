// Open, lock and stateid operations (RFC 8881 §18.2, §18.10-18.12, §18.16, §18.18, §18.6,
// §18.38, §18.48). The state itself lives in server_state::opens (open_state_table).
//
// NFSv4.1 specifics: the seqid arguments of OPEN, CLOSE, OPEN_DOWNGRADE, LOCK and LOCKU are
// ignored (sessions provide exactly-once semantics, §8.13), the clientid inside open- and
// lock-owners is that of the session, and OPEN never asks for confirmation.
#include <fcntl.h>

#include "server/fs/detail.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/identity.hpp"
#include "server/ops/attribute_codec.hpp"
#include "server/ops/fh_checks.hpp"
#include "server/ops/handlers.hpp"
#include "server/ops/status_mapping.hpp"
#include "server/txn/transaction.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;

namespace {

constexpr std::uint32_t access_mask = nfs4::OPEN4_SHARE_ACCESS_BOTH;
constexpr std::uint32_t want_mask = nfs4::OPEN4_SHARE_ACCESS_WANT_DELEG_MASK |
                                    nfs4::OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL |
                                    nfs4::OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED;

/// Only regular files carry open and lock state (§18.16.4, §18.10.4).
nfsstat4 require_regular(const fs::object& obj) {
  switch (obj.type()) {
    case fs::file_type::regular: return nfsstat4::NFS4_OK;
    case fs::file_type::directory: return nfsstat4::NFS4ERR_ISDIR;
    case fs::file_type::symlink: return nfsstat4::NFS4ERR_SYMLINK;
    default: return nfsstat4::NFS4ERR_WRONG_TYPE;
  }
}

/// The current filehandle as a regular file plus its state key.
nfsstat4 current_file(const compound_context& ctx, file_key& key) {
  if (!ctx.current) return nfsstat4::NFS4ERR_NOFILEHANDLE;
  if (nfsstat4 st = require_regular(ctx.current.obj); st != nfsstat4::NFS4_OK) return st;
  std::error_code ec;
  key = open_state_table::key_of(ctx.current.obj, ec);
  return to_nfsstat(ec);
}

/// A non-special stateid (after resolving "current"); the special ones are never open or
/// lock state.
nfsstat4 resolve_state(const compound_context& ctx, const nfs4::stateid4& in,
                       nfs4::stateid4& out) {
  if (nfsstat4 st = ctx.resolve_stateid(in, out); st != nfsstat4::NFS4_OK) return st;
  if (out.is_special()) return nfsstat4::NFS4ERR_BAD_STATEID;
  return nfsstat4::NFS4_OK;
}

/// Opens the data of `file` for the access bits, under the caller's identity: the kernel's
/// permission check is OPEN's access check (§18.16.3). A file this very OPEN created is
/// opened with the server's identity: its creator may write it whatever mode it asked for,
/// as open(2) with O_CREAT allows.
nfsstat4 open_data(const fs::object& file, std::uint32_t access, bool created, data_fd& fd) {
  int flags = access == nfs4::OPEN4_SHARE_ACCESS_BOTH    ? O_RDWR
              : access == nfs4::OPEN4_SHARE_ACCESS_WRITE ? O_WRONLY
                                                         : O_RDONLY;
  std::error_code ec;
  int raw = -1;
  if (created) {
    fs::scoped_fs_root root;
    raw = fs::detail::open_data(file, flags, ec);
  } else {
    raw = fs::detail::open_data(file, flags, ec);
  }
  if (raw < 0) return to_nfsstat(ec);
  fd = std::make_shared<const fs::unique_fd>(raw);
  return nfsstat4::NFS4_OK;
}

/// Removes from `args` what the new file already has, so that an exclusive create does not
/// drop its verifier (fs::setattr does) for nothing: a retransmitted OPEN then still finds it.
void drop_unchanged(const fs::object& file, fs::setattr_args& args) {
  std::error_code ec;
  fs::attributes st = fs::stat(file, ec);
  if (ec) return;
  if (args.uid && *args.uid == st.uid) args.uid.reset();
  if (args.gid && *args.gid == st.gid) args.gid.reset();
  if (args.size && *args.size == st.size) args.size.reset();
}

/// What OPEN answers about delegations, of which vnfsd grants none (it has no back channel).
/// Without a want (OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE) the plain OPEN_DELEGATE_NONE; with
/// one, OPEN_DELEGATE_NONE_EXT and why (§18.16.3, §10.4.1): WND4_NOT_WANTED for
/// WANT_NO_DELEG, WND4_CANCELLED for WANT_CANCEL (there is no wish to cancel), and for a
/// wanted delegation WND4_RESOURCE without a promise to signal, as the Linux server answers
/// when it cannot give one.
nfs4::open_delegation4 no_delegation(std::uint32_t want) {
  nfs4::open_delegation4 d;
  if (want == nfs4::OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE) {
    d.delegation_type = nfs4::open_delegation_type4::OPEN_DELEGATE_NONE;
    return d;
  }
  d.delegation_type = nfs4::open_delegation_type4::OPEN_DELEGATE_NONE_EXT;
  switch (want) {
    case nfs4::OPEN4_SHARE_ACCESS_WANT_NO_DELEG:
      d.od_whynone.ond_why = nfs4::why_no_delegation4::WND4_NOT_WANTED;
      break;
    case nfs4::OPEN4_SHARE_ACCESS_WANT_CANCEL:
      d.od_whynone.ond_why = nfs4::why_no_delegation4::WND4_CANCELLED;
      break;
    default:
      d.od_whynone.ond_why = nfs4::why_no_delegation4::WND4_RESOURCE;
      d.od_whynone.ond_server_will_signal_avail = false;
      break;
  }
  return d;
}

bool has_changes(const fs::setattr_args& a) {
  return a.mode || a.uid || a.gid || a.size ||
         a.atime.what != fs::time_update::how::keep ||
         a.mtime.what != fs::time_update::how::keep;
}

}  // namespace

// ---- OPEN ------------------------------------------------------------------------------

nfs4::OPEN4res handle(compound_context& ctx, const nfs4::OPEN4args& a) {
  nfs4::OPEN4res res;
  auto fail = [&](nfsstat4 st) {
    ctx.truncation.reset();  // a failed OPEN leaves the file as it was
    res.status = st;
    return res;
  };
  if (!ctx.current) return fail(nfsstat4::NFS4ERR_NOFILEHANDLE);
  const std::uint32_t access = a.share_access & access_mask;
  if (access == 0 || (a.share_access & ~(access_mask | want_mask)) != 0 ||
      (a.share_deny & ~nfs4::OPEN4_SHARE_DENY_BOTH) != 0 ||
      (a.share_access & nfs4::OPEN4_SHARE_ACCESS_WANT_DELEG_MASK) >
          nfs4::OPEN4_SHARE_ACCESS_WANT_CANCEL)
    return fail(nfsstat4::NFS4ERR_INVAL);

  const bool reclaim = a.claim.claim == nfs4::open_claim_type4::CLAIM_PREVIOUS ||
                       a.claim.claim == nfs4::open_claim_type4::CLAIM_DELEGATE_PREV ||
                       a.claim.claim == nfs4::open_claim_type4::CLAIM_DELEG_PREV_FH;
  // Grace (§8.4.2.1, §18.51.3): reclaims only then, and only by clients of before; nothing
  // else until the client's RECLAIM_COMPLETE and the end of the grace period.
  if (nfsstat4 st = ctx.server.clients.check_locking(ctx.clientid, reclaim); st != nfsstat4::NFS4_OK)
    return fail(st);

  const bool create = a.openhow.opentype == nfs4::opentype4::OPEN4_CREATE;
  fs::object file;
  bool created = false;
  bool truncate = false;
  fs::setattr_args post;  // attributes to apply after creation
  nfs4::bitmap4 attrset;
  nfs4::change_info4 cinfo;

  switch (a.claim.claim) {
    case nfs4::open_claim_type4::CLAIM_NULL: {
      if (nfsstat4 st = ops_detail::require_dir(ctx.current); st != nfsstat4::NFS4_OK) return fail(st);
      const fs::object& dir = ctx.current.obj;
      if (nfsstat4 st = ops_detail::check_entry(
              ctx, dir, a.claim.file, create ? ops_detail::name_use::make : ops_detail::name_use::find);
          st != nfsstat4::NFS4_OK)
        return fail(st);
      cinfo.before = change_of(dir);
      std::error_code ec;
      // What a transaction's planner found under the name, which it still finds.
      fs::object found = ctx.txn ? ctx.txn->take_found(dir, a.claim.file) : fs::object();
      if (!create) {
        file = found ? std::move(found) : fs::lookup(dir, a.claim.file, ec);
        if (ec) return fail(to_nfsstat(ec));
      } else {
        const nfs4::createhow4& how = a.openhow.how;
        fs::create_how ch;
        nfs4::bitmap4 decoded;
        switch (how.mode) {
          case nfs4::createmode4::UNCHECKED4:
          case nfs4::createmode4::GUARDED4: {
            ch.mode = how.mode == nfs4::createmode4::GUARDED4 ? fs::create_mode::guarded
                                                               : fs::create_mode::unchecked;
            if (nfsstat4 st = to_setattr_args(how.createattrs, post, decoded);
                st != nfsstat4::NFS4_OK)
              return fail(st);
            break;
          }
          case nfs4::createmode4::EXCLUSIVE4:
            ch.mode = fs::create_mode::exclusive;
            ch.verifier = how.createverf;
            break;
          case nfs4::createmode4::EXCLUSIVE4_1: {
            ch.mode = fs::create_mode::exclusive;
            ch.verifier = how.ch_createboth.cva_verf;
            if (nfsstat4 st = to_setattr_args(how.ch_createboth.cva_attrs, post, decoded);
                st != nfsstat4::NFS4_OK)
              return fail(st);
            // Only suppattr_exclcreat may come with EXCLUSIVE4_1 (§18.16.3).
            for (unsigned bit : decoded.bits())
              if (!exclusive_create_attributes().test(bit))
                return fail(nfsstat4::NFS4ERR_INVAL);
            break;
          }
          default:
            return fail(nfsstat4::NFS4ERR_INVAL);
        }
        // The mode is given to create() itself, so the new file never exists with other
        // permission bits; an unset mode gives rw-r--r--.
        ch.perm = post.mode.value_or(0644);
        post.mode.reset();
        fs::create_result cr;
        if (found && ch.mode == fs::create_mode::unchecked && !ch.truncate) {
          cr = {std::move(found), false};  // as create() answers for an existing file
        } else {
          if (ctx.txn)
            if (std::error_code pe = ctx.txn->protect_create(dir, a.claim.file)) return fail(to_nfsstat(pe));
          cr = fs::create(dir, a.claim.file, ch, ec);
        }
        if (ec) return fail(to_nfsstat(ec));
        file = std::move(cr.file);
        created = cr.created;
        if (created) {
          attrset = decoded;
        } else if (ch.mode != fs::create_mode::exclusive) {
          // An existing file: createattrs are ignored except a size of 0, which truncates
          // (§18.16.3). Exclusive replays report what the original OPEN set.
          truncate = post.size && *post.size == 0;
          post = fs::setattr_args{};
          if (truncate) attrset.set(nfs4::FATTR4_SIZE);
        } else {
          attrset = decoded;
          post = fs::setattr_args{};
        }
      }
      break;
    }
    case nfs4::open_claim_type4::CLAIM_FH: {
      if (create) return fail(nfsstat4::NFS4ERR_INVAL);
      std::error_code ec;
      file = ctx.current.obj.clone(ec);
      if (ec) return fail(to_nfsstat(ec));
      break;
    }
    case nfs4::open_claim_type4::CLAIM_PREVIOUS: {
      // The current filehandle is the file whose open is reclaimed (§18.16.3).
      if (create) return fail(nfsstat4::NFS4ERR_INVAL);
      // vnfsd never granted a delegation, so none can be reclaimed.
      if (a.claim.delegate_type != nfs4::open_delegation_type4::OPEN_DELEGATE_NONE)
        return fail(nfsstat4::NFS4ERR_RECLAIM_BAD);
      std::error_code ec;
      file = ctx.current.obj.clone(ec);
      if (ec) return fail(to_nfsstat(ec));
      break;
    }
    default:
      // The delegation claims: vnfsd grants no delegations.
      return fail(nfsstat4::NFS4ERR_NOTSUPP);
  }

  if (nfsstat4 st = require_regular(file); st != nfsstat4::NFS4_OK) return fail(st);
  std::error_code ec;
  const file_key key = open_state_table::key_of(file, ec);
  if (ec) return fail(to_nfsstat(ec));
  open_state_table& table = ctx.server.opens;
  std::vector<std::byte> owner = a.owner.owner;
  // Before truncating anything: another owner's deny must stop this OPEN unharmed.
  if (nfsstat4 st = table.check_share(ctx.clientid, owner, key, access, a.share_deny);
      st != nfsstat4::NFS4_OK)
    return fail(reclaim && st == nfsstat4::NFS4ERR_SHARE_DENIED ? nfsstat4::NFS4ERR_RECLAIM_CONFLICT
                                                                : st);
  // The client's owner is on stable storage before it holds state (§8.4.2.1).
  if (std::error_code rec = ctx.server.clients.note_state(ctx.clientid)) return fail(to_nfsstat(rec));

  open_state_table::open_request req;
  req.client = ctx.clientid;
  req.owner = std::move(owner);
  req.file = key;
  req.access = access;
  req.deny = a.share_deny;
  data_fd fd;
  if (nfsstat4 st = open_data(file, access, created, fd); st != nfsstat4::NFS4_OK)
    return fail(st);
  if (access & nfs4::OPEN4_SHARE_ACCESS_READ) req.read_fd = fd;
  if (access & nfs4::OPEN4_SHARE_ACCESS_WRITE) req.write_fd = fd;

  if (truncate && ctx.txn && ctx.txn->redo_for(file)) {
    ctx.txn->defer_truncate(file);  // to the commit (txn/transaction.hpp, redo)
  } else if (truncate) {
    if (ctx.txn)
      if (std::error_code pe = ctx.txn->protect_data(file, 0, UINT64_MAX)) return fail(to_nfsstat(pe));
    if (ctx.truncation_may_wait && req.write_fd) {
      ctx.truncation = compound_context::pending_truncation{file.share(), req.write_fd};
    } else {
      fs::setattr_args t;
      t.size = 0;
      if (nfsstat4 st = apply_setattr(file, t); st != nfsstat4::NFS4_OK) return fail(st);
    }
  }
  if (created) {
    drop_unchanged(file, post);
    if (has_changes(post))
      if (nfsstat4 st = apply_setattr(file, post); st != nfsstat4::NFS4_OK) return fail(st);
  }

  nfs4::nfs_fh4 fh = ctx.server.exp.fh_of(file, ec);
  if (ec) return fail(to_nfsstat(ec));
  req.fh = fh;
  if (fs::object kept = file.clone(ec); !ec)
    req.object = std::make_shared<const fs::object>(std::move(kept));

  nfs4::stateid4 sid;
  if (nfsstat4 st = table.open(req, sid); st != nfsstat4::NFS4_OK) return fail(st);
  if (ctx.txn && sid.seqid == 1) {
    // A new open state, made inside a transaction: a rollback closes it (the client then
    // meets NFS4ERR_BAD_STATEID with it), as if the OPEN never ran.
    ctx.txn->on_rollback([&table, client = ctx.clientid, key, any = nfs4::stateid4{0, sid.other}] {
      table.close(client, key, any);
    });
  }

  if (a.claim.claim == nfs4::open_claim_type4::CLAIM_NULL)
    cinfo.after = created ? change_of(ctx.current.obj) : cinfo.before;
  cinfo.atomic = false;

  ctx.set_current_fh(held_fh{std::move(fh), std::move(file)});
  ctx.set_current_stateid(sid);
  res.status = nfsstat4::NFS4_OK;
  res.resok4.stateid = sid;
  res.resok4.cinfo = cinfo;
  res.resok4.rflags = nfs4::OPEN4_RESULT_LOCKTYPE_POSIX;
  res.resok4.attrset = attrset;
  res.resok4.delegation = no_delegation(a.share_access & nfs4::OPEN4_SHARE_ACCESS_WANT_DELEG_MASK);
  return res;
}

nfs4::OPEN_DOWNGRADE4res handle(compound_context& ctx, const nfs4::OPEN_DOWNGRADE4args& a) {
  nfs4::OPEN_DOWNGRADE4res res;
  file_key key;
  if ((res.status = current_file(ctx, key)) != nfsstat4::NFS4_OK) return res;
  nfs4::stateid4 sid;
  if ((res.status = resolve_state(ctx, a.open_stateid, sid)) != nfsstat4::NFS4_OK) return res;
  const std::uint32_t access = a.share_access & access_mask;
  if ((a.share_access & ~(access_mask | want_mask)) != 0 ||
      (a.share_deny & ~nfs4::OPEN4_SHARE_DENY_BOTH) != 0) {
    res.status = nfsstat4::NFS4ERR_INVAL;
    return res;
  }
  res.status = ctx.server.opens.downgrade(ctx.clientid, key, sid, access, a.share_deny,
                                          res.resok4.open_stateid);
  if (res.status == nfsstat4::NFS4_OK) ctx.set_current_stateid(res.resok4.open_stateid);
  return res;
}

nfs4::CLOSE4res handle(compound_context& ctx, const nfs4::CLOSE4args& a) {
  nfs4::CLOSE4res res;
  file_key key;
  if ((res.status = current_file(ctx, key)) != nfsstat4::NFS4_OK) return res;
  nfs4::stateid4 sid;
  if ((res.status = resolve_state(ctx, a.open_stateid, sid)) != nfsstat4::NFS4_OK) return res;
  res.status = ctx.server.opens.close(ctx.clientid, key, sid);
  if (res.status == nfsstat4::NFS4_OK) {
    // The stateid CLOSE returns is meaningless; NFSv4.1 servers SHOULD send the invalid
    // special stateid (RFC 8881 §18.2.4).
    res.open_stateid = nfs4::stateid4::invalid();
    ctx.set_current_stateid(res.open_stateid);
  }
  return res;
}

// ---- byte-range locks --------------------------------------------------------------

nfs4::LOCK4res handle(compound_context& ctx, const nfs4::LOCK4args& a) {
  nfs4::LOCK4res res;
  open_state_table::lock_request req;
  if ((res.status = current_file(ctx, req.file)) != nfsstat4::NFS4_OK) return res;
  // Grace as for OPEN (§8.4.2.1, §18.51.3).
  if ((res.status = ctx.server.clients.check_locking(ctx.clientid, a.reclaim)) != nfsstat4::NFS4_OK)
    return res;
  req.client = ctx.clientid;
  req.type = a.locktype;
  req.offset = a.offset;
  req.length = a.length;
  req.new_lock_owner = a.locker.new_lock_owner;
  if (req.new_lock_owner) {
    if ((res.status = resolve_state(ctx, a.locker.open_owner.open_stateid, req.open_stateid)) !=
        nfsstat4::NFS4_OK)
      return res;
    req.lock_owner = a.locker.open_owner.lock_owner.owner;
  } else if ((res.status = resolve_state(ctx, a.locker.lock_owner.lock_stateid,
                                         req.lock_stateid)) != nfsstat4::NFS4_OK) {
    return res;
  }
  if (std::error_code rec = ctx.server.clients.note_state(ctx.clientid)) {
    res.status = to_nfsstat(rec);
    return res;
  }
  // Blocking lock types (READW/WRITEW) are answered at once: the client polls (§9.6).
  res.status = ctx.server.opens.lock(req, res.resok4.lock_stateid, res.denied);
  // A reclaimed lock that another client's lock now conflicts with (§15.1.9.3).
  if (a.reclaim && res.status == nfsstat4::NFS4ERR_DENIED) res.status = nfsstat4::NFS4ERR_RECLAIM_CONFLICT;
  if (res.status == nfsstat4::NFS4_OK) {
    ctx.set_current_stateid(res.resok4.lock_stateid);
    if (ctx.txn && res.resok4.lock_stateid.seqid == 1) {
      // A new lock state, made inside a transaction: a rollback unlocks and frees it (the
      // client then meets NFS4ERR_BAD_STATEID with it), as if the LOCK never ran.
      ctx.txn->on_rollback([&table = ctx.server.opens, client = ctx.clientid, key = req.file,
                            any = nfs4::stateid4{0, res.resok4.lock_stateid.other}] {
        nfs4::stateid4 unlocked;
        (void)table.unlock(client, key, any, 0, UINT64_MAX, unlocked);
        (void)table.free(client, any);
      });
    }
  }
  return res;
}

nfs4::LOCKT4res handle(compound_context& ctx, const nfs4::LOCKT4args& a) {
  nfs4::LOCKT4res res;
  file_key key;
  if ((res.status = current_file(ctx, key)) != nfsstat4::NFS4_OK) return res;
  res.status = ctx.server.opens.test_lock(ctx.clientid, a.owner.owner, key, a.locktype, a.offset,
                                          a.length, res.denied);
  return res;
}

nfs4::LOCKU4res handle(compound_context& ctx, const nfs4::LOCKU4args& a) {
  nfs4::LOCKU4res res;
  file_key key;
  if ((res.status = current_file(ctx, key)) != nfsstat4::NFS4_OK) return res;
  nfs4::stateid4 sid;
  if ((res.status = resolve_state(ctx, a.lock_stateid, sid)) != nfsstat4::NFS4_OK) return res;
  res.status =
      ctx.server.opens.unlock(ctx.clientid, key, sid, a.offset, a.length, res.lock_stateid);
  if (res.status == nfsstat4::NFS4_OK) ctx.set_current_stateid(res.lock_stateid);
  return res;
}

// ---- stateids ----------------------------------------------------------------------

nfs4::TEST_STATEID4res handle(compound_context& ctx, const nfs4::TEST_STATEID4args& a) {
  nfs4::TEST_STATEID4res res;
  res.status = nfsstat4::NFS4_OK;
  res.resok4.tsr_status_codes.reserve(a.ts_stateids.size());
  // Each stateid is tested as given: special stateids (the current one included) are not
  // state and test as NFS4ERR_BAD_STATEID (§18.48.3).
  for (const nfs4::stateid4& s : a.ts_stateids)
    res.resok4.tsr_status_codes.push_back(
        s.is_special() ? nfsstat4::NFS4ERR_BAD_STATEID : ctx.server.opens.test(ctx.clientid, s));
  return res;
}

nfs4::FREE_STATEID4res handle(compound_context& ctx, const nfs4::FREE_STATEID4args& a) {
  nfs4::FREE_STATEID4res res;
  nfs4::stateid4 sid;
  if ((res.status = resolve_state(ctx, a.fsa_stateid, sid)) != nfsstat4::NFS4_OK) return res;
  res.status = ctx.server.opens.free(ctx.clientid, sid);
  return res;
}

nfs4::DELEGRETURN4res handle(compound_context& ctx, const nfs4::DELEGRETURN4args& a) {
  nfs4::DELEGRETURN4res res;
  if (!ctx.current) {
    res.status = nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  nfs4::stateid4 sid;
  if ((res.status = resolve_state(ctx, a.deleg_stateid, sid)) != nfsstat4::NFS4_OK) return res;
  // vnfsd grants no delegations: a valid stateid is an open or lock stateid, which is the
  // wrong kind here (BAD_STATEID); an invalid one reports why (STALE, OLD, BAD).
  nfsstat4 st = ctx.server.opens.test(ctx.clientid, sid);
  res.status = st == nfsstat4::NFS4_OK ? nfsstat4::NFS4ERR_BAD_STATEID : st;
  return res;
}

}  // namespace vnfs::server
