// vnfs archive adapter: extract_archive (see extract_archive.hpp).
#include "vnfs/archive/extract_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <memory>
#include <span>
#include <unordered_set>
#include <vector>

#include "reason.hpp"
#include "vnfs/archive/archive_error.hpp"

namespace vnfs::archive {

namespace {

using archive_ptr = std::unique_ptr<struct archive, decltype(&archive_read_free)>;

/// An archive name made relative to the destination: "" for the entry "." itself; throws
/// for a name with a ".." component.
std::string clean_name(const std::string& raw) {
  std::string out;
  std::size_t i = 0;
  while (i <= raw.size()) {
    std::size_t j = raw.find('/', i);
    if (j == std::string::npos) j = raw.size();
    std::string part = raw.substr(i, j - i);
    if (part == "..") throw archive_error(raw, raw + ": refusing a name with '..'");
    if (!part.empty() && part != ".") out += (out.empty() ? "" : "/") + part;
    i = j + 1;
  }
  return out;
}

std::string parent_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

/// The final attributes of an entry, set after everything is written.
struct final_attrs {
  std::string rel;
  file_type type;
  std::uint32_t mode, uid, gid;
  timespec atime, mtime;
  bool has_atime;
};

class extractor {
 public:
  extractor(client& c, const std::string& dest, int fd, const extract_options& o)
      : c_(c), dest_(dest), o_(o), a_(archive_read_new(), archive_read_free),
        cap_(std::max<std::uint64_t>(o.batch_bytes, 1)), buf_(new std::byte[cap_]) {
    if (!a_) throw archive_error("", "out of memory");
    archive_read_support_format_all(a_.get());
    archive_read_support_filter_all(a_.get());
    if (archive_read_open_fd(a_.get(), fd, o.read_block) != ARCHIVE_OK) {
      const char* s = archive_error_string(a_.get());  // null when libarchive set no message
      throw archive_error("", std::string("cannot read the archive: ") + (s ? s : "unknown error"));
    }
  }

  archive_stats run() {
    vresult r = c_.ensure_directory(dest_, 0755);
    if (!r.ok()) throw archive_error("", "cannot create the directory: " + detail::reason(r.error));
    known_dirs_.insert("");
    std::string last;  // the last entry read whole, for messages
    try {
      for (;;) {
        archive_entry* e = nullptr;
        int rc = archive_read_next_header(a_.get(), &e);
        if (rc == ARCHIVE_EOF) break;
        if (rc < ARCHIVE_WARN) damaged(last);
        std::string rel = clean_name(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
        if (rel.empty()) continue;  // "." itself: the destination is not changed
        add(e, rel);
        last = rel;
      }
    } catch (const archive_error&) {
      // The archive failed (damaged, or a name refused): whatever was read whole before
      // is written and given its attributes; a file cut short is removed. After a failure
      // of the client itself nothing more is tried.
      if (!client_failed_) {
        flush();
        drop_partial();
        set_attributes();
      }
      throw;
    }
    flush();
    set_attributes();
    return stats_;
  }

 private:
  [[noreturn]] void fail(const std::string& entry, const std::string& what, std::error_code ec) {
    client_failed_ = true;
    throw archive_error(entry, entry + ": " + what + ": " + detail::reason(ec));
  }
  [[noreturn]] void damaged(const std::string& last) {
    const char* s = archive_error_string(a_.get());
    std::string where = last.empty() ? "at its start" : "after '" + last + "'";
    throw archive_error(last, "archive damaged " + where + ": " + (s ? s : "unknown error"));
  }
  std::string path_of(const std::string& rel) const { return dest_.empty() ? rel : dest_ + "/" + rel; }
  void report() {
    if (o_.progress) o_.progress(stats_);
  }

  /// The entry's parent must exist before the batch runs: a parent not in the archive so
  /// far (nor existing before) is created at once.
  void need_parent(const std::string& rel) {
    std::string p = parent_of(rel);
    if (known_dirs_.count(p)) return;
    flush();
    vresult r = c_.ensure_directory(path_of(p), 0755);
    if (!r.ok()) fail(p, "cannot create the directory", r.error);
    for (std::string q = p; !q.empty() && known_dirs_.insert(q).second; q = parent_of(q)) {
    }
  }

  void add(archive_entry* e, const std::string& rel) {
    if (entries_ >= o_.batch_items) flush();
    const char* hard = archive_entry_hardlink(e);
    mode_t type = archive_entry_filetype(e);
    std::uint32_t perm = archive_entry_perm(e) & 07777;
    final_attrs fa{rel, file_type::regular, perm, static_cast<std::uint32_t>(archive_entry_uid(e)),
                   static_cast<std::uint32_t>(archive_entry_gid(e)), {}, {}, archive_entry_atime_is_set(e) != 0};
    fa.mtime = {archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
    if (fa.has_atime) fa.atime = {archive_entry_atime(e), archive_entry_atime_nsec(e)};
    need_parent(rel);
    if (hard) {
      hardlinks_.push_back({path_of(clean_name(hard)), path_of(rel)});
      ++entries_;
      ++stats_.hardlinks;
      return;  // the attributes are the target's
    }
    switch (type) {
      case AE_IFDIR:
        if (!known_dirs_.insert(rel).second) {
          // Already made (or listed twice): only its attributes change.
        } else {
          mkdirs_.push_back({path_of(rel), perm | 0700});
          ++entries_;
        }
        fa.type = file_type::directory;
        ++stats_.directories;
        break;
      case AE_IFLNK:
        symlinks_.push_back({archive_entry_symlink(e) ? archive_entry_symlink(e) : "", path_of(rel)});
        fa.type = file_type::symlink;
        ++entries_;
        ++stats_.symlinks;
        break;
      case AE_IFREG:
        read_file(e, rel, perm);
        ++stats_.files;
        break;
      default:
        ++stats_.skipped;
        return;
    }
    attrs_.push_back(std::move(fa));
  }

  /// Reads a file's data into the batch buffer, flushing whenever it fills.
  void read_file(archive_entry* e, const std::string& rel, std::uint32_t perm) {
    std::uint64_t size = archive_entry_size_is_set(e) ? static_cast<std::uint64_t>(archive_entry_size(e)) : 0;
    std::uint64_t off = 0;
    partial_ = path_of(rel);
    partial_flushed_ = false;
    do {
      if (used_ == cap_ && size > off) flush();
      std::uint64_t len = std::min(size - off, cap_ - used_);
      std::uint64_t got = 0;
      while (got < len) {
        la_ssize_t n = archive_read_data(a_.get(), buf_.get() + used_ + got, len - got);
        if (n < 0) damaged_in(rel);
        if (n == 0) damaged_in(rel);  // shorter than its header says
        got += static_cast<std::uint64_t>(n);
      }
      unsigned flags = off == 0 ? (vio_flags::create | vio_flags::truncate) : 0;
      vio io(vfile(path_of(rel)), off, std::span<const std::byte>(buf_.get() + used_, len), flags);
      io.mode = perm | 0600;
      writes_.push_back(std::move(io));
      writes_rel_.push_back(rel);
      ++entries_;
      used_ += len;
      off += len;
      stats_.bytes += len;
    } while (off < size);
    partial_.clear();
  }

  [[noreturn]] void damaged_in(const std::string& rel) {
    // The file's pieces still in the batch are not written.
    while (!writes_.empty() && writes_rel_.back() == rel) {
      writes_.pop_back();
      writes_rel_.pop_back();
    }
    const char* s = archive_error_string(a_.get());
    throw archive_error(rel, "archive damaged in '" + rel + "': " + (s ? s : "unexpected end of data"));
  }

  /// Removes the file that was being read when the archive failed, if a part of it was
  /// already written.
  void drop_partial() {
    if (partial_.empty() || !partial_flushed_) return;
    std::vector<std::string> p{partial_};
    c_.vremove(p);
  }

  /// Runs a vsymlink or vhardlink, replacing what exists at a name (EEXIST) and going on.
  template <class Call>
  void make_links(std::vector<vlink>& items, Call call, const char* what) {
    std::size_t at = 0;
    while (at < items.size()) {
      std::span<const vlink> rest(items.data() + at, items.size() - at);
      vresult r = call(rest);
      if (r.ok()) break;
      const vlink& bad = rest[r.failed_index];
      if (r.error != std::errc::file_exists || replaced_ == bad.path) fail(bad.path, what, r.error);
      std::vector<std::string> gone{bad.path};
      vresult rr = c_.vremove(gone);
      if (!rr.ok()) fail(bad.path, "cannot replace", rr.error);
      replaced_ = bad.path;
      at += r.failed_index;
    }
  }

  /// Applies the batch: directories, data, symlinks, hard links.
  void flush() {
    std::size_t at = 0;
    while (at < mkdirs_.size()) {
      std::span<const vmkdir_item> rest(mkdirs_.data() + at, mkdirs_.size() - at);
      vresult r = c_.vmkdir(rest);
      if (r.ok()) break;
      const std::string& p = rest[r.failed_index].path;
      bool existing_dir = false;
      if (r.error == std::errc::file_exists) {
        std::vector<vattr> st{vattr(p, attr::type)};
        existing_dir = c_.vgetattrs(st).ok() && st[0].stat.type == file_type::directory;
      }
      if (!existing_dir) fail(p, "cannot create the directory", r.error);
      at += r.failed_index + 1;
    }
    if (!writes_.empty()) {
      vresult r = c_.vwrite(writes_);
      if (!r.ok()) fail(writes_rel_[r.failed_index], "cannot write", r.error);
      if (!partial_.empty()) partial_flushed_ = true;
    }
    make_links(symlinks_, [&](std::span<const vlink> s) { return c_.vsymlink(s); }, "cannot make the symlink");
    make_links(hardlinks_, [&](std::span<const vlink> s) { return c_.vhardlink(s); }, "cannot make the hard link");
    mkdirs_.clear();
    writes_.clear();
    writes_rel_.clear();
    symlinks_.clear();
    hardlinks_.clear();
    used_ = 0;
    entries_ = 0;
    report();
  }

  /// Mode and times: files and symlinks first, then directories deepest first.
  void set_attributes() {
    std::stable_sort(attrs_.begin(), attrs_.end(), [](const final_attrs& x, const final_attrs& y) {
      auto rank = [](const final_attrs& f) {
        return f.type == file_type::directory ? 1 + std::count(f.rel.begin(), f.rel.end(), '/') : 0;
      };
      auto rx = rank(x), ry = rank(y);
      if ((rx == 0) != (ry == 0)) return rx == 0;
      return rx > ry;
    });
    // Owners first, in a pass of their own: a change of owner clears set-user-ID and
    // set-group-ID bits (chown(2)), so the modes must come after it.
    if (o_.restore_owner) {
      std::vector<vattr> owners;
      for (const final_attrs& f : attrs_) {
        vattr v(path_of(f.rel), attr::uid | attr::gid);
        v.stat.uid = f.uid;
        v.stat.gid = f.gid;
        owners.push_back(std::move(v));
      }
      run_setattrs(owners, "cannot set the owner");
    }
    std::vector<vattr> items;
    for (const final_attrs& f : attrs_) {
      vattr v(path_of(f.rel), attr::mtime | attr::atime);
      if (f.type != file_type::symlink) v.mask |= attr::mode;
      v.stat.mode = f.mode;
      v.stat.mtime = f.mtime;
      v.stat.atime = f.has_atime ? f.atime : f.mtime;
      items.push_back(std::move(v));
    }
    run_setattrs(items, "cannot set attributes");
  }

  /// vsetattrs of items[i] for attrs_[i], in batches of batch_items.
  void run_setattrs(const std::vector<vattr>& items, const char* what) {
    for (std::size_t at = 0; at < items.size(); at += o_.batch_items) {
      std::span<const vattr> batch(items.data() + at, std::min(o_.batch_items, items.size() - at));
      vresult r = c_.vsetattrs(batch);
      if (!r.ok()) fail(attrs_[at + r.failed_index].rel, what, r.error);
    }
  }

  client& c_;
  std::string dest_;
  const extract_options& o_;
  archive_ptr a_;
  std::uint64_t cap_;
  std::unique_ptr<std::byte[]> buf_;
  std::uint64_t used_ = 0;
  std::size_t entries_ = 0;
  std::unordered_set<std::string> known_dirs_;
  std::vector<vmkdir_item> mkdirs_;
  std::vector<vio> writes_;
  std::vector<std::string> writes_rel_;
  std::vector<vlink> symlinks_, hardlinks_;
  std::vector<final_attrs> attrs_;
  std::string partial_, replaced_;
  bool partial_flushed_ = false;
  bool client_failed_ = false;  ///< a vnfs call failed (fail()): no more calls after it
  archive_stats stats_;
};

}  // namespace

archive_stats extract_archive(client& c, const std::string& dest, int fd, const extract_options& options) {
  extractor x(c, dest, fd, options);
  return x.run();
}

}  // namespace vnfs::archive
