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

bool manager::hidden(const fs::object& dir, std::string_view name) const noexcept {
  return name == state_dir_name && exp_.is_root(dir);
}

void manager::crash_point() {
  if (lim_.crash_at != 0 && ++crash_count_ == lim_.crash_at) ::_exit(86);
}

}  // namespace vnfs::server::txn
