// vnfs archive adapter: create_archive (see create_archive.hpp).
#include "vnfs/archive/create_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "reason.hpp"
#include "vnfs/archive/archive_error.hpp"

namespace vnfs::archive {

namespace {

/// An object of the tree: its path below the root and its attributes.
struct node {
  std::string rel;
  file_stat stat;
};

struct walk_state {
  std::string root;
  std::vector<node> nodes;
};

void on_entry(const std::string& dir, const dir_entry& e, std::size_t, void* user) {
  auto* w = static_cast<walk_state*>(user);
  std::string rel = dir.size() > w->root.size() ? dir.substr(w->root.empty() ? 0 : w->root.size() + 1) : "";
  w->nodes.push_back({rel.empty() ? e.name : rel + "/" + e.name, e.stat});
}

using archive_ptr = std::unique_ptr<struct archive, decltype(&archive_write_free)>;
using entry_ptr = std::unique_ptr<archive_entry, decltype(&archive_entry_free)>;

class archiver {
 public:
  archiver(client& c, const std::string& root, int fd, const create_options& o)
      : c_(c), root_(root), o_(o), a_(archive_write_new(), archive_write_free) {
    if (!a_) throw archive_error("", "out of memory");
    if (archive_write_set_format_by_name(a_.get(), o.format.c_str()) != ARCHIVE_OK)
      throw archive_error("", "unknown archive format '" + o.format + "': " + archive_error_string(a_.get()));
    if (o.filter != "none" && archive_write_add_filter_by_name(a_.get(), o.filter.c_str()) != ARCHIVE_OK)
      throw archive_error("", "unknown or unavailable compression '" + o.filter + "': " + archive_error_string(a_.get()));
    // Compressed output is written in full blocks; uncompressed tar pads to 10 KiB records.
    if (archive_write_open_fd(a_.get(), fd) != ARCHIVE_OK) fail("", "cannot open the archive");
  }

  archive_stats run() {
    walk();
    // Depth-first order, each directory followed by what is in it: GNU tar restores a
    // directory's times when its extraction leaves it, so its contents must follow it.
    std::vector<std::pair<std::string, const node*>> keyed;
    for (const node& n : nodes_) {
      std::string k = n.rel;
      std::replace(k.begin(), k.end(), '/', '\0');
      keyed.emplace_back(std::move(k), &n);
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<const node*> order, links;
    std::unordered_map<std::uint64_t, const node*> first_name;
    for (auto& [k, n] : keyed) {
      if (n->stat.type == file_type::symlink) links.push_back(n);
      if (n->stat.type == file_type::regular && n->stat.nlink > 1) {
        auto [it, fresh] = first_name.emplace(n->stat.fileid, n);
        if (!fresh) hardlink_target_[n] = it->second->rel;
      }
      if (n->stat.type == file_type::directory || n->stat.type == file_type::symlink ||
          n->stat.type == file_type::regular)
        order.push_back(n);
      else
        ++stats_.skipped;
    }
    read_symlinks(links);
    write_entries(order);
    report();
    if (archive_write_close(a_.get()) != ARCHIVE_OK) fail("", "cannot finish the archive");
    return stats_;
  }

  [[noreturn]] void fail(const std::string& entry, const std::string& what) {
    const char* s = archive_error_string(a_.get());
    throw archive_error(entry, (entry.empty() ? "" : entry + ": ") + what + ": " + (s ? s : "unknown error"));
  }
  [[noreturn]] void fail(const std::string& entry, const std::string& what, std::error_code ec) {
    throw archive_error(entry, (entry.empty() ? "" : entry + ": ") + what + ": " + detail::reason(ec));
  }
  std::string path_of(const std::string& rel) const { return root_.empty() ? rel : root_ + "/" + rel; }
  void report() {
    if (o_.progress) o_.progress(stats_);
  }

  void walk() {
    walk_state w{root_, {}};
    std::vector<std::string> dirs{root_};
    vlistdir_options lo;
    lo.mask = attr::stat;
    lo.recursive = true;
    lo.callback = on_entry;
    lo.user = &w;
    vresult r = c_.vlistdir(dirs, lo);
    if (!r.ok()) fail("", "cannot list", r.error);
    nodes_ = std::move(w.nodes);
  }

  entry_ptr make_entry(const node& n, std::uint64_t size) {
    entry_ptr e(archive_entry_new2(a_.get()), archive_entry_free);
    archive_entry_set_pathname(e.get(), n.rel.c_str());
    unsigned type = n.stat.type == file_type::directory ? AE_IFDIR
                    : n.stat.type == file_type::symlink ? AE_IFLNK
                                                        : AE_IFREG;
    archive_entry_set_filetype(e.get(), type);
    archive_entry_set_perm(e.get(), n.stat.mode & 07777);
    archive_entry_set_uid(e.get(), n.stat.uid);
    archive_entry_set_gid(e.get(), n.stat.gid);
    archive_entry_set_mtime(e.get(), n.stat.mtime.tv_sec, n.stat.mtime.tv_nsec);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(size));
    return e;
  }

  void write_header(const node& n, std::uint64_t size, const std::string* link = nullptr) {
    entry_ptr e = make_entry(n, size);
    if (link) archive_entry_set_symlink(e.get(), link->c_str());
    if (archive_write_header(a_.get(), e.get()) < ARCHIVE_WARN) fail(n.rel, "cannot write the header");
  }

  void read_symlinks(const std::vector<const node*>& links) {
    for (std::size_t at = 0; at < links.size(); at += o_.batch_items) {
      std::size_t n = std::min(o_.batch_items, links.size() - at);
      std::vector<std::string> paths;
      for (std::size_t i = 0; i < n; ++i) paths.push_back(path_of(links[at + i]->rel));
      std::vector<std::string> targets;
      vresult r = c_.vreadlink(paths, &targets);
      if (!r.ok()) fail(links[at + r.failed_index]->rel, "cannot read the link", r.error);
      for (std::size_t i = 0; i < n; ++i) link_target_[links[at + i]] = std::move(targets[i]);
    }
  }

  /// Writes the entries in `order`, in rounds of at most batch_bytes of file data and
  /// batch_items files (one vread each); a file over batch_bytes spans rounds, its header
  /// written with its first piece, so entries stay whole and in order.
  void write_entries(const std::vector<const node*>& order) {
    std::uint64_t cap = std::max<std::uint64_t>(o_.batch_bytes, 1);
    std::unique_ptr<std::byte[]> buf(new std::byte[cap]);
    std::size_t next = 0;        // the entry the next round starts with
    std::uint64_t next_off = 0;  // and where in its data
    struct piece {
      const node* n;
      std::uint64_t offset, length, at;
    };
    while (next < order.size()) {
      std::vector<piece> pieces;
      std::size_t files = 0;
      std::uint64_t used = 0;
      while (next < order.size()) {
        const node* n = order[next];
        bool data = n->stat.type == file_type::regular && !hardlink_target_.count(n);
        if (data && (files == o_.batch_items || (used == cap && n->stat.size > next_off))) break;
        std::uint64_t len = data ? std::min(n->stat.size - next_off, cap - used) : 0;
        pieces.push_back({n, next_off, len, used});
        files += data;
        used += len;
        next_off += len;
        if (!data || next_off == n->stat.size) {
          ++next;
          next_off = 0;
        }
      }
      std::vector<vio> ios;
      std::vector<std::size_t> io_of;  // the piece of each vio (pieces without data are not read)
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (pieces[i].length == 0) continue;
        ios.emplace_back(vfile(path_of(pieces[i].n->rel)), pieces[i].offset,
                         std::span<std::byte>(buf.get() + pieces[i].at, pieces[i].length));
        io_of.push_back(i);
      }
      if (!ios.empty()) {
        vresult r = c_.vread(ios);
        if (!r.ok()) fail(pieces[io_of[r.failed_index]].n->rel, "cannot read", r.error);
      }
      std::size_t k = 0;
      for (const piece& p : pieces) {
        const node& n = *p.n;
        if (n.stat.type == file_type::directory) {
          write_header(n, 0);
          ++stats_.directories;
        } else if (n.stat.type == file_type::symlink) {
          write_header(n, 0, &link_target_[&n]);
          ++stats_.symlinks;
        } else if (auto h = hardlink_target_.find(&n); h != hardlink_target_.end()) {
          entry_ptr e = make_entry(n, 0);
          archive_entry_set_hardlink(e.get(), h->second.c_str());
          if (archive_write_header(a_.get(), e.get()) < ARCHIVE_WARN) fail(n.rel, "cannot write the header");
          ++stats_.hardlinks;
        } else {
          if (p.offset == 0) write_header(n, n.stat.size);
          if (p.length > 0) {
            std::uint64_t got = ios[k++].bytes;
            // A file that shrank since it was listed: libarchive pads the entry with zeros
            // to the size in its header when the entry is finished.
            if (got > 0 && archive_write_data(a_.get(), buf.get() + p.at, got) < 0) fail(n.rel, "cannot write");
            stats_.bytes += got;
          }
          if (p.offset + p.length == n.stat.size) {
            if (archive_write_finish_entry(a_.get()) < ARCHIVE_WARN) fail(n.rel, "cannot write");
            ++stats_.files;
          }
        }
      }
      report();
    }
  }

  client& c_;
  std::string root_;
  const create_options& o_;
  archive_ptr a_;
  std::vector<node> nodes_;
  std::unordered_map<const node*, std::string> hardlink_target_, link_target_;
  archive_stats stats_;
};

}  // namespace

archive_stats create_archive(client& c, const std::string& root, int fd, const create_options& options) {
  // Failures of the root itself name no entry: the caller knows what it asked for.
  std::vector<vattr> top{vattr(root, attr::type)};
  vresult r = c.vgetattrs(top);
  if (!r.ok()) throw archive_error("", "cannot stat: " + detail::reason(r.error));
  if (top[0].stat.type != file_type::directory) throw archive_error("", "not a directory");
  archiver a(c, root, fd, options);
  return a.run();
}

}  // namespace vnfs::archive
