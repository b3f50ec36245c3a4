#include "client/nfs/open_reclaims.hpp"

namespace vnfs::detail {

void open_reclaims::add(open o) {
  std::lock_guard lock(mu_);
  const key k = o.first.other;
  entry& e = opens_[k];
  e.now = o.first;
  e.what = std::move(o);
  e.reclaimed = false;
}

void open_reclaims::remove(const nfs4::stateid4& first) {
  std::lock_guard lock(mu_);
  opens_.erase(first.other);
  std::erase_if(earlier_, [&](const auto& e) { return e.second == first.other; });
}

std::vector<open_reclaims::open> open_reclaims::all() const {
  std::lock_guard lock(mu_);
  std::vector<open> out;
  out.reserve(opens_.size());
  for (const auto& [k, e] : opens_) out.push_back(e.what);
  return out;
}

void open_reclaims::reclaimed(const nfs4::stateid4& first, const nfs4::stateid4& now) {
  std::lock_guard lock(mu_);
  auto it = opens_.find(first.other);
  if (it == opens_.end()) return;  // closed meanwhile
  if (it->second.reclaimed) earlier_[it->second.now.other] = it->first;
  it->second.now = now;
  it->second.reclaimed = true;
  any_reclaimed_ = true;
}

void open_reclaims::lost(const nfs4::stateid4& first) { remove(first); }

void open_reclaims::translate_one(nfs4::stateid4& s) const {
  auto it = opens_.find(s.other);
  if (it == opens_.end()) {
    auto e = earlier_.find(s.other);
    if (e != earlier_.end()) it = opens_.find(e->second);
  }
  if (it == opens_.end() || !it->second.reclaimed) return;
  const std::uint32_t seqid = s.seqid == 0 ? 0 : it->second.now.seqid;
  s = it->second.now;
  s.seqid = seqid;
}

void open_reclaims::translate(std::vector<nfs4::nfs_argop4>& ops) const {
  if (!any_reclaimed_) return;
  std::lock_guard lock(mu_);
  for (auto& op : ops) {
    if (auto* r = std::get_if<nfs4::READ4args>(&op)) translate_one(r->stateid);
    else if (auto* w = std::get_if<nfs4::WRITE4args>(&op)) translate_one(w->stateid);
    else if (auto* c = std::get_if<nfs4::CLOSE4args>(&op)) translate_one(c->open_stateid);
    else if (auto* a = std::get_if<nfs4::SETATTR4args>(&op)) translate_one(a->stateid);
    else if (auto* p = std::get_if<nfs4::COPY4args>(&op)) {
      translate_one(p->ca_src_stateid);
      translate_one(p->ca_dst_stateid);
    }
  }
}

}  // namespace vnfs::detail
