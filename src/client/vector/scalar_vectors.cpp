// vnfs client: the default vectorized calls of every backend — each item as the scalar calls
// a POSIX program makes (open, read/write, close; stat; mkdir; ...), one item after another,
// stopping at the first failure. This is the "scalar API" baseline the COMPOUND planner is
// measured against (client_options::compound_vectors); file:// makes the same POSIX calls
// item by item on one worker (local_backend.cpp).
#include <fcntl.h>

#include <algorithm>
#include <memory>

#include "client/backend.hpp"
#include "client/result_size.hpp"
#include "client/vector/attr_mask.hpp"
#include "client/vector/item_runner.hpp"
#include "vnfs/nfs4/status.hpp"

namespace vnfs::detail {

namespace {

/// Largest transfer one scalar read or write asks for.
constexpr std::size_t chunk = max_io;

/// Moves vio data through an open file, chunk by chunk, until done or a short transfer.
struct transfer : std::enable_shared_from_this<transfer> {
  backend* b = nullptr;
  file f;
  vio* item = nullptr;
  bool writing = false;
  done_fn done;

  void next() {
    std::span<std::byte> all = item->data();
    std::size_t at = static_cast<std::size_t>(item->bytes);
    if (at == all.size()) return finish({});
    std::size_t n = std::min(chunk, all.size() - at);
    auto self = shared_from_this();
    auto step = [self, n](std::error_code ec, std::size_t got) {
      if (ec) return self->finish(ec);
      self->item->bytes += got;
      if (got < n) {  // short: the end of the file (reads)
        if (!self->writing) self->item->eof = true;
        return self->finish({});
      }
      self->next();
    };
    const std::uint64_t off = item->offset + at;
    if (writing) {
      write_source s;
      if (item->region.data()) s.registered = item->region.sub(at, n);
      else s.plain = all.subspan(at, n);
      b->write(f, off, s, step);
    } else {
      read_target t;
      if (item->region.data()) t.registered = item->region.sub(at, n);
      else t.plain = all.subspan(at, n);
      b->read(f, off, t, step);
    }
  }
  void finish(std::error_code ec) {
    if (ec || !writing || !(item->flags & vio_flags::stable)) return done(ec, 0);
    b->fsync(f, [self = shared_from_this()](std::error_code e, std::size_t) { self->done(e, 0); });
  }
};

void move_data(backend* b, const file& f, vio& item, bool writing, done_fn done) {
  auto t = std::make_shared<transfer>();
  t->b = b;
  t->f = f;
  t->item = &item;
  t->writing = writing;
  t->done = std::move(done);
  item.bytes = 0;
  item.eof = false;
  if (writing && (item.flags & vio_flags::append)) {
    // As a kernel client appends: at the size it last saw (not atomic; see vio_flags).
    auto st = std::make_shared<file_stat>();
    b->fstat(f, st.get(), [t, st](std::error_code ec, std::size_t) {
      if (ec) return t->done(ec, 0);
      t->item->offset = st->size;
      t->next();
    });
    return;
  }
  t->next();
}

/// Opens a path-named item, runs `body`, closes it (the close's error counts only when the
/// body succeeded).
void with_open_file(backend* b, const std::string& path, int flags, std::uint32_t mode,
                    std::function<void(const file&, done_fn)> body, done_fn done) {
  auto f = std::make_shared<file>();
  b->open(path, flags, mode, f.get(), [b, f, body = std::move(body), done](std::error_code ec, std::size_t) {
    if (ec) return done(ec, 0);
    body(*f, [b, f, done](std::error_code ec2, std::size_t) {
      b->close(*f, [ec2, done](std::error_code ec3, std::size_t) { done(ec2 ? ec2 : ec3, 0); });
    });
  });
}

void io_item(backend* b, vio& item, bool writing, done_fn done) {
  if (const file* f = item.file.descriptor()) return move_data(b, *f, item, writing, std::move(done));
  std::string path = item.file.path() ? *item.file.path() : handle_path(*item.file.handle());
  const int flags = open_flags_of(item, writing);
  with_open_file(
      b, path, flags, item.mode,
      [b, &item, writing](const file& f, done_fn d) { move_data(b, f, item, writing, std::move(d)); },
      std::move(done));
}

}  // namespace

void backend::vopen(std::span<vopen_item> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) {
    open(items[i].path, items[i].flags, items[i].mode, &items[i].result, std::move(d));
  }, out, std::move(done));
}

void backend::vclose(std::span<const file> files, vresult* out, done_fn done) {
  run_in_order(files.size(), [this, files](std::size_t i, done_fn d) { close(files[i], std::move(d)); }, out,
               std::move(done));
}

void backend::vread(std::span<vio> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) { io_item(this, items[i], false, std::move(d)); },
               out, std::move(done));
}

void backend::vwrite(std::span<vio> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) {
    vio& v = items[i];
    io_item(this, v, true, [this, &v, d = std::move(d)](std::error_code ec, std::size_t n) mutable {
      if (ec || !v.attrs_after) return d(ec, n);
      setattr(path_of(v.file), v.attrs_after, v.attrs, std::move(d));
    });
  }, out, std::move(done));
}

void backend::vgetattrs(std::span<vattr> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) {
    vattr& a = items[i];
    auto st = std::make_shared<file_stat>();
    auto fill = [&a, st, d](std::error_code ec, std::size_t) {
      if (!ec) copy_masked(*st, a.mask, a.stat);
      d(ec, 0);
    };
    if (const file* f = a.file.descriptor()) return fstat(*f, st.get(), fill);
    std::string path = a.file.path() ? *a.file.path() : handle_path(*a.file.handle());
    if (a.mask & attr::handle) {
      auto b = reinterpret_cast<const std::byte*>(path.data());
      a.handle.bytes.assign(b, b + path.size());
    }
    stat(path, st.get(), fill);
  }, out, std::move(done));
}

void backend::vsetattrs(std::span<const vattr> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) {
    const vattr& a = items[i];
    setattr(path_of(a.file), a.mask, a.stat, std::move(d));
  }, out, std::move(done));
}

void backend::vmkdir(std::span<const vmkdir_item> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) { mkdir(items[i].path, items[i].mode, std::move(d)); },
               out, std::move(done));
}

void backend::vsymlink(std::span<const vlink> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) {
    symlink(items[i].target, items[i].path, std::move(d));
  }, out, std::move(done));
}

void backend::vhardlink(std::span<const vlink> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) { link(items[i].target, items[i].path, std::move(d)); },
               out, std::move(done));
}

void backend::vreadlink(std::span<const std::string> paths, std::string* targets, vresult* out, done_fn done) {
  run_in_order(paths.size(), [this, paths, targets](std::size_t i, done_fn d) {
    readlink(paths[i], &targets[i], std::move(d));
  }, out, std::move(done));
}

void backend::vremove(std::span<const std::string> paths, vresult* out, done_fn done) {
  // A POSIX program knows the type from a stat (or its dirent), then unlinks or rmdirs.
  run_in_order(paths.size(), [this, paths](std::size_t i, done_fn d) {
    auto st = std::make_shared<file_stat>();
    stat(paths[i], st.get(), [this, st, path = paths[i], d](std::error_code ec, std::size_t) {
      if (ec) return d(ec, 0);
      if (st->type == file_type::directory) rmdir(path, d);
      else unlink(path, d);
    });
  }, out, std::move(done));
}

void backend::vrename(std::span<const vrename_item> items, vresult* out, done_fn done) {
  run_in_order(items.size(), [this, items](std::size_t i, done_fn d) { rename(items[i].from, items[i].to, std::move(d)); },
               out, std::move(done));
}

void backend::vreaddir(std::span<dir_stream* const> dirs, unsigned, vresult* out, done_fn done) {
  run_in_order(dirs.size(), [this, dirs](std::size_t i, done_fn d) {
    if (dirs[i]->eof) return d({}, 0);
    readdir(dirs[i], std::move(d));
  }, out, std::move(done));
}

void backend::vscopy(std::span<vcopy_item> items, vresult* out, done_fn done) {
  reset_result(*out, items.size());
  if (!items.empty()) out->status[0] = std::error_code(nfs4::nfsstat4::NFS4ERR_NOTSUPP);
  finish_result(*out);
  done(out->error, 0);
}

}  // namespace vnfs::detail
