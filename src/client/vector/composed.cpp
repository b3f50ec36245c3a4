// vnfs client: the vectorized calls composed of others, over any backend — vlistdir (rounds
// of one READDIR page per directory), vcopy (vgetattrs, then vread/vwrite batches), vscopy's
// fallback to vcopy, ensure_directory (vgetattrs, vmkdir) and remove_tree (vlistdir,
// vremove).
#include <algorithm>
#include <memory>

#include "client/backend.hpp"
#include "client/memory/registration.hpp"
#include "client/path.hpp"
#include "client/vector/item_runner.hpp"
#include "vnfs/client.hpp"
#include "vnfs/nfs4/status.hpp"

namespace vnfs {

using detail::done_fn;

namespace {

/// Bytes vcopy holds in memory at once (one vread/vwrite round).
constexpr std::uint64_t copy_round_bytes = 64u << 20;
/// Directories one vlistdir round asks a page of.
constexpr std::size_t listdir_round = 4096;

void finish_with(vresult* out, done_fn& done) {
  detail::finish_result(*out);
  done(out->error, out->ok_count);
}

/// Ends a call that has no items to report (ensure_directory, remove_tree) with `ec`.
void fail_call(vresult* out, std::error_code ec, done_fn& done) {
  detail::reset_result(*out, 0);
  out->error = ec;
  done(ec, 0);
}

/// A composed call makes several calls: on a backend whose call ends a transaction
/// (transaction::committing) it is refused with errc::bad_argument, nothing sent. True if so.
bool refused_for_commit(const detail::backend* b, std::size_t n, vresult* out, done_fn& done) {
  if (!b || !b->call_commits()) return false;
  detail::reset_result(*out, n);
  out->error = make_error_code(errc::bad_argument);
  done(out->error, 0);
  return true;
}

/// Normalizes `path` into `p`; if it is not a valid client path, ends the call and returns
/// false.
bool normalize_or_fail(const std::string& path, std::string& p, vresult* out, done_fn& done) {
  try {
    p = detail::normalize_path(path);
    return true;
  } catch (const std::system_error& e) {
    fail_call(out, e.code(), done);
    return false;
  }
}

// ---- vlistdir

struct listing {
  dir_stream stream;
  std::size_t root = 0;   ///< index of the caller's directory it lies under
  std::size_t depth = 0;
};

struct listdir_run : std::enable_shared_from_this<listdir_run> {
  client* c = nullptr;
  detail::backend* b = nullptr;
  vlistdir_options options;
  vresult* out = nullptr;
  done_fn done;
  std::vector<std::unique_ptr<listing>> active;  ///< listings not at eof
  std::vector<std::size_t> pending;              ///< per root: listings not finished
  std::vector<dir_stream*> batch;
  std::vector<listing*> batch_of;
  vresult round;

  void next() {
    if (active.empty()) return finish();
    batch.clear();
    batch_of.clear();
    for (std::size_t i = 0; i < active.size() && batch.size() < listdir_round; ++i) {
      active[i]->stream.entries.clear();
      batch.push_back(&active[i]->stream);
      batch_of.push_back(active[i].get());
    }
    b->vreaddir(batch, options.mask | attr::type, &round, [self = shared_from_this()](std::error_code, std::size_t) {
      self->on_round();
    });
  }

  void on_round() {
    std::vector<std::unique_ptr<listing>> found;
    bool failed = false, progressed = false;
    for (std::size_t i = 0; i < batch_of.size(); ++i) {
      listing* l = batch_of[i];
      if (round.status[i]) {
        if (round.status[i] != errc::not_executed) {
          // The first failure under a root is the root's status.
          if (out->status[l->root] == errc::not_executed) out->status[l->root] = round.status[i];
          failed = true;
        }
        continue;
      }
      progressed = true;
      for (const dir_entry& e : l->stream.entries) {
        if (options.callback) options.callback(l->stream.path, e, l->depth, options.user);
        if (options.recursive && e.stat.type == file_type::directory) {
          auto sub = std::make_unique<listing>();
          sub->stream.path = detail::join_path(l->stream.path, e.name);
          sub->root = l->root;
          sub->depth = l->depth + 1;
          ++pending[l->root];
          found.push_back(std::move(sub));
        }
      }
      l->stream.entries.clear();
      if (l->stream.eof) --pending[l->root];
    }
    if (failed) return finish();
    if (!progressed) {  // nothing ran and nothing failed: a backend that would loop forever
      for (std::size_t r = 0; r < pending.size(); ++r)
        if (pending[r] != 0) out->status[r] = make_error_code(errc::protocol_error);
      return finish();
    }
    // Breadth-first: the continuing pages and this level's subdirectories, in order.
    std::erase_if(active, [](const std::unique_ptr<listing>& l) { return l->stream.eof; });
    for (auto& f : found) active.push_back(std::move(f));
    next();
  }

  void finish() {
    for (std::size_t r = 0; r < pending.size(); ++r)
      if (out->status[r] == errc::not_executed && pending[r] == 0) out->status[r] = {};
    finish_with(out, done);
  }
};

// ---- vcopy

/// One part of a copy, at most copy_round_bytes long.
struct copy_piece {
  std::size_t item;
  std::uint64_t src_offset, dst_offset, length;
  bool first;  ///< the item's first piece (creates, and truncates for a whole-file copy)
};

struct copy_run : std::enable_shared_from_this<copy_run> {
  client* c = nullptr;
  std::span<vcopy_item> items;
  vresult* out = nullptr;
  done_fn done;
  std::vector<vattr> sources;
  std::vector<copy_piece> pieces;
  std::size_t next_piece = 0;
  /// Destinations created writable by their owner for the copy and given the source's
  /// read-only mode at the end (a copy in several rounds reopens them for writing).
  std::vector<vattr> mode_fixes;
  std::vector<std::size_t> fix_items;  ///< the item of each mode fix

  bool fixed_item(std::size_t i) const { return std::find(fix_items.begin(), fix_items.end(), i) != fix_items.end(); }
  // one round
  std::vector<std::byte> buffer;
  std::vector<vio> reads, writes;
  std::vector<std::size_t> round_pieces;
  vresult step;

  void start() {
    sources.clear();
    for (auto& it : items) sources.emplace_back(it.src, attr::type | attr::mode | attr::size);
    c->vgetattrs(sources, &step, [self = shared_from_this()](std::error_code, std::size_t) { self->plan(); });
  }

  void plan() {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (step.status[i]) {
        out->status[i] = step.status[i];
        if (step.status[i] != errc::not_executed) return finish_with(out, done);
        continue;
      }
      if (sources[i].stat.type != file_type::regular) {
        out->status[i] = std::make_error_code(std::errc::invalid_argument);
        return finish_with(out, done);
      }
      vcopy_item& it = items[i];
      it.bytes = 0;
      std::uint64_t size = sources[i].stat.size;
      std::uint64_t len = it.src_offset >= size ? 0 : size - it.src_offset;
      if (it.length != vcopy_item::to_end) len = std::min(len, it.length);
      if (len > copy_round_bytes && !(sources[i].stat.mode & 0200)) {
        vattr fix(it.dst, attr::mode);
        fix.stat.mode = sources[i].stat.mode;
        mode_fixes.push_back(std::move(fix));
        fix_items.push_back(i);
      }
      std::uint64_t at = 0;
      do {
        std::uint64_t n = std::min(len - at, copy_round_bytes);
        pieces.push_back({i, it.src_offset + at, it.dst_offset + at, n, at == 0});
        at += n;
      } while (at < len);
    }
    round_start();
  }

  void round_start() {
    if (next_piece == pieces.size()) {
      if (mode_fixes.empty()) return succeed();
      return c->vsetattrs(mode_fixes, &step, [self = shared_from_this()](std::error_code ec, std::size_t) {
        if (!ec) return self->succeed();
        const std::size_t k = self->step.failed_index;  // copied, but its mode could not be set
        self->out->status[k < self->fix_items.size() ? self->fix_items[k] : self->fix_items.front()] = ec;
        finish_with(self->out, self->done);
      });
    }
    std::uint64_t total = 0;
    round_pieces.clear();
    while (next_piece < pieces.size() && (round_pieces.empty() || total + pieces[next_piece].length <= copy_round_bytes)) {
      total += pieces[next_piece].length;
      round_pieces.push_back(next_piece++);
    }
    buffer.assign(total, std::byte{0});
    reads.clear();
    std::uint64_t at = 0;
    for (std::size_t p : round_pieces) {
      const copy_piece& pc = pieces[p];
      reads.emplace_back(items[pc.item].src, pc.src_offset, std::span<std::byte>(buffer.data() + at, pc.length));
      at += pc.length;
    }
    c->vread(reads, &step, [self = shared_from_this()](std::error_code, std::size_t) { self->on_read(); });
  }

  void succeed() {
    for (std::size_t i = 0; i < items.size(); ++i)
      if (out->status[i] == errc::not_executed) out->status[i] = {};
    finish_with(out, done);
  }

  void on_read() {
    for (std::size_t k = 0; k < round_pieces.size(); ++k)
      if (step.status[k]) return fail_piece(k);
    writes.clear();
    for (std::size_t k = 0; k < round_pieces.size(); ++k) {
      const copy_piece& pc = pieces[round_pieces[k]];
      const vcopy_item& it = items[pc.item];
      unsigned flags = pc.first ? vio_flags::create : 0;
      if (pc.first && it.src_offset == 0 && it.length == vcopy_item::to_end) flags |= vio_flags::truncate;
      vio w(it.dst, pc.dst_offset, std::span<const std::byte>(reads[k].buffer.data(), reads[k].bytes), flags);
      w.mode = sources[pc.item].stat.mode;
      if (fixed_item(pc.item)) w.mode |= 0200;  // see mode_fixes
      writes.push_back(std::move(w));
    }
    c->vwrite(writes, &step, [self = shared_from_this()](std::error_code, std::size_t) { self->on_write(); });
  }

  void on_write() {
    for (std::size_t k = 0; k < round_pieces.size(); ++k) {
      if (step.status[k]) return fail_piece(k);
      items[pieces[round_pieces[k]].item].bytes += writes[k].bytes;
    }
    round_start();
  }

  void fail_piece(std::size_t k) {
    std::size_t item = pieces[round_pieces[k]].item;
    for (std::size_t i = 0; i < item; ++i)
      if (out->status[i] == errc::not_executed) out->status[i] = {};
    out->status[item] = step.status[k] == errc::not_executed ? make_error_code(errc::protocol_error) : step.status[k];
    finish_with(out, done);
  }
};

}  // namespace

void client::vlistdir(std::span<const std::string> dirs, vlistdir_options options, vresult* out, done_fn done) {
  if (refused_for_commit(backend_.get(), dirs.size(), out, done)) return;
  detail::reset_result(*out, dirs.size());
  detail::backend* b = backend_ && !backend_->registrations().closed() ? backend_.get() : nullptr;
  auto run = std::make_shared<listdir_run>();
  run->c = this;
  run->b = b;
  run->options = options;
  run->out = out;
  run->done = std::move(done);
  run->pending.assign(dirs.size(), 1);
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    auto l = std::make_unique<listing>();
    try {
      l->stream.path = detail::normalize_path(dirs[i]);
    } catch (const std::system_error& e) {
      out->status[i] = e.code();
      return finish_with(out, run->done);
    }
    l->root = i;
    run->active.push_back(std::move(l));
  }
  if (!b) {
    out->error = make_error_code(errc::closed);
    return run->done(out->error, 0);
  }
  run->next();
}

void client::vcopy(std::span<vcopy_item> items, vresult* out, done_fn done) {
  if (refused_for_commit(backend_.get(), items.size(), out, done)) return;
  detail::reset_result(*out, items.size());
  auto run = std::make_shared<copy_run>();
  run->c = this;
  run->items = items;
  run->out = out;
  run->done = std::move(done);
  run->start();
}

void client::vscopy(std::span<vcopy_item> items, vresult* out, done_fn done) {
  detail::backend* b = backend_ && !backend_->registrations().closed() ? backend_.get() : nullptr;
  if (!b) {
    detail::reset_result(*out, items.size());
    out->error = make_error_code(errc::closed);
    return done(out->error, 0);
  }
  // Items whose paths are normal already go to the backend as they are; else normalized copies.
  std::shared_ptr<std::vector<vcopy_item>> copies;
  if (!std::all_of(items.begin(), items.end(), [](const vcopy_item& it) {
        return detail::is_normal_path(it.src) && detail::is_normal_path(it.dst);
      })) {
    copies = std::make_shared<std::vector<vcopy_item>>(items.begin(), items.end());
    for (std::size_t i = 0; i < copies->size(); ++i) {
      try {
        for (std::string* p : {&(*copies)[i].src, &(*copies)[i].dst})
          if (!detail::is_normal_path(*p)) *p = detail::normalize_path(*p);
      } catch (const std::system_error& e) {
        detail::reset_result(*out, items.size());
        out->status[i] = e.code();
        return finish_with(out, done);
      }
    }
  }
  b->vscopy(copies ? std::span<vcopy_item>(*copies) : items, out,
            [this, copies, items, out, done](std::error_code ec, std::size_t) mutable {
    if (copies)
      for (std::size_t i = 0; i < items.size(); ++i) items[i].bytes = (*copies)[i].bytes;
    if (ec != nfs4::nfsstat4::NFS4ERR_NOTSUPP) return done(out->error, out->ok_count);
    // The server has no COPY: the rest goes through the client.
    std::size_t from = out->failed_index;
    auto before = std::make_shared<vresult>(*out);
    vcopy(items.subspan(from), out, [before, from, out, done](std::error_code, std::size_t) mutable {
      std::vector<std::error_code> tail = std::move(out->status);
      out->status = before->status;
      std::copy(tail.begin(), tail.end(), out->status.begin() + static_cast<std::ptrdiff_t>(from));
      finish_with(out, done);
    });
  });
}

void client::ensure_directory(std::string path, std::uint32_t mode, vresult* out, done_fn done) {
  if (refused_for_commit(backend_.get(), 0, out, done)) return;
  std::string p;
  if (!normalize_or_fail(path, p, out, done)) return;
  auto ancestors = std::make_shared<std::vector<vattr>>();
  for (std::size_t i = 0; i <= p.size(); ++i)
    if (i == p.size() || p[i] == '/') ancestors->emplace_back(p.substr(0, i), attr::type);
  auto step = std::make_shared<vresult>();
  // The existing prefix ends at the first missing ancestor (vgetattrs stops there).
  vgetattrs(*ancestors, step.get(), [this, ancestors, step, mode, out, done](std::error_code ec, std::size_t n) mutable {
    if (ec && ec != std::errc::no_such_file_or_directory) return fail_call(out, ec, done);
    for (std::size_t i = 0; i < n; ++i)
      if ((*ancestors)[i].stat.type != file_type::directory)
        return fail_call(out, std::make_error_code(std::errc::not_a_directory), done);
    auto dirs = std::make_shared<std::vector<vmkdir_item>>();
    for (std::size_t i = n; i < ancestors->size(); ++i) dirs->push_back({*(*ancestors)[i].file.path(), mode});
    vmkdir(*dirs, out, [dirs, done](std::error_code e, std::size_t k) { done(e, k); });
  });
}

namespace {
struct tree_entry {
  std::string path;
  std::size_t depth;
};
void collect(const std::string& dir, const dir_entry& e, std::size_t depth, void* user) {
  static_cast<std::vector<tree_entry>*>(user)->push_back({detail::join_path(dir, e.name), depth});
}
}  // namespace

void client::remove_tree(std::string path, vresult* out, done_fn done) {
  if (refused_for_commit(backend_.get(), 0, out, done)) return;
  std::string p;
  if (!normalize_or_fail(path, p, out, done)) return;
  auto top = std::make_shared<std::vector<vattr>>(1, vattr(p, attr::type));
  auto step = std::make_shared<vresult>();
  vgetattrs(*top, step.get(), [this, p, top, step, out, done](std::error_code ec, std::size_t) mutable {
    auto paths = std::make_shared<std::vector<std::string>>();
    if (ec) return fail_call(out, ec, done);
    if ((*top)[0].stat.type != file_type::directory) {
      paths->push_back(p);
      return vremove(*paths, out, [paths, done](std::error_code e, std::size_t n) { done(e, n); });
    }
    auto found = std::make_shared<std::vector<tree_entry>>();
    auto roots = std::make_shared<std::vector<std::string>>(1, p);
    vlistdir_options o;
    o.mask = attr::type;
    o.recursive = true;
    o.callback = collect;
    o.user = found.get();
    vlistdir(*roots, o, step.get(), [this, p, found, roots, paths, step, out, done](std::error_code e, std::size_t) mutable {
      if (e) return fail_call(out, e, done);
      // Deepest first: every directory after everything in it.
      std::stable_sort(found->begin(), found->end(),
                       [](const tree_entry& a, const tree_entry& b) { return a.depth > b.depth; });
      for (auto& t : *found) paths->push_back(std::move(t.path));
      if (!p.empty()) paths->push_back(p);  // the root of the client itself stays
      vremove(*paths, out, [paths, done](std::error_code e2, std::size_t n) { done(e2, n); });
    });
  });
}

}  // namespace vnfs
