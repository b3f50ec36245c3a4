#include "server/txn/manager.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <map>
#include <cstdio>
#include <string>
#include <vector>

#include "server/fs/error.hpp"
#include "server/fs/identity.hpp"
#include "server/ops/status_mapping.hpp"
#include "server/txn/fail_stop.hpp"
#include "server/txn/redo.hpp"
#include "server/txn/transaction.hpp"
#include "server/txn/undo.hpp"

namespace vnfs::server::txn {

namespace {

constexpr std::string_view old_journal_suffix = ".journal";
constexpr std::string_view outcome_log_name = "outcomes";

using fs::last_error;

/// Every name in the state directory but "." and "..".
std::vector<std::string> list_names(int state_fd) {
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
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

/// Rewrites the journal file `fd` with `j`'s records and `last`, durably: the rollback
/// (rec_end) or the replay (rec_checkpoint) it records is on stable storage (recovery).
std::error_code write_ended(int fd, const journal_contents& j, const record& last) {
  journal_writer w(fd, j.gen, j.records.front());
  for (std::size_t i = 1; i < j.records.size(); ++i) w.append(j.records[i]);
  w.append(last);
  std::error_code ec;
  w.sync(ec);
  return ec;
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

manager::~manager() {
  // The open transactions roll back while what they use (slots, outcome log) still exists.
  open_.clear();
  {
    std::lock_guard g(checkpoint_mu_);
    stop_checkpoints_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();  // it finishes what waits first
}

void manager::checkpoint_later(std::unique_ptr<transaction> t) {
  std::vector<object_key> keep;
  for (const auto& [dev, ino] : t->redo_files()) keep.push_back({dev, ino});
  locks_.set_committed(t->lock_owner(), keep);
  std::lock_guard g(checkpoint_mu_);
  if (!checkpointer_.joinable()) checkpointer_ = std::thread([this] { run_checkpoints(); });
  to_checkpoint_.push_back(std::move(t));
  checkpoint_cv_.notify_all();
}

void manager::run_checkpoints() {
  for (;;) {
    std::vector<std::unique_ptr<transaction>> batch;
    {
      std::unique_lock g(checkpoint_mu_);
      checkpoint_cv_.wait(g, [&] { return stop_checkpoints_ || !to_checkpoint_.empty(); });
      if (to_checkpoint_.empty()) return;
      batch.swap(to_checkpoint_);
    }
    fs::scoped_fs_root as_root;
    // Fail-stop (fail_stop.hpp): the journals stay pending, and recovery replays them.
    // Every change applied before this syncfs began (each commit returned before its
    // transaction was queued), so it makes them all durable in place.
    std::error_code ec;
    const int sfd = state_fd(ec);
    if (ec) stop_server("checkpoint", ec);
    if (::syncfs(sfd) != 0) stop_server("checkpoint", last_error());  // reports writeback errors (Linux >= 5.8)
    crash_point();  // applied and durable in place, the journals still pending
    std::vector<int> fds;
    for (auto& t : batch) {
      t->write_checkpoint();
      fds.push_back(t->journal_fd());
    }
    if ((ec = syncer().fsync_all(fds))) stop_server("checkpoint", ec);
    for (auto& t : batch) {
      t->end_checkpoint();
      locks_.release(t->lock_owner());
    }
  }
}

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
  const int sfd = state_fd(ec);
  if (ec) throw std::system_error(ec, "txn recovery: cannot open " + name);
  outcome_log* log = outcomes(ec);
  if (ec) throw std::system_error(ec, "txn recovery: cannot open the outcome log");
  const std::vector<std::string> names = list_names(sfd);

  // The slots and their files; journals of the format before slots (one per transaction).
  std::map<unsigned, std::array<bool, 3>> present;
  std::vector<std::string> old_journals;
  for (const std::string& n : names) {
    if (auto p = journal_pool::parse(n)) present[p->first][static_cast<std::size_t>(p->second)] = true;
    else if (n.size() > old_journal_suffix.size() && n.ends_with(old_journal_suffix)) old_journals.push_back(n);
  }

  // What each journal says. In a slot, only the journal of the higher generation may be
  // unfinished: the other one's transaction ended before it began (a torn rest of it, which
  // the newer one was being written over, is not undone; its outcome was durable first).
  struct unfinished {
    journal_contents j;
    int data_fd = -1;
    int journal_fd = -1;  ///< -1: an old journal (removed by the sweep)
  };
  std::vector<unfinished> to_undo;
  std::vector<unfinished> to_replay;  ///< committed, its redo records not checkpointed
  std::vector<std::unique_ptr<journal_slot>> slots;
  std::vector<fs::unique_fd> old_data;
  std::uint64_t max_gen = 0, last_entry = 0;
  auto record_end = [&](const journal_contents& j) {
    if (j.records.empty() || !std::holds_alternative<rec_begin>(j.records.front())) return;
    nfs4::txn_outcome4 o = nfs4::txn_outcome4::TXN_NONE;
    if (j.committed()) o = nfs4::txn_outcome4::TXN_COMMITTED;
    else if (j.ended()) o = static_cast<nfs4::txn_outcome4>(std::get<rec_end>(j.records.back()).outcome);
    if (o != nfs4::txn_outcome4::TXN_COMMITTED && o != nfs4::txn_outcome4::TXN_ABORTED) return;
    if (log->find(std::get<rec_begin>(j.records.front()).client_txnid) == o) return;  // recorded before
    if (std::error_code e = log->record_unsynced(std::get<rec_begin>(j.records.front()).client_txnid, o, last_entry))
      throw std::system_error(e, "txn recovery: cannot record an outcome");
  };
  for (const auto& [index, files] : present) {
    if (!(files[0] && files[1] && files[2])) continue;  // never used: swept
    auto s = std::make_unique<journal_slot>();
    s->index = index;
    journal_contents j[2];
    for (int w = 0; w < 2; ++w) {
      j[w] = read_journal(sfd, journal_pool::file_name(index, w), ec);
      if (ec) throw std::system_error(ec, "txn recovery: cannot read " + journal_pool::file_name(index, w));
      s->journal[w] = fs::unique_fd(::openat(sfd, journal_pool::file_name(index, w).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
      if (!s->journal[w]) throw std::system_error(last_error(), "txn recovery: cannot open a journal");
      max_gen = std::max(max_gen, j[w].gen);
    }
    s->data = fs::unique_fd(::openat(sfd, journal_pool::file_name(index, 2).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!s->data) throw std::system_error(last_error(), "txn recovery: cannot open a data file");
    const int hi = j[1].gen > j[0].gen ? 1 : 0;
    if (j[hi].gen != 0) s->latest = hi;
    record_end(j[1 - hi]);
    if (j[hi].pending()) {
      record_end(j[hi]);
      to_replay.push_back({std::move(j[hi]), s->data.get(), s->journal[hi].get()});
    } else if (j[hi].committed() || j[hi].ended()) record_end(j[hi]);
    else if (!j[hi].records.empty()) to_undo.push_back({std::move(j[hi]), s->data.get(), s->journal[hi].get()});
    slots.push_back(std::move(s));
  }
  for (const std::string& n : old_journals) {
    journal_contents j = read_journal(sfd, n, ec);
    if (ec) throw std::system_error(ec, "txn recovery: cannot read " + n);
    if (j.committed()) {
      record_end(j);
      continue;
    }
    const std::string data = n.substr(0, n.size() - old_journal_suffix.size()) + ".data";
    old_data.emplace_back(::openat(sfd, data.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    to_undo.push_back({std::move(j), old_data.back().get(), -1});
  }

  // Roll back what was unfinished; make that durable; then record the outcomes and mark
  // the journals ended, so that nothing is undone twice.
  for (const unfinished& u : to_undo)
    if (std::error_code e = undo(exp_, sfd, u.data_fd, u.j.records))
      throw std::system_error(e, "txn recovery: cannot roll back a transaction");
  // Replay what committed with deferred changes (nothing else can hold the same files: the
  // transaction kept their locks until its checkpoint).
  for (const unfinished& u : to_replay)
    if (std::error_code e = replay(exp_, u.j.records))
      throw std::system_error(e, "txn recovery: cannot replay a committed transaction");
  if ((!to_undo.empty() || !to_replay.empty()) && ::syncfs(sfd) != 0)
    throw std::system_error(last_error(), "txn recovery: syncfs");
  for (const unfinished& u : to_replay)
    if (std::error_code e = write_ended(u.journal_fd, u.j, rec_checkpoint{}))
      throw std::system_error(e, "txn recovery: cannot checkpoint a journal");
  for (unfinished& u : to_undo) {
    u.j.records.push_back(rec_end{static_cast<std::uint32_t>(nfs4::txn_outcome4::TXN_ABORTED)});
    record_end(u.j);
    u.j.records.pop_back();
    if (u.journal_fd >= 0)
      if (std::error_code e = write_ended(u.journal_fd, u.j, rec_end{static_cast<std::uint32_t>(nfs4::txn_outcome4::TXN_ABORTED)}))
        throw std::system_error(e, "txn recovery: cannot end a journal");
  }
  if (std::error_code e = log->make_durable(last_entry)) throw std::system_error(e, "txn recovery: cannot sync the outcome log");

  // Sweep what no complete slot owns: graves (their transactions ended above), files of
  // old journals (the journals first: one whose backups went must not be undone again),
  // slots whose making a crash cut short.
  std::vector<std::string> rest;
  for (const std::string& n : names) {
    if (n == outcome_log_name) continue;
    if (auto p = journal_pool::parse(n); p && present[p->first][0] && present[p->first][1] && present[p->first][2])
      continue;
    if (std::find(old_journals.begin(), old_journals.end(), n) == old_journals.end()) rest.push_back(n);
  }
  for (const auto* group : {&old_journals, &rest}) {
    if (group->empty()) continue;
    for (const std::string& n : *group)
      if (::unlinkat(sfd, n.c_str(), 0) != 0 && errno != ENOENT)
        throw std::system_error(last_error(), "txn recovery: cannot remove " + n);
    if (::fsync(sfd) != 0) throw std::system_error(last_error(), "txn recovery: cannot sync the state directory");
  }
  for (auto& s : slots) slots_.adopt(std::move(s));
  if (next_id_.load() <= max_gen) next_id_ = max_gen + 1;  // generations grow within a slot
}

std::unique_ptr<transaction> manager::begin(std::uint64_t clientid, std::uint64_t client_txnid, std::uint64_t age,
                                            std::error_code& ec) {
  fs::scoped_fs_root as_root;
  int sfd = state_fd(ec);
  if (ec) return nullptr;
  // Room for its outcome first: once it runs, failing to record how it ended stops vnfsd.
  outcome_log* log = outcomes(ec);
  if (ec) return nullptr;
  outcome_log::place place = log->take_place();
  if (!place) {
    ec = fs::sys_error(ENOSPC);
    return nullptr;
  }
  journal_slot* slot = slots_.acquire(sfd, ec);
  if (ec) return nullptr;
  const std::uint64_t owner = locks_.enroll(age);
  // Nothing is written yet: the transaction's first barrier writes the journal.
  return std::make_unique<transaction>(*this, owner, slot, next_id_++, rec_begin{clientid, client_txnid},
                                       std::move(place));
}

outcome_log* manager::outcomes(std::error_code& ec) {
  int sfd = state_fd(ec);
  if (ec) return nullptr;
  std::lock_guard g(state_mu_);
  if (!outcomes_) {
    fs::scoped_fs_root as_root;  // the server's own file, whoever asks first
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
    if (!it->second->busy) {
      keep_age(*it->second->t);
      roll_back_idle(g, it);
    }
    return;  // busy: a COMPOUND runs in it now, and the lock table waits for it
  }
}

std::uint64_t manager::take_age(std::uint64_t clientid, std::optional<std::uint64_t> txnid) {
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (!txnid) return now;
  auto it = kept_ages_.find(*txnid);
  if (it == kept_ages_.end() || it->second.clientid != clientid) return now;  // another's age is not taken
  const std::uint64_t age = it->second.age;
  kept_ages_.erase(it);
  const auto limit = static_cast<std::uint64_t>(std::chrono::nanoseconds(lim_.max_age).count());
  return now - age < limit ? age : now;
}

void manager::keep_age(const transaction& t) {
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto limit = static_cast<std::uint64_t>(std::chrono::nanoseconds(lim_.max_age).count());
  const std::uint64_t age = locks_.age_of(t.lock_owner());
  if (now - age >= limit) return;  // a retry would start anew
  if (kept_ages_.size() >= max_kept_ages) {
    std::erase_if(kept_ages_, [&](const auto& e) { return now - e.second.age >= limit; });
    if (kept_ages_.size() >= max_kept_ages)
      kept_ages_.erase(std::min_element(kept_ages_.begin(), kept_ages_.end(),
                                        [](const auto& a, const auto& b) { return a.second.age < b.second.age; }));
  }
  kept_ages_[t.client_txnid()] = kept_age{t.clientid(), age};
}

nfs4::nfsstat4 manager::begin_single(std::uint64_t clientid, std::uint64_t client_txnid,
                                     std::unique_ptr<transaction>& out) {
  reap();
  std::uint64_t age = 0;
  {
    std::lock_guard g(mu_);
    age = take_age(clientid, client_txnid);  // sent again after it died: its age
  }
  std::error_code ec;
  out = begin(clientid, client_txnid, age, ec);
  if (ec) return status_of(ec);
  out->set_single_compound();
  std::lock_guard g(mu_);
  running_single_.insert(client_txnid);
  return nfs4::nfsstat4::NFS4_OK;
}

nfs4::nfsstat4 manager::end_single(std::unique_ptr<transaction> t, bool ok, bool died) {
  nfs4::nfsstat4 result = nfs4::nfsstat4::NFS4_OK;
  if (ok) {
    if (std::error_code ec = t->commit()) {
      t->rollback();
      result = status_of(ec);
    }
  } else {
    t->rollback(!died);
  }
  {
    std::lock_guard g(mu_);
    if (died) keep_age(*t);
    running_single_.erase(running_single_.find(t->client_txnid()));
  }
  if (t->awaiting_checkpoint()) checkpoint_later(std::move(t));
  else locks_.release(t->lock_owner());
  return result;
}

nfs4::nfsstat4 manager::begin_open(std::uint64_t clientid, std::uint64_t client_txnid,
                                   std::optional<std::uint64_t> retries, transaction*& out) {
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
  std::uint64_t age = 0;
  {
    std::lock_guard g(mu_);
    age = take_age(clientid, retries);
  }
  std::unique_ptr<transaction> t = begin(clientid, client_txnid, age, ec);
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
  if (end == ending::die) keep_age(*t);
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

sync_pool& manager::syncer() {
  std::call_once(syncs_once_, [this] {
    syncs_ = std::make_unique<sync_pool>(8);
    syncs_started_ = true;
  });
  return *syncs_;
}

bool manager::hidden(const fs::object& dir, std::string_view name) const noexcept {
  return name == state_dir_name && exp_.is_root(dir);
}

void manager::crash_point() {
  if (lim_.crash_at != 0 && ++crash_count_ == lim_.crash_at) ::_exit(86);
}

}  // namespace vnfs::server::txn
