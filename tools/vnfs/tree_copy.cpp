// vnfs command line: the copy engine (see tree_copy.hpp).
#include "tree_copy.hpp"

#include <algorithm>
#include <span>
#include <unordered_map>

#include "diagnostics.hpp"
#include "tree_listing.hpp"

namespace vnfs::cli {

namespace {

/// Bytes of file data held in memory at once (one vread/vwrite round), and items per call.
constexpr std::uint64_t batch_bytes = std::uint64_t(64) << 20;
constexpr std::size_t batch_items = 4096;

/// Something to create at the destination; `rel` is its path below the copy's root.
struct object {
  std::string rel;
  file_stat stat;
  std::size_t depth = 0;
};

/// A part of a file's data moved in one round (files over batch_bytes take several).
struct piece {
  std::size_t file;
  std::uint64_t offset, length;
  bool first, last;
};

class tree_copier {
 public:
  tree_copier(const copy_job& job, progress& bar) : job_(job), bar_(bar) {}

  void run(const file_stat& root) {
    gather(root);
    inspect_destination(root);
    bar_.expect(dirs_.size() + links_.size() + files_.size(), file_bytes_);
    make_directories();
    copy_symlinks();
    std::vector<std::size_t> on_server, through;
    for (std::size_t i = 0; i < files_.size(); ++i) {
      // vscopy's client-side fallback creates a file with the source's mode and reopens it
      // for each further 64 MiB: a file we could not write to would fail there, so those
      // come through here (created writable, given their mode at the end).
      bool reopenable = (files_[i].stat.mode & 0200) || files_[i].stat.size <= batch_bytes;
      (job_.same_client && reopenable ? on_server : through).push_back(i);
    }
    // file://'s vscopy creates a file with exactly its source's mode: only its times are
    // left to set. (Not for set-id or sticky bits, which writing may clear.)
    mode_set_.assign(files_.size(), false);
    stamped_.assign(files_.size(), false);
    if (job_.dst_loc.local)
      for (std::size_t i : on_server)
        mode_set_[i] = !existing_.count(files_[i].rel) && (files_[i].stat.mode & 07000) == 0;
    copy_files_on_server(on_server);
    copy_files_through(through);
    set_attributes();
  }

 private:
  std::string src_path(const std::string& rel) const { return under(job_.src_loc.path, rel); }
  std::string dst_path(const std::string& rel) const { return under(job_.dst_loc.path, rel); }
  std::string src_text(const std::string& rel) const { return rel.empty() ? job_.src_loc.text : job_.src_loc.child(rel).text; }
  std::string dst_text(const std::string& rel) const { return rel.empty() ? job_.dst_loc.text : job_.dst_loc.child(rel).text; }
  static std::string under(const std::string& root, const std::string& rel) {
    return rel.empty() ? root : join_path(root, rel);
  }

  void add(object o) {
    switch (o.stat.type) {
      case file_type::directory: dirs_.push_back(std::move(o)); break;
      case file_type::symlink: links_.push_back(std::move(o)); break;
      case file_type::regular:
        file_bytes_ += o.stat.size;
        files_.push_back(std::move(o));
        break;
      default: report("skipping special file '" + src_text(o.rel) + "'"); break;
    }
  }

  void gather(const file_stat& root) {
    add({"", root, 0});
    if (root.type != file_type::directory) return;
    const std::string& base = job_.src_loc.path;
    for (auto& n : list_tree(*job_.src, base, job_.src_loc.text, copy_attrs, true)) {
      std::string p = n.path();
      add({base.empty() ? p : p.substr(base.size() + 1), n.entry.stat, n.depth + 1});
    }
  }

  /// What exists at the destination already, and what must go before the copy.
  void inspect_destination(const file_stat& root) {
    if (job_.dst_missing) return;  // a new tree: nothing to merge into or to remove first
    std::vector<vattr> top{vattr(job_.dst_loc.path, attr::type)};
    vresult r = job_.dst->vgetattrs(top);
    if (!r.ok()) {
      if (r.error == std::errc::no_such_file_or_directory) return;
      throw command_error(failure("cannot stat", job_.dst_loc.text, r.error));
    }
    file_type dst_type = top[0].stat.type;
    bool src_dir = root.type == file_type::directory;
    if (src_dir && dst_type != file_type::directory)
      throw command_error("cannot overwrite non-directory '" + job_.dst_loc.text + "' with directory '" +
                          job_.src_loc.text + "'");
    if (!src_dir && dst_type == file_type::directory)
      throw command_error("cannot overwrite directory '" + job_.dst_loc.text + "' with non-directory '" +
                          job_.src_loc.text + "'");
    existing_[""] = dst_type;
    if (src_dir) {
      const std::string& base = job_.dst_loc.path;
      for (auto& n : list_tree(*job_.dst, base, job_.dst_loc.text, attr::type, true)) {
        std::string p = n.path();
        existing_[base.empty() ? p : p.substr(base.size() + 1)] = n.entry.stat.type;
      }
    }
    std::vector<std::string> doomed;
    for (const auto& d : dirs_) {
      auto it = existing_.find(d.rel);
      if (it != existing_.end() && it->second != file_type::directory)
        throw command_error("cannot overwrite non-directory '" + dst_text(d.rel) + "' with directory '" +
                            src_text(d.rel) + "'");
    }
    for (const auto* group : {&files_, &links_}) {
      for (const auto& o : *group) {
        auto it = existing_.find(o.rel);
        if (it == existing_.end()) continue;
        if (it->second == file_type::directory)
          throw command_error("cannot overwrite directory '" + dst_text(o.rel) + "' with non-directory '" +
                              src_text(o.rel) + "'");
        // A regular file is written over in place; anything else is replaced.
        if (o.stat.type != file_type::regular || it->second != file_type::regular) doomed.push_back(dst_path(o.rel));
      }
    }
    for (std::size_t at = 0; at < doomed.size(); at += batch_items) {
      std::span<const std::string> batch(doomed.data() + at, std::min(batch_items, doomed.size() - at));
      vresult rr = job_.dst->vremove(batch);
      if (!rr.ok()) throw command_error(failure("cannot remove", batch[rr.failed_index], rr.error));
    }
  }

  void make_directories() {
    // dirs_ is in listing order (breadth-first): every parent before its children. Made
    // writable and searchable for us until set_attributes gives them their real mode.
    std::vector<vmkdir_item> items;
    std::vector<const object*> of;
    for (const auto& d : dirs_) {
      if (existing_.count(d.rel)) continue;
      items.push_back({dst_path(d.rel), (d.stat.mode & 07777) | 0700});
      of.push_back(&d);
    }
    bar_.advance(dirs_.size() - items.size(), 0);
    for (std::size_t at = 0; at < items.size(); at += batch_items) {
      std::span<const vmkdir_item> batch(items.data() + at, std::min(batch_items, items.size() - at));
      vresult r = job_.dst->vmkdir(batch);
      bar_.advance(r.ok_count, 0);
      if (!r.ok()) throw command_error(failure("cannot create directory", dst_text(of[at + r.failed_index]->rel), r.error));
    }
  }

  void copy_symlinks() {
    for (std::size_t at = 0; at < links_.size(); at += batch_items) {
      std::size_t n = std::min(batch_items, links_.size() - at);
      std::vector<std::string> paths;
      for (std::size_t k = 0; k < n; ++k) paths.push_back(src_path(links_[at + k].rel));
      std::vector<std::string> targets;
      vresult r = job_.src->vreadlink(paths, &targets);
      if (!r.ok())
        throw command_error(failure("cannot read symbolic link", src_text(links_[at + r.failed_index].rel), r.error));
      std::vector<vlink> made;
      for (std::size_t k = 0; k < n; ++k) made.push_back({targets[k], dst_path(links_[at + k].rel)});
      r = job_.dst->vsymlink(made);
      bar_.advance(r.ok_count, 0);
      if (!r.ok())
        throw command_error(failure("cannot create symbolic link", dst_text(links_[at + r.failed_index].rel), r.error));
    }
  }

  /// Both ends on one client: vscopy (the server copies where it can; the client falls
  /// back to reading and writing itself).
  void copy_files_on_server(const std::vector<std::size_t>& which) {
    std::size_t at = 0;
    while (at < which.size()) {
      std::vector<vcopy_item> items;
      std::uint64_t bytes = 0;
      std::size_t from = at;
      while (at < which.size() && items.size() < batch_items &&
             (items.empty() || bytes + files_[which[at]].stat.size <= batch_bytes)) {
        vcopy_item it;
        it.src = src_path(files_[which[at]].rel);
        it.dst = dst_path(files_[which[at]].rel);
        bytes += files_[which[at]].stat.size;
        items.push_back(std::move(it));
        ++at;
      }
      vresult r = job_.src->vscopy(items);
      std::uint64_t moved = 0;
      for (const auto& it : items) moved += it.bytes;
      bar_.advance(r.ok_count, moved);
      if (!r.ok()) {
        const object& f = files_[which[from + r.failed_index]];
        throw command_error("cannot copy '" + src_text(f.rel) + "' to '" + dst_text(f.rel) + "': " + reason(r.error));
      }
    }
  }

  /// Ends on two clients (or files vscopy cannot take): the data passes through here, in
  /// rounds of at most batch_bytes.
  void copy_files_through(const std::vector<std::size_t>& which) {
    std::vector<piece> pieces;
    for (std::size_t i : which) {
      std::uint64_t size = files_[i].stat.size, off = 0;
      do {
        std::uint64_t n = std::min(size - off, batch_bytes);
        pieces.push_back({i, off, n, off == 0, off + n == size});
        off += n;
      } while (off < size);
    }
    std::vector<std::byte> buffer;
    std::size_t at = 0;
    while (at < pieces.size()) {
      std::size_t from = at;
      std::uint64_t bytes = 0;
      while (at < pieces.size() && at - from < batch_items && (at == from || bytes + pieces[at].length <= batch_bytes))
        bytes += pieces[at++].length;
      if (buffer.size() < bytes) buffer.resize(bytes);
      // Read every non-empty piece into its place in the buffer.
      std::vector<vio> reads;
      std::vector<std::size_t> read_piece;
      std::vector<std::uint64_t> place(at - from);
      std::uint64_t pos = 0;
      for (std::size_t p = from; p < at; ++p) {
        place[p - from] = pos;
        if (pieces[p].length == 0) continue;
        reads.emplace_back(src_path(files_[pieces[p].file].rel), pieces[p].offset,
                           std::span<std::byte>(buffer.data() + pos, pieces[p].length));
        read_piece.push_back(p);
        pos += pieces[p].length;
      }
      std::vector<std::uint64_t> got(at - from, 0);
      if (!reads.empty()) {
        vresult r = job_.src->vread(reads);
        if (!r.ok())
          throw command_error(failure("cannot read", src_text(files_[pieces[read_piece[r.failed_index]].file].rel), r.error));
        for (std::size_t k = 0; k < reads.size(); ++k) got[read_piece[k] - from] = reads[k].bytes;
      }
      std::vector<vio> writes;
      for (std::size_t p = from; p < at; ++p) {
        const object& f = files_[pieces[p].file];
        vio w(dst_path(f.rel), pieces[p].offset,
              std::span<const std::byte>(buffer.data() + place[p - from], got[p - from]),
              pieces[p].first ? vio_flags::create | vio_flags::truncate : 0u);
        w.mode = (f.stat.mode & 07777) | 0200;  // writable by us until its last piece is written
        if (pieces[p].last) {  // then its mode and times, in the same COMPOUND
          w.attrs_after = attr::mode | attr::atime | attr::mtime;
          w.attrs = f.stat;
          w.attrs.mode &= 07777;
          stamped_[pieces[p].file] = true;
        }
        writes.push_back(std::move(w));
      }
      vresult r = job_.dst->vwrite(writes);
      std::uint64_t files_done = 0, moved = 0;
      for (std::size_t k = 0; k < r.ok_count && k < writes.size(); ++k) {
        moved += writes[k].bytes;
        if (pieces[from + k].last) ++files_done;
      }
      bar_.advance(files_done, moved);
      if (!r.ok()) throw command_error(failure("cannot write", dst_text(files_[pieces[from + r.failed_index].file].rel), r.error));
    }
  }

  void set_attributes() {
    std::vector<vattr> items;
    std::vector<const object*> of;
    auto add_item = [&](const object& o, unsigned mask) {
      vattr a(dst_path(o.rel), mask);
      a.stat = o.stat;
      a.stat.mode &= 07777;
      items.push_back(std::move(a));
      of.push_back(&o);
    };
    for (std::size_t i = 0; i < files_.size(); ++i)
      if (!stamped_[i]) add_item(files_[i], (mode_set_[i] ? 0u : unsigned(attr::mode)) | attr::atime | attr::mtime);
    for (const auto& l : links_) add_item(l, attr::atime | attr::mtime);
    // Directories deepest first: setting a child's attributes does not touch its parent's
    // times, but a parent's mode must not lock us out of its children before they are done.
    std::vector<const object*> dirs;
    for (const auto& d : dirs_) dirs.push_back(&d);
    std::stable_sort(dirs.begin(), dirs.end(), [](const object* a, const object* b) { return a->depth > b->depth; });
    for (const object* d : dirs) add_item(*d, attr::mode | attr::atime | attr::mtime);
    for (std::size_t at = 0; at < items.size(); at += batch_items) {
      std::span<const vattr> batch(items.data() + at, std::min(batch_items, items.size() - at));
      vresult r = job_.dst->vsetattrs(batch);
      if (!r.ok()) throw command_error(failure("cannot set attributes of", dst_text(of[at + r.failed_index]->rel), r.error));
    }
  }

  const copy_job& job_;
  progress& bar_;
  std::vector<object> dirs_, files_, links_;
  std::vector<bool> mode_set_;  ///< of each file: created with its mode by the copy itself
  std::vector<bool> stamped_;   ///< of each file: given its mode and times with its last piece
  std::uint64_t file_bytes_ = 0;
  std::unordered_map<std::string, file_type> existing_;
};

}  // namespace

void copy_tree(const copy_job& job, const file_stat& src_stat, progress& bar) { tree_copier(job, bar).run(src_stat); }

}  // namespace vnfs::cli
