#include "server/state/client_table.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace vnfs::server {

using nfs4::nfsstat4;


client_table::client_table(const server_options& options, std::uint64_t boot_id,
                           drop_handler on_drop, client_records records)
    : options_(options), boot_id_(boot_id), on_drop_(std::move(on_drop)),
      records_(std::move(records)) {
  if (!options_.grace) {
    // A fresh start: the clients of before may reclaim nothing, now or after a later restart.
    std::error_code ec;
    if (!records_.dir().empty() &&
        std::filesystem::exists(records_.dir() / client_records::file_name, ec)) {
      if (std::error_code st = records_.store({}))
        throw std::runtime_error("cannot clear the client records in " + records_.dir().string() +
                                 ": " + st.message());
    }
    return;
  }
  previous_ = records_.load();
  stable_ = previous_;
  if (!previous_.empty()) {
    grace_ = true;
    grace_end_ = clock::now() +
                 (options_.grace_period.count() > 0 ? options_.grace_period : options_.lease);
  }
}

namespace {

/// The eia_flags a client may set (§18.35.3): the bits RFC 8881 defines except
/// EXCHGID4_FLAG_CONFIRMED_R, which only a server sets.
constexpr std::uint32_t client_flags =
    nfs4::EXCHGID4_FLAG_SUPP_MOVED_REFER | nfs4::EXCHGID4_FLAG_SUPP_MOVED_MIGR |
    nfs4::EXCHGID4_FLAG_SUPP_FENCE_OPS | nfs4::EXCHGID4_FLAG_BIND_PRINC_STATEID |
    nfs4::EXCHGID4_FLAG_MASK_PNFS | nfs4::EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;

/// The csa_flags RFC 8881 defines (§18.36.3).
constexpr std::uint32_t session_flags = nfs4::CREATE_SESSION4_FLAG_PERSIST |
                                        nfs4::CREATE_SESSION4_FLAG_CONN_BACK_CHAN |
                                        nfs4::CREATE_SESSION4_FLAG_CONN_RDMA;

}  // namespace

// Client IDs and session IDs carry the boot id so IDs of an earlier instance never match.
client_table::client& client_table::new_record_locked(const std::string& owner,
                                                      const nfs4::EXCHANGE_ID4args& args,
                                                      const client_principal& who) {
  nfs4::clientid4 id = (boot_id_ << 32) | next_client_++;
  client& fresh = clients_[id];
  fresh.id = id;
  fresh.ownerid = owner;
  fresh.verifier = args.eia_clientowner.co_verifier;
  fresh.principal = who;
  fresh.renewed = clock::now();
  by_owner_[owner].unconfirmed = id;
  return fresh;
}

void client_table::fill_exchange_id_locked(const client& c, nfs4::EXCHANGE_ID4res& res) const {
  auto& ok = res.resok4;
  ok.eir_clientid = c.id;
  // For a confirmed record the client ignores it (§18.35.3); for a new one it is the first
  // csa_sequence.
  ok.eir_sequenceid = c.create_session_seq;
  ok.eir_flags =
      nfs4::EXCHGID4_FLAG_USE_NON_PNFS | (c.confirmed ? nfs4::EXCHGID4_FLAG_CONFIRMED_R : 0);
  ok.eir_state_protect.spr_how = nfs4::state_protect_how4::SP4_NONE;
  ok.eir_server_owner.so_minor_id = 0;
  static constexpr char major[] = "vnfsd";
  static constexpr char scope[] = "vnfsd";
  auto bytes = [](const char* s) {
    auto b = reinterpret_cast<const std::byte*>(s);
    return std::vector<std::byte>(b, b + std::strlen(s));
  };
  ok.eir_server_owner.so_major_id = bytes(major);
  ok.eir_server_scope = bytes(scope);
  nfs4::nfs_impl_id4 impl;
  impl.nii_domain = "vnfs.dev";
  impl.nii_name = "vnfsd 0.1";
  ok.eir_server_impl_id = impl;
  res.status = nfsstat4::NFS4_OK;
}

// The cases of RFC 8881 §18.35.4, numbered as there.
nfs4::EXCHANGE_ID4res client_table::exchange_id(const nfs4::EXCHANGE_ID4args& args,
                                                const client_principal& who) {
  nfs4::EXCHANGE_ID4res res;
  auto fail = [&](nfsstat4 st) {
    res.status = st;
    return res;
  };
  // Undefined bits and bits only a server sets (EXCHGID4_FLAG_CONFIRMED_R) are invalid.
  if ((args.eia_flags & ~client_flags) != 0) return fail(nfsstat4::NFS4ERR_INVAL);
  if (args.eia_state_protect.spa_how != nfs4::state_protect_how4::SP4_NONE)
    return fail(nfsstat4::NFS4ERR_NOTSUPP);  // no machine-credential or SSV protection
  if (args.eia_clientowner.co_ownerid.empty()) return fail(nfsstat4::NFS4ERR_INVAL);

  std::lock_guard lock(mu_);
  const auto& id_bytes = args.eia_clientowner.co_ownerid;
  const std::string owner(reinterpret_cast<const char*>(id_bytes.data()), id_bytes.size());
  const bool update = (args.eia_flags & nfs4::EXCHGID4_FLAG_UPD_CONFIRMED_REC_A) != 0;
  owner_records recs;
  if (auto it = by_owner_.find(owner); it != by_owner_.end()) recs = it->second;
  client* conf = recs.confirmed != 0 ? &clients_.at(recs.confirmed) : nullptr;
  const bool same_verifier = conf && conf->verifier == args.eia_clientowner.co_verifier;
  const bool same_principal = conf && conf->principal == who;

  if (update) {
    if (conf == nullptr) return fail(nfsstat4::NFS4ERR_NOENT);  // case 7
    if (!same_principal) return fail(nfsstat4::NFS4ERR_PERM);  // case 9
    if (!same_verifier) return fail(nfsstat4::NFS4ERR_NOT_SAME);  // case 8
    // Case 6: an update of the confirmed record. Nothing vnfsd keeps can change (no state
    // protection, no pNFS roles): the same client ID, confirmed.
    fill_exchange_id_locked(*conf, res);
    return res;
  }
  if (conf != nullptr) {
    // Case 3: another principal uses the owner while the record has a lease (vnfsd drops
    // records whose lease expired, so every record here has unexpired state).
    if (!same_principal) return fail(nfsstat4::NFS4ERR_CLID_INUSE);
    if (same_verifier) {  // case 2: the same incarnation again, the same client ID
      fill_exchange_id_locked(*conf, res);
      return res;
    }
    // Case 5: the client restarted. A new unconfirmed record; the confirmed one, its
    // sessions and state stay until CREATE_SESSION confirms the new one.
  }
  // Case 4: an unconfirmed record is replaced (it has no state); case 1: a new owner.
  if (recs.unconfirmed != 0) drop_client_locked(recs.unconfirmed);
  fill_exchange_id_locked(new_record_locked(owner, args, who), res);
  return res;
}

nfs4::channel_attrs4 client_table::negotiate_fore(const nfs4::channel_attrs4& asked) const {
  nfs4::channel_attrs4 got;
  got.ca_headerpadsize = 0;
  got.ca_maxrequestsize = std::min(asked.ca_maxrequestsize, options_.max_request_size);
  got.ca_maxresponsesize = std::min(asked.ca_maxresponsesize, options_.max_response_size);
  got.ca_maxresponsesize_cached =
      std::min(asked.ca_maxresponsesize_cached, options_.max_response_size_cached);
  got.ca_maxoperations = std::min(asked.ca_maxoperations, options_.max_operations);
  got.ca_maxrequests = std::clamp<std::uint32_t>(asked.ca_maxrequests, 1, options_.max_slots);
  return got;
}

nfs4::CREATE_SESSION4res client_table::create_session(const nfs4::CREATE_SESSION4args& args,
                                                      const client_principal& who) {
  nfs4::CREATE_SESSION4res res;
  std::lock_guard lock(mu_);
  auto it = clients_.find(args.csa_clientid);
  if (it == clients_.end()) {
    res.status = nfsstat4::NFS4ERR_STALE_CLIENTID;
    return res;
  }
  client& c = it->second;
  // §18.36.4: only the principal that created the client ID may use it.
  if (!(c.principal == who)) {
    res.status = nfsstat4::NFS4ERR_CLID_INUSE;
    return res;
  }
  // §18.36.4: csa_sequence is the client's CREATE_SESSION sequence: the expected value
  // creates, the previous one replays the previous reply, anything else is misordered.
  if (c.has_last_create_session && args.csa_sequence + 1 == c.create_session_seq) {
    return c.last_create_session;
  }
  if (args.csa_sequence != c.create_session_seq) {
    res.status = nfsstat4::NFS4ERR_SEQ_MISORDERED;
    return res;
  }
  if ((args.csa_flags & ~session_flags) != 0) {
    res.status = nfsstat4::NFS4ERR_INVAL;
    return res;
  }
  const auto& fore = args.csa_fore_chan_attrs;
  // A channel too small for one COMPOUND with SEQUENCE is useless: NFS4ERR_TOOSMALL (§18.36.3).
  if (fore.ca_maxrequestsize < 256 || fore.ca_maxresponsesize < 256 || fore.ca_maxoperations < 2 ||
      fore.ca_maxrequests == 0) {
    res.status = nfsstat4::NFS4ERR_TOOSMALL;
    return res;
  }
  // The back channel too, although vnfsd sends no callbacks: a client must not believe it
  // could receive one through a channel that cannot carry it.
  const auto& back = args.csa_back_chan_attrs;
  if (back.ca_maxrequestsize < min_back_request || back.ca_maxresponsesize < min_back_response ||
      back.ca_maxoperations < min_back_operations || back.ca_maxrequests == 0) {
    res.status = nfsstat4::NFS4ERR_TOOSMALL;
    return res;
  }
  auto s = std::make_shared<session>();
  s->clientid = c.id;
  std::uint64_t hi = c.id;
  std::uint64_t lo = (std::uint64_t(next_session_++) << 32) | (boot_id_ & 0xffffffffu);
  for (int i = 0; i < 8; ++i) {
    s->id[i] = std::byte(hi >> (56 - 8 * i));
    s->id[8 + i] = std::byte(lo >> (56 - 8 * i));
  }
  s->fore = negotiate_fore(fore);
  s->back = args.csa_back_chan_attrs;  // no callbacks are ever sent; echoed for the record
  s->back.ca_rdma_ird.reset();
  // No back channel (CONN_BACK_CHAN cleared) and no persistent reply cache.
  s->flags = 0;
  s->slots.resize(s->fore.ca_maxrequests);
  sessions_[s->id] = s;
  c.sessions.push_back(s->id);
  c.renewed = clock::now();
  if (!c.confirmed) {
    // Confirmation: the record becomes the owner's confirmed one; a confirmed record it
    // replaces (the client restarted, §18.35.4 case 5) goes now, with its sessions and state.
    c.confirmed = true;
    owner_records& recs = by_owner_[c.ownerid];
    const nfs4::clientid4 old = recs.confirmed;
    recs.confirmed = c.id;
    if (recs.unconfirmed == c.id) recs.unconfirmed = 0;
    if (old != 0 && old != c.id) drop_client_locked(old);
  }

  auto& ok = res.resok4;
  ok.csr_sessionid = s->id;
  ok.csr_sequence = args.csa_sequence;
  ok.csr_flags = s->flags;
  ok.csr_fore_chan_attrs = s->fore;
  ok.csr_back_chan_attrs = s->back;
  res.status = nfsstat4::NFS4_OK;
  c.last_create_session = res;
  c.has_last_create_session = true;
  ++c.create_session_seq;
  return res;
}

nfsstat4 client_table::destroy_session(const nfs4::sessionid4& id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nfsstat4::NFS4ERR_BADSESSION;
  auto c = clients_.find(it->second->clientid);
  if (c != clients_.end()) std::erase(c->second.sessions, id);
  sessions_.erase(it);
  return nfsstat4::NFS4_OK;
}

nfsstat4 client_table::destroy_clientid(nfs4::clientid4 id) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(id);
  if (it == clients_.end()) return nfsstat4::NFS4ERR_STALE_CLIENTID;
  if (!it->second.sessions.empty()) return nfsstat4::NFS4ERR_CLIENTID_BUSY;
  const std::string owner = it->second.ownerid;
  drop_client_locked(id);
  resolve_previous_locked(owner);  // a client of before that is gone reclaims nothing
  return nfsstat4::NFS4_OK;
}

nfsstat4 client_table::reclaim_complete(nfs4::clientid4 id) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(id);
  if (it == clients_.end()) return nfsstat4::NFS4ERR_STALE_CLIENTID;
  if (it->second.reclaim_complete) return nfsstat4::NFS4ERR_COMPLETE_ALREADY;
  it->second.reclaim_complete = true;
  resolve_previous_locked(it->second.ownerid);
  return nfsstat4::NFS4_OK;
}

std::shared_ptr<session> client_table::find_session(const nfs4::sessionid4& id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

bool client_table::is_confirmed(nfs4::clientid4 id) const {
  std::lock_guard lock(mu_);
  auto it = clients_.find(id);
  return it != clients_.end() && it->second.confirmed;
}

nfsstat4 client_table::check_locking(nfs4::clientid4 id, bool reclaim) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(id);
  if (it == clients_.end()) return nfsstat4::NFS4ERR_STALE_CLIENTID;
  const client& c = it->second;
  const bool grace = in_grace_locked(clock::now());
  if (!reclaim)
    return c.reclaim_complete && !grace ? nfsstat4::NFS4_OK : nfsstat4::NFS4ERR_GRACE;
  if (!grace || c.reclaim_complete) return nfsstat4::NFS4ERR_NO_GRACE;
  auto p = previous_.find(c.ownerid);
  if (p == previous_.end() || !(p->second == c.principal)) return nfsstat4::NFS4ERR_RECLAIM_BAD;
  return nfsstat4::NFS4_OK;
}

std::error_code client_table::note_state(nfs4::clientid4 id) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(id);
  if (it == clients_.end() || it->second.has_state) return {};
  client& c = it->second;
  if (auto s = stable_.find(c.ownerid); s == stable_.end() || !(s->second == c.principal)) {
    client_records::list next = stable_;
    next[c.ownerid] = c.principal;
    if (std::error_code ec = store_locked(std::move(next))) {
      if (ec != std::errc::read_only_file_system) return ec;
      if (!said_read_only_) {
        said_read_only_ = true;
        std::fprintf(stderr, "vnfsd: the recovery directory %s is on a read-only file system: clients get "
                             "state without a stable record and cannot reclaim it after a restart\n",
                     records_.dir().c_str());
      }
    }
  }
  c.has_state = true;
  return {};
}

bool client_table::in_grace() {
  std::lock_guard lock(mu_);
  return in_grace_locked(clock::now());
}

bool client_table::in_grace_locked(clock::time_point now) {
  if (!grace_) return false;
  if (now < grace_end_) return true;
  // Time is up: the clients of before that did not come back can never reclaim.
  grace_ = false;
  client_records::list next = stable_;
  for (const auto& [owner, who] : previous_)
    if (!holds_state_locked(owner)) next.erase(owner);
  previous_.clear();
  if (next.size() != stable_.size()) store_locked(std::move(next));
  return false;
}

void client_table::resolve_previous_locked(const std::string& owner) {
  if (previous_.erase(owner) == 0) return;
  forget_owner_locked(owner);  // it reclaimed nothing, or is gone
  if (previous_.empty()) grace_ = false;  // every client of before has completed: done early
}

bool client_table::holds_state_locked(const std::string& owner) const {
  auto o = by_owner_.find(owner);
  if (o == by_owner_.end()) return false;
  for (nfs4::clientid4 id : {o->second.confirmed, o->second.unconfirmed}) {
    auto c = clients_.find(id);
    if (c != clients_.end() && c->second.has_state) return true;
  }
  return false;
}

void client_table::forget_owner_locked(const std::string& owner) {
  if (!stable_.count(owner) || previous_.count(owner) || holds_state_locked(owner)) return;
  client_records::list next = stable_;
  next.erase(owner);
  // On failure the owner stays listed: after a restart it may then reclaim although it holds
  // nothing, which grants it nothing it could not have opened anyway.
  store_locked(std::move(next));
}

std::error_code client_table::store_locked(client_records::list next) {
  std::error_code ec = records_.store(next);
  if (!ec) stable_ = std::move(next);
  return ec;
}

void client_table::renew(nfs4::clientid4 id) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(id);
  if (it != clients_.end()) it->second.renewed = clock::now();
}

std::vector<nfs4::clientid4> client_table::expire_idle(clock::time_point now) {
  std::lock_guard lock(mu_);
  std::vector<nfs4::clientid4> expired;
  std::vector<std::string> owners;
  for (const auto& [id, c] : clients_)
    if (now - c.renewed > options_.lease) {
      expired.push_back(id);
      owners.push_back(c.ownerid);
    }
  for (auto id : expired) drop_client_locked(id);
  for (const auto& owner : owners) resolve_previous_locked(owner);
  in_grace_locked(now);  // ends the grace period on time even when nobody asks
  return expired;
}

void client_table::drop_client_locked(nfs4::clientid4 id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  for (const auto& sid : it->second.sessions) sessions_.erase(sid);
  if (auto o = by_owner_.find(it->second.ownerid); o != by_owner_.end()) {
    if (o->second.confirmed == id) o->second.confirmed = 0;
    if (o->second.unconfirmed == id) o->second.unconfirmed = 0;
    if (o->second.confirmed == 0 && o->second.unconfirmed == 0) by_owner_.erase(o);
  }
  const bool had_state = it->second.has_state;
  const std::string owner = it->second.ownerid;
  clients_.erase(it);
  if (had_state) forget_owner_locked(owner);
  if (on_drop_) on_drop_(id);
}

}  // namespace vnfs::server
