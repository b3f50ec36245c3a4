#include "server/txn/manager.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "server/fs/identity.hpp"
#include "server/ops/status_mapping.hpp"
#include "server/txn/transaction.hpp"
#include "server/txn/undo.hpp"

namespace vnfs::server::txn {

namespace {

constexpr std::string_view journal_suffix = ".journal";

std::error_code last_error() { return {errno, std::system_category()}; }

std::string prefix_of(std::uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "t%016llx", static_cast<unsigned long long>(id));
  return buf;
}

/// Names in the state directory that end in ".journal".
std::vector<std::string> journals(int state_fd) {
  std::vector<std::string> out;
  int fd = ::openat(state_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(last_error(), "txn recovery: cannot list the state directory");
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    throw std::system_error(last_error(), "txn recovery: cannot list the state directory");
  }
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n.size() > journal_suffix.size() && n.ends_with(journal_suffix)) out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

}  // namespace

manager::manager(const fs::export_root& exp, bool enabled, limits lim)
    : exp_(exp),
      enabled_(enabled),
      lim_(lim),
      next_id_(static_cast<std::uint64_t>(
          std::chrono::system_clock::now().time_since_epoch() / std::chrono::nanoseconds(1))) {
  recover();  // also when disabled: a crash of an earlier run may have left a journal
}

manager::~manager() = default;

int manager::state_fd(std::error_code& ec) {
  std::lock_guard g(state_mu_);
  ec.clear();
  if (state_) return state_.get();
  fs::scoped_fs_root as_root;
  const std::string name(state_dir_name);
  int root = exp_.root().fd();
  if (::mkdirat(root, name.c_str(), 0700) == 0) {
    // The new entry must be durable before a journal inside it is relied upon.
    int rfd = ::openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd >= 0) {
      ::fsync(rfd);
      ::close(rfd);
    }
  } else if (errno != EEXIST) {
    ec = last_error();
    return -1;
  }
  int fd = ::openat(root, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    ec = last_error();
    return -1;
  }
  state_ = fs::unique_fd(fd);
  return fd;
}

void manager::recover() {
  fs::scoped_fs_root as_root;
  struct ::stat st {};
  const std::string name(state_dir_name);
  if (::fstatat(exp_.root().fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return;  // no transaction ever ran here
    throw std::system_error(last_error(), "txn recovery: " + name);
  }
  std::error_code ec;
  int sfd = state_fd(ec);
  if (ec) throw std::system_error(ec, "txn recovery: cannot open " + name);
  for (const std::string& j : journals(sfd)) {
    const std::string prefix = j.substr(0, j.size() - journal_suffix.size());
    std::vector<record> recs = read_journal(sfd, j, ec);
    if (ec) throw std::system_error(ec, "txn recovery: cannot read " + j);
    bool committed = false;
    for (const record& r : recs) committed |= std::holds_alternative<rec_commit>(r);
    if (!committed) {
      fs::unique_fd data(::openat(sfd, (prefix + ".data").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      if (std::error_code u = undo(exp_, sfd, data.get(), recs))
        throw std::system_error(u, "txn recovery: cannot roll back " + j);
    }
    // The outcome before the journal goes (a crash in between records it again).
    if (!recs.empty() && std::holds_alternative<rec_begin>(recs.front())) {
      outcome_log* log = outcomes(ec);
      if (ec) throw std::system_error(ec, "txn recovery: cannot open the outcome log");
      if (std::error_code o = log->record(std::get<rec_begin>(recs.front()).client_txnid,
                                          committed ? nfs4::txn_outcome4::TXN_COMMITTED : nfs4::txn_outcome4::TXN_ABORTED))
        throw std::system_error(o, "txn recovery: cannot record the outcome of " + j);
    }
    if (std::error_code f = finish(sfd, prefix, j, !committed))
      throw std::system_error(f, "txn recovery: cannot remove the files of " + j);
  }
}

std::unique_ptr<transaction> manager::begin(std::uint64_t clientid, std::uint64_t client_txnid,
                                            std::error_code& ec) {
  fs::scoped_fs_root as_root;
  int sfd = state_fd(ec);
  if (ec) return nullptr;
  const std::uint64_t owner = locks_.enroll();
  const std::string prefix = prefix_of(next_id_++);
  // Nothing is durable yet: the transaction's first barrier fsyncs the directory (both
  // names) before it writes the journal, and no change comes before that barrier.
  fs::unique_fd data(::openat(sfd, (prefix + ".data").c_str(),
                              O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!data) {
    ec = last_error();
    locks_.release(owner);
    return nullptr;
  }
  journal_writer j = journal_writer::create(sfd, prefix + std::string(journal_suffix),
                                            rec_begin{clientid, client_txnid}, ec);
  if (ec) {
    ::unlinkat(sfd, (prefix + ".data").c_str(), 0);
    ::unlinkat(sfd, (prefix + std::string(journal_suffix)).c_str(), 0);
    locks_.release(owner);
    return nullptr;
  }
  return std::make_unique<transaction>(*this, owner, prefix, client_txnid, std::move(j), std::move(data));
}

outcome_log* manager::outcomes(std::error_code& ec) {
  int sfd = state_fd(ec);
  if (ec) return nullptr;
  std::lock_guard g(state_mu_);
  if (!outcomes_) {
    try {
      outcomes_ = std::make_unique<outcome_log>(sfd);
    } catch (const std::system_error& e) {
      ec = e.code();
      return nullptr;
    }
  }
  return outcomes_.get();
}

// ---- isolation and the open transactions ------------------------------------------------

namespace {

nfs4::nfsstat4 status_of(const std::error_code& ec) {
  nfs4::nfsstat4 s = to_nfsstat(ec);
  return s == nfs4::nfsstat4::NFS4_OK ? nfs4::nfsstat4::NFS4ERR_IO : s;
}

}  // namespace

nfs4::nfsstat4 manager::lock(transaction& t, std::span<const lock_request> reqs) {
  for (;;) {  // each wound ends one other transaction: finitely many rounds
    std::uint64_t victim = 0;
    switch (locks_.lock(t.lock_owner(), reqs, victim)) {
      case lock_table::verdict::granted:
        return nfs4::nfsstat4::NFS4_OK;
      case lock_table::verdict::die:
        return nfs4::nfsstat4::NFS4ERR_DEADLOCK;
      case lock_table::verdict::wound:
        wound(victim);
        break;
    }
  }
}

void manager::wound(std::uint64_t owner) {
  std::unique_lock g(mu_);
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->second->t->lock_owner() != owner) continue;
    if (!it->second->busy) roll_back_idle(g, it);
    return;  // busy: a COMPOUND runs in it now, and the lock table waits for it
  }
}

nfs4::nfsstat4 manager::begin_single(std::uint64_t clientid, std::uint64_t client_txnid,
                                     std::unique_ptr<transaction>& out) {
  reap();
  std::error_code ec;
  out = begin(clientid, client_txnid, ec);
  if (ec) return status_of(ec);
  std::lock_guard g(mu_);
  running_single_.insert(client_txnid);
  return nfs4::nfsstat4::NFS4_OK;
}

nfs4::nfsstat4 manager::end_single(std::unique_ptr<transaction> t, bool ok, bool record_outcome) {
  nfs4::nfsstat4 result = nfs4::nfsstat4::NFS4_OK;
  if (ok) {
    if (std::error_code ec = t->commit()) {
      t->rollback();
      result = status_of(ec);
    }
  } else {
    t->rollback(record_outcome);
  }
  locks_.release(t->lock_owner());
  std::lock_guard g(mu_);
  running_single_.erase(running_single_.find(t->client_txnid()));
  return result;
}

nfs4::nfsstat4 manager::begin_open(std::uint64_t clientid, std::uint64_t client_txnid, transaction*& out) {
  std::error_code ec;
  outcome_log* log = outcomes(ec);  // it must work before a transaction that needs it begins
  if (ec) return status_of(ec);
  reap();
  {
    std::lock_guard g(mu_);
    if (open_.contains(client_txnid)) return nfs4::nfsstat4::NFS4ERR_INVAL;
  }
  // A txnid names one transaction: one that ended (a TXN_BEGIN sent again after its
  // transaction was rolled back, say) is not begun again, so that it has one outcome.
  if (log->find(client_txnid) != nfs4::txn_outcome4::TXN_UNKNOWN) return nfs4::nfsstat4::NFS4ERR_INVAL;
  std::unique_ptr<transaction> t = begin(clientid, client_txnid, ec);
  if (ec) return status_of(ec);
  std::lock_guard g(mu_);
  if (open_.contains(client_txnid)) {  // the same txnid began meanwhile: its outcome is not ours
    t->rollback(false);
    locks_.release(t->lock_owner());
    return nfs4::nfsstat4::NFS4ERR_INVAL;
  }
  auto o = std::make_unique<open_txn>();
  o->t = std::move(t);
  o->clientid = clientid;
  o->deadline = std::chrono::steady_clock::now() + lim_.max_age;
  o->busy = true;
  out = o->t.get();
  open_.emplace(client_txnid, std::move(o));
  return nfs4::nfsstat4::NFS4_OK;
}

nfs4::nfsstat4 manager::join_open(std::uint64_t clientid, std::uint64_t client_txnid, transaction*& out) {
  std::unique_lock g(mu_);
  auto find = [&]() -> open_txn* {
    auto it = open_.find(client_txnid);
    return it != open_.end() && it->second->clientid == clientid ? it->second.get() : nullptr;
  };
  cv_.wait(g, [&] { return !find() || !find()->busy; });  // one COMPOUND in it at a time
  reap_locked(g);
  open_txn* o = find();
  if (!o) return nfs4::nfsstat4::NFS4ERR_EXPIRED;
  o->busy = true;
  locks_.set_busy(o->t->lock_owner(), true);
  out = o->t.get();
  return nfs4::nfsstat4::NFS4_OK;
}

nfs4::nfsstat4 manager::leave_open(std::uint64_t client_txnid, ending end) {
  std::unique_lock g(mu_);
  open_txn* o = open_.at(client_txnid).get();
  if (end == ending::keep) {
    o->busy = false;
    locks_.set_busy(o->t->lock_owner(), false);
    cv_.notify_all();
    return nfs4::nfsstat4::NFS4_OK;
  }
  transaction* t = o->t.get();
  g.unlock();  // busy: nobody else touches it
  nfs4::nfsstat4 result = nfs4::nfsstat4::NFS4_OK;
  if (end == ending::commit) {
    if (std::error_code ec = t->commit()) {
      t->rollback();
      result = status_of(ec);
    }
  } else {
    t->rollback();
  }
  g.lock();
  close_open(client_txnid);
  return result;
}

std::error_code manager::record_outcome(std::uint64_t client_txnid, bool committed, bool durable) {
  std::error_code ec;
  outcome_log* log = outcomes(ec);
  if (ec) return ec;
  return log->record(client_txnid, committed ? nfs4::txn_outcome4::TXN_COMMITTED : nfs4::txn_outcome4::TXN_ABORTED,
                     durable);
}

void manager::close_open(std::uint64_t txnid) {
  auto it = open_.find(txnid);
  locks_.release(it->second->t->lock_owner());
  open_.erase(it);
  cv_.notify_all();
}

nfs4::txn_outcome4 manager::outcome_of(std::uint64_t client_txnid) {
  {
    std::lock_guard g(mu_);
    if (open_.contains(client_txnid) || running_single_.contains(client_txnid)) return nfs4::txn_outcome4::TXN_OPEN;
  }
  std::error_code ec;
  outcome_log* log = outcomes(ec);
  return ec ? nfs4::txn_outcome4::TXN_UNKNOWN : log->find(client_txnid);
}

void manager::client_gone(std::uint64_t clientid) {
  std::lock_guard g(mu_);
  for (auto& [id, o] : open_)
    if (o->clientid == clientid) o->client_gone = true;
}

void manager::reap() {
  std::unique_lock g(mu_);
  reap_locked(g);
}

void manager::reap_locked(std::unique_lock<std::mutex>& g) {
  for (;;) {  // one at a time: the map may change while one is rolled back
    const auto now = std::chrono::steady_clock::now();
    auto it = std::find_if(open_.begin(), open_.end(), [&](const auto& e) {
      return !e.second->busy && (e.second->client_gone || now >= e.second->deadline);
    });
    if (it == open_.end()) return;
    roll_back_idle(g, it);
  }
}

void manager::roll_back_idle(std::unique_lock<std::mutex>& g, open_map::iterator it) {
  const std::uint64_t txnid = it->first;
  open_txn* o = it->second.get();
  o->busy = true;  // ours now
  locks_.set_busy(o->t->lock_owner(), true);
  g.unlock();
  o->t->rollback();
  g.lock();
  close_open(txnid);
}

bool manager::hidden(const fs::object& dir, std::string_view name) const noexcept {
  return name == state_dir_name && exp_.is_root(dir);
}

void manager::crash_point() {
  if (lim_.crash_at != 0 && ++crash_count_ == lim_.crash_at) ::_exit(86);
}

}  // namespace vnfs::server::txn
