#include "client/nfs/compound_vectors.hpp"

#include <fcntl.h>

#include <algorithm>
#include <memory>

#include "client/nfs/attr_mapping.hpp"
#include "client/nfs/compound_planner.hpp"
#include "client/nfs/nfs_open_file.hpp"
#include "client/path.hpp"
#include "client/result_size.hpp"
#include "client/vector/attr_mask.hpp"
#include "client/vector/item_runner.hpp"
#include "vnfs/nfs4/attributes.hpp"

namespace vnfs::detail {

using namespace vnfs::nfs4;

namespace {

planned_op make(nfs_argop4 a, std::size_t owner, std::size_t reply = small_result_estimate,
                std::function<std::error_code(nfs_resop4&)> on_ok = {}) {
  planned_op op{std::move(a), owner, reply};
  if (on_ok) op.on_ok = [f = std::move(on_ok)](nfs_resop4& r, bool) { return f(r); };
  return op;
}

std::pair<std::string, std::string> parent_and_name(const std::string& path) {
  auto [d, n] = split_parent(path);
  return {std::string(d), std::string(n)};
}

/// An item whose operations act on the object `path` names: LOOKUP of its name from its
/// directory (nothing for the root itself, which is its own start).
planned_item at_object(const std::string& path, std::size_t owner) {
  planned_item it;
  if (path.empty()) {
    it.start.path = "";
    it.end.k = item_end::kind::unchanged;
    return it;
  }
  auto [dir, name] = parent_and_name(path);
  it.start.path = dir;
  it.end.k = item_end::kind::elsewhere;
  it.ops.push_back(make(LOOKUP4args{name}, owner));
  return it;
}

planned_item at_handle(const nfs_fh4& fh) {
  planned_item it;
  it.start.k = item_start::kind::handle;
  it.start.fh = fh;
  it.end.k = item_end::kind::unchanged;
  return it;
}

/// An item in the directory holding `path`, acting on its name.
planned_item in_parent(const std::string& path, std::string& name) {
  planned_item it;
  auto [dir, n] = parent_and_name(path);
  it.start.path = dir;
  name = n;
  it.touches.push_back(path);
  return it;
}

nfs_fh4 to_fh(const file_handle& h) { return nfs_fh4(h.bytes.begin(), h.bytes.end()); }

std::uint32_t share_access(int flags) {
  int acc = flags & O_ACCMODE;
  return acc == O_RDONLY ? OPEN4_SHARE_ACCESS_READ : acc == O_WRONLY ? OPEN4_SHARE_ACCESS_WRITE : OPEN4_SHARE_ACCESS_BOTH;
}

OPEN4args open_args(const std::string& name, int flags, std::uint32_t mode, open_owner4 owner) {
  OPEN4args o;
  o.share_access = share_access(flags);
  o.share_deny = OPEN4_SHARE_DENY_NONE;
  o.owner = std::move(owner);
  o.claim.claim = open_claim_type4::CLAIM_NULL;
  o.claim.file = name;
  if (flags & O_CREAT) {
    o.openhow.opentype = opentype4::OPEN4_CREATE;
    o.openhow.how.mode = (flags & O_EXCL) ? createmode4::GUARDED4 : createmode4::UNCHECKED4;
    attributes a;
    a.mode = mode & 07777;
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) a.size = 0;  // UNCHECKED4 + size 0 truncates
    o.openhow.how.createattrs = encode_attributes(a);
  } else {
    o.openhow.opentype = opentype4::OPEN4_NOCREATE;
  }
  return o;
}

/// SETATTR size 0 with the current stateid (O_TRUNC of an OPEN without O_CREAT).
planned_op truncate_op(std::size_t owner) {
  attributes a;
  a.size = 0;
  return make(SETATTR4args{stateid4::current(), encode_attributes(a)}, owner, 32);
}

std::error_code short_reply() { return make_error_code(errc::protocol_error); }

/// The nfs state of an open file named by an item, or null for a file of another backend.
std::shared_ptr<nfs_open_file> nfs_file(const vfile& f) {
  const file* d = f.descriptor();
  return d ? std::dynamic_pointer_cast<nfs_open_file>(internals::state_of(*d)) : nullptr;
}

/// Fails the call before anything is sent if an item names an open file of another backend
/// (`named(i)` gives item i's vfile). Returns true when it did.
template <class Named>
bool refuse_foreign(std::size_t n, Named named, vresult* out, done_fn& done) {
  for (std::size_t i = 0; i < n; ++i) {
    const vfile& f = named(i);
    if (f.descriptor() && !nfs_file(f)) {
      reset_result(*out, n);
      out->status[i] = make_error_code(errc::bad_argument);
      finish_result(*out);
      done(out->error, out->ok_count);
      return true;
    }
  }
  return false;
}

}  // namespace

// ---- vread / vwrite

void compound_vectors::io(std::span<vio> items, bool writing, vresult* out, done_fn done) {
  if (refuse_foreign(items.size(), [&](std::size_t i) -> const vfile& { return items[i].file; }, out, done)) return;
  const channel_attrs4 lim = engine_.limits();
  const std::uint32_t piece = max_transfer(lim, !writing);
  // Data one OPEN ... CLOSE group carries at most: it must fit an empty COMPOUND.
  const std::size_t group_cap = std::max<std::size_t>(piece, (writing ? lim.ca_maxrequestsize : lim.ca_maxresponsesize) / 2);
  std::vector<planned_item> plan;
  std::optional<std::size_t> group;  // index in plan of the open group
  std::string group_path;
  std::size_t group_bytes = 0, last_owner = 0;

  auto close_group = [&] {
    if (!group) return;
    plan[*group].ops.push_back(make(CLOSE4args{0, stateid4::current()}, last_owner));
    group.reset();
  };
  auto open_group = [&](const std::string& path, const vio& v, std::size_t i, bool first_piece) {
    close_group();
    std::string name;
    planned_item it = in_parent(path, name);
    it.end.k = item_end::kind::elsewhere;
    it.modifies = writing;
    it.needs_cache = writing;  // OPEN, READ, CLOSE may simply run again: same effect
    int flags = writing ? O_WRONLY : O_RDONLY;
    if (writing && first_piece) {
      if (v.flags & vio_flags::create) flags |= O_CREAT;
      if (v.flags & vio_flags::exclusive) flags |= O_EXCL;
      if (v.flags & vio_flags::truncate) flags |= O_TRUNC;
    }
    it.ops.push_back(make(open_args(name, flags, v.mode, next_owner_()), i, open_result_estimate));
    if ((flags & O_TRUNC) && !(flags & O_CREAT)) it.ops.push_back(truncate_op(i));
    plan.push_back(std::move(it));
    group = plan.size() - 1;
    group_path = path;
    group_bytes = 0;
  };

  for (std::size_t i = 0; i < items.size(); ++i) {
    vio& v = items[i];
    const std::size_t size = v.size();
    const std::string* path = v.file.path();
    std::shared_ptr<nfs_open_file> of = nfs_file(v.file);
    if (path) {
      // A later item on the same path shares the OPEN unless it asks for a new truncation.
      bool reuse = group && group_path == *path && !(writing && (v.flags & (vio_flags::truncate | vio_flags::exclusive)));
      if (!reuse) open_group(*path, v, i, true);
    } else {
      close_group();
    }
    last_owner = i;  // the group's CLOSE counts for the last item with operations in it
    std::size_t at = 0;
    do {
      const std::size_t n = std::min<std::size_t>(piece, size - at);
      if (path && group_bytes + n > group_cap && group_bytes > 0) open_group(*path, v, i, false);
      const std::uint64_t off = (writing && (v.flags & vio_flags::append)) ? ~std::uint64_t(0) : v.offset + at;
      stateid4 sid = path ? stateid4::current() : of ? of->io_stateid : stateid4::anonymous();
      planned_op op;
      if (writing) {
        const stable_how4 how = (v.flags & vio_flags::stable) ? stable_how4::DATA_SYNC4 : stable_how4::UNSTABLE4;
        std::span<const std::byte> data = v.data().subspan(at, n);
        op = make(WRITE4args{sid, off, how, data}, i, 64, [&v, of](nfs_resop4& r) -> std::error_code {
          const auto& w = std::get<WRITE4res>(r).resok4;
          v.bytes += w.count;
          if (of) of->wrote(w);
          return {};
        });
      } else {
        std::span<std::byte> dst = v.data().subspan(at, n);
        op = make(READ4args{sid, off, static_cast<count4>(n)}, i, 32 + n);
        op.on_ok = [this, &v, dst](nfs_resop4& r, bool placed) -> std::error_code {
          const auto& data = std::get<READ4res>(r).resok4.data;
          if (data.size() > dst.size()) return short_reply();
          if (!placed) {  // in the reply buffer
            std::copy(data.begin(), data.end(), dst.begin());
            engine_.note_copied(data.size());
          }
          v.bytes += data.size();
          if (data.size() < dst.size()) v.eof = true;
          return {};
        };
        if (v.region.data()) op.read_target = dst;  // registered memory receives directly
      }
      if (v.region.data()) op.registered = internals::registration_of(v.region);
      if (path) {
        plan[*group].ops.push_back(std::move(op));
        group_bytes += n;
      } else {
        planned_item it = at_handle(of ? of->fh : to_fh(*v.file.handle()));
        if (of) it.touches.push_back(of->path);
        it.modifies = writing;
        it.needs_cache = writing;
        it.ops.push_back(std::move(op));
        plan.push_back(std::move(it));
      }
      at += n;
    } while (at < size);
    if (writing && v.attrs_after) {  // after the item's last WRITE, before its group's CLOSE
      planned_op set = make(SETATTR4args{stateid4::anonymous(), settable_attrs(v.attrs_after, v.attrs)}, i, 32);
      (path ? plan[*group] : plan.back()).ops.push_back(std::move(set));
    }
  }
  close_group();
  if (writing) return run_mutating(std::move(plan), items.size(), out, std::move(done));
  run_planned(engine_, root_, window_bytes_, std::move(plan), items.size(), out, std::move(done), false, join_, commit_last_);
}

void compound_vectors::run_mutating(std::vector<planned_item> plan, std::size_t n, vresult* out, done_fn done) {
  run_planned(engine_, root_, window_bytes_, std::move(plan), n, out, std::move(done), atomic_, join_, commit_last_);
}

void compound_vectors::vread(std::span<vio> items, vresult* out, done_fn done) { io(items, false, out, std::move(done)); }
void compound_vectors::vwrite(std::span<vio> items, vresult* out, done_fn done) { io(items, true, out, std::move(done)); }

// ---- attributes

void compound_vectors::vgetattrs(std::span<vattr> items, vresult* out, done_fn done) {
  if (refuse_foreign(items.size(), [&](std::size_t i) -> const vfile& { return items[i].file; }, out, done)) return;
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < items.size(); ++i) {
    vattr& a = items[i];
    planned_item it;
    if (const std::string* p = a.file.path()) {
      it = at_object(*p, i);
      it.touches.push_back(*p);
    } else if (auto of = nfs_file(a.file)) {
      it = at_handle(of->fh);
    } else {
      it = at_handle(to_fh(*a.file.handle()));
    }
    it.ops.push_back(make(GETATTR4args{attr_request(a.mask)}, i, getattr_result_estimate, [&a](nfs_resop4& r) -> std::error_code {
      copy_masked(to_stat(std::get<GETATTR4res>(r).resok4.obj_attributes), a.mask, a.stat);
      return {};
    }));
    if (a.mask & attr::handle)
      it.ops.push_back(make(GETFH4args{}, i, getfh_result_estimate, [&a](nfs_resop4& r) -> std::error_code {
        const auto& fh = std::get<GETFH4res>(r).resok4.object;
        a.handle.bytes.assign(fh.begin(), fh.end());
        return {};
      }));
    plan.push_back(std::move(it));
  }
  run_planned(engine_, root_, window_bytes_, std::move(plan), items.size(), out, std::move(done), false, join_, commit_last_);
}

void compound_vectors::vsetattrs(std::span<const vattr> items, vresult* out, done_fn done) {
  if (refuse_foreign(items.size(), [&](std::size_t i) -> const vfile& { return items[i].file; }, out, done)) return;
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const vattr& a = items[i];
    planned_item it;
    stateid4 sid = stateid4::anonymous();
    if (const std::string* p = a.file.path()) {
      it = at_object(*p, i);
      it.touches.push_back(*p);
    } else if (auto of = nfs_file(a.file)) {
      it = at_handle(of->fh);
      it.touches.push_back(of->path);
      sid = of->io_stateid;
    } else {
      it = at_handle(to_fh(*a.file.handle()));
    }
    it.modifies = true;
    it.needs_cache = true;
    it.ops.push_back(make(SETATTR4args{sid, settable_attrs(a.mask, a.stat)}, i, 32));
    plan.push_back(std::move(it));
  }
  run_mutating(std::move(plan), items.size(), out, std::move(done));
}

// ---- names

void compound_vectors::vmkdir(std::span<const vmkdir_item> items, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string name;
    planned_item it = in_parent(items[i].path, name);
    CREATE4args c;
    c.objtype.type = nfs_ftype4::NF4DIR;
    c.objname = name;
    attributes a;
    a.mode = items[i].mode & 07777;
    c.createattrs = encode_attributes(a);
    it.ops.push_back(make(std::move(c), i, 128));
    it.end = {item_end::kind::directory, items[i].path};  // CREATE leaves the new directory current
    it.modifies = it.needs_cache = true;
    plan.push_back(std::move(it));
  }
  run_mutating(std::move(plan), items.size(), out, std::move(done));
}

void compound_vectors::vsymlink(std::span<const vlink> items, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string name;
    planned_item it = in_parent(items[i].path, name);
    CREATE4args c;
    c.objtype.type = nfs_ftype4::NF4LNK;
    c.objtype.linkdata = items[i].target;
    c.objname = name;
    it.ops.push_back(make(std::move(c), i, 128));
    it.end.k = item_end::kind::elsewhere;
    it.modifies = it.needs_cache = true;
    plan.push_back(std::move(it));
  }
  run_mutating(std::move(plan), items.size(), out, std::move(done));
}

void compound_vectors::vhardlink(std::span<const vlink> items, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto [dir, name] = parent_and_name(items[i].path);
    planned_item it;
    it.start.k = item_start::kind::two_paths;
    it.start.path = dir;
    it.start.saved_path = items[i].target;
    it.start.saved_object = true;
    it.ops.push_back(make(LINK4args{name}, i, 64));
    it.end.k = item_end::kind::unchanged;
    it.touches = {items[i].target, items[i].path};
    it.modifies = it.needs_cache = true;
    plan.push_back(std::move(it));
  }
  run_mutating(std::move(plan), items.size(), out, std::move(done));
}

void compound_vectors::vreadlink(std::span<const std::string> paths, std::string* targets, vresult* out,
                                 done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    planned_item it = at_object(paths[i], i);
    it.touches.push_back(paths[i]);
    it.ops.push_back(make(READLINK4args{}, i, readlink_result_estimate, [t = &targets[i]](nfs_resop4& r) -> std::error_code {
      *t = std::get<READLINK4res>(r).resok4.link;
      return {};
    }));
    plan.push_back(std::move(it));
  }
  run_planned(engine_, root_, window_bytes_, std::move(plan), paths.size(), out, std::move(done), false, join_, commit_last_);
}

void compound_vectors::vremove(std::span<const std::string> paths, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    std::string name;
    planned_item it = in_parent(paths[i], name);
    it.ops.push_back(make(REMOVE4args{name}, i, 64));
    it.end.k = item_end::kind::unchanged;
    it.gone.push_back(paths[i]);
    it.modifies = it.needs_cache = true;
    plan.push_back(std::move(it));
  }
  run_mutating(std::move(plan), paths.size(), out, std::move(done));
}

void compound_vectors::vrename(std::span<const vrename_item> items, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto [fdir, fname] = parent_and_name(items[i].from);
    auto [tdir, tname] = parent_and_name(items[i].to);
    planned_item it;
    it.start.k = item_start::kind::two_paths;
    it.start.path = tdir;
    it.start.saved_path = fdir;
    it.ops.push_back(make(RENAME4args{fname, tname}, i, 96));
    it.end.k = item_end::kind::unchanged;
    it.touches = {items[i].from, items[i].to};
    it.gone = it.touches;
    it.modifies = it.needs_cache = true;
    plan.push_back(std::move(it));
  }
  run_mutating(std::move(plan), items.size(), out, std::move(done));
}

// ---- open files

void compound_vectors::vopen(std::span<vopen_item> items, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  auto stateids = std::make_shared<std::vector<stateid4>>(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    vopen_item& v = items[i];
    std::string name;
    planned_item it = in_parent(v.path, name);
    OPEN4args args = open_args(name, v.flags, v.mode, next_owner_());
    open_reclaims::open held{{}, {}, args.owner.owner, args.share_access};
    it.ops.push_back(make(std::move(args), i, open_result_estimate,
                          [stateids, i](nfs_resop4& r) -> std::error_code {
                            (*stateids)[i] = std::get<OPEN4res>(r).resok4.stateid;
                            return {};
                          }));
    if ((v.flags & O_TRUNC) && !(v.flags & O_CREAT) && (v.flags & O_ACCMODE) != O_RDONLY) it.ops.push_back(truncate_op(i));
    it.ops.push_back(make(GETFH4args{}, i, getfh_result_estimate, [this, held, stateids, i, &v](nfs_resop4& r) mutable -> std::error_code {
      auto f = std::make_shared<nfs_open_file>();
      f->path = v.path;
      f->flags = v.flags;
      f->stateid = (*stateids)[i];
      f->io_stateid = f->stateid;
      f->io_stateid.seqid = 0;
      f->fh = std::get<GETFH4res>(r).resok4.object;
      held.first = f->stateid;
      held.fh = f->fh;
      engine_.reclaims().add(std::move(held));
      v.result = internals::make_file(std::move(f));
      return {};
    }));
    it.end.k = item_end::kind::elsewhere;
    it.modifies = (v.flags & (O_CREAT | O_TRUNC)) != 0;
    it.needs_cache = true;  // a second OPEN would be a second open state
    plan.push_back(std::move(it));
  }
  run_planned(engine_, root_, window_bytes_, std::move(plan), items.size(), out, std::move(done), false, join_, commit_last_);
}

void compound_vectors::vclose(std::span<const file> files, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto of = std::dynamic_pointer_cast<nfs_open_file>(internals::state_of(files[i]));
    if (!of) {
      reset_result(*out, files.size());
      out->status[i] = make_error_code(errc::bad_argument);
      finish_result(*out);
      return done(out->error, out->ok_count);
    }
    planned_item it = at_handle(of->fh);
    if (of->needs_commit())  // flush on close, as close() does
      it.ops.push_back(make(COMMIT4args{0, 0}, i, 32, [of](nfs_resop4& r) -> std::error_code {
        if (!of->committed(std::get<COMMIT4res>(r).resok4.writeverf)) return std::make_error_code(std::errc::io_error);
        return {};
      }));
    it.ops.push_back(make(CLOSE4args{0, of->stateid}, i, 32, [this, first = of->stateid](nfs_resop4&) -> std::error_code {
      engine_.reclaims().remove(first);
      return {};
    }));
    it.needs_cache = true;
    plan.push_back(std::move(it));
  }
  run_planned(engine_, root_, window_bytes_, std::move(plan), files.size(), out, std::move(done), false, join_, commit_last_);
}

// ---- listings

void compound_vectors::vreaddir(std::span<dir_stream* const> dirs, unsigned mask, vresult* out, done_fn done) {
  std::vector<planned_item> plan;
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    dir_stream* d = dirs[i];
    // A listing of one page starts from its path. One of several pages learns the directory's
    // handle with its second page (GETFH), and every later page starts from that handle:
    // SEQUENCE, PUTFH, READDIR instead of the path's LOOKUPs again (from a pseudo-root, two
    // or more), and the pages keep listing the same directory even if it is renamed.
    planned_item it = d->handle.bytes.empty() ? planned_item{} : at_handle(to_fh(d->handle));
    if (d->handle.bytes.empty()) it.start.path = d->path;
    it.end.k = item_end::kind::unchanged;
    it.touches.push_back(d->path);
    if (!d->eof && d->cookie != 0 && d->handle.bytes.empty())
      it.ops.push_back(make(GETFH4args{}, i, getfh_result_estimate, [d](nfs_resop4& r) -> std::error_code {
        const nfs_fh4& fh = std::get<GETFH4res>(r).resok4.object;
        d->handle.bytes.assign(fh.begin(), fh.end());
        return {};
      }));
    if (!d->eof) {
      READDIR4args a;
      a.cookie = d->cookie;
      for (std::size_t k = 0; k < 8; ++k) a.cookieverf[k] = std::byte(d->verifier >> (8 * k));
      a.dircount = readdir_maxcount / 4;
      a.maxcount = readdir_maxcount;
      a.attr_request = attr_request(mask);
      it.ops.push_back(make(std::move(a), i, readdir_result_estimate, [d](nfs_resop4& r) -> std::error_code {
        const auto& ok = std::get<READDIR4res>(r).resok4;
        for (const auto& e : ok.reply.entries) {
          d->entries.push_back(dir_entry{e.name, to_stat(e.attrs)});
          d->cookie = e.cookie;
        }
        d->verifier = 0;
        for (std::size_t k = 0; k < 8; ++k) d->verifier |= std::uint64_t(ok.cookieverf[k]) << (8 * k);
        d->eof = ok.reply.eof;
        return {};
      }));
    }
    plan.push_back(std::move(it));
  }
  run_planned(engine_, root_, window_bytes_, std::move(plan), dirs.size(), out, std::move(done), false, join_, commit_last_);
}

/// vscopy in four planned rounds: OPEN every source (with GETFH and its mode), OPEN every
/// destination (created with its source's mode if missing), COPY between the open files,
/// then CLOSE everything that was opened.
struct scopy_run : std::enable_shared_from_this<scopy_run> {
  session_engine* engine = nullptr;
  nfs_fh4 root;
  std::size_t window_bytes = 0;
  std::function<open_owner4()> next_owner;
  std::shared_ptr<txn_link> join;  ///< compound_vectors::join_: its four rounds run in it
  std::span<vcopy_item> items;
  vresult* out = nullptr;
  done_fn done;

  struct opened {
    stateid4 sid;
    nfs_fh4 fh;
    bool open = false;
  };
  std::vector<opened> src, dst;
  std::vector<std::uint32_t> mode;  ///< of each source
  vresult opens, copies, closes;  // opens: of the sources, then (if all opened) of the destinations
  bool copied = false;

  void start() {
    const std::size_t n = items.size();
    src.resize(n), dst.resize(n), mode.assign(n, 0644);
    std::vector<planned_item> plan;
    for (std::size_t i = 0; i < n; ++i) plan.push_back(open_item(items[i].src, O_RDONLY, 0, i, src[i], true));
    run_planned(*engine, root, window_bytes, std::move(plan), n, &opens, [self = shared_from_this()](std::error_code ec, std::size_t) {
      if (ec) return self->close_all();
      self->open_destinations();
    }, false, join);
  }

  /// Destinations are created with their source's mode, known now.
  void open_destinations() {
    std::vector<planned_item> plan;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const vcopy_item& it = items[i];
      const bool whole = it.src_offset == 0 && it.length == vcopy_item::to_end;
      plan.push_back(open_item(it.dst, O_WRONLY | O_CREAT | (whole ? O_TRUNC : 0), mode[i], i, dst[i], false));
    }
    run_planned(*engine, root, window_bytes, std::move(plan), items.size(), &opens,
                [self = shared_from_this()](std::error_code ec, std::size_t) {
                  if (ec) return self->close_all();
                  self->copy();
                }, false, join);
  }

  planned_item open_item(const std::string& path, int flags, std::uint32_t create_mode, std::size_t i, opened& o,
                         bool source) {
    std::string name;
    planned_item it = in_parent(path, name);
    // The open is this run's to close once the whole item succeeded; the planner closes the
    // OPEN of an item that failed after it.
    it.ops.push_back(make(open_args(name, flags, create_mode, next_owner()), i, open_result_estimate, [&o](nfs_resop4& r) -> std::error_code {
      o.sid = std::get<OPEN4res>(r).resok4.stateid;
      return {};
    }));
    it.ops.push_back(make(GETFH4args{}, i, getfh_result_estimate, [&o, source](nfs_resop4& r) -> std::error_code {
      o.fh = std::get<GETFH4res>(r).resok4.object;
      o.open = !source;
      return {};
    }));
    if (source)
      it.ops.push_back(make(GETATTR4args{attr_request(attr::mode)}, i, getattr_result_estimate, [this, i, &o](nfs_resop4& r) -> std::error_code {
        mode[i] = to_stat(std::get<GETATTR4res>(r).resok4.obj_attributes).mode;
        o.open = true;
        return {};
      }));
    it.end.k = item_end::kind::elsewhere;
    it.modifies = !source;
    it.needs_cache = true;
    return it;
  }

  void copy() {
    std::vector<planned_item> plan;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const vcopy_item& it = items[i];
      planned_item p;
      p.start.k = item_start::kind::two_handles;
      p.start.saved_fh = src[i].fh;
      p.start.fh = dst[i].fh;
      p.end.k = item_end::kind::unchanged;
      COPY4args c;
      c.ca_src_stateid = src[i].sid;
      c.ca_dst_stateid = dst[i].sid;
      c.ca_src_offset = it.src_offset;
      c.ca_dst_offset = it.dst_offset;
      c.ca_count = it.length == vcopy_item::to_end ? 0 : it.length;  // 0: to the end (RFC 7862 §15.2.3)
      c.ca_consecutive = true;
      c.ca_synchronous = true;
      p.ops.push_back(make(std::move(c), i, 96, [this, i](nfs_resop4& r) -> std::error_code {
        const auto& res = std::get<COPY4res>(r).resok4;
        if (res.cr_response.wr_callback_id) return make_error_code(errc::protocol_error);  // asked synchronous
        items[i].bytes = res.cr_response.wr_count;
        return {};
      }));
      p.touches.push_back(it.dst);
      p.modifies = p.needs_cache = true;
      plan.push_back(std::move(p));
    }
    copied = true;
    run_planned(*engine, root, window_bytes, std::move(plan), items.size(), &copies,
                [self = shared_from_this()](std::error_code, std::size_t) { self->close_all(); }, false, join);
  }

  void close_all() {
    std::vector<planned_item> plan;
    for (std::size_t i = 0; i < items.size(); ++i) {
      for (opened* o : {&src[i], &dst[i]}) {
        if (!o->open) continue;
        planned_item p = at_handle(o->fh);
        p.ops.push_back(make(CLOSE4args{0, o->sid}, i, 32));
        p.needs_cache = true;
        plan.push_back(std::move(p));
      }
    }
    run_planned(*engine, root, window_bytes, std::move(plan), items.size(), &closes,
                [self = shared_from_this()](std::error_code, std::size_t) { self->finish(); }, false, join);
  }

  /// Each item's status: its OPENs' failure, else its COPY's, else its CLOSEs'.
  void finish() {
    reset_result(*out, items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::error_code s = opens.status[i];
      if (!s) s = copied ? copies.status[i] : make_error_code(errc::not_executed);
      if (!s && src[i].open && closes.status[i] != errc::not_executed) s = closes.status[i];
      out->status[i] = s;
    }
    finish_result(*out);
    done(out->error, out->ok_count);
  }
};

void compound_vectors::vscopy(std::span<vcopy_item> items, vresult* out, done_fn done) {
  if (atomic_) {  // four rounds of COMPOUNDs: not transactional yet
    reset_result(*out, items.size());
    if (!items.empty()) out->status[0] = make_error_code(errc::bad_argument);
    finish_result(*out);
    return done(out->error, 0);
  }
  auto run = std::make_shared<scopy_run>();
  run->engine = &engine_;
  run->root = root_;
  run->window_bytes = window_bytes_;
  run->next_owner = next_owner_;
  run->join = join_;
  run->items = items;
  run->out = out;
  run->done = std::move(done);
  run->start();
}

}  // namespace vnfs::detail
