// vnfsd: open and byte-range lock state (RFC 8881 §8.2, §9).
#include "server/state/open_state_table.hpp"

#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace vnfs::server {

using nfs4::nfsstat4;

namespace {

std::uint32_t random_tag() {
  std::uint32_t t = 0;
  if (::getrandom(&t, sizeof t, 0) != static_cast<ssize_t>(sizeof t))
    t = static_cast<std::uint32_t>(
        std::chrono::steady_clock::now().time_since_epoch().count() * 2654435761u);
  // 0 and ~0 would make the other field of the special stateids possible.
  if (t == 0 || t == 0xffffffffu) t = 0x766e6673;  // "vnfs"
  return t;
}

bool is_write(nfs4::nfs_lock_type4 t) {
  return t == nfs4::nfs_lock_type4::WRITE_LT || t == nfs4::nfs_lock_type4::WRITEW_LT;
}

constexpr std::uint64_t to_eof = nfs4::NFS4_UINT64_MAX;

/// [offset, offset+length) with length NFS4_UINT64_MAX meaning "to end of file"; false when
/// the range is empty or runs past 2^64 - 1 (RFC 8881 §18.10.4: NFS4ERR_INVAL).
bool make_range(nfs4::offset4 offset, nfs4::length4 length, std::uint64_t& start,
                std::uint64_t& end) {
  if (length == 0) return false;
  start = offset;
  if (length == to_eof) {
    end = to_eof;
    return true;
  }
  if (length > to_eof - offset) return false;
  end = offset + length;
  return true;
}

bool overlaps(std::uint64_t s1, std::uint64_t e1, std::uint64_t s2, std::uint64_t e2) {
  return s1 < e2 && s2 < e1;
}

}  // namespace

open_state_table::open_state_table() : tag_(random_tag()) {}

file_key open_state_table::key_of(const fs::object& obj, std::error_code& ec) {
  const fs::inode_id id = obj.inode(ec);
  return {id.dev, id.ino};
}
open_state_table::open_state_table(std::uint32_t instance_tag) : tag_(instance_tag) {}

nfs4::stateid4 open_state_table::make_stateid(std::uint64_t id, std::uint32_t seqid) const {
  nfs4::stateid4 s;
  s.seqid = seqid;
  for (int i = 0; i < 4; ++i) s.other[i] = std::byte(tag_ >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) s.other[4 + i] = std::byte(id >> (56 - 8 * i));
  return s;
}

nfsstat4 open_state_table::find_locked(nfs4::clientid4 client, const nfs4::stateid4& sid,
                                       std::uint64_t& id, kind& k) const {
  k = kind::none;
  if (sid.is_special()) return nfsstat4::NFS4ERR_BAD_STATEID;
  std::uint32_t tag = 0;
  for (int i = 0; i < 4; ++i) tag = tag << 8 | std::to_integer<std::uint32_t>(sid.other[i]);
  if (tag != tag_) return nfsstat4::NFS4ERR_STALE_STATEID;
  id = 0;
  for (int i = 0; i < 8; ++i) id = id << 8 | std::to_integer<std::uint64_t>(sid.other[4 + i]);

  nfs4::clientid4 owner_client = 0;
  std::uint32_t seqid = 0;
  if (auto o = opens_.find(id); o != opens_.end()) {
    k = kind::open;
    owner_client = o->second.client;
    seqid = o->second.seqid;
  } else if (auto l = locks_.find(id); l != locks_.end()) {
    k = kind::lock;
    owner_client = l->second.client;
    seqid = l->second.seqid;
  } else {
    return nfsstat4::NFS4ERR_BAD_STATEID;
  }
  // Another client's stateid is not one this client may use (§8.2.4: BAD_STATEID).
  if (owner_client != client) {
    k = kind::none;
    return nfsstat4::NFS4ERR_BAD_STATEID;
  }
  // §8.2.2: seqid 0 means the current one; a newer seqid than current was never issued.
  if (sid.seqid != 0) {
    if (sid.seqid > seqid) return nfsstat4::NFS4ERR_BAD_STATEID;
    if (sid.seqid < seqid) return nfsstat4::NFS4ERR_OLD_STATEID;
  }
  return nfsstat4::NFS4_OK;
}

nfsstat4 open_state_table::find_open_locked(nfs4::clientid4 client, const file_key& file,
                                            const nfs4::stateid4& sid, std::uint64_t& id) const {
  kind k{};
  if (nfsstat4 st = find_locked(client, sid, id, k); st != nfsstat4::NFS4_OK) return st;
  if (k != kind::open || opens_.at(id).file != file) return nfsstat4::NFS4ERR_BAD_STATEID;
  return nfsstat4::NFS4_OK;
}

// ---- opens -------------------------------------------------------------------------

nfsstat4 open_state_table::check_share(nfs4::clientid4 client,
                                       const std::vector<std::byte>& owner,
                                       const file_key& file, std::uint32_t access,
                                       std::uint32_t deny) const {
  std::lock_guard lk(mu_);
  auto f = files_.find(file);
  if (f == files_.end()) return nfsstat4::NFS4_OK;
  for (std::uint64_t oid : f->second.opens) {
    const open_state& o = opens_.at(oid);
    if (o.client == client && o.owner == owner) continue;
    if ((o.deny & access) != 0 || (o.access & deny) != 0) return nfsstat4::NFS4ERR_SHARE_DENIED;
  }
  return nfsstat4::NFS4_OK;
}

nfsstat4 open_state_table::open(const open_request& req, nfs4::stateid4& out) {
  std::lock_guard lk(mu_);
  file_state& f = files_[req.file];
  open_state* mine = nullptr;
  std::uint64_t mine_id = 0;
  for (std::uint64_t oid : f.opens) {
    open_state& o = opens_.at(oid);
    if (o.client == req.client && o.owner == req.owner) {
      mine = &o;
      mine_id = oid;
      continue;
    }
    if ((o.deny & req.access) != 0 || (o.access & req.deny) != 0) {
      drop_file_if_unused_locked(files_.find(req.file));
      return nfsstat4::NFS4ERR_SHARE_DENIED;
    }
  }
  if (f.fh.empty() && !req.fh.empty() && req.object) {
    f.fh = req.fh;
    f.object = req.object;
    by_fh_[req.fh] = req.file;
  }
  if (mine != nullptr) {
    // An upgrade of the owner's open of this file (§18.16.3): one stateid, seqid + 1.
    mine->access |= req.access;
    mine->deny |= req.deny;
    if (!mine->read_fd) mine->read_fd = req.read_fd;
    if (!mine->write_fd) mine->write_fd = req.write_fd;
    ++mine->seqid;
    out = make_stateid(mine_id, mine->seqid);
    return nfsstat4::NFS4_OK;
  }
  std::uint64_t id = next_id_++;
  open_state& o = opens_[id];
  o.client = req.client;
  o.owner = req.owner;
  o.file = req.file;
  o.access = req.access;
  o.deny = req.deny;
  o.read_fd = req.read_fd;
  o.write_fd = req.write_fd;
  f.opens.insert(id);
  out = make_stateid(id, o.seqid);
  return nfsstat4::NFS4_OK;
}

nfsstat4 open_state_table::downgrade(nfs4::clientid4 client, const file_key& file,
                                     const nfs4::stateid4& sid, std::uint32_t access,
                                     std::uint32_t deny, nfs4::stateid4& out) {
  std::lock_guard lk(mu_);
  std::uint64_t id = 0;
  if (nfsstat4 st = find_open_locked(client, file, sid, id); st != nfsstat4::NFS4_OK) return st;
  open_state& o = opens_.at(id);
  if (access == 0 || (access & ~o.access) != 0 || (deny & ~o.deny) != 0)
    return nfsstat4::NFS4ERR_INVAL;
  o.access = access;
  o.deny = deny;
  if ((access & nfs4::OPEN4_SHARE_ACCESS_READ) == 0) o.read_fd.reset();
  if ((access & nfs4::OPEN4_SHARE_ACCESS_WRITE) == 0) o.write_fd.reset();
  ++o.seqid;
  out = make_stateid(id, o.seqid);
  return nfsstat4::NFS4_OK;
}

nfsstat4 open_state_table::close(nfs4::clientid4 client, const file_key& file,
                                 const nfs4::stateid4& sid) {
  std::lock_guard lk(mu_);
  std::uint64_t id = 0;
  if (nfsstat4 st = find_open_locked(client, file, sid, id); st != nfsstat4::NFS4_OK) return st;
  open_state& o = opens_.at(id);
  for (std::uint64_t lid : o.locks)
    if (!locks_.at(lid).ranges.empty()) return nfsstat4::NFS4ERR_LOCKS_HELD;
  erase_open_locked(id);
  return nfsstat4::NFS4_OK;
}

void open_state_table::drop_file_if_unused_locked(std::map<file_key, file_state>::iterator f) {
  if (f == files_.end() || !f->second.opens.empty() || !f->second.locks.empty()) return;
  if (!f->second.fh.empty()) by_fh_.erase(f->second.fh);
  files_.erase(f);
}

std::shared_ptr<const fs::object> open_state_table::held_object(
    const std::vector<std::byte>& fh) const {
  std::lock_guard lk(mu_);
  auto k = by_fh_.find(fh);
  if (k == by_fh_.end()) return nullptr;
  auto f = files_.find(k->second);
  return f == files_.end() ? nullptr : f->second.object;
}

void open_state_table::erase_lock_locked(std::uint64_t id) {
  auto l = locks_.find(id);
  if (l == locks_.end()) return;
  if (auto o = opens_.find(l->second.open_id); o != opens_.end()) o->second.locks.erase(id);
  if (auto f = files_.find(l->second.file); f != files_.end()) {
    f->second.locks.erase(id);
    drop_file_if_unused_locked(f);
  }
  locks_.erase(l);
}

void open_state_table::erase_open_locked(std::uint64_t id) {
  auto o = opens_.find(id);
  if (o == opens_.end()) return;
  for (std::uint64_t lid : std::set<std::uint64_t>(o->second.locks)) erase_lock_locked(lid);
  if (auto f = files_.find(o->second.file); f != files_.end()) {
    f->second.opens.erase(id);
    drop_file_if_unused_locked(f);
  }
  opens_.erase(o);
}

// ---- data I/O ----------------------------------------------------------------------

nfsstat4 open_state_table::check_io(nfs4::clientid4 client, const file_key& file,
                                    const nfs4::stateid4& sid, bool write,
                                    io_grant& out) const {
  std::lock_guard lk(mu_);
  std::uint64_t id = 0;
  kind k{};
  out.fd.reset();
  if (nfsstat4 st = find_locked(client, sid, id, k); st != nfsstat4::NFS4_OK) return st;
  const open_state* o = nullptr;
  if (k == kind::lock) {
    const lock_state& l = locks_.at(id);
    if (l.file != file) return nfsstat4::NFS4ERR_BAD_STATEID;
    auto it = opens_.find(l.open_id);
    if (it == opens_.end()) return nfsstat4::NFS4ERR_BAD_STATEID;
    o = &it->second;
  } else {
    o = &opens_.at(id);
  }
  if (o->file != file) return nfsstat4::NFS4ERR_BAD_STATEID;
  if (write) {
    if ((o->access & nfs4::OPEN4_SHARE_ACCESS_WRITE) == 0) return nfsstat4::NFS4ERR_OPENMODE;
    out.fd = o->write_fd;
  } else if ((o->access & nfs4::OPEN4_SHARE_ACCESS_READ) != 0) {
    out.fd = o->read_fd;
  }
  return nfsstat4::NFS4_OK;
}

nfsstat4 open_state_table::check_anonymous_io(const file_key& file, bool write) const {
  std::lock_guard lk(mu_);
  auto f = files_.find(file);
  if (f == files_.end()) return nfsstat4::NFS4_OK;
  const std::uint32_t bit =
      write ? nfs4::OPEN4_SHARE_DENY_WRITE : nfs4::OPEN4_SHARE_DENY_READ;
  for (std::uint64_t oid : f->second.opens)
    if (opens_.at(oid).deny & bit) return nfsstat4::NFS4ERR_LOCKED;
  return nfsstat4::NFS4_OK;
}

// ---- byte-range locks --------------------------------------------------------------

const open_state_table::lock_state* open_state_table::conflict_locked(
    nfs4::clientid4 client, const std::vector<std::byte>& owner, const file_key& file,
    const range& r, range& with) const {
  auto f = files_.find(file);
  if (f == files_.end()) return nullptr;
  for (std::uint64_t lid : f->second.locks) {
    const lock_state& l = locks_.at(lid);
    if (l.client == client && l.owner == owner) continue;
    for (const range& h : l.ranges) {
      if (!overlaps(r.start, r.end, h.start, h.end)) continue;
      if (r.write || h.write) {
        with = h;
        return &l;
      }
    }
  }
  return nullptr;
}

namespace {

void fill_denied(nfs4::LOCK4denied& d, nfs4::clientid4 client, const std::vector<std::byte>& owner,
                 std::uint64_t start, std::uint64_t end, bool write) {
  d.offset = start;
  d.length = end == to_eof ? to_eof : end - start;
  d.locktype = write ? nfs4::nfs_lock_type4::WRITE_LT : nfs4::nfs_lock_type4::READ_LT;
  d.owner.clientid = client;
  d.owner.owner = owner;
}

}  // namespace

nfsstat4 open_state_table::lock(const lock_request& req, nfs4::stateid4& out,
                                nfs4::LOCK4denied& denied) {
  range r;
  if (!make_range(req.offset, req.length, r.start, r.end)) return nfsstat4::NFS4ERR_INVAL;
  r.write = is_write(req.type);

  std::lock_guard lk(mu_);
  std::uint64_t lock_id = 0;
  lock_state* ls = nullptr;
  std::uint64_t open_id = 0;
  std::vector<std::byte> owner;
  if (req.new_lock_owner) {
    if (nfsstat4 st = find_open_locked(req.client, req.file, req.open_stateid, open_id); st != nfsstat4::NFS4_OK)
      return st;
    owner = req.lock_owner;
    // A lock-owner has one lock stateid per file: a client that (re)declares it as new
    // gets the existing one rather than a second set of ranges.
    if (auto f = files_.find(req.file); f != files_.end())
      for (std::uint64_t lid : f->second.locks) {
        lock_state& l = locks_.at(lid);
        if (l.client == req.client && l.owner == owner) {
          lock_id = lid;
          ls = &l;
        }
      }
  } else {
    kind k{};
    if (nfsstat4 st = find_locked(req.client, req.lock_stateid, lock_id, k);
        st != nfsstat4::NFS4_OK)
      return st;
    if (k != kind::lock) return nfsstat4::NFS4ERR_BAD_STATEID;
    ls = &locks_.at(lock_id);
    if (ls->file != req.file) return nfsstat4::NFS4ERR_BAD_STATEID;
    owner = ls->owner;
  }

  range with;
  if (const lock_state* c = conflict_locked(req.client, owner, req.file, r, with)) {
    fill_denied(denied, c->client, c->owner, with.start, with.end, with.write);
    return nfsstat4::NFS4ERR_DENIED;
  }

  if (ls == nullptr) {
    lock_id = next_id_++;
    ls = &locks_[lock_id];
    ls->client = req.client;
    ls->owner = owner;
    ls->file = req.file;
    ls->open_id = open_id;
    ls->seqid = 0;  // incremented to 1 below
    opens_.at(open_id).locks.insert(lock_id);
    files_[req.file].locks.insert(lock_id);
  }

  // POSIX semantics within one owner: the new range replaces whatever the owner held there;
  // adjacent or overlapping ranges of the same type are merged.
  std::vector<range> next;
  for (const range& h : ls->ranges) {
    if (!overlaps(h.start, h.end, r.start, r.end)) {
      next.push_back(h);
      continue;
    }
    if (h.start < r.start) next.push_back({h.start, r.start, h.write});
    if (h.end > r.end) next.push_back({r.end, h.end, h.write});
  }
  next.push_back(r);
  std::sort(next.begin(), next.end(),
            [](const range& a, const range& b) { return a.start < b.start; });
  std::vector<range> merged;
  for (const range& x : next) {
    if (!merged.empty() && merged.back().write == x.write && merged.back().end >= x.start)
      merged.back().end = std::max(merged.back().end, x.end);
    else
      merged.push_back(x);
  }
  ls->ranges = std::move(merged);
  ++ls->seqid;
  out = make_stateid(lock_id, ls->seqid);
  return nfsstat4::NFS4_OK;
}

nfsstat4 open_state_table::test_lock(nfs4::clientid4 client, const std::vector<std::byte>& owner,
                                     const file_key& file, nfs4::nfs_lock_type4 type,
                                     nfs4::offset4 offset, nfs4::length4 length,
                                     nfs4::LOCK4denied& denied) const {
  range r;
  if (!make_range(offset, length, r.start, r.end)) return nfsstat4::NFS4ERR_INVAL;
  r.write = is_write(type);
  std::lock_guard lk(mu_);
  range with;
  if (const lock_state* c = conflict_locked(client, owner, file, r, with)) {
    fill_denied(denied, c->client, c->owner, with.start, with.end, with.write);
    return nfsstat4::NFS4ERR_DENIED;
  }
  return nfsstat4::NFS4_OK;
}

nfsstat4 open_state_table::unlock(nfs4::clientid4 client, const file_key& file,
                                  const nfs4::stateid4& sid, nfs4::offset4 offset,
                                  nfs4::length4 length, nfs4::stateid4& out) {
  range r;
  if (!make_range(offset, length, r.start, r.end)) return nfsstat4::NFS4ERR_INVAL;
  std::lock_guard lk(mu_);
  std::uint64_t id = 0;
  kind k{};
  if (nfsstat4 st = find_locked(client, sid, id, k); st != nfsstat4::NFS4_OK) return st;
  if (k != kind::lock) return nfsstat4::NFS4ERR_BAD_STATEID;
  lock_state& l = locks_.at(id);
  if (l.file != file) return nfsstat4::NFS4ERR_BAD_STATEID;
  std::vector<range> next;
  for (const range& h : l.ranges) {
    if (!overlaps(h.start, h.end, r.start, r.end)) {
      next.push_back(h);
      continue;
    }
    if (h.start < r.start) next.push_back({h.start, r.start, h.write});
    if (h.end > r.end) next.push_back({r.end, h.end, h.write});
  }
  l.ranges = std::move(next);
  ++l.seqid;
  out = make_stateid(id, l.seqid);
  return nfsstat4::NFS4_OK;
}

// ---- stateid management ------------------------------------------------------------

nfsstat4 open_state_table::test(nfs4::clientid4 client, const nfs4::stateid4& sid) const {
  std::lock_guard lk(mu_);
  std::uint64_t id = 0;
  kind k{};
  return find_locked(client, sid, id, k);
}

nfsstat4 open_state_table::free(nfs4::clientid4 client, const nfs4::stateid4& sid) {
  std::lock_guard lk(mu_);
  std::uint64_t id = 0;
  kind k{};
  if (nfsstat4 st = find_locked(client, sid, id, k); st != nfsstat4::NFS4_OK) return st;
  if (k == kind::open) return nfsstat4::NFS4ERR_LOCKS_HELD;
  if (!locks_.at(id).ranges.empty()) return nfsstat4::NFS4ERR_LOCKS_HELD;
  erase_lock_locked(id);
  return nfsstat4::NFS4_OK;
}

void open_state_table::release_client(nfs4::clientid4 client) {
  std::lock_guard lk(mu_);
  std::vector<std::uint64_t> ids;
  for (const auto& [id, o] : opens_)
    if (o.client == client) ids.push_back(id);
  for (std::uint64_t id : ids) erase_open_locked(id);
  ids.clear();
  for (const auto& [id, l] : locks_)
    if (l.client == client) ids.push_back(id);
  for (std::uint64_t id : ids) erase_lock_locked(id);
}

std::size_t open_state_table::open_count() const {
  std::lock_guard lk(mu_);
  return opens_.size();
}

std::size_t open_state_table::lock_state_count() const {
  std::lock_guard lk(mu_);
  return locks_.size();
}

}  // namespace vnfs::server
