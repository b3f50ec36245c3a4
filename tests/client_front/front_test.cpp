// Tests of the client front's own plumbing — path normalization reaching the backend, argument
// checks, synchronous waits, group delivery, readdir paging, closed state, connect dispatch —
// over an in-test fake backend. The fake checks only that plumbing: real backend behaviour
// (NFSv4.1 against vnfsd and NFS-Ganesha, file://) is tested in tests/client/.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "client/backend.hpp"
#include "client/backend_factory.hpp"
#include "client/memory/registration.hpp"
#include "vnfs/client.hpp"

namespace {

using vnfs::detail::done_fn;

struct fake_file : vnfs::detail::open_file {};

/// Completes every call on its own thread, as real backends do, and records what it saw.
class fake_backend final : public vnfs::detail::backend {
 public:
  struct shared {
    std::mutex mutex;
    std::vector<std::string> calls;  // "op arg arg"
    int close_all_calls = 0;
    std::error_code next_error;      // the status the next completion reports
    std::byte* last_registered = nullptr;
    std::size_t last_plain_size = 0;
    std::thread::id worker;  // the thread every completion comes from
  };

  explicit fake_backend(std::shared_ptr<shared> s)
      : s_(std::move(s)), regs_(vnfs::detail::registration_table::create(4096)), worker_([this] { run(); }) {}
  ~fake_backend() override {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  void open(const std::string& p, int, std::uint32_t, vnfs::file* out, done_fn d) override {
    post("open " + p, std::move(d), [p, out] {
      auto f = std::make_shared<fake_file>();
      f->path = p;
      *out = vnfs::detail::internals::make_file(f);
      return 0;
    });
  }
  void close(const vnfs::file& f, done_fn d) override { post("close " + f.path(), std::move(d)); }
  void read(const vnfs::file& f, std::uint64_t off, vnfs::detail::read_target t, done_fn d) override {
    {
      std::lock_guard lock(s_->mutex);
      s_->last_registered = t.registered.data();
      s_->last_plain_size = t.plain.size();
    }
    post("read " + f.path() + " " + std::to_string(off), std::move(d), [t] {
      auto b = t.bytes();
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::byte(i & 0xff);
      return b.size();
    });
  }
  void write(const vnfs::file& f, std::uint64_t off, vnfs::detail::write_source src, done_fn d) override {
    {
      std::lock_guard lock(s_->mutex);
      s_->last_registered = const_cast<std::byte*>(src.registered.data());
      s_->last_plain_size = src.plain.size();
    }
    post("write " + f.path() + " " + std::to_string(off), std::move(d), [src] { return src.bytes().size(); });
  }
  void fsync(const vnfs::file& f, done_fn d) override { post("fsync " + f.path(), std::move(d)); }
  void stat(const std::string& p, vnfs::file_stat* out, done_fn d) override {
    post("stat " + p, std::move(d), [out] {
      out->type = vnfs::file_type::regular;
      out->size = 1234;
      return 0;
    });
  }
  void fstat(const vnfs::file& f, vnfs::file_stat* out, done_fn d) override {
    post("fstat " + f.path(), std::move(d), [out] {
      out->size = 99;
      return 0;
    });
  }
  void truncate(const std::string& p, std::uint64_t n, done_fn d) override {
    post("truncate " + p + " " + std::to_string(n), std::move(d));
  }
  void setattr(const std::string& p, unsigned mask, const vnfs::file_stat&, done_fn d) override {
    post("setattr " + p + " " + std::to_string(mask), std::move(d));
  }
  void mkdir(const std::string& p, std::uint32_t mode, done_fn d) override {
    post("mkdir " + p + " " + std::to_string(mode), std::move(d));
  }
  void unlink(const std::string& p, done_fn d) override { post("unlink " + p, std::move(d)); }
  void rmdir(const std::string& p, done_fn d) override { post("rmdir " + p, std::move(d)); }
  void rename(const std::string& a, const std::string& b, done_fn d) override { post("rename " + a + " " + b, std::move(d)); }
  void link(const std::string& a, const std::string& b, done_fn d) override { post("link " + a + " " + b, std::move(d)); }
  void symlink(const std::string& t, const std::string& l, done_fn d) override { post("symlink " + t + " " + l, std::move(d)); }
  void readlink(const std::string& p, std::string* out, done_fn d) override {
    post("readlink " + p, std::move(d), [out] {
      *out = "../target";
      return 0;
    });
  }
  // Pages: cookie 0 -> {a, b}; 2 -> {} (empty page, not the end); 3 -> {c}, end.
  void readdir(vnfs::dir_stream* ds, done_fn d) override {
    post("readdir " + ds->path + " " + std::to_string(ds->cookie), std::move(d), [ds] {
      auto add = [ds](const char* n) { ds->entries.push_back(vnfs::dir_entry{n, {}}); };
      if (ds->cookie == 0) {
        add("a");
        add("b");
        ds->cookie = 2;
      } else if (ds->cookie == 2) {
        ds->cookie = 3;
      } else {
        add("c");
        ds->eof = true;
      }
      return 0;
    });
  }
  void close_all() override {
    std::lock_guard lock(s_->mutex);
    ++s_->close_all_calls;
  }
  vnfs::client_stats stats() const override {
    vnfs::client_stats st;
    st.compounds = 42;
    return st;
  }
  vnfs::detail::registration_table& registrations() override { return *regs_; }

 private:
  template <class Work = int (*)()>
  void post(std::string call, done_fn d, Work w = [] { return 0; }) {
    std::error_code ec;
    {
      std::lock_guard lock(s_->mutex);
      s_->calls.push_back(std::move(call));
      ec = std::exchange(s_->next_error, {});
    }
    {
      std::lock_guard lock(m_);
      queue_.push_back([d = std::move(d), w = std::move(w), ec]() mutable {
        if (ec) return d(ec, 0);
        std::size_t n = w();
        d({}, n);
      });
    }
    cv_.notify_one();
  }

  void run() {
    {
      std::lock_guard lock(s_->mutex);
      s_->worker = std::this_thread::get_id();
    }
    std::unique_lock lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::shared_ptr<shared> s_;
  std::shared_ptr<vnfs::detail::registration_table> regs_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread worker_;
};

/// Routes nfs:// to a fake backend for the duration of a test.
struct fake_nfs {
  std::shared_ptr<fake_backend::shared> s = std::make_shared<fake_backend::shared>();
  vnfs::url seen_url;
  fake_nfs() {
    vnfs::detail::set_backend_factory("nfs", [this](const vnfs::url& u, const vnfs::client_options&) {
      seen_url = u;
      return std::make_unique<fake_backend>(s);
    });
  }
  ~fake_nfs() { vnfs::detail::set_backend_factory("nfs", {}); }
  std::vector<std::string> calls() {
    std::lock_guard lock(s->mutex);
    return s->calls;
  }
  /// The thread the backend completes calls on (set once it has started).
  std::thread::id worker() {
    std::lock_guard lock(s->mutex);
    return s->worker;
  }
  void fail_next(std::error_code ec) {
    std::lock_guard lock(s->mutex);
    s->next_error = ec;
  }
};

template <class F>
std::error_code code_of(F f) {
  try {
    f();
  } catch (const std::system_error& e) {
    return e.code();
  }
  return {};
}

using strings = std::vector<std::string>;

}  // namespace

TEST_CASE("connect dispatches on the scheme") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://[::1]:3049/exp/./sub/");
  CHECK(fake.seen_url.host == "::1");
  CHECK(fake.seen_url.port == 3049);
  CHECK(fake.seen_url.path == "/exp/sub");
  CHECK(c.stats().compounds == 42);

  CHECK(code_of([] { vnfs::client::connect("nfs+rdma://h/x?provider=iwarp-magic"); }) == vnfs::errc::unsupported_url);
  CHECK(code_of([] { vnfs::client::connect("smb://h/x"); }) == vnfs::errc::bad_url);
  CHECK(code_of([] { vnfs::client::connect("nfs://h:x/"); }) == vnfs::errc::bad_url);
}

TEST_CASE("synchronous calls reach the backend with normalized paths") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  auto st = c.stat("/a//b/./c/");
  CHECK(st.size == 1234);
  CHECK(st.type == vnfs::file_type::regular);
  c.mkdir("d/", 0700);
  c.unlink("./d/x");
  c.rmdir("d/y/../z");
  c.rename("/a", "b//c");
  c.link("a", "/l");
  c.symlink("../anything/./kept", "dir/s");  // the target is content: passed as given
  CHECK(c.readlink("dir//s") == "../target");
  c.truncate("/t", 77);
  CHECK(fake.calls() == strings{"stat a/b/c", "mkdir d 448", "unlink d/x", "rmdir d/z", "rename a b/c", "link a l",
                                "symlink ../anything/./kept dir/s", "readlink dir/s", "truncate t 77"});
}

TEST_CASE("files: open, I/O through plain and registered memory, close") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  vnfs::file f = c.open("/x/../f", 0);
  REQUIRE(f);
  CHECK(f.path() == "f");
  CHECK(c.fstat(f).size == 99);

  std::vector<std::byte> plain(10);
  CHECK(c.pread(f, 5, plain) == 10);
  CHECK(plain[3] == std::byte(3));
  CHECK(fake.s->last_registered == nullptr);
  CHECK(fake.s->last_plain_size == 10);
  CHECK(c.pwrite(f, 0, std::span<const std::byte>(plain).first(4)) == 4);

  std::vector<std::byte> buf(64);
  auto mr = c.register_memory(buf.data(), buf.size());
  CHECK(c.pread(f, 0, mr.slice(8, 16)) == 16);
  CHECK(fake.s->last_registered == buf.data() + 8);
  CHECK(buf[8 + 15] == std::byte(15));
  CHECK(c.pwrite(f, 100, mr.slice(0, 32)) == 32);
  CHECK(fake.s->last_registered == buf.data());
  c.fsync(f);
  c.close(f);
  CHECK(fake.calls() == strings{"open f", "fstat f", "read f 5", "write f 0", "read f 0", "write f 100", "fsync f",
                                "close f"});
}

TEST_CASE("the front refuses what a backend must never see") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  auto bad = vnfs::make_error_code(vnfs::errc::bad_argument);
  CHECK(code_of([&] { c.stat("../x"); }) == bad);
  CHECK(code_of([&] { c.open("a/../../x", 0); }) == bad);
  CHECK(code_of([&] { c.mkdir("/"); }) == bad);  // no name to create
  CHECK(code_of([&] { c.unlink(""); }) == bad);
  CHECK(code_of([&] { c.rmdir("a/.."); }) == bad);
  CHECK(code_of([&] { c.rename("a", "."); }) == bad);
  CHECK(code_of([&] { c.symlink("", "l"); }) == bad);
  CHECK(code_of([&] { c.opendir("/.."); }) == bad);

  vnfs::file none;
  CHECK(code_of([&] { c.fsync(none); }) == bad);

  std::vector<std::byte> buf(64);
  vnfs::file f = c.open("f", 0);
  auto read_only = c.register_memory(buf.data(), 32, vnfs::access::read);     // reads land in it
  auto write_only = c.register_memory(buf.data() + 32, 32, vnfs::access::write);  // writes leave it
  CHECK(code_of([&] { c.pwrite(f, 0, read_only.all()); }) == bad);
  CHECK(code_of([&] { c.pread(f, 0, write_only.all()); }) == bad);
  CHECK(code_of([&] { c.pread(f, 0, vnfs::memory_slice()); }) == bad);
  CHECK(c.pread(f, 0, read_only.all()) == 32);
  CHECK(c.pwrite(f, 0, write_only.all()) == 32);

  auto stale = std::make_unique<vnfs::memory_region>(c.register_memory(buf.data(), 8));
  auto slice = stale->all();
  stale.reset();  // deregistered: the slice stays valid memory-wise, but is refused
  CHECK(code_of([&] { c.pread(f, 0, slice); }) == bad);
  CHECK(code_of([&] { c.pwrite(f, 0, slice); }) == bad);

  CHECK(fake.calls() == strings{"open f", "read f 0", "write f 0"});
}

TEST_CASE("registration limit through the client") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  std::vector<std::byte> buf(8192);
  auto a = c.register_memory(buf.data(), 4096);  // the fake's cap
  CHECK(code_of([&] { c.register_memory(buf.data() + 4096, 1); }) == vnfs::errc::registration_limit);
  CHECK(code_of([&] { c.register_memory(nullptr, 1); }) == vnfs::errc::bad_argument);
  a = vnfs::memory_region();
  auto b = c.register_memory(buf.data() + 4096, 4096);
  CHECK(b.size() == 4096);
}

TEST_CASE("backend errors become system_error naming the operation and path") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  fake.fail_next(make_error_code(std::errc::no_such_file_or_directory));
  try {
    c.stat("/missing");
    FAIL("no error");
  } catch (const std::system_error& e) {
    CHECK(e.code() == std::errc::no_such_file_or_directory);
    CHECK(std::string(e.what()).rfind("vnfs: stat /missing", 0) == 0);
  }
  CHECK(c.stat("/present").size == 1234);  // the error was for one call only
}

TEST_CASE("group form: every operation completes once into its group with its tag") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  vnfs::completion_group g = c.make_group(), other = c.make_group();
  vnfs::file_stat st;
  std::string target;
  vnfs::file f;
  c.stat("/s", &st, g, 1);
  c.mkdir("m", 0755, g, 2);
  c.readlink("l", &target, other, 3);
  c.unlink("../escape", g, 4);  // refused by the front: still one completion
  c.open("o", 0, 0644, &f, g, 5);
  fake.fail_next(make_error_code(std::errc::permission_denied));
  c.rmdir("r", g, 6);
  CHECK(g.outstanding() == 5);
  CHECK(other.outstanding() == 1);

  std::map<std::uint64_t, std::error_code> got;
  for (int i = 0; i < 5; ++i) {
    auto e = g.wait_for(std::chrono::seconds(10));
    REQUIRE(e);
    CHECK(got.emplace(e->tag, e->status).second);
  }
  CHECK_FALSE(g.poll());
  CHECK(g.outstanding() == 0);
  CHECK_FALSE(got.at(1));
  CHECK_FALSE(got.at(2));
  CHECK(got.at(4) == vnfs::errc::bad_argument);
  CHECK_FALSE(got.at(5));
  CHECK(got.at(6) == std::errc::permission_denied);
  auto o = other.wait_for(std::chrono::seconds(10));
  REQUIRE(o);
  CHECK(o->tag == 3);
  CHECK(st.size == 1234);
  CHECK(target == "../target");
  CHECK(f.path() == "o");

  std::vector<std::byte> buf(16);
  auto mr = c.register_memory(buf.data(), buf.size());
  c.read(f, 0, mr.all(), g, 7);
  auto r = g.wait_for(std::chrono::seconds(10));
  REQUIRE(r);
  CHECK(r->tag == 7);
  CHECK(r->bytes == 16);
}

TEST_CASE("Asio token form") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  vnfs::file f = c.open("f", 0);
  std::vector<std::byte> buf(16);
  auto mr = c.register_memory(buf.data(), buf.size());
  // std::error_code is not Asio's error type, so use_future delivers both values.
  auto n = c.async_read(f, 0, mr.slice(0, 8), boost::asio::use_future);
  REQUIRE(n.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto [ec, bytes] = n.get();
  CHECK_FALSE(ec);
  CHECK(bytes == 8);

  auto ro = c.register_memory(buf.data(), 1, vnfs::access::read);
  std::promise<std::error_code> p;
  c.async_write(f, 0, ro.all(), [&](std::error_code ec, std::size_t) { p.set_value(ec); });
  auto fut = p.get_future();
  REQUIRE(fut.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(fut.get() == vnfs::errc::bad_argument);
}

TEST_CASE("Asio handlers: without an executor on the completing client thread, else on their executor") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  vnfs::file f = c.open("f", 0);  // completed by the worker, which has set `worker` by then
  std::vector<std::byte> buf(16);
  auto mr = c.register_memory(buf.data(), buf.size());
  const std::thread::id worker = fake.worker();
  REQUIRE(worker != std::thread::id());

  // No associated executor: called by the thread that completed the operation, the
  // backend's worker (client.hpp's threading model), not by a thread of Asio's.
  std::promise<std::thread::id> plain;
  c.async_read(f, 0, mr.slice(0, 8), [&](std::error_code, std::size_t) {
    plain.set_value(std::this_thread::get_id());
  });
  auto plain_thread = plain.get_future();
  REQUIRE(plain_thread.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(plain_thread.get() == worker);

  // Bound to an io_context: posted there, so it runs in io.run() on this thread.
  boost::asio::io_context io;
  std::optional<std::thread::id> bound_thread;
  c.async_read(f, 0, mr.slice(0, 8), boost::asio::bind_executor(io, [&](std::error_code, std::size_t n) {
                 CHECK(n == 8);
                 bound_thread = std::this_thread::get_id();
               }));
  CHECK(io.run_one_for(std::chrono::seconds(10)) == 1);
  REQUIRE(bound_thread);
  CHECK(*bound_thread == std::this_thread::get_id());
}

TEST_CASE("client_options::executor: handlers without an executor of their own run on it") {
  fake_nfs fake;
  boost::asio::io_context app;  // the application's
  vnfs::client_options o;
  o.executor = app.get_executor();
  auto c = vnfs::client::connect("nfs://h/e", o);
  vnfs::file f = c.open("f", 0);
  std::vector<std::byte> buf(16);
  auto mr = c.register_memory(buf.data(), buf.size());
  const std::thread::id worker = fake.worker();
  REQUIRE(worker != std::thread::id());

  // A handler bound to another executor still runs there, not on the client's.
  boost::asio::io_context other;
  std::optional<std::thread::id> bound_thread;
  c.async_stat("s", boost::asio::bind_executor(other, [&](std::error_code ec, vnfs::file_stat st) {
                 CHECK_FALSE(ec);
                 CHECK(st.size == 1234);
                 bound_thread = std::this_thread::get_id();
               }));
  CHECK(other.run_one_for(std::chrono::seconds(10)) == 1);
  REQUIRE(bound_thread);
  CHECK(*bound_thread == std::this_thread::get_id());
  CHECK(app.poll() == 0);  // nothing was posted to the application's io_context
  app.restart();

  // Plain handlers (scalar and vectorized): posted to the application's io_context, so they
  // run on the thread running it, and its run() waits for them (work is outstanding).
  // The handlers record what they saw; the test checks it after the io_context's thread ends.
  std::optional<std::thread::id> read_thread, vector_thread;
  std::error_code read_ec, vector_ec;
  std::size_t read_bytes = 0, vector_ok = 0;
  c.async_read(f, 0, mr.slice(0, 8), [&](std::error_code ec, std::size_t n) {
    read_ec = ec;
    read_bytes = n;
    read_thread = std::this_thread::get_id();
  });
  std::vector<vnfs::vattr> items{vnfs::vattr("s")};
  c.async_vgetattrs(items, [&](std::error_code ec, vnfs::vresult r) {
    vector_ec = ec;
    vector_ok = r.ok_count;
    vector_thread = std::this_thread::get_id();
  });
  std::thread::id app_thread;
  std::size_t handlers = 0;
  std::thread runner([&] {
    app_thread = std::this_thread::get_id();
    handlers = app.run_for(std::chrono::seconds(10));  // returns when both handlers have run
  });
  runner.join();
  CHECK(handlers == 2);
  CHECK_FALSE(read_ec);
  CHECK_FALSE(vector_ec);
  CHECK(read_bytes == 8);
  CHECK(vector_ok == 1);
  REQUIRE(read_thread);
  REQUIRE(vector_thread);
  CHECK(*read_thread == app_thread);
  CHECK(*vector_thread == app_thread);
  CHECK(app_thread != worker);
  CHECK(app_thread != std::this_thread::get_id());
}

TEST_CASE("readdir pages through the listing, skipping empty pages") {
  fake_nfs fake;
  auto c = vnfs::client::connect("nfs://h/e");
  auto d = c.opendir("/dir/sub/");
  CHECK(d.path == "dir/sub");
  strings names;
  while (auto e = c.readdir(d)) names.push_back(e->name);
  CHECK(names == strings{"a", "b", "c"});
  CHECK_FALSE(c.readdir(d));  // stays at the end, without more calls
  CHECK(fake.calls() == strings{"readdir dir/sub 0", "readdir dir/sub 2", "readdir dir/sub 3"});

  // Group form: one page, replacing the entries.
  vnfs::completion_group g;
  vnfs::dir_stream ds;
  ds.path = "/x/";
  ds.entries.push_back(vnfs::dir_entry{"stale", {}});
  c.readdir(&ds, g, 1);
  REQUIRE(g.wait_for(std::chrono::seconds(10)));
  REQUIRE(ds.entries.size() == 2);
  CHECK(ds.entries[0].name == "a");
  CHECK(ds.cookie == 2);
  CHECK(ds.path == "x");
}

TEST_CASE("close: idempotent, then every call fails with closed") {
  fake_nfs fake;
  std::vector<std::byte> buf(16);
  {
    auto c = vnfs::client::connect("nfs://h/e");
    vnfs::file f = c.open("f", 0);
    c.close();
    c.close();
    auto closed = vnfs::make_error_code(vnfs::errc::closed);
    CHECK(code_of([&] { c.stat("x"); }) == closed);
    CHECK(code_of([&] { c.pread(f, 0, buf); }) == closed);
    CHECK(code_of([&] { c.register_memory(buf.data(), 1); }) == closed);
    CHECK(code_of([&] { c.opendir("d"); }) == closed);
    vnfs::completion_group g;
    c.mkdir("m", 0755, g, 9);
    auto e = g.poll();  // refused in the front: already delivered
    REQUIRE(e);
    CHECK(e->tag == 9);
    CHECK(e->status == closed);
    CHECK(fake.calls() == strings{"open f"});

    vnfs::client moved = std::move(c);
    CHECK(code_of([&] { c.stat("x"); }) == closed);  // moved-from
    CHECK(code_of([&] { moved.stat("x"); }) == closed);
  }
  std::lock_guard lock(fake.s->mutex);
  CHECK(fake.s->close_all_calls == 3);  // close(), close() again, the destructor of `moved`
}

TEST_CASE("the destructor closes the backend") {
  fake_nfs fake;
  { auto c = vnfs::client::connect("nfs://h/e"); }
  std::lock_guard lock(fake.s->mutex);
  CHECK(fake.s->close_all_calls == 1);
}

TEST_CASE("error category") {
  const auto& cat = vnfs::category();
  CHECK(std::string(cat.name()) == "vnfs");
  std::error_code ec = vnfs::errc::registration_limit;
  CHECK(ec.category() == cat);
  CHECK(ec.message() == "registered memory limit exceeded");
  CHECK(std::error_code(vnfs::errc::closed).message() == "client closed");
  CHECK(std::error_code(vnfs::errc::bad_argument) == std::errc::invalid_argument);
  CHECK(std::error_code(vnfs::errc::unsupported_url) == std::errc::not_supported);
  CHECK(cat.message(999) == "unknown vnfs error 999");
}
