#include "server/txn/transaction.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "server/fs/attributes.hpp"
#include "server/fs/detail.hpp"
#include "server/fs/directory.hpp"
#include "server/fs/error.hpp"
#include "server/fs/identity.hpp"
#include "server/txn/fail_stop.hpp"
#include "server/txn/manager.hpp"
#include "server/txn/redo.hpp"
#include "server/txn/undo.hpp"

namespace vnfs::server::txn {

namespace {

constexpr std::uint64_t backup_align = 4096;  // FICLONERANGE needs block-aligned offsets
constexpr std::uint64_t backup_share_from = 256 * 1024;  // smaller backups are copied (protect_data)

using fs::last_error;

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

std::error_code key_of(const fs::object& obj, std::pair<std::uint64_t, std::uint64_t>& k) {
  std::error_code ec;
  const fs::inode_id id = obj.inode(ec);
  if (!ec) k = {id.dev, id.ino};
  return ec;
}

/// A planned change's name: its kind, the objects (by key) and names it involves.
std::string claim_key(char kind, const std::pair<std::uint64_t, std::uint64_t>& k, std::string_view name = {},
                      std::uint64_t a = 0, std::uint64_t b = 0) {
  std::string s(1, kind);
  s += std::to_string(k.first) + ':' + std::to_string(k.second) + ':' + std::to_string(a) + ':' +
       std::to_string(b) + '/';
  s += name;
  return s;
}

}  // namespace

transaction::transaction(manager& m, std::uint64_t owner, journal_slot* slot, std::uint64_t gen, const rec_begin& first,
                         outcome_log::place place)
    : place_(std::move(place)),
      m_(m),
      owner_(owner),
      slot_(slot),
      which_(slot->next()),
      gen_(gen),
      client_txnid_(first.client_txnid),
      clientid_(first.clientid),
      journal_(slot->journal[which_].get(), gen, first),
      data_(slot->data.get()) {}

transaction::~transaction() {
  if (!done_) rollback();
}

std::error_code transaction::append(const record& r) {
  if (records_.size() >= m_.lim().max_records && !std::holds_alternative<rec_commit>(r))
    return std::make_error_code(std::errc::no_space_on_device);
  journal_.append(r);
  records_.push_back(r);
  counted_.push_back(false);
  if (!planning_) count(records_.size() - 1);
  return {};
}

void transaction::count(std::size_t i) {
  if (i < counted_.size() && !counted_[i]) {
    counted_[i] = true;
    ++changes_;
  }
}

std::error_code transaction::barrier() {
  // Nothing to protect until a record is appended (the header and begin record wait for it).
  if (records_.size() == durable_records_) return {};
  // The server's own files, whoever the caller is (end_plan() runs as the caller).
  fs::scoped_fs_root as_root;
  // The range backups first: a durable record must never name bytes that are not (its undo
  // would copy them over a file that no change touched yet).
  if (std::error_code ec = write_staged()) return ec;
  if (data_unsynced_) {
    if (::fdatasync(data_) != 0) return last_error();
    data_unsynced_ = false;
  }
  std::error_code ec;
  if (journal_.untouched()) {
    // The journal file is about to be written over the transaction it holds: that one's
    // outcome must be durable first (journal_pool.hpp; usually one sync long before served it).
    outcome_log* log = m_.outcomes(ec);
    if (!ec) ec = log->make_durable(slot_->outcome_entry[which_]);
    if (ec) stop_server("outcome record", ec);
    slot_->outcome_entry[which_] = 0;
  }
  // The state directory's new names (graves) and the records together: no change comes
  // before both are durable, and a record whose grave a crash lost undoes nothing (the
  // removal it protects never ran).
  if (names_unsynced_) {
    journal_.write(ec);
    if (ec) return ec;
    const int sfd = m_.state_fd(ec);
    if (ec) return ec;
    const int fds[] = {journal_.fd(), sfd};
    if ((ec = m_.syncer().fsync_all(fds))) return ec;
    journal_.written_durable();
  } else {
    journal_.sync(ec);
    if (ec) return ec;
  }
  durable_records_ = records_.size();
  names_unsynced_ = false;
  m_.crash_point();
  return {};
}

std::error_code transaction::stage(int src, std::uint64_t from, std::uint64_t len, std::uint64_t at) {
  constexpr std::size_t stage_cap = 1 << 20;  // then written, and a new stage begun
  if (!staged_.empty() && at + len - staged_at_ > stage_cap) {
    if (std::error_code ec = write_staged()) return ec;
  }
  if (staged_.empty()) staged_at_ = at;
  const std::size_t before = staged_.size(), begin = at - staged_at_;
  staged_.resize(begin + len);
  // The range lies within the file's size (protect_data, under the file's lock); were the
  // file shorter, the rest would stay zeros, which the undo of its size cuts off again.
  for (std::uint64_t done = 0; done < len;) {
    const ssize_t n = ::pread(src, staged_.data() + begin + done, len - done, static_cast<off_t>(from + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      staged_.resize(before);  // as if not staged: no record names it
      return last_error();
    }
    if (n == 0) break;
    done += static_cast<std::uint64_t>(n);
  }
  return {};
}

std::error_code transaction::write_staged() {
  for (std::size_t done = 0; done < staged_.size();) {
    const ssize_t n = ::pwrite(data_, staged_.data() + done, staged_.size() - done, static_cast<off_t>(staged_at_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? last_error() : fs::sys_error(EIO);
    done += static_cast<std::size_t>(n);
  }
  staged_.clear();
  return {};
}

std::error_code transaction::end_plan() {
  planning_ = false;
  return barrier();
}

bool transaction::made_here(const fs::object& obj) const {
  if (created_.empty()) return false;
  obj_key k;
  return !key_of(obj, k) && created_.contains(k);
}

bool transaction::claim(const std::string& ck) {
  auto it = planned_.find(ck);
  if (it == planned_.end()) return false;
  if (!planning_) {
    count(it->second);
    planned_.erase(it);
  }
  return true;
}

void transaction::note_found(const fs::object& dir, std::string_view name, const fs::object& obj) {
  obj_key k;
  if (planning_ && !key_of(dir, k)) found_.insert_or_assign({k, std::string(name)}, obj.share());
}

fs::object transaction::take_found(const fs::object& dir, std::string_view name) {
  obj_key k;
  if (found_.empty() || key_of(dir, k)) return {};
  auto it = found_.find({k, std::string(name)});
  if (it == found_.end()) return {};
  fs::object obj = std::move(it->second);
  found_.erase(it);
  return obj;
}

void transaction::plan(const std::string& ck, std::size_t first) {
  if (planning_) planned_.emplace(ck, first < records_.size() ? first : SIZE_MAX);
}

std::error_code transaction::note_changed(const fs::object& obj, const obj_key& k) {
  if (planning_ || changed_.contains(k)) return {};
  std::error_code ec;
  std::vector<std::byte> fh = m_.exp().fh_of(obj, ec);
  if (ec) return ec;
  changed_.emplace(k, std::move(fh));
  return {};
}

std::error_code transaction::remember(const fs::object& obj, const obj_key& k, std::vector<std::byte>& fh,
                                      saved_attrs* first, bool* first_is_now) {
  std::error_code ec;
  fh = m_.exp().fh_of(obj, ec);
  if (ec) return ec;
  if (created_.contains(k)) return {};  // its removal undoes it: no attributes to restore
  auto it = saved_.find(k);
  if (first_is_now) *first_is_now = it == saved_.end();
  if (it == saved_.end()) {
    fs::attributes a = fs::stat(obj, ec);
    if (ec) return ec;
    if (std::error_code e = append(rec_attrs{fh, to_saved(a)})) return e;
    it = saved_.emplace(k, records_.size() - 1).first;
  } else if (!planning_) {
    count(it->second);
  }
  if (first) *first = std::get<rec_attrs>(records_[it->second]).attrs;
  return {};
}

std::error_code transaction::protect_attrs(const fs::object& obj) {
  fs::scoped_fs_root as_root;
  obj_key k;
  if (std::error_code ec = key_of(obj, k)) return ec;
  // A change in place would come before the deferred ones, which assume none (the planner
  // hands a file to redo only when no operation of the COMPOUND does this).
  if (redo_.contains(k)) return fs::sys_error(EIO);
  if (std::error_code ec = note_changed(obj, k)) return ec;
  if (created_.contains(k)) return {};
  const std::string ck = claim_key('a', k);
  if (claim(ck)) return done_protecting();
  const std::size_t first_record = records_.size();
  std::vector<std::byte> fh;
  if (std::error_code ec = remember(obj, k, fh)) return ec;
  plan(ck, first_record);
  return done_protecting();
}

std::error_code transaction::protect_data(const fs::object& file, std::uint64_t offset,
                                          std::uint64_t length) {
  fs::scoped_fs_root as_root;
  obj_key k;
  if (std::error_code ec = key_of(file, k)) return ec;
  if (redo_.contains(k)) return fs::sys_error(EIO);  // as in protect_attrs
  if (std::error_code ec = note_changed(file, k)) return ec;
  if (created_.contains(k)) return {};  // its removal undoes every byte
  const std::string ck = claim_key('d', k, {}, offset, length);
  if (claim(ck)) return done_protecting();
  const std::size_t first_record = records_.size();
  std::vector<std::byte> fh;
  saved_attrs first;
  bool first_is_now = false;
  if (std::error_code ec = remember(file, k, fh, &first, &first_is_now)) return ec;
  if (file.type() == fs::file_type::regular) {
    // Bytes past the size at the first change are cut off by rec_attrs' undo; bytes past the
    // current size were cut by an earlier change, whose own backup restores them; bytes an
    // earlier record of this transaction saved (or cut off) are restored by its undo, which
    // runs after this record's: only the rest is copied. (The current size matters only
    // when something is left to copy.)
    const std::uint64_t stop = offset + std::min(length, UINT64_MAX - offset);
    byte_ranges& saved = saved_bytes_[k];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> gaps = saved.gaps(offset, std::min(stop, first.size));
    std::error_code ec;
    if (!gaps.empty() && !first_is_now) {
      const std::uint64_t now_size = fs::stat(file, ec).size;
      if (ec) return ec;
      gaps = saved.gaps(offset, std::min({stop, first.size, now_size}));
    }
    std::uint64_t len_sum = 0;
    for (const auto& [from, to] : gaps) len_sum += to - from;
    if (len_sum > 0) {
      if (backup_bytes_ + len_sum > m_.lim().max_backup_bytes) return fs::sys_error(ENOSPC);
      // O_NOATIME: the copy must not change what it protects (its atime), as the
      // attributes it restores are not durable before the barrier.
      int src = fs::detail::open_data(file, O_RDONLY | O_NOATIME, ec);
      if (src < 0 && ec == std::error_code(EPERM, std::system_category()))
        src = fs::detail::open_data(file, O_RDONLY, ec);
      if (src < 0) return ec;
      fs::unique_fd closer(src);
      for (const auto& [from, to] : gaps) {
        const std::uint64_t len = to - from;
        const std::uint64_t at = (data_size_ + backup_align - 1) / backup_align * backup_align;
        // A small range is copied, into memory, to be written with the others at the
        // barrier: sharing its blocks (FICLONERANGE, or copy_file_range where it clones)
        // first writes back the file's dirty pages and makes its next write copy-on-write,
        // which costs more than copying a few pages.
        if (len < backup_share_from) {
          if (std::error_code c = stage(src, from, len, at)) return c;
        } else {
          if (std::error_code c = write_staged()) return c;  // the stage ends before `at`
          file_clone_range clone{src, from, len, at};
          if (::ioctl(data_, FICLONERANGE, &clone) != 0) {
            if (std::error_code c = copy_bytes(src, from, data_, at, len)) return c;
          }
        }
        data_unsynced_ = true;
        data_size_ = at + len;
        backup_bytes_ += len;
        m_.crash_point();  // after the backup (not yet durable, nothing changed)
        if (std::error_code e = append(rec_range{fh, from, len, at})) return e;
      }
    }
    saved.add(offset, stop);
  }
  plan(ck, first_record);
  return done_protecting();
}

std::error_code transaction::protect_create(const fs::object& dir, std::string_view name) {
  return protect_name(dir, name, true, false);
}

std::error_code transaction::protect_create_free(const fs::object& dir, std::string_view name) {
  return protect_name(dir, name, true, true);
}

std::error_code transaction::protect_link(const fs::object& dir, std::string_view name) {
  return protect_name(dir, name, false, false);
}

std::error_code transaction::protect_name(const fs::object& dir, std::string_view name, bool makes_object,
                                          bool free) {
  fs::scoped_fs_root as_root;
  if (!planning_) creating_ = false;
  obj_key k;
  if (std::error_code ec = key_of(dir, k)) return ec;
  const std::string n(name);
  const std::string ck = claim_key('c', k, n);
  // A name the planner found free is free still: its directory is locked, and the planner
  // stops before an operation of the COMPOUND whose name an earlier one changes.
  const bool known_free = free || (!planning_ && planned_.contains(ck));
  if (!known_free) {
    struct ::stat st {};
    if (::fstatat(dir.fd(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return {};  // not created
    if (errno != ENOENT) return last_error();
  }
  if (std::error_code ec = note_changed(dir, k)) return ec;
  if (!planning_) creating_ = makes_object;
  if (created_.contains(k)) return {};  // the directory's removal removes the name
  if (claim(ck)) return done_protecting();
  const std::size_t first_record = records_.size();
  std::vector<std::byte> fh;
  if (std::error_code ec = remember(dir, k, fh)) return ec;
  if (std::error_code ec = append(rec_created{fh, n})) return ec;
  plan(ck, first_record);
  return done_protecting();
}

std::error_code transaction::protect_remove(const fs::object& dir, std::string_view name) {
  fs::scoped_fs_root as_root;
  obj_key k;
  if (std::error_code ec = key_of(dir, k)) return ec;
  if (std::error_code ec = note_changed(dir, k)) return ec;
  if (created_.contains(k)) return {};
  const std::string ck = claim_key('r', k, name);
  if (claim(ck)) return done_protecting();
  std::error_code ec;
  fs::object obj = fs::lookup(dir, name, ec);
  if (ec) return {};  // nothing to remove: the operation fails by itself
  if (made_here(obj)) return {};  // its rec_created undoes it, removed or not
  const std::size_t first_record = records_.size();
  std::vector<std::byte> fh;
  if (std::error_code e = remember(dir, k, fh)) return e;
  if (obj.is_directory()) {
    obj_key ok;
    if (std::error_code e = key_of(obj, ok)) return e;
    saved_attrs a;
    std::vector<std::byte> ofh;
    // The attributes it had when the transaction first met it (its times may have changed since).
    if (std::error_code e = remember(obj, ok, ofh, &a)) return e;
    if (std::error_code e = append(rec_rmdir{fh, std::string(name), ofh, a})) return e;
  } else {
    int sfd = m_.state_fd(ec);
    if (ec) return ec;
    std::string grave = grave_name(graves_++);
    if (::linkat(obj.fd(), "", sfd, grave.c_str(), AT_EMPTY_PATH) != 0) return last_error();
    names_unsynced_ = true;
    m_.crash_point();  // after the backup (the grave, not yet durable; nothing changed)
    if (std::error_code e = append(rec_removed{fh, std::string(name), grave})) return e;
  }
  plan(ck, first_record);
  return done_protecting();
}

std::error_code transaction::protect_rename(const fs::object& from_dir, std::string_view from_name,
                                            const fs::object& to_dir, std::string_view to_name) {
  fs::scoped_fs_root as_root;
  obj_key fk, tk;
  if (std::error_code ec = key_of(from_dir, fk)) return ec;
  if (std::error_code ec = key_of(to_dir, tk)) return ec;
  if (std::error_code ec = note_changed(from_dir, fk)) return ec;
  if (std::error_code ec = note_changed(to_dir, tk)) return ec;
  const std::string ck = claim_key('n', fk, std::string(from_name) + '/' + std::to_string(tk.first) + ':' +
                                                std::to_string(tk.second) + '/' + std::string(to_name));
  if (claim(ck)) {
    claim(claim_key('r', tk, to_name));  // the replaced target, planned with it
    return done_protecting();
  }
  const std::size_t first_record = records_.size();
  std::vector<std::byte> from_fh, to_fh;
  if (std::error_code ec = remember(from_dir, fk, from_fh)) return ec;
  if (std::error_code ec = remember(to_dir, tk, to_fh)) return ec;
  if (std::error_code ec = protect_remove(to_dir, to_name)) return ec;
  if (std::error_code ec = append(rec_renamed{from_fh, std::string(from_name), to_fh, std::string(to_name)}))
    return ec;
  plan(ck, first_record);
  return done_protecting();
}

void transaction::after_operation(const fs::object* current) {
  if (creating_ && current && *current) {
    obj_key k;
    if (!key_of(*current, k)) {
      created_.insert(k);
      (void)note_changed(*current, k);  // a failure only leaves it to the directory's fsync
    }
  }
  creating_ = false;
  m_.crash_point();
}

std::error_code transaction::sync_changed() {
  // Many objects: one syncfs writes back and flushes them all with one device flush, where
  // an fsync each costs a flush each (new 1 KiB files on this project's ext4: 250 fsyncs
  // one after another about 56 ms, one syncfs about 5 ms). It also writes back what else is
  // dirty on the file system (other clients' UNSTABLE writes), which a later COMMIT or
  // writeback would write anyway; below the threshold, where that could cost more than it
  // saves, the objects' own fsyncs.
  constexpr std::size_t syncfs_from_objects = 16;
  if (changed_.size() >= syncfs_from_objects) {
    std::error_code ec;
    const int sfd = m_.state_fd(ec);
    if (ec) return ec;
    if (::syncfs(sfd) != 0) return last_error();  // reports writeback errors (Linux >= 5.8)
    return {};
  }
  // In chunks: start the writeback of every file of a chunk, then fsync them all at once
  // (sync_pool), so that the device sees the chunk's writes and flushes together.
  constexpr std::size_t chunk = 128;
  std::vector<fs::unique_fd> fds;
  std::vector<int> raw;
  auto flush = [&]() -> std::error_code {
    raw.clear();
    for (auto& fd : fds) raw.push_back(fd.get());
    std::error_code ec = m_.syncer().fsync_all(raw);
    fds.clear();
    return ec;
  };
  for (const auto& [k, fh] : changed_) {
    std::error_code ec;
    fs::object obj = m_.exp().resolve(fh, ec);
    if (ec) {
      if (fs::object_gone(ec)) continue;  // removed later in the transaction: its directory says so
      return ec;
    }
    int fd = -1;
    if (obj.type() == fs::file_type::regular) {
      fd = fs::detail::open_data(obj, O_RDONLY, ec);
      if (fd < 0) return ec;
      ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    } else if (obj.is_directory()) {
      fd = ::openat(obj.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) return last_error();
    } else {
      continue;  // a symlink: made durable with its directory's entry
    }
    fds.emplace_back(fd);
    if (fds.size() == chunk)
      if (std::error_code e = flush()) return e;
  }
  return flush();
}

std::error_code transaction::use_redo(const fs::object& file) {
  obj_key k;
  if (std::error_code ec = key_of(file, k)) return ec;
  if (redo_.contains(k)) return {};
  std::error_code ec;
  redo_file f;
  f.fh = m_.exp().fh_of(file, ec);
  if (ec) return ec;
  f.obj = file.share();
  redo_.emplace(k, std::move(f));
  return {};
}

bool transaction::redo_for(const fs::object& file) const {
  obj_key k;
  return !redo_.empty() && !key_of(file, k) && redo_.contains(k);
}

void transaction::defer_truncate(const fs::object& file) {
  obj_key k;
  if (key_of(file, k)) return;
  if (auto it = redo_.find(k); it != redo_.end()) {
    it->second.truncation = true;
    it->second.cutting.reset();  // the writes after it start again from nothing
  }
  ++changes_;
}

std::error_code transaction::defer_write(const fs::object& file, std::shared_ptr<const fs::unique_fd> fd,
                                         std::uint64_t offset, std::span<const std::byte> data) {
  fs::scoped_fs_root as_root;
  obj_key k;
  if (std::error_code ec = key_of(file, k)) return ec;
  auto it = redo_.find(k);
  if (it == redo_.end()) return fs::sys_error(EIO);
  redo_file& f = it->second;
  // Applied after the commit point, a write must not fail: none ends past what the file
  // system lets a file grow to (EFBIG there would stop vnfsd, and its replay at start-up
  // would fail again).
  const std::uint64_t max_size = m_.exp().max_file_size();
  if (offset > max_size || data.size() > max_size - offset) return fs::sys_error(EFBIG);
  if (data.size() > m_.lim().max_backup_bytes - std::min(backup_bytes_, m_.lim().max_backup_bytes))
    return fs::sys_error(ENOSPC);
  if (!f.fd) {
    if (!fd) {
      std::error_code ec;
      const int opened = fs::detail::open_data(file, O_WRONLY, ec);
      if (opened < 0) return ec;
      fd = std::make_shared<const fs::unique_fd>(opened);
    }
    f.fd = std::move(fd);
  }
  // Space: the journal holds the bytes before the commit point, and applying them after it
  // must not run out (ENOSPC there stops vnfsd: recovery applies them at its next start).
  // Refused unless the file system had room for every deferred byte twice when last asked;
  // a change that would reserve the space (fallocate) would change the file's times before
  // the commit.
  if (deferred_bytes_ + data.size() > space_budget_) {
    struct ::statvfs sv {};
    if (::fstatvfs(f.fd->get(), &sv) != 0) return last_error();
    space_budget_ = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize / 2;
    if (deferred_bytes_ + data.size() > space_budget_) return fs::sys_error(ENOSPC);
  }
  deferred_bytes_ += data.size();
  backup_bytes_ += data.size();
  // Truncated, then written from 0: the bytes go over the old ones and the file is cut once,
  // where the last write continuing them ends (a large file comes in several WRITEs; cutting
  // after the first would free the blocks the next ones allocate again). A write elsewhere
  // leaves the cut where it is.
  bool cut = f.truncation && offset == 0;
  if (f.truncation && !cut) redo_steps_.push_back({k, 0, {}, false, true});
  f.truncation = false;
  if (!cut && f.cutting && offset == f.cut_at) {
    redo_steps_[*f.cutting].cut = false;
    cut = true;
  }
  redo_steps_.push_back({k, offset, data, cut, false});
  if (cut) {
    f.cutting = redo_steps_.size() - 1;
    f.cut_at = offset + data.size();
  } else {
    f.cutting.reset();
  }
  ++changes_;
  return {};
}

void transaction::journal_redo() {
  // A truncation no write took (the file stays empty) goes last: no later step of its file
  // exists, and the files are independent of each other.
  for (auto& [k, f] : redo_)
    if (f.truncation) {
      redo_steps_.push_back({k, 0, {}, false, true});
      f.truncation = false;
    }
  for (const redo_step& st : redo_steps_) {
    const std::vector<std::byte>& fh = redo_.at(st.file).fh;
    if (st.truncation) {
      journal_.append(rec_redo_size{fh, st.offset});
      continue;
    }
    // In pieces of at most max_redo_data; only the last one cuts.
    std::size_t at = 0;
    do {
      const std::size_t n = std::min(max_redo_data, st.data.size() - at);
      journal_.append_write(fh, st.offset + at, st.cut && at + n == st.data.size(), st.data.subspan(at, n));
      at += n;
    } while (at < st.data.size());
  }
}

void transaction::apply_redo() {
  for (const redo_step& st : redo_steps_) {
    redo_file& f = redo_.at(st.file);
    std::error_code ec;
    if (!f.fd) {  // only truncated
      const int fd = fs::detail::open_data(f.obj, O_WRONLY, ec);
      if (fd < 0) stop_server("redo", ec);
      f.fd = std::make_shared<const fs::unique_fd>(fd);
    }
    const int fd = f.fd->get();
    if (st.truncation) {
      if (::ftruncate(fd, static_cast<off_t>(st.offset)) != 0) stop_server("redo", last_error());
    } else {
      fs::detail::drop_create_verifier(f.obj, fd);
      if ((ec = redo_write(fd, st.offset, st.data, st.cut))) stop_server("redo", ec);
    }
    m_.crash_point();  // after each change applied
  }
  redo_steps_.clear();
  for (const auto& [k, f] : redo_) redo_keys_.push_back(k);
  redo_.clear();  // the spans and the files' descriptors are not needed any more
}

void transaction::write_checkpoint() {
  fs::scoped_fs_root as_root;
  journal_.append(rec_checkpoint{});
  std::error_code ec;
  journal_.write(ec);
  if (ec) stop_server("checkpoint", ec);
}

void transaction::end_checkpoint() {
  journal_.written_durable();
  m_.crash_point();  // after the checkpoint record
  awaiting_checkpoint_ = false;
  end(outcome_entry_);
}

std::string transaction::grave_name(unsigned k) const {
  return "g" + std::to_string(gen_) + "." + std::to_string(k);
}

std::error_code transaction::commit() {
  fs::scoped_fs_root as_root;
  planned_.clear();
  const bool changed = changed_anything();
  std::uint64_t entry = 0;
  std::error_code ec;
  if (changed || !journal_.untouched()) {
    if ((ec = sync_changed())) return ec;
    m_.crash_point();  // during commit: every change durable, no commit record yet
    journal_redo();
    if ((ec = append(rec_commit{}))) return ec;
    if ((ec = barrier())) return ec;  // the commit point (a crash point after it)
    if (!redo_steps_.empty()) {
      apply_redo();
      awaiting_checkpoint_ = true;
    }
    // The outcome, without waiting for its sync: the commit record keeps it until the
    // journal file is written again, which waits for the sync (barrier()). Fail-stop if it
    // cannot be written: TXN_UNKNOWN for a committed transaction would tell the client it
    // never committed; recovery records it from the journal, which is still there.
    outcome_log* log = m_.outcomes(ec);
    if (!ec) {
      if (changed) ec = log->record_unsynced(client_txnid_, nfs4::txn_outcome4::TXN_COMMITTED, entry);
      else ec = log->record(client_txnid_, nfs4::txn_outcome4::TXN_COMMITTED, false);
    }
    if (ec) stop_server("outcome record", ec);
  } else {
    // Changed nothing, wrote nothing: the outcome in memory only (a restart forgets it:
    // TXN_UNKNOWN; committed and aborted leave the same export).
    outcome_log* log = m_.outcomes(ec);
    if (!ec) ec = log->record(client_txnid_, nfs4::txn_outcome4::TXN_COMMITTED, false);
    if (ec) stop_server("outcome record", ec);
  }
  done_ = true;
  outcome_entry_ = entry;
  if (!awaiting_checkpoint_) end(entry);
  return {};
}

void transaction::rollback(bool record_outcome) {
  done_ = true;
  fs::scoped_fs_root as_root;
  std::error_code ec;
  const int sfd = m_.state_fd(ec);
  if (ec) stop_server("rollback", ec);
  // The undo reads every record's backup from the data file, also those whose barrier
  // failed or never came (their changes never ran: copying them back changes nothing).
  // Where the backups still in memory cannot be written (the disk is full), only the
  // records made durable are undone: the others, which those backups belong to, protect
  // changes that never ran.
  if (write_staged()) {
    staged_.clear();
    records_.resize(durable_records_);
    counted_.resize(durable_records_);
  }
  if ((ec = undo(m_.exp(), sfd, data_, records_, created_))) stop_server("rollback", ec);
  // A journal never written to protected no change (none comes before a barrier): there was
  // nothing to undo, and the journal file still holds what it held before.
  const bool written = !journal_.untouched();
  // What was undone is durable before the end record says so; the end record is durable
  // before the locks go (an undone journal must not be undone again once others change
  // what it names).
  if (written && ::syncfs(sfd) != 0) stop_server("rollback", last_error());
  const bool durable = record_outcome && written && changed_anything();
  std::uint64_t entry = 0;
  if (record_outcome) {
    outcome_log* log = m_.outcomes(ec);
    if (!ec) {
      if (durable) ec = log->record_unsynced(client_txnid_, nfs4::txn_outcome4::TXN_ABORTED, entry);
      else ec = log->record(client_txnid_, nfs4::txn_outcome4::TXN_ABORTED, false);
    }
    if (ec) stop_server("outcome record", ec);  // recovery records it from the journal
  }
  if (written) {
    const auto o = durable ? nfs4::txn_outcome4::TXN_ABORTED : nfs4::txn_outcome4::TXN_NONE;
    journal_.drop_unwritten();
    journal_.append(rec_end{static_cast<std::uint32_t>(o)});
    journal_.sync(ec);
    if (ec) stop_server("rollback", ec);
    m_.crash_point();  // after the end record
  }
  end(entry);
  // Latest first: a lock state goes before the open state it was made through.
  for (auto it = releases_.rbegin(); it != releases_.rend(); ++it) (*it)();
  releases_.clear();
}

void transaction::end(std::uint64_t entry) {
  if (!journal_.untouched()) {
    slot_->latest = which_;
    slot_->outcome_entry[which_] = entry;
  }
  m_.crash_point();  // ended, its graves not yet removed
  // A grave a crash leaves (or brings back: the removal is not synced) belongs to a
  // transaction that ended: recovery's sweep removes it. A failure here leaves it to that
  // sweep too.
  std::error_code ec;
  const int sfd = m_.state_fd(ec);
  for (unsigned k = 0; !ec && k < graves_; ++k) ::unlinkat(sfd, grave_name(k).c_str(), 0);
  // Backups of a large transaction do not stay on disk.
  constexpr std::uint64_t data_kept = std::uint64_t(64) << 20;
  if (data_size_ > data_kept) (void)::ftruncate(data_, 0);
  m_.release(slot_);
}

}  // namespace vnfs::server::txn
