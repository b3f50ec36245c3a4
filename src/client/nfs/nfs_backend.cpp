// The nfs backend: the scalar operations as the COMPOUNDs a kernel NFSv4.1 client sends
// with a cold cache — one LOOKUP COMPOUND per directory component of a path (with GETFH and
// GETATTR, as a kernel's lookup does), then one COMPOUND for the operation itself. Nothing
// is cached between calls: these are the honest round trips the vectorized API is measured
// against.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>

#include "client/backends.hpp"
#include "client/nfs/attr_mapping.hpp"
#include "client/nfs/compound_vectors.hpp"
#include "client/nfs/nfs_open_file.hpp"
#include "client/memory/registration.hpp"
#include "client/nfs/session_engine.hpp"
#include "client/nfs/txn_view.hpp"
#include "client/path.hpp"
#include "client/result_size.hpp"
#include "transport/rdma/fabric.hpp"
#include "vnfs/nfs4/attributes.hpp"

namespace vnfs::detail {

using namespace vnfs::nfs4;

namespace {

fattr4 mode_attr(std::uint32_t mode) {
  attributes a;
  a.mode = mode & 07777;
  return encode_attributes(a);
}

/// Owning forms of path.hpp's splits (the views would not outlive asynchronous steps).
std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  for (auto c : split_path(path)) out.emplace_back(c);
  return out;
}
std::pair<std::string, std::string> parent_and_name(std::string_view path) {
  auto [dir, name] = split_parent(path);
  return {std::string(dir), std::string(name)};
}

std::error_code status_error(nfsstat4 s) { return s == nfsstat4::NFS4_OK ? std::error_code() : std::error_code(s); }

/// The status of a COMPOUND as an error (transport errors first).
std::error_code outcome(std::error_code ec, const compound_reply& r) {
  return ec ? ec : status_error(r.res.status);
}

template <class R>
const R& last_of(const compound_reply& r) {
  return std::get<R>(r.res.resarray.back());
}

/// What a path walk found: the object and its parent.
struct walked {
  nfs_fh4 parent;
  nfs_fh4 fh;
  file_stat stat;
};
using walk_done = std::function<void(std::error_code, walked&)>;

class nfs_backend final : public backend {
 public:
  nfs_backend(const url& u, const client_options& o)
      : regs_(registration_table::create(o.max_registered_bytes)),
        engine_(settings_of(u, o)) {
    // The server's root needs no look-up: root_ stays the empty filehandle, which the engine
    // sends as PUTROOTFH, and the session's first COMPOUND learns the lease time. Another
    // root: PUTROOTFH, LOOKUP of each component of the URL's path, GETFH, lease time and type
    // (connect() fails here if it does not exist or is no directory).
    if (const auto parts = components(u.path); !parts.empty()) {
      std::vector<nfs_argop4> ops{PUTROOTFH4args{}};
      for (const auto& c : parts) ops.push_back(LOOKUP4args{c});
      ops.push_back(GETFH4args{});
      bitmap4 want;
      want.set(FATTR4_LEASE_TIME);
      want.set(FATTR4_TYPE);
      ops.push_back(GETATTR4args{want});
      std::promise<std::error_code> p;
      engine_.submit(std::move(ops), [&](std::error_code ec, compound_reply& r) {
        ec = outcome(ec, r);
        if (!ec) {
          root_ = std::get<GETFH4res>(r.res.resarray[r.res.resarray.size() - 2]).resok4.object;
          attributes a = decode_attributes(last_of<GETATTR4res>(r).resok4.obj_attributes);
          if (a.type != nfs_ftype4::NF4DIR) ec = std::make_error_code(std::errc::not_a_directory);
          if (a.lease_time) engine_.set_lease(std::chrono::seconds(*a.lease_time));
        }
        p.set_value(ec);
      });
      if (auto ec = p.get_future().get()) throw std::system_error(ec, "vnfs: " + u.path);
    }
    owner_ = "vnfs-open-owner-" + std::to_string(::getpid());
    window_bytes_ = o.vector_window_bytes;
    max_registered_bytes_ = o.max_registered_bytes;
    if (o.compound_vectors)
      vectors_ = std::make_unique<compound_vectors>(engine_, root_, [this] { return next_open_owner(); },
                                                    o.vector_window_bytes, o.atomic_vectors);
  }

  ~nfs_backend() override { close_all(); }

  // ---- files ---------------------------------------------------------------------------

  void open(const std::string& path, int flags, std::uint32_t mode, file* out, done_fn done) override {
    auto [dir, name] = parent_and_name(path);
    if (name.empty()) return done(std::make_error_code(std::errc::is_a_directory), 0);
    walk(dir, [this, name = name, flags, mode, out, path, done](std::error_code ec, walked& w) {
      if (ec) return done(ec, 0);
      OPEN4args o;
      int acc = flags & O_ACCMODE;
      o.share_access = acc == O_RDONLY ? OPEN4_SHARE_ACCESS_READ
                       : acc == O_WRONLY ? OPEN4_SHARE_ACCESS_WRITE
                                         : OPEN4_SHARE_ACCESS_BOTH;
      o.share_deny = OPEN4_SHARE_DENY_NONE;
      o.owner = next_open_owner();
      o.claim.claim = open_claim_type4::CLAIM_NULL;
      o.claim.file = name;
      bool truncate = (flags & O_TRUNC) && acc != O_RDONLY;
      if (flags & O_CREAT) {
        o.openhow.opentype = opentype4::OPEN4_CREATE;
        o.openhow.how.mode = (flags & O_EXCL) ? createmode4::GUARDED4 : createmode4::UNCHECKED4;
        attributes a;
        a.mode = mode & 07777;
        if (truncate) a.size = 0;  // UNCHECKED4 with size 0 truncates an existing file
        o.openhow.how.createattrs = encode_attributes(a);
        truncate = false;
      } else {
        o.openhow.opentype = opentype4::OPEN4_NOCREATE;
      }
      std::vector<nfs_argop4> ops{PUTFH4args{w.fh}, o, GETFH4args{}};
      if (truncate) {
        attributes a;
        a.size = 0;
        ops.push_back(SETATTR4args{stateid4::current(), encode_attributes(a)});
      }
      const std::vector<std::byte> owner = o.owner.owner;
      const std::uint32_t access = o.share_access;
      engine_.submit(std::move(ops), [this, out, path, flags, owner, access, done](std::error_code ec,
                                                                                  compound_reply& r) {
        if ((ec = outcome(ec, r))) return done(ec, 0);
        auto f = std::make_shared<nfs_open_file>();
        f->path = path;
        f->flags = flags;
        f->stateid = std::get<OPEN4res>(r.res.resarray[2]).resok4.stateid;
        f->io_stateid = f->stateid;
        f->io_stateid.seqid = 0;  // "the current seqid" (RFC 8881 §8.2.2): valid across upgrades
        f->fh = std::get<GETFH4res>(r.res.resarray[3]).resok4.object;
        engine_.reclaims().add({f->stateid, f->fh, owner, access});
        *out = internals::make_file(f);
        done({}, 0);
      });
    });
  }

  void close(const file& f, done_fn done) override {
    auto of = state(f);
    std::vector<nfs_argop4> ops{PUTFH4args{of->fh}};
    const bool commit = of->needs_commit();
    if (commit) ops.push_back(COMMIT4args{0, 0});  // flush on close, as a kernel client does
    ops.push_back(CLOSE4args{0, of->stateid});
    engine_.submit(std::move(ops), [this, of, commit, done](std::error_code ec, compound_reply& r) {
      engine_.reclaims().remove(of->stateid);  // closed, or not to be reclaimed anyway
      if (!ec && commit && r.res.resarray.size() > 2) {
        const auto& c = std::get<COMMIT4res>(r.res.resarray[2]);
        if (c.status == nfsstat4::NFS4_OK && !of->committed(c.resok4.writeverf))
          return done(std::make_error_code(std::errc::io_error), 0);  // the server lost unstable data
      }
      done(outcome(ec, r), 0);
    });
  }

  void read(const file& f, std::uint64_t offset, read_target dst, done_fn done) override {
    auto of = state(f);
    std::span<std::byte> target = dst.bytes();
    if (target.size() > max_io) target = target.first(max_io);
    // Only registered memory receives directly: a plain buffer is written on success only.
    std::vector<std::span<std::byte>> targets;
    registered_regions registered;
    if (dst.registered.data()) {
      targets.push_back(target);
      registered.push_back(internals::registration_of(dst.registered));
    }
    std::vector<nfs_argop4> ops{PUTFH4args{of->fh},
                                READ4args{of->io_stateid, offset, static_cast<count4>(target.size())}};
    engine_.submit(
        std::move(ops),
        [this, target, done](std::error_code ec, compound_reply& r) {
          if ((ec = outcome(ec, r))) return done(ec, 0);
          const auto& data = last_of<READ4res>(r).resok4.data;
          if (data.size() > target.size()) return done(make_error_code(errc::protocol_error), 0);
          if (!r.placed_at(r.res.resarray.size() - 1)) {  // arrived in the library's buffer: copy it over
            std::copy(data.begin(), data.end(), target.begin());
            engine_.note_copied(data.size());
          }
          done({}, data.size());
        },
        std::move(targets), std::nullopt, std::move(registered));
  }

  void write(const file& f, std::uint64_t offset, write_source src, done_fn done) override {
    auto of = state(f);
    std::span<const std::byte> data = src.bytes();
    if (data.size() > max_io) data = data.first(max_io);
    // The payload is referenced by the encoder and leaves by scatter-gather (no copy).
    std::vector<nfs_argop4> ops{PUTFH4args{of->fh},
                                WRITE4args{of->io_stateid, offset, stable_how4::UNSTABLE4, data}};
    registered_regions registered;
    if (src.registered.data()) registered.push_back(internals::registration_of(src.registered));
    engine_.submit(
        std::move(ops),
        [of, done](std::error_code ec, compound_reply& r) {
          if ((ec = outcome(ec, r))) return done(ec, 0);
          const auto& w = last_of<WRITE4res>(r).resok4;
          of->wrote(w);
          done({}, w.count);
        },
        {}, std::nullopt, std::move(registered));
  }

  void fsync(const file& f, done_fn done) override {
    auto of = state(f);
    engine_.submit({PUTFH4args{of->fh}, COMMIT4args{0, 0}}, [of, done](std::error_code ec, compound_reply& r) {
      if ((ec = outcome(ec, r))) return done(ec, 0);
      if (!of->committed(last_of<COMMIT4res>(r).resok4.writeverf)) return done(std::make_error_code(std::errc::io_error), 0);
      done({}, 0);
    });
  }

  void fstat(const file& f, file_stat* out, done_fn done) override {
    engine_.submit({PUTFH4args{state(f)->fh}, GETATTR4args{stat_request()}},
                   [out, done](std::error_code ec, compound_reply& r) {
                     if ((ec = outcome(ec, r))) return done(ec, 0);
                     *out = to_stat(last_of<GETATTR4res>(r).resok4.obj_attributes);
                     done({}, 0);
                   });
  }

  // ---- names ---------------------------------------------------------------------------

  void stat(const std::string& path, file_stat* out, done_fn done) override {
    walk(path, [out, done](std::error_code ec, walked& w) {
      if (!ec) *out = w.stat;
      done(ec, 0);
    });
  }

  void truncate(const std::string& path, std::uint64_t size, done_fn done) override {
    walk(path, [this, size, done](std::error_code ec, walked& w) {
      if (ec) return done(ec, 0);
      attributes a;
      a.size = size;
      submit_status({PUTFH4args{w.fh}, SETATTR4args{stateid4::anonymous(), encode_attributes(a)}}, done);
    });
  }

  void setattr(const std::string& path, unsigned mask, const file_stat& values, done_fn done) override {
    if (mask & ~attr::settable) return done(make_error_code(errc::bad_argument), 0);
    walk(path, [this, mask, values, done](std::error_code ec, walked& w) {
      if (ec) return done(ec, 0);
      submit_status({PUTFH4args{w.fh}, SETATTR4args{stateid4::anonymous(), settable_attrs(mask, values)}}, done);
    });
  }

  void mkdir(const std::string& path, std::uint32_t mode, done_fn done) override {
    in_parent(path, done, [this, mode](const nfs_fh4& dir, const std::string& name, done_fn d) {
      CREATE4args c;
      c.objtype.type = nfs_ftype4::NF4DIR;
      c.objname = name;
      c.createattrs = mode_attr(mode);
      submit_status({PUTFH4args{dir}, c}, std::move(d));
    });
  }

  void symlink(const std::string& target, const std::string& link_path, done_fn done) override {
    in_parent(link_path, done, [this, target](const nfs_fh4& dir, const std::string& name, done_fn d) {
      CREATE4args c;
      c.objtype.type = nfs_ftype4::NF4LNK;
      c.objtype.linkdata = target;
      c.objname = name;
      submit_status({PUTFH4args{dir}, c}, std::move(d));
    });
  }

  void unlink(const std::string& path, done_fn done) override { remove(path, false, std::move(done)); }
  void rmdir(const std::string& path, done_fn done) override { remove(path, true, std::move(done)); }

  void rename(const std::string& from, const std::string& to, done_fn done) override {
    auto [fdir, fname] = parent_and_name(from);
    auto [tdir, tname] = parent_and_name(to);
    if (fname.empty() || tname.empty()) return done(std::make_error_code(std::errc::invalid_argument), 0);
    walk(fdir, [this, tdir = tdir, fname = fname, tname = tname, done](std::error_code ec, walked& src) {
      if (ec) return done(ec, 0);
      walk(tdir, [this, sfh = src.fh, fname, tname, done](std::error_code ec2, walked& dst) {
        if (ec2) return done(ec2, 0);
        submit_status({PUTFH4args{sfh}, SAVEFH4args{}, PUTFH4args{dst.fh}, RENAME4args{fname, tname}}, done);
      });
    });
  }

  void link(const std::string& existing, const std::string& new_path, done_fn done) override {
    auto [ndir, nname] = parent_and_name(new_path);
    if (nname.empty()) return done(std::make_error_code(std::errc::file_exists), 0);
    walk(existing, [this, ndir = ndir, nname = nname, done](std::error_code ec, walked& src) {
      if (ec) return done(ec, 0);
      walk(ndir, [this, sfh = src.fh, nname, done](std::error_code ec2, walked& dst) {
        if (ec2) return done(ec2, 0);
        submit_status({PUTFH4args{sfh}, SAVEFH4args{}, PUTFH4args{dst.fh}, LINK4args{nname}}, done);
      });
    });
  }

  void readlink(const std::string& path, std::string* out, done_fn done) override {
    walk(path, [this, out, done](std::error_code ec, walked& w) {
      if (ec) return done(ec, 0);
      engine_.submit({PUTFH4args{w.fh}, READLINK4args{}}, [out, done](std::error_code ec2, compound_reply& r) {
        if ((ec2 = outcome(ec2, r))) return done(ec2, 0);
        *out = last_of<READLINK4res>(r).resok4.link;
        done({}, 0);
      });
    });
  }

  void readdir(dir_stream* d, done_fn done) override {
    walk(d->path, [this, d, done](std::error_code ec, walked& w) {
      if (ec) return done(ec, 0);
      if (w.stat.type != file_type::directory) return done(std::make_error_code(std::errc::not_a_directory), 0);
      READDIR4args a;
      a.cookie = d->cookie;
      for (std::size_t i = 0; i < 8; ++i) a.cookieverf[i] = std::byte(d->verifier >> (8 * i));
      a.dircount = scalar_readdir_maxcount / 4;
      a.maxcount = scalar_readdir_maxcount;
      a.attr_request = stat_request();
      engine_.submit({PUTFH4args{w.fh}, a}, [d, done](std::error_code ec2, compound_reply& r) {
        if ((ec2 = outcome(ec2, r))) return done(ec2, 0);
        const auto& ok = last_of<READDIR4res>(r).resok4;
        for (const auto& e : ok.reply.entries) {
          d->entries.push_back(dir_entry{e.name, to_stat(e.attrs)});
          d->cookie = e.cookie;
        }
        d->verifier = 0;
        for (std::size_t i = 0; i < 8; ++i) d->verifier |= std::uint64_t(ok.cookieverf[i]) << (8 * i);
        d->eof = ok.reply.eof;
        done({}, 0);
      });
    });
  }

  // ---- vectorized: planned COMPOUNDs, or the scalar defaults when compound_vectors is off

  void vopen(std::span<vopen_item> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vopen(i, o, std::move(d)) : backend::vopen(i, o, std::move(d));
  }
  void vclose(std::span<const file> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vclose(i, o, std::move(d)) : backend::vclose(i, o, std::move(d));
  }
  void vread(std::span<vio> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vread(i, o, std::move(d)) : backend::vread(i, o, std::move(d));
  }
  void vwrite(std::span<vio> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vwrite(i, o, std::move(d)) : backend::vwrite(i, o, std::move(d));
  }
  void vgetattrs(std::span<vattr> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vgetattrs(i, o, std::move(d)) : backend::vgetattrs(i, o, std::move(d));
  }
  void vsetattrs(std::span<const vattr> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vsetattrs(i, o, std::move(d)) : backend::vsetattrs(i, o, std::move(d));
  }
  void vmkdir(std::span<const vmkdir_item> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vmkdir(i, o, std::move(d)) : backend::vmkdir(i, o, std::move(d));
  }
  void vsymlink(std::span<const vlink> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vsymlink(i, o, std::move(d)) : backend::vsymlink(i, o, std::move(d));
  }
  void vhardlink(std::span<const vlink> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vhardlink(i, o, std::move(d)) : backend::vhardlink(i, o, std::move(d));
  }
  void vreadlink(std::span<const std::string> p, std::string* t, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vreadlink(p, t, o, std::move(d)) : backend::vreadlink(p, t, o, std::move(d));
  }
  void vremove(std::span<const std::string> p, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vremove(p, o, std::move(d)) : backend::vremove(p, o, std::move(d));
  }
  void vrename(std::span<const vrename_item> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vrename(i, o, std::move(d)) : backend::vrename(i, o, std::move(d));
  }
  void vreaddir(std::span<dir_stream* const> i, unsigned m, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vreaddir(i, m, o, std::move(d)) : backend::vreaddir(i, m, o, std::move(d));
  }
  void vscopy(std::span<vcopy_item> i, vresult* o, done_fn d) override {
    vectors_ ? vectors_->vscopy(i, o, std::move(d)) : backend::vscopy(i, o, std::move(d));
  }

  void txn_control(std::uint32_t action, std::uint64_t txnid, std::optional<std::uint64_t> retries,
                   std::uint32_t* outcome, done_fn done) override {
    send_txn_control(engine_, action, txnid, retries, outcome, std::move(done));
  }
  bool transactions_known() const override { return engine_.transactions_known(); }
  std::unique_ptr<backend> txn_view(std::shared_ptr<txn_link> link, bool commits) override {
    if (!vectors_) return nullptr;  // calls inside a transaction are packed into COMPOUNDs
    return make_txn_view(engine_, root_, [this] { return next_open_owner(); }, window_bytes_, max_registered_bytes_,
                         std::move(link), commits);
  }

  void close_all() override {
    regs_->close();
    engine_.close();
  }
  client_stats stats() const override { return engine_.stats(); }
  registration_table& registrations() override { return *regs_; }

 private:
  static session_engine::settings settings_of(const url& u, const client_options& o) {
    session_engine::settings s;
    s.host = u.host;
    s.port = u.port;
    if (u.scheme == "nfs+rdma") s.rdma_provider = rdma_provider_of(u);
    s.uid = o.uid.value_or(::getuid());
    s.gid = o.gid.value_or(::getgid());
    s.gids = o.gids;
    s.slots = o.slots;
    s.max_operations = o.max_operations;
    s.connect_timeout = o.connect_timeout;
    s.reconnect_for = o.reconnect_for;
    s.lease_from_first_call = components(u.path).empty();  // no root COMPOUND asks for it
    return s;
  }

  static std::vector<std::byte> to_bytes(const std::string& s) {
    auto b = reinterpret_cast<const std::byte*>(s.data());
    return {b, b + s.size()};
  }

  static std::shared_ptr<nfs_open_file> state(const file& f) { return nfs_state(f); }

  /// Each OPEN has its own open-owner, so it has its own stateid: closing one handle of a file
  /// leaves the others open (a kernel client shares one owner and counts opens).
  open_owner4 next_open_owner() { return {engine_.client_id(), to_bytes(owner_ + "-" + std::to_string(next_owner_++))}; }

  /// Looks up `path` one component per COMPOUND (PUTFH, LOOKUP, GETFH, GETATTR); the root
  /// itself costs one PUTFH, GETATTR.
  void walk(const std::string& path, walk_done done) {
    auto parts = std::make_shared<std::vector<std::string>>(components(path));
    auto w = std::make_shared<walked>();
    w->fh = root_;
    if (parts->empty()) {
      engine_.submit({PUTFH4args{root_}, GETATTR4args{stat_request()}}, [w, done](std::error_code ec, compound_reply& r) {
        if (!(ec = outcome(ec, r))) w->stat = to_stat(last_of<GETATTR4res>(r).resok4.obj_attributes);
        done(ec, *w);
      });
      return;
    }
    walk_step(parts, 0, w, std::move(done));
  }

  void walk_step(std::shared_ptr<std::vector<std::string>> parts, std::size_t i, std::shared_ptr<walked> w,
                 walk_done done) {
    engine_.submit({PUTFH4args{w->fh}, LOOKUP4args{(*parts)[i]}, GETFH4args{}, GETATTR4args{stat_request()}},
                   [this, parts, i, w, done](std::error_code ec, compound_reply& r) {
                     if ((ec = outcome(ec, r))) return done(ec, *w);
                     w->parent = w->fh;
                     w->fh = std::get<GETFH4res>(r.res.resarray[3]).resok4.object;
                     w->stat = to_stat(last_of<GETATTR4res>(r).resok4.obj_attributes);
                     if (i + 1 == parts->size()) return done({}, *w);
                     walk_step(parts, i + 1, w, done);
                   });
  }

  /// Walks to the parent of `path` and runs `op(parent_fh, name, done)`.
  template <class Op>
  void in_parent(const std::string& path, done_fn done, Op op) {
    auto [dir, name] = parent_and_name(path);
    if (name.empty()) return done(std::make_error_code(std::errc::file_exists), 0);
    walk(dir, [name = name, done, op](std::error_code ec, walked& w) mutable {
      if (ec) return done(ec, 0);
      op(w.fh, name, done);
    });
  }

  /// unlink and rmdir: the kernel looks the name up first (it knows the type from its
  /// dentry), then REMOVEs it.
  void remove(const std::string& path, bool directory, done_fn done) {
    auto [dir, name] = parent_and_name(path);
    if (name.empty()) return done(std::make_error_code(std::errc::device_or_resource_busy), 0);
    walk(path, [this, name = name, directory, done](std::error_code ec, walked& w) {
      if (ec) return done(ec, 0);
      bool is_dir = w.stat.type == file_type::directory;
      if (directory && !is_dir) return done(std::make_error_code(std::errc::not_a_directory), 0);
      if (!directory && is_dir) return done(std::make_error_code(std::errc::is_a_directory), 0);
      submit_status({PUTFH4args{w.parent}, REMOVE4args{name}}, done);
    });
  }

  void submit_status(std::vector<nfs_argop4> ops, done_fn done) {
    engine_.submit(std::move(ops), [done](std::error_code ec, compound_reply& r) { done(outcome(ec, r), 0); });
  }

  std::shared_ptr<registration_table> regs_;
  session_engine engine_;
  nfs_fh4 root_;  // the URL's path; empty: the server's root (session_engine::submit)
  std::string owner_;
  std::atomic<std::uint64_t> next_owner_{0};
  std::unique_ptr<compound_vectors> vectors_;
  std::size_t window_bytes_ = 0, max_registered_bytes_ = 0;  ///< client_options, for txn_view()  ///< null with client_options::compound_vectors off
};

}  // namespace

std::string rdma_provider_of(const url& u) {
  auto it = u.query.find("provider");
  if (it == u.query.end()) return std::string(transport::rdma::default_provider());
  if (it->second != "cma" && it->second != "verbs")
    throw std::system_error(make_error_code(errc::unsupported_url),
                            "vnfs: provider '" + it->second + "' (nfs+rdma supports cma and verbs)");
  return it->second;
}

std::unique_ptr<backend> make_nfs_backend(const url& u, const client_options& options) {
  return std::make_unique<nfs_backend>(u, options);
}

}  // namespace vnfs::detail
