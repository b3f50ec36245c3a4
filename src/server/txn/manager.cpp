#include "server/txn/manager.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
    if (std::error_code f = finish(sfd, prefix, j))
      throw std::system_error(f, "txn recovery: cannot remove the files of " + j);
  }
}

std::unique_ptr<transaction> manager::begin(std::uint64_t clientid, std::uint64_t client_txnid,
                                            std::error_code& ec) {
  fs::scoped_fs_root as_root;
  int sfd = state_fd(ec);
  if (ec) return nullptr;
  const std::string prefix = prefix_of(next_id_++);
  // The data file first: the journal's creation fsyncs the directory, which makes both
  // names durable.
  fs::unique_fd data(::openat(sfd, (prefix + ".data").c_str(),
                              O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!data) {
    ec = last_error();
    return nullptr;
  }
  journal_writer j = journal_writer::create(sfd, prefix + std::string(journal_suffix),
                                            rec_begin{clientid, client_txnid}, ec);
  if (ec) {
    ::unlinkat(sfd, (prefix + ".data").c_str(), 0);
    ::unlinkat(sfd, (prefix + std::string(journal_suffix)).c_str(), 0);
    return nullptr;
  }
  crash_point();
  return std::make_unique<transaction>(*this, prefix, std::move(j), std::move(data));
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

// ---- the export lock --------------------------------------------------------------------

nfs4::nfsstat4 manager::enter_shared() {
  std::unique_lock g(mu_);
  reap_locked(g);
  for (;;) {
    if (open_) return nfs4::nfsstat4::NFS4ERR_DELAY;
    if (!exclusive_ && exclusive_waiting_ == 0) break;
    cv_.wait(g);  // a running COMPOUND's transaction: ends with its COMPOUND
  }
  ++shared_;
  return nfs4::nfsstat4::NFS4_OK;
}

void manager::leave_shared() {
  std::lock_guard g(mu_);
  if (--shared_ == 0) cv_.notify_all();
}

namespace {

nfs4::nfsstat4 status_of(const std::error_code& ec) {
  nfs4::nfsstat4 s = to_nfsstat(ec);
  return s == nfs4::nfsstat4::NFS4_OK ? nfs4::nfsstat4::NFS4ERR_IO : s;
}

}  // namespace

nfs4::nfsstat4 manager::acquire_exclusive(std::unique_lock<std::mutex>& g) {
  ++exclusive_waiting_;
  cv_.wait(g, [&] { return open_ || (!exclusive_ && shared_ == 0); });
  --exclusive_waiting_;
  if (open_) {
    cv_.notify_all();  // shared waiters may go on (to their NFS4ERR_DELAY)
    return nfs4::nfsstat4::NFS4ERR_DELAY;
  }
  exclusive_ = true;
  return nfs4::nfsstat4::NFS4_OK;
}

nfs4::nfsstat4 manager::begin_single(std::uint64_t clientid, std::uint64_t client_txnid,
                                     std::unique_ptr<transaction>& out) {
  std::unique_lock g(mu_);
  reap_locked(g);
  if (nfs4::nfsstat4 s = acquire_exclusive(g); s != nfs4::nfsstat4::NFS4_OK) return s;
  g.unlock();  // the lock is ours: the journal is made without blocking the others' checks
  std::error_code ec;
  out = begin(clientid, client_txnid, ec);
  if (!ec) return nfs4::nfsstat4::NFS4_OK;
  g.lock();
  exclusive_ = false;
  cv_.notify_all();
  return status_of(ec);
}

nfs4::nfsstat4 manager::end_single(std::unique_ptr<transaction> t, bool ok) {
  nfs4::nfsstat4 result = nfs4::nfsstat4::NFS4_OK;
  if (ok) {
    if (std::error_code ec = t->commit()) {
      t->rollback();
      result = status_of(ec);
    }
  } else {
    t->rollback();
  }
  t.reset();
  std::lock_guard g(mu_);
  exclusive_ = false;
  cv_.notify_all();
  return result;
}

nfs4::nfsstat4 manager::begin_open(std::uint64_t clientid, std::uint64_t client_txnid, transaction*& out) {
  std::error_code ec;
  outcomes(ec);  // the outcome log must work before a transaction that needs it begins
  if (ec) return status_of(ec);
  std::unique_lock g(mu_);
  reap_locked(g);
  if (nfs4::nfsstat4 s = acquire_exclusive(g); s != nfs4::nfsstat4::NFS4_OK) return s;
  g.unlock();
  std::unique_ptr<transaction> t = begin(clientid, client_txnid, ec);
  g.lock();
  if (ec) {
    exclusive_ = false;
    cv_.notify_all();
    return status_of(ec);
  }
  open_ = std::make_unique<open_txn>();
  open_->t = std::move(t);
  open_->clientid = clientid;
  open_->txnid = client_txnid;
  open_->deadline = std::chrono::steady_clock::now() + lim_.max_age;
  open_->busy = true;
  out = open_->t.get();
  return nfs4::nfsstat4::NFS4_OK;
}

nfs4::nfsstat4 manager::join_open(std::uint64_t clientid, std::uint64_t client_txnid, transaction*& out) {
  std::unique_lock g(mu_);
  auto mine = [&] { return open_ && open_->txnid == client_txnid && open_->clientid == clientid; };
  cv_.wait(g, [&] { return !mine() || !open_->busy; });  // one COMPOUND in it at a time
  reap_locked(g);
  if (!mine()) return nfs4::nfsstat4::NFS4ERR_EXPIRED;
  open_->busy = true;
  out = open_->t.get();
  return nfs4::nfsstat4::NFS4_OK;
}

nfs4::nfsstat4 manager::leave_open(ending end) {
  std::unique_lock g(mu_);
  if (end == ending::keep) {
    open_->busy = false;
    cv_.notify_all();
    return nfs4::nfsstat4::NFS4_OK;
  }
  transaction* t = open_->t.get();
  g.unlock();  // busy: nobody else touches it
  nfs4::nfsstat4 result = nfs4::nfsstat4::NFS4_OK;
  bool committed = false;
  if (end == ending::commit) {
    if (std::error_code ec = t->commit()) {
      t->rollback();
      result = status_of(ec);
    } else {
      committed = true;
    }
  } else {
    t->rollback();
  }
  g.lock();
  close_open(g, committed);
  return result;
}

void manager::close_open(std::unique_lock<std::mutex>& g, bool committed) {
  const std::uint64_t id = open_->txnid;
  g.unlock();
  std::error_code ec;
  outcome_log* log = outcomes(ec);
  if (!ec) ec = log->record(id, committed ? nfs4::txn_outcome4::TXN_COMMITTED : nfs4::txn_outcome4::TXN_ABORTED);
  if (ec)
    std::fprintf(stderr, "vnfsd: cannot record the outcome of transaction %016llx (%s): TXN_STATUS answers unknown\n",
                 static_cast<unsigned long long>(id), ec.message().c_str());
  g.lock();
  open_.reset();
  exclusive_ = false;
  cv_.notify_all();
}

nfs4::txn_outcome4 manager::outcome_of(std::uint64_t client_txnid) {
  {
    std::lock_guard g(mu_);
    if (open_ && open_->txnid == client_txnid) return nfs4::txn_outcome4::TXN_OPEN;
  }
  std::error_code ec;
  outcome_log* log = outcomes(ec);
  return ec ? nfs4::txn_outcome4::TXN_UNKNOWN : log->find(client_txnid);
}

void manager::client_gone(std::uint64_t clientid) {
  std::lock_guard g(mu_);
  if (open_ && open_->clientid == clientid) open_->client_gone = true;
}

void manager::reap() {
  std::unique_lock g(mu_);
  reap_locked(g);
}

void manager::reap_locked(std::unique_lock<std::mutex>& g) {
  if (!open_ || open_->busy) return;
  if (!open_->client_gone && std::chrono::steady_clock::now() < open_->deadline) return;
  open_->busy = true;  // ours now
  transaction* t = open_->t.get();
  g.unlock();
  t->rollback();
  g.lock();
  close_open(g, false);
}

bool manager::hidden(const fs::object& dir, std::string_view name) const noexcept {
  return name == state_dir_name && exp_.is_root(dir);
}

void manager::crash_point() {
  if (lim_.crash_at != 0 && ++crash_count_ == lim_.crash_at) ::_exit(86);
}

}  // namespace vnfs::server::txn
