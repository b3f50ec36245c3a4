// vnfs client: the backend-neutral front of class client. It normalizes paths, checks
// arguments the backends can rely on (registered slices, open files, closed state), turns
// every operation into a backend call with a done_fn, and builds the synchronous forms as a
// wait on the asynchronous ones.
#include "vnfs/client.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>

#include "client/backend.hpp"
#include "client/backend_factory.hpp"
#include "client/backends.hpp"
#include "client/caller_drive.hpp"
#include "client/internals.hpp"
#include "client/memory/registration.hpp"
#include "client/path.hpp"
#include "vnfs/url.hpp"

namespace vnfs {

const std::string& file::path() const {
  static const std::string none;
  return state_ ? state_->path : none;
}

namespace detail {
namespace {

std::mutex& factories_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, backend_factory>& factories() {
  static std::map<std::string, backend_factory> f;
  return f;
}

}  // namespace

backend_factory set_backend_factory(const std::string& scheme, backend_factory f) {
  std::lock_guard lock(factories_mutex());
  auto& map = factories();
  backend_factory previous;
  if (auto it = map.find(scheme); it != map.end()) {
    previous = std::move(it->second);
    map.erase(it);
  }
  if (f) map.emplace(scheme, std::move(f));
  return previous;
}

}  // namespace detail

namespace {

using detail::done_fn;

/// The backend to call, or nothing after close() (or in a moved-from client).
detail::backend* open_backend(const std::unique_ptr<detail::backend>& b) {
  if (!b || b->registrations().closed()) return nullptr;
  return b.get();
}

void fail(done_fn& done, errc e) { done(make_error_code(e), 0); }

/// Normalizes `in` into `out`; on error completes `done` and returns false. With
/// `need_name`, the root itself ("") is refused too: the operation creates or removes a name.
bool normalize(const std::string& in, std::string& out, done_fn& done, bool need_name = false) {
  try {
    out = detail::normalize_path(in);
  } catch (const std::system_error& e) {
    done(e.code(), 0);
    return false;
  }
  if (need_name && out.empty()) {
    fail(done, errc::bad_argument);
    return false;
  }
  return true;
}

/// A slice the backend may move data into (read) or out of (write): from a registration that
/// is still registered and allows that direction.
bool usable(const memory_slice& s, access needed) {
  const auto& r = detail::internals::registration_of(s);
  return r && r->valid() && r->allows(needed);
}

/// What a synchronous call waits on. Shared with the done_fn: the backend may destroy its
/// copy of the done_fn after the waiting thread has returned.
struct sync_waiter {
  std::mutex mutex;
  std::condition_variable cv;
  std::shared_ptr<detail::drivable> driving;  // the engine the waiter runs, if it does
  bool done = false;
  std::error_code ec;
  std::size_t n = 0;
};

}  // namespace

// ---- a waiting caller driving its call (caller_drive.hpp)

namespace {
thread_local detail::sync_start* current_sync_start = nullptr;
}

detail::sync_start::sync_start() : outer_(current_sync_start) { current_sync_start = this; }

detail::sync_start::~sync_start() {
  if (!ended_) {
    current_sync_start = outer_;
    if (engine_) engine_->wake();
  }
}

detail::sync_start* detail::sync_start::current() { return current_sync_start; }

bool detail::sync_start::note(const std::shared_ptr<drivable>& engine) {
  if (engine_ == engine) {
    ++submitted_;
    return true;
  }
  if (!engine_ && !several_) {
    engine_ = engine;
    submitted_ = 1;
    return true;
  }
  several_ = true;
  return false;
}

std::shared_ptr<detail::drivable> detail::sync_start::take() {
  ended_ = true;
  current_sync_start = outer_;
  auto engine = std::move(engine_);
  if (engine && several_) {
    engine->wake();
    return nullptr;
  }
  return engine;
}

// ---- the synchronous forms (vnfs/call_forms.hpp)

std::pair<std::error_code, std::size_t> detail::wait(const std::function<void(done_fn)>& start) {
  auto w = std::make_shared<sync_waiter>();
  std::shared_ptr<drivable> engine;
  std::uint32_t submitted = 0;
  {
    sync_start scope;
    start(done_fn([w](std::error_code ec, std::size_t n) {
      std::shared_ptr<drivable> driving;
      {
        std::lock_guard lock(w->mutex);
        w->ec = ec;
        w->n = n;
        w->done = true;
        driving = std::move(w->driving);
      }
      // After the unlock: a waiter woken while the mutex is still held would go straight back
      // to sleep on it (two more context switches per call). `w` lives on in this callback.
      w->cv.notify_one();
      if (driving) driving->interrupt();  // completed off the engine: the driving waiter looks
    }));
    engine = scope.take();
    submitted = scope.submitted();
  }
  const auto done = [&w] {
    std::lock_guard lock(w->mutex);
    return w->done;
  };
  if (engine) {
    bool finished;
    {
      std::lock_guard lock(w->mutex);
      finished = w->done;
      if (!finished) w->driving = engine;
    }
    if (!finished) {  // (a call already complete needs no runner: nothing stops the I/O thread for it)
      if (!engine->drive(done, submitted)) engine->wake();
      std::lock_guard lock(w->mutex);
      w->driving.reset();
    }
  }
  std::unique_lock lock(w->mutex);
  w->cv.wait(lock, [&] { return w->done; });
  return {w->ec, w->n};
}

std::size_t detail::wait_or_throw(const char* op, const std::string& what, const std::function<void(done_fn)>& start) {
  auto [ec, n] = wait(start);
  if (ec) throw std::system_error(ec, std::string("vnfs: ") + op + " " + what);
  return n;
}

// ---- life cycle

client::client(std::unique_ptr<detail::backend> b, boost::asio::any_io_executor executor)
    : backend_(std::move(b)), executor_(std::move(executor)) {}

client::client(client&&) noexcept = default;

client& client::operator=(client&& other) noexcept {
  if (this != &other) {
    try {
      close();
    } catch (...) {
      // A failed orderly shutdown still releases everything below; nothing to report to.
    }
    backend_ = std::move(other.backend_);
    executor_ = std::move(other.executor_);
  }
  return *this;
}

client::~client() {
  try {
    close();
  } catch (...) {
  }
}

client client::connect(std::string_view text, client_options options) {
  url u = parse_url(text);
  detail::backend_factory factory;
  {
    std::lock_guard lock(detail::factories_mutex());
    if (auto it = detail::factories().find(u.scheme); it != detail::factories().end()) factory = it->second;
  }
  if (options.atomic_vectors && (u.scheme == "file" || !options.compound_vectors))
    throw std::system_error(make_error_code(errc::bad_argument),
                            "vnfs: atomic_vectors needs nfs:// with compound_vectors: " + std::string(text));
  std::unique_ptr<detail::backend> b;
  if (factory)
    b = factory(u, options);
  else if (u.scheme == "nfs" || u.scheme == "nfs+rdma")
    b = detail::make_nfs_backend(u, options);
  else if (u.scheme == "file")
    b = detail::make_local_backend(u.path, options);
  else
    throw std::system_error(make_error_code(errc::bad_url), "vnfs: connect " + std::string(text));
  if (!b) throw std::system_error(make_error_code(errc::unsupported_url), "vnfs: connect " + std::string(text));
  return client(std::move(b), std::move(options.executor));
}

void client::close() {
  if (!backend_) return;
  // First, so that calls starting from now fail in the front whatever the backend does.
  backend_->registrations().close();
  backend_->close_all();
}

memory_region client::register_memory(void* ptr, std::size_t len, access a) {
  if (!backend_) throw std::system_error(make_error_code(errc::closed), "vnfs: register_memory");
  return detail::internals::make_region(backend_->registrations().add(ptr, len, a));
}

client_stats client::stats() const { return backend_ ? backend_->stats() : client_stats{}; }

// ---- the callback forms: argument checks, then the backend; each completes `done`
// exactly once, with a front error or through the backend. The other forms are these
// (vnfs/call_forms.hpp).

void client::open(std::string path, int flags, std::uint32_t mode, file* out, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string p;
  if (!b) return fail(done, errc::closed);
  if (!out) return fail(done, errc::bad_argument);
  if (!normalize(path, p, done)) return;
  b->open(p, flags, mode, out, std::move(done));
}

void client::close(const file& f, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!f) return fail(done, errc::bad_argument);
  b->close(f, std::move(done));
}

void client::read(const file& f, std::uint64_t offset, memory_slice dst, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!f || !usable(dst, access::read)) return fail(done, errc::bad_argument);
  detail::read_target t;
  t.registered = std::move(dst);
  b->read(f, offset, std::move(t), std::move(done));
}

void client::read(const file& f, std::uint64_t offset, std::span<std::byte> dst, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!f) return fail(done, errc::bad_argument);
  detail::read_target t;
  t.plain = dst;
  b->read(f, offset, std::move(t), std::move(done));
}

void client::write(const file& f, std::uint64_t offset, memory_slice src, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!f || !usable(src, access::write)) return fail(done, errc::bad_argument);
  detail::write_source s;
  s.registered = std::move(src);
  b->write(f, offset, std::move(s), std::move(done));
}

void client::write(const file& f, std::uint64_t offset, std::span<const std::byte> src, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!f) return fail(done, errc::bad_argument);
  detail::write_source s;
  s.plain = src;
  b->write(f, offset, std::move(s), std::move(done));
}

void client::fsync(const file& f, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!f) return fail(done, errc::bad_argument);
  b->fsync(f, std::move(done));
}

void client::stat(std::string path, file_stat* out, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string p;
  if (!b) return fail(done, errc::closed);
  if (!out) return fail(done, errc::bad_argument);
  if (!normalize(path, p, done)) return;
  b->stat(p, out, std::move(done));
}

void client::fstat(const file& f, file_stat* out, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!f || !out) return fail(done, errc::bad_argument);
  b->fstat(f, out, std::move(done));
}

void client::truncate(std::string path, std::uint64_t size, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string p;
  if (!b) return fail(done, errc::closed);
  if (!normalize(path, p, done)) return;
  b->truncate(p, size, std::move(done));
}

void client::mkdir(std::string path, std::uint32_t mode, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string p;
  if (!b) return fail(done, errc::closed);
  if (!normalize(path, p, done, true)) return;
  b->mkdir(p, mode, std::move(done));
}

void client::unlink(std::string path, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string p;
  if (!b) return fail(done, errc::closed);
  if (!normalize(path, p, done, true)) return;
  b->unlink(p, std::move(done));
}

void client::rmdir(std::string path, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string p;
  if (!b) return fail(done, errc::closed);
  if (!normalize(path, p, done, true)) return;
  b->rmdir(p, std::move(done));
}

void client::rename(std::string from, std::string to, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string f, t;
  if (!b) return fail(done, errc::closed);
  if (!normalize(from, f, done, true) || !normalize(to, t, done, true)) return;
  b->rename(f, t, std::move(done));
}

void client::link(std::string existing, std::string new_path, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string e, n;
  if (!b) return fail(done, errc::closed);
  if (!normalize(existing, e, done, true) || !normalize(new_path, n, done, true)) return;
  b->link(e, n, std::move(done));
}

// The target is the link's content, stored as given: it is never a path the client resolves.
void client::symlink(std::string target, std::string link_path, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string l;
  if (!b) return fail(done, errc::closed);
  if (target.empty() || target.find('\0') != std::string::npos) return fail(done, errc::bad_argument);
  if (!normalize(link_path, l, done, true)) return;
  b->symlink(target, l, std::move(done));
}

void client::readlink(std::string path, std::string* out, done_fn done) {
  detail::backend* b = open_backend(backend_);
  std::string p;
  if (!b) return fail(done, errc::closed);
  if (!out) return fail(done, errc::bad_argument);
  if (!normalize(path, p, done, true)) return;
  b->readlink(p, out, std::move(done));
}

/// One page into d->entries (cleared first). At eof it completes at once, without a call.
void client::readdir(dir_stream* d, done_fn done) {
  detail::backend* b = open_backend(backend_);
  if (!b) return fail(done, errc::closed);
  if (!d) return fail(done, errc::bad_argument);
  d->entries.clear();
  std::string p;
  if (!normalize(d->path, p, done)) return;
  d->path = std::move(p);
  if (d->eof) return done({}, 0);
  b->readdir(d, std::move(done));
}

// ---- listing a directory synchronously

dir_stream client::opendir(std::string path) {
  if (!open_backend(backend_)) throw std::system_error(make_error_code(errc::closed), "vnfs: opendir " + path);
  dir_stream d;
  try {
    d.path = detail::normalize_path(path);
  } catch (const std::system_error& e) {
    throw std::system_error(e.code(), "vnfs: opendir " + path);
  }
  return d;
}

std::optional<dir_entry> client::readdir(dir_stream& d) {
  while (d.entries.empty() && !d.eof) {
    const std::uint64_t cookie = d.cookie;
    detail::wait_or_throw("readdir", d.path, [&](done_fn f) { readdir(&d, std::move(f)); });
    // An empty page that neither ends the listing nor moves on would repeat forever.
    if (d.entries.empty() && !d.eof && d.cookie == cookie)
      throw std::system_error(make_error_code(errc::protocol_error), "vnfs: readdir " + d.path + ": no progress");
  }
  if (d.entries.empty()) return std::nullopt;
  // Pages are bounded by the server's reply size, so erasing at the front stays cheap enough.
  dir_entry e = std::move(d.entries.front());
  d.entries.erase(d.entries.begin());
  return e;
}

}  // namespace vnfs
