#include "server/txn/transaction.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "server/fs/attributes.hpp"
#include "server/fs/detail.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/identity.hpp"
#include "server/txn/manager.hpp"
#include "server/txn/undo.hpp"

namespace vnfs::server::txn {

namespace {

constexpr std::uint64_t backup_align = 4096;  // FICLONERANGE needs block-aligned offsets

std::error_code last_error() { return {errno, std::system_category()}; }

saved_attrs to_saved(const fs::attributes& a) {
  saved_attrs s;
  s.type = static_cast<std::uint32_t>(a.type);
  s.mode = a.mode;
  s.uid = a.uid;
  s.gid = a.gid;
  s.size = a.size;
  s.atime_sec = a.atime.sec;
  s.atime_nsec = a.atime.nsec;
  s.mtime_sec = a.mtime.sec;
  s.mtime_nsec = a.mtime.nsec;
  return s;
}

/// Fail-stop: an undo that cannot finish leaves the journal for recovery at the next start.
[[noreturn]] void stop_server(const char* what, const std::error_code& ec) {
  std::fprintf(stderr, "vnfsd: transaction %s failed (%s); exiting so that recovery at start-up rolls it back\n",
               what, ec.message().c_str());
  ::_exit(87);
}

}  // namespace

transaction::transaction(manager& m, std::uint64_t owner, std::string prefix, journal_writer j, fs::unique_fd data)
    : m_(m), owner_(owner), prefix_(std::move(prefix)), journal_(std::move(j)), data_(std::move(data)) {}

transaction::~transaction() {
  if (!done_) rollback();
}

std::error_code transaction::append(const record& r) {
  if (records_.size() >= m_.lim().max_records && !std::holds_alternative<rec_commit>(r))
    return std::make_error_code(std::errc::no_space_on_device);
  std::error_code ec;
  journal_.append(r, ec);
  if (ec) return ec;
  records_.push_back(r);
  m_.crash_point();
  return {};
}

std::error_code transaction::remember(const fs::object& obj, std::vector<std::byte>& fh,
                                      saved_attrs* first) {
  std::error_code ec;
  fh = m_.exp().fh_of(obj, ec);
  if (ec) return ec;
  fs::attributes a = fs::stat(obj, ec);
  if (ec) return ec;
  const auto key = std::make_pair(std::uint64_t{a.dev_major} << 32 | a.dev_minor, a.ino);
  auto it = saved_.find(key);
  if (it == saved_.end()) {
    if (std::error_code e = append(rec_attrs{fh, to_saved(a)})) return e;
    it = saved_.emplace(key, records_.size() - 1).first;
  }
  if (first) *first = std::get<rec_attrs>(records_[it->second]).attrs;
  return {};
}

std::error_code transaction::protect_attrs(const fs::object& obj) {
  fs::scoped_fs_root as_root;
  std::vector<std::byte> fh;
  return remember(obj, fh);
}

std::error_code transaction::protect_data(const fs::object& file, std::uint64_t offset,
                                          std::uint64_t length) {
  fs::scoped_fs_root as_root;
  std::vector<std::byte> fh;
  saved_attrs first;
  if (std::error_code ec = remember(file, fh, &first)) return ec;
  if (file.type() != fs::file_type::regular) return {};
  std::error_code ec;
  const fs::attributes now = fs::stat(file, ec);
  if (ec) return ec;
  // Bytes past the size at the first change are cut off by rec_attrs' undo; bytes past the
  // current size were cut by an earlier change, whose own backup restores them.
  const std::uint64_t end = std::min({offset + std::min(length, UINT64_MAX - offset), first.size, now.size});
  if (offset >= end) return {};
  const std::uint64_t len = end - offset;
  if (backup_bytes_ + len > m_.lim().max_backup_bytes) return fs::sys_error(ENOSPC);

  int src = fs::detail::open_data(file, O_RDONLY, ec);
  if (src < 0) return ec;
  fs::unique_fd closer(src);
  const std::uint64_t at = (data_size_ + backup_align - 1) / backup_align * backup_align;
  file_clone_range clone{src, offset, len, at};
  if (::ioctl(data_.get(), FICLONERANGE, &clone) != 0) {
    if (std::error_code c = copy_bytes(src, offset, data_.get(), at, len)) return c;
  }
  if (::fdatasync(data_.get()) != 0) return last_error();
  data_size_ = at + len;
  backup_bytes_ += len;
  return append(rec_range{fh, offset, len, at});
}

std::error_code transaction::protect_create(const fs::object& dir, std::string_view name) {
  fs::scoped_fs_root as_root;
  std::vector<std::byte> fh;
  if (std::error_code ec = remember(dir, fh)) return ec;
  const std::string n(name);
  struct ::stat st {};
  if (::fstatat(dir.fd(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return {};  // not created
  if (errno != ENOENT) return last_error();
  return append(rec_created{fh, n});
}

std::error_code transaction::protect_remove(const fs::object& dir, std::string_view name) {
  fs::scoped_fs_root as_root;
  std::vector<std::byte> fh;
  if (std::error_code ec = remember(dir, fh)) return ec;
  std::error_code ec;
  fs::object obj = fs::lookup(dir, name, ec);
  if (ec) return {};  // nothing to remove: the operation fails by itself
  if (obj.is_directory()) {
    saved_attrs a;
    std::vector<std::byte> ofh;
    // The attributes it had when the transaction first met it (its times may have changed since).
    if (std::error_code e = remember(obj, ofh, &a)) return e;
    return append(rec_rmdir{fh, std::string(name), ofh, a});
  }
  std::error_code sec;
  int sfd = m_.state_fd(sec);
  if (sec) return sec;
  std::string grave = prefix_ + ".g" + std::to_string(graves_++);
  if (::linkat(obj.fd(), "", sfd, grave.c_str(), AT_EMPTY_PATH) != 0) return last_error();
  return append(rec_removed{fh, std::string(name), grave});
}

std::error_code transaction::protect_rename(const fs::object& from_dir, std::string_view from_name,
                                            const fs::object& to_dir, std::string_view to_name) {
  fs::scoped_fs_root as_root;
  std::vector<std::byte> from_fh, to_fh;
  if (std::error_code ec = remember(from_dir, from_fh)) return ec;
  if (std::error_code ec = remember(to_dir, to_fh)) return ec;
  if (std::error_code ec = protect_remove(to_dir, to_name)) return ec;
  return append(rec_renamed{from_fh, std::string(from_name), to_fh, std::string(to_name)});
}

void transaction::after_operation() { m_.crash_point(); }

std::error_code transaction::commit() {
  fs::scoped_fs_root as_root;
  std::error_code ec;
  int sfd = m_.state_fd(ec);
  if (ec) return ec;
  if (::syncfs(sfd) != 0) return last_error();
  if ((ec = append(rec_commit{}))) return ec;
  done_ = true;
  // Committed: a failure to remove the files now only leaves work for the next recovery.
  finish(sfd, prefix_, prefix_ + ".journal", [this] { m_.crash_point(); });
  return {};
}

void transaction::rollback() {
  done_ = true;
  fs::scoped_fs_root as_root;
  std::error_code ec;
  int sfd = m_.state_fd(ec);
  if (ec) stop_server("rollback", ec);
  if ((ec = undo(m_.exp(), sfd, data_.get(), records_))) stop_server("rollback", ec);
  if ((ec = finish(sfd, prefix_, prefix_ + ".journal", [this] { m_.crash_point(); })))
    stop_server("clean-up", ec);
  for (auto& release : releases_) release();
  releases_.clear();
}

}  // namespace vnfs::server::txn
