// vnfs client: the front of the vectorized calls — argument checks and path normalization
// (on copies of the items, so a backend sees only normalized paths), in the callback form of
// each call; the other three forms are made from it (vnfs/call_forms.hpp). The calls built
// from the backend's vector primitives (vcopy, vscopy's fallback, vlistdir's rounds,
// ensure_directory, remove_tree) are in composed.cpp.
#include <algorithm>
#include <memory>

#include "client/backend.hpp"
#include "client/internals.hpp"
#include "client/memory/registration.hpp"
#include "client/path.hpp"
#include "client/vector/item_runner.hpp"
#include "client/vector/link_resolver.hpp"
#include "vnfs/client.hpp"
#include "vnfs/nfs4/status.hpp"

namespace vnfs {

using detail::done_fn;

namespace {

detail::backend* live(const std::unique_ptr<detail::backend>& b) {
  if (!b || b->registrations().closed()) return nullptr;
  return b.get();
}

/// Ends a call before anything ran: item `i` failed with `ec`, the others did not execute.
void fail_at(vresult* out, std::size_t n, std::size_t i, std::error_code ec, done_fn& done) {
  detail::reset_result(*out, n);
  if (i < n) out->status[i] = ec;
  else out->error = ec;  // a call-level failure (closed client, bad argument) with no item to blame
  detail::finish_result(*out);
  if (!out->error) out->error = ec;
  done(out->error, 0);
}

/// Normalizes `p` in place; false if it is not a valid client path (or names the root when
/// `need_name`).
bool normalize_in_place(std::string& p, bool need_name, std::error_code& ec) {
  try {
    if (!detail::is_normal_path(p)) p = detail::normalize_path(p);
  } catch (const std::system_error& e) {
    ec = e.code();
    return false;
  }
  if (need_name && p.empty()) {
    ec = make_error_code(errc::bad_argument);
    return false;
  }
  return true;
}

bool check_vfile(vfile& f, std::error_code& ec) {
  if (const std::string* path = f.path()) {
    if (detail::is_normal_path(*path)) return true;
    std::string p = *path;
    if (!normalize_in_place(p, false, ec)) return false;
    f = vfile(std::move(p));
    return true;
  }
  if (const file* d = f.descriptor(); d && !*d) {
    ec = make_error_code(errc::bad_argument);
    return false;
  }
  if (const file_handle* h = f.handle(); h && h->bytes.empty()) {
    ec = make_error_code(errc::bad_argument);
    return false;
  }
  return true;
}

bool check_slice(const memory_slice& s, access needed) {
  const auto& r = detail::internals::registration_of(s);
  return r && r->valid() && r->allows(needed);
}

/// Runs a backend primitive on normalized copies of mutable items and copies the results
/// back into the caller's items before `done`.
template <class Item, class Check, class Call, class Back>
void on_copies(std::span<Item> items, vresult* out, done_fn done, Check check, Call call, Back back) {
  auto copies = std::make_shared<std::vector<Item>>(items.begin(), items.end());
  for (std::size_t i = 0; i < copies->size(); ++i) {
    std::error_code ec;
    if (!check((*copies)[i], ec)) return fail_at(out, items.size(), i, ec, done);
  }
  call(std::span<Item>(*copies), [copies, items, back, done](std::error_code ec, std::size_t n) {
    for (std::size_t i = 0; i < items.size(); ++i) back((*copies)[i], items[i]);
    done(ec, n);
  });
}

/// Normalized copies of path-carrying items that the backend only reads.
template <class Item, class Check>
bool normalized(std::span<const Item> items, std::vector<Item>& out, vresult* res, done_fn& done, Check check) {
  out.assign(items.begin(), items.end());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::error_code ec;
    if (!check(out[i], ec)) {
      fail_at(res, items.size(), i, ec, done);
      return false;
    }
  }
  return true;
}

/// Resolves the final symlinks of the items with vattr::follow (named by path) before
/// `call` runs on them; a link that cannot be followed fails the call at its item with
/// nothing run.
void follow_links(detail::backend* b, std::span<vattr> items, vresult* out, done_fn done,
                  std::function<void(done_fn)> call) {
  auto which = std::make_shared<std::vector<std::size_t>>();
  auto paths = std::make_shared<std::vector<std::string>>();
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].follow && items[i].file.path()) which->push_back(i), paths->push_back(*items[i].file.path());
  if (which->empty()) return call(std::move(done));
  detail::resolve_links(*b, *paths, [items, out, done, call, which, paths](std::vector<std::error_code> errors) mutable {
    for (std::size_t k = 0; k < which->size(); ++k)
      if (errors[k]) return fail_at(out, items.size(), (*which)[k], errors[k], done);
    for (std::size_t k = 0; k < which->size(); ++k) items[(*which)[k]].file = vfile((*paths)[k]);
    call(std::move(done));
  });
}

}  // namespace

// ---- the primitives

void client::vopen(std::span<vopen_item> items, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, items.size(), vresult::npos, make_error_code(errc::closed), done);
  on_copies(
      items, out, std::move(done),
      [](vopen_item& it, std::error_code& ec) { return normalize_in_place(it.path, true, ec); },
      [b, out](std::span<vopen_item> c, done_fn d) { b->vopen(c, out, std::move(d)); },
      [](vopen_item& from, vopen_item& to) { to.result = from.result; });
}

void client::vclose(std::span<const file> files, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, files.size(), vresult::npos, make_error_code(errc::closed), done);
  for (std::size_t i = 0; i < files.size(); ++i)
    if (!files[i]) return fail_at(out, files.size(), i, make_error_code(errc::bad_argument), done);
  b->vclose(files, out, std::move(done));
}

namespace {
template <bool Writing>
void start_vio(detail::backend* b, std::span<vio> ios, vresult* out, done_fn done) {
  if (!b) return fail_at(out, ios.size(), vresult::npos, make_error_code(errc::closed), done);
  on_copies(
      ios, out, std::move(done),
      [](vio& io, std::error_code& ec) {
        if (io.region.data() && !check_slice(io.region, Writing ? access::write : access::read)) {
          ec = make_error_code(errc::bad_argument);
          return false;
        }
        if ((!Writing && (io.flags != 0 || io.attrs_after != 0)) ||  // they are vwrite's
            (io.attrs_after & ~(attr::mode | attr::atime | attr::mtime))) {
          ec = make_error_code(errc::bad_argument);
          return false;
        }
        io.bytes = 0;
        io.eof = false;
        return check_vfile(io.file, ec);
      },
      [b, out](std::span<vio> c, done_fn d) {
        if (Writing) b->vwrite(c, out, std::move(d));
        else b->vread(c, out, std::move(d));
      },
      [](vio& from, vio& to) {
        to.bytes = from.bytes;
        to.eof = from.eof;
      });
}
}  // namespace

void client::vread(std::span<vio> ios, vresult* out, done_fn done) {
  start_vio<false>(live(backend_), ios, out, std::move(done));
}
void client::vwrite(std::span<vio> ios, vresult* out, done_fn done) {
  start_vio<true>(live(backend_), ios, out, std::move(done));
}

void client::vgetattrs(std::span<vattr> items, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, items.size(), vresult::npos, make_error_code(errc::closed), done);
  on_copies(
      items, out, std::move(done), [](vattr& a, std::error_code& ec) { return check_vfile(a.file, ec); },
      [b, out](std::span<vattr> c, done_fn d) {
        follow_links(b, c, out, std::move(d), [b, out, c](done_fn d2) { b->vgetattrs(c, out, std::move(d2)); });
      },
      [](vattr& from, vattr& to) {
        to.stat = from.stat;
        to.handle = std::move(from.handle);
      });
}

void client::vsetattrs(std::span<const vattr> items, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, items.size(), vresult::npos, make_error_code(errc::closed), done);
  // Items named by normal paths, with a settable mask and no link to follow, go to the
  // backend as they are; the others through checked, normalized copies.
  if (std::all_of(items.begin(), items.end(), [](const vattr& a) {
        const std::string* p = a.file.path();
        return p && detail::is_normal_path(*p) && !a.follow && a.mask != 0 && !(a.mask & ~attr::settable);
      }))
    return b->vsetattrs(items, out, std::move(done));
  auto copies = std::make_shared<std::vector<vattr>>();
  if (!normalized(items, *copies, out, done, [](vattr& a, std::error_code& ec) {
        if (a.mask == 0 || (a.mask & ~attr::settable)) {
          ec = make_error_code(errc::bad_argument);
          return false;
        }
        return check_vfile(a.file, ec);
      }))
    return;
  follow_links(b, *copies, out, [copies, done](std::error_code ec, std::size_t n) { done(ec, n); },
               [b, out, copies](done_fn d) { b->vsetattrs(*copies, out, std::move(d)); });
}

void client::vmkdir(std::span<const vmkdir_item> items, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, items.size(), vresult::npos, make_error_code(errc::closed), done);
  auto copies = std::make_shared<std::vector<vmkdir_item>>();
  if (!normalized(items, *copies, out, done,
                  [](vmkdir_item& m, std::error_code& ec) { return normalize_in_place(m.path, true, ec); }))
    return;
  b->vmkdir(*copies, out, [copies, done](std::error_code ec, std::size_t n) { done(ec, n); });
}

void client::vsymlink(std::span<const vlink> items, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, items.size(), vresult::npos, make_error_code(errc::closed), done);
  auto copies = std::make_shared<std::vector<vlink>>();
  if (!normalized(items, *copies, out, done, [](vlink& l, std::error_code& ec) {
        // The target is the link's contents, stored as given, never resolved by the client.
        if (l.target.empty() || l.target.find('\0') != std::string::npos) {
          ec = make_error_code(errc::bad_argument);
          return false;
        }
        return normalize_in_place(l.path, true, ec);
      }))
    return;
  b->vsymlink(*copies, out, [copies, done](std::error_code ec, std::size_t n) { done(ec, n); });
}

void client::vhardlink(std::span<const vlink> items, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, items.size(), vresult::npos, make_error_code(errc::closed), done);
  auto copies = std::make_shared<std::vector<vlink>>();
  if (!normalized(items, *copies, out, done, [](vlink& l, std::error_code& ec) {
        return normalize_in_place(l.target, true, ec) && normalize_in_place(l.path, true, ec);
      }))
    return;
  b->vhardlink(*copies, out, [copies, done](std::error_code ec, std::size_t n) { done(ec, n); });
}

void client::vreadlink(std::span<const std::string> paths, std::vector<std::string>* targets, vresult* out,
                       done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, paths.size(), vresult::npos, make_error_code(errc::closed), done);
  if (!targets) return fail_at(out, paths.size(), vresult::npos, make_error_code(errc::bad_argument), done);
  auto copies = std::make_shared<std::vector<std::string>>();
  if (!normalized(paths, *copies, out, done,
                  [](std::string& p, std::error_code& ec) { return normalize_in_place(p, true, ec); }))
    return;
  targets->assign(paths.size(), std::string());
  b->vreadlink(*copies, targets->data(), out, [copies, done](std::error_code ec, std::size_t n) { done(ec, n); });
}

void client::vremove(std::span<const std::string> paths, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, paths.size(), vresult::npos, make_error_code(errc::closed), done);
  auto copies = std::make_shared<std::vector<std::string>>();
  if (!normalized(paths, *copies, out, done,
                  [](std::string& p, std::error_code& ec) { return normalize_in_place(p, true, ec); }))
    return;
  b->vremove(*copies, out, [copies, done](std::error_code ec, std::size_t n) { done(ec, n); });
}

void client::vrename(std::span<const vrename_item> items, vresult* out, done_fn done) {
  detail::backend* b = live(backend_);
  if (!b) return fail_at(out, items.size(), vresult::npos, make_error_code(errc::closed), done);
  auto copies = std::make_shared<std::vector<vrename_item>>();
  if (!normalized(items, *copies, out, done, [](vrename_item& r, std::error_code& ec) {
        return normalize_in_place(r.from, true, ec) && normalize_in_place(r.to, true, ec);
      }))
    return;
  b->vrename(*copies, out, [copies, done](std::error_code ec, std::size_t n) { done(ec, n); });
}

vresult client::vopen_simple(std::span<const std::string> paths, int flags, std::uint32_t mode,
                             std::vector<file>* files) {
  std::vector<vopen_item> items;
  items.reserve(paths.size());
  for (const auto& p : paths) items.push_back(vopen_item{p, flags, mode, {}});
  vresult r = vopen(items);
  if (files) {
    files->clear();
    for (auto& it : items) files->push_back(it.result);
  }
  return r;
}

}  // namespace vnfs
