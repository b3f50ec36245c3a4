// Direct I/O (copy counts), asynchrony (completion groups polled from several threads, Asio
// completion tokens) and registered memory, through the public API.
#include <fcntl.h>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <future>
#include <optional>
#include <thread>
#include <tuple>

#include "client_fixture.hpp"

namespace asio = boost::asio;
using namespace vnfs;
using namespace vnfs::client_test;

namespace {

constexpr std::size_t MiB = std::size_t(1) << 20;

/// A file of `n` pattern bytes, written locally (the targets see it as an existing file).
std::vector<std::byte> make_file(client_env& env, const std::string& name, std::size_t n, unsigned seed = 5) {
  auto data = pattern(n, seed);
  file f = env.c().open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  std::size_t done = 0;
  while (done < n) done += env.c().pwrite(f, done, std::span<const std::byte>(data).subspan(done));
  env.c().close(f);
  return data;
}

#define FOR_TARGETS(...)                             \
  const target kind = GENERATE(__VA_ARGS__);         \
  INFO("target " << name_of(kind));                  \
  if (skipped(kind)) return

}  // namespace

// ---- direct I/O ------------------------------------------------------------------------

TEST_CASE("registered reads and writes copy nothing; plain reads copy exactly once", "[client][direct]") {
  FOR_TARGETS(target::vnfsd, target::ganesha, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  std::vector<std::byte> out = pattern(MiB, 11), in(MiB), plain(MiB);
  memory_region wr = c.register_memory(out.data(), out.size(), access::write);
  memory_region rd = c.register_memory(in.data(), in.size(), access::read);
  file f = c.open("f", O_CREAT | O_RDWR | O_TRUNC, 0644);

  client_stats s0 = c.stats();
  REQUIRE(c.pwrite(f, 0, wr.all()) == MiB);
  client_stats d = c.stats() - s0;
  CHECK(d.payload_bytes_direct == MiB);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(d.bytes_sent > MiB);

  s0 = c.stats();
  REQUIRE(c.pread(f, 0, rd.all()) == MiB);
  d = c.stats() - s0;
  CHECK(d.payload_bytes_direct == MiB);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(d.bytes_received > MiB);
  CHECK(in == out);

  // A part of a region, at an odd offset and length.
  std::fill(in.begin(), in.end(), std::byte{0});
  s0 = c.stats();
  REQUIRE(c.pread(f, 12345, rd.slice(7, 4001)) == 4001);
  d = c.stats() - s0;
  CHECK(d.payload_bytes_direct == 4001);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(std::equal(in.begin() + 7, in.begin() + 7 + 4001, out.begin() + 12345));
  CHECK(in[6] == std::byte{0});
  CHECK(in[7 + 4001] == std::byte{0});

  // Unregistered memory: the payload lands in a library buffer and is copied over.
  s0 = c.stats();
  REQUIRE(c.pread(f, 0, std::span<std::byte>(plain)) == MiB);
  d = c.stats() - s0;
  CHECK(d.payload_bytes_copied == MiB);
  CHECK(d.payload_bytes_direct == 0);
  CHECK(plain == out);

  // A short read (end of file) counts what arrived.
  s0 = c.stats();
  REQUIRE(c.pread(f, MiB - 100, std::span<std::byte>(plain).first(4096)) == 100);
  CHECK((c.stats() - s0).payload_bytes_copied == 100);
  s0 = c.stats();
  REQUIRE(c.pread(f, MiB - 100, rd.slice(0, 4096)) == 100);
  CHECK((c.stats() - s0).payload_bytes_direct == 100);
  CHECK((c.stats() - s0).payload_bytes_copied == 0);

  // Unregistered writes leave by scatter-gather too; only pieces under 64 bytes are copied
  // into the request (xdr::encoder::small_copy_limit).
  s0 = c.stats();
  REQUIRE(c.pwrite(f, 0, std::span<const std::byte>(out).first(4096)) == 4096);
  CHECK((c.stats() - s0).payload_bytes_direct == 4096);
  CHECK((c.stats() - s0).payload_bytes_copied == 0);
  s0 = c.stats();
  REQUIRE(c.pwrite(f, 0, std::span<const std::byte>(out).first(63)) == 63);
  CHECK((c.stats() - s0).payload_bytes_direct == 0);
  CHECK((c.stats() - s0).payload_bytes_copied == 63);
  c.close(f);
}

TEST_CASE("vread places READ payload straight into registered slices; plain buffers are copied", "[client][direct]") {
  FOR_TARGETS(target::vnfsd, target::ganesha, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  auto a = make_file(env, "a", 3 * MiB + 5, 1);  // several READs, more than one OPEN group
  auto b = make_file(env, "b", 4001, 2);
  auto s = make_file(env, "s", 100, 3);  // read with room for 4096: a short read
  auto p = make_file(env, "p", 1000, 4);
  std::vector<std::byte> buf(4 * MiB, std::byte{0}), plain(1000);
  memory_region mr = c.register_memory(buf.data(), buf.size(), access::read);
  std::vector<vio> items;
  items.emplace_back("a", 0, mr.slice(0, a.size()));
  items.emplace_back("b", 0, mr.slice(3 * MiB + 7, b.size()));
  items.emplace_back("s", 0, mr.slice(3 * MiB + 8192, 4096));
  items.emplace_back("p", 0, std::span<std::byte>(plain));

  client_stats s0 = c.stats();
  vresult r = c.vread(items);
  client_stats d = c.stats() - s0;
  REQUIRE_OK(r);
  CHECK(std::equal(a.begin(), a.end(), buf.begin()));
  CHECK(std::equal(b.begin(), b.end(), buf.begin() + 3 * MiB + 7));
  CHECK(buf[3 * MiB + 6] == std::byte{0});
  CHECK(buf[3 * MiB + 7 + b.size()] == std::byte{0});
  CHECK(items[2].bytes == 100);
  CHECK(items[2].eof);
  CHECK(std::equal(s.begin(), s.end(), buf.begin() + 3 * MiB + 8192));
  CHECK(buf[3 * MiB + 8192 + 100] == std::byte{0});
  CHECK(plain == p);
  const std::size_t registered = a.size() + b.size() + s.size();
  CHECK(d.payload_bytes_direct + d.payload_bytes_copied == registered + p.size());
  // Every registered payload arrives in place (over RPC-over-RDMA: a Write chunk per READ
  // of each COMPOUND), the plain one is copied once.
  CHECK(d.payload_bytes_direct == registered);
  CHECK(d.payload_bytes_copied == p.size());
}

// ---- asynchrony ------------------------------------------------------------------------

TEST_CASE("256 reads in flight over 2 groups, polled from 4 threads: each tag once", "[client][async]") {
  FOR_TARGETS(target::vnfsd, target::ganesha, target::local, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  constexpr std::size_t n = 256, block = 4096;
  auto data = make_file(env, "f", n * block);
  std::vector<std::byte> buf(n * block), plain(n * block);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  file f = c.open("f", O_RDONLY);

  std::array<completion_group, 2> groups{c.make_group(), c.make_group()};
  // Reversed order of offsets, and every third read into unregistered memory.
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t off = (n - 1 - i) * block;
    if (i % 3 == 0)
      c.read(f, off, std::span<std::byte>(plain).subspan(off, block), groups[i % 2], i);
    else
      c.read(f, off, mr.slice(off, block), groups[i % 2], i);
  }
  // Nobody has taken a completion yet, so each group still owes every one of its reads.
  CHECK(groups[0].outstanding() == n / 2);
  CHECK(groups[1].outstanding() == n / 2);

  std::array<std::atomic<int>, n> seen{};
  std::atomic<std::size_t> total{0}, bad_status{0}, bad_bytes{0}, bad_tag{0};
  std::vector<std::thread> pollers;
  for (int t = 0; t < 4; ++t) {
    pollers.emplace_back([&, t] {
      completion_group& g = groups[t % 2];
      // Bounded: 256 completions cannot take 30000 empty 1 ms waits.
      for (int rounds = 0; total.load() < n && rounds < 30000; ++rounds) {
        std::array<completion, 8> batch;
        std::size_t k = (t < 2) ? g.poll(batch) : 0;
        if (k == 0) {
          auto one = g.wait_for(std::chrono::milliseconds(1));
          if (!one) continue;
          batch[0] = *one;
          k = 1;
        }
        for (std::size_t j = 0; j < k; ++j) {
          const completion& e = batch[j];
          if (e.tag >= n || e.tag % 2 != std::uint64_t(t % 2)) {
            bad_tag++;
            continue;
          }
          seen[e.tag]++;
          if (e.status) bad_status++;
          if (e.bytes != block) bad_bytes++;
          total++;
        }
      }
    });
  }
  for (auto& p : pollers) p.join();
  CHECK(total.load() == n);
  CHECK(bad_tag.load() == 0);
  CHECK(bad_status.load() == 0);
  CHECK(bad_bytes.load() == 0);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("tag " << i);
    CHECK(seen[i].load() == 1);
  }
  CHECK(groups[0].outstanding() == 0);
  CHECK(groups[1].outstanding() == 0);
  CHECK(!groups[0].poll());
  CHECK(!groups[1].poll());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t off = (n - 1 - i) * block;
    const auto& where = (i % 3 == 0) ? plain : buf;
    INFO("read " << i);
    CHECK(std::equal(where.begin() + off, where.begin() + off + block, data.begin() + off));
  }
  c.close(f);
}

TEST_CASE("Asio completion tokens: callback, use_future, use_awaitable", "[client][async][asio]") {
  FOR_TARGETS(target::vnfsd, target::local, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  auto data = make_file(env, "f", 3 * 4096);
  std::vector<std::byte> buf(3 * 4096);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  file f = c.open("f", O_RDWR);

  SECTION("callback without an executor runs once, on a client thread") {
    std::promise<std::pair<std::error_code, std::size_t>> p;
    std::atomic<int> calls{0};
    c.async_read(f, 0, mr.slice(0, 4096), [&](std::error_code ec, std::size_t n) {
      calls++;
      p.set_value({ec, n});
    });
    auto [ec, n] = p.get_future().get();
    CHECK(!ec);
    CHECK(n == 4096);
    CHECK(std::equal(buf.begin(), buf.begin() + 4096, data.begin()));
    CHECK(calls.load() == 1);
  }
  SECTION("use_future") {
    // Boost 1.74's use_future and use_awaitable treat only boost::system::error_code as an
    // error: with std::error_code first, the result is the (error_code, size_t) tuple.
    std::future<std::tuple<std::error_code, std::size_t>> fut =
        c.async_read(f, 4096, mr.slice(4096, 4096), asio::use_future);
    auto [ec, n] = fut.get();
    CHECK(!ec);
    CHECK(n == 4096);
    CHECK(std::equal(buf.begin() + 4096, buf.begin() + 8192, data.begin() + 4096));
    // A slice of memory registered for writes only cannot receive a read.
    std::vector<std::byte> wonly(16);
    memory_region w = c.register_memory(wonly.data(), wonly.size(), access::write);
    auto [bad_ec, bad_n] = c.async_read(f, 0, w.all(), asio::use_future).get();
    CHECK(bad_ec == errc::bad_argument);
    CHECK(bad_n == 0);
  }
  SECTION("use_awaitable in a coroutine on an io_context, with a handler on its thread") {
    asio::io_context io;
    std::size_t got = 0, wrote = 0;
    std::error_code failure;
    std::thread::id ran_on;
    auto coro = [&]() -> asio::awaitable<void> {
      auto [ec1, n1] = co_await c.async_read(f, 8192, mr.slice(8192, 4096), asio::use_awaitable);
      auto [ec2, n2] = co_await c.async_write(f, 3 * 4096, mr.slice(0, 100), asio::use_awaitable);
      failure = ec1 ? ec1 : ec2;
      got = n1;
      wrote = n2;
      ran_on = std::this_thread::get_id();
    };
    asio::co_spawn(io, coro(), asio::detached);
    io.run();  // returns when the coroutine is done: the completions were posted to `io`
    CHECK(!failure);
    CHECK(got == 4096);
    CHECK(wrote == 100);
    CHECK(ran_on == std::this_thread::get_id());
    CHECK(std::equal(buf.begin() + 8192, buf.end(), data.begin() + 8192));
    CHECK(c.fstat(f).size == 3 * 4096 + 100);
  }
  c.close(f);
}

TEST_CASE("where plain handlers run: the client's I/O thread, or client_options::executor", "[client][async][asio]") {
  FOR_TARGETS(target::vnfsd, target::local);
  asio::io_context app;  // the application's
  client_options o;
  o.executor = app.get_executor();
  client_env env(kind, o);
  client& c = env.c();
  auto data = make_file(env, "f", 2 * 4096);
  std::vector<std::byte> buf(2 * 4096);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  file f = c.open("f", O_RDONLY);

  // The handlers record what they saw; the test checks it after the io_context's thread ends.
  std::optional<std::thread::id> read_thread, vread_thread;
  std::error_code read_ec, vread_ec;
  std::size_t read_bytes = 0;
  c.async_read(f, 0, mr.slice(0, 4096), [&](std::error_code ec, std::size_t n) {
    read_ec = ec;
    read_bytes = n;
    read_thread = std::this_thread::get_id();
  });
  std::vector<vio> ios{vio("f", 4096, mr.slice(4096, 4096))};
  vresult vr;
  c.async_vread(ios, [&](std::error_code ec, vresult r) {
    vread_ec = ec;
    vr = std::move(r);
    vread_thread = std::this_thread::get_id();
  });
  std::thread::id app_thread;
  std::size_t handlers = 0;
  std::thread runner([&] {
    app_thread = std::this_thread::get_id();
    handlers = app.run_for(std::chrono::seconds(30));  // returns once both handlers have run
  });
  runner.join();
  CHECK(handlers == 2);
  REQUIRE(read_thread);
  REQUIRE(vread_thread);
  CHECK(*read_thread == app_thread);
  CHECK(*vread_thread == app_thread);
  CHECK(!read_ec);
  CHECK(!vread_ec);
  CHECK(read_bytes == 4096);
  CHECK(vr.ok_count == 1);
  CHECK(ios[0].bytes == 4096);
  CHECK(std::equal(buf.begin(), buf.end(), data.begin()));
  c.close(f);

  if (kind == target::vnfsd) {
    // Without the option: on the client's one I/O thread, where its callbacks run too.
    client_env plain_env(kind);
    client& p = plain_env.c();
    file_stat st;
    std::promise<std::thread::id> callback_thread;
    std::promise<std::pair<std::error_code, std::thread::id>> handler_thread;
    p.stat("", &st, [&](std::error_code, std::size_t) { callback_thread.set_value(std::this_thread::get_id()); });
    p.async_stat("", [&](std::error_code ec, file_stat) { handler_thread.set_value({ec, std::this_thread::get_id()}); });
    auto cf = callback_thread.get_future();
    auto hf = handler_thread.get_future();
    REQUIRE(cf.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    REQUIRE(hf.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    const std::thread::id io_thread = cf.get();
    auto [ec, handler_on] = hf.get();
    CHECK(!ec);
    CHECK(handler_on == io_thread);
    CHECK(io_thread != std::this_thread::get_id());
  }
}

TEST_CASE("a thread waiting for a synchronous call receives its replies itself", "[client][sync]") {
  FOR_TARGETS(target::vnfsd, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  constexpr std::size_t block = 4096, blocks = 16;
  auto data = make_file(env, "f", blocks * block);
  std::vector<std::byte> buf(blocks * block);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  file f = c.open("f", O_RDONLY);

  // Scalar and vectorized synchronous calls: every reply reached the waiting thread.
  client_stats before = c.stats();
  for (std::size_t i = 0; i < blocks; ++i) CHECK(c.pread(f, i * block, mr.slice(i * block, block)) == block);
  std::vector<vio> ios{vio(f, 0, mr.slice(0, block)), vio(f, 5 * block, mr.slice(5 * block, block))};
  REQUIRE_OK(c.vread(ios));
  client_stats d = c.stats() - before;
  CHECK(d.compounds == blocks + 1);
  CHECK(d.replies_to_waiting_callers == blocks + 1);
  CHECK(d.retransmissions == 0);
  CHECK(std::equal(buf.begin(), buf.end(), data.begin()));

  // Asynchronous calls are not driven by a waiter: their replies reach the I/O thread, also
  // right after synchronous calls (the I/O thread takes over again).
  std::fill(buf.begin(), buf.end(), std::byte{0});
  completion_group g = c.make_group();
  before = c.stats();
  for (std::size_t i = 0; i < blocks; ++i) c.read(f, i * block, mr.slice(i * block, block), g, i);
  for (std::size_t i = 0; i < blocks; ++i) {
    auto e = g.wait_for(std::chrono::seconds(30));
    REQUIRE(e);
    CHECK(!e->status);
    CHECK(e->bytes == block);
  }
  d = c.stats() - before;
  CHECK(d.compounds == blocks);
  CHECK(d.replies_to_waiting_callers == 0);
  CHECK(std::equal(buf.begin(), buf.end(), data.begin()));

  // Several threads in synchronous calls at once, and callbacks from another: one waiter
  // runs the client at a time and completes the others' calls too; everything completes
  // once, with the right bytes.
  constexpr int threads = 3, rounds = 40;
  std::vector<std::vector<std::byte>> bufs(threads + 1, std::vector<std::byte>(block));
  std::vector<memory_region> mrs;
  for (auto& b : bufs) mrs.push_back(c.register_memory(b.data(), b.size()));
  std::atomic<int> wrong{0}, callbacks{0};
  std::promise<void> all_called;
  before = c.stats();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        const std::size_t at = std::size_t((t * rounds + r) % blocks) * block;
        if (c.pread(f, at, mrs[t].slice(0, block)) != block ||
            !std::equal(bufs[t].begin(), bufs[t].end(), data.begin() + std::ptrdiff_t(at)))
          wrong++;
      }
    });
  for (int r = 0; r < rounds; ++r)
    c.read(f, std::size_t(r % blocks) * block, mrs[threads].slice(0, block), [&](std::error_code ec, std::size_t n) {
      if (ec || n != block) wrong++;
      if (++callbacks == rounds) all_called.set_value();
    });
  for (auto& w : workers) w.join();
  REQUIRE(all_called.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  d = c.stats() - before;
  CHECK(wrong == 0);
  CHECK(callbacks == rounds);
  CHECK(d.compounds == std::uint64_t(threads + 1) * rounds);
  CHECK(d.replies_to_waiting_callers <= d.compounds);
  c.close(f);
}

TEST_CASE("close while other threads wait for synchronous calls: each ends, closed or done", "[client][sync][close]") {
  FOR_TARGETS(target::vnfsd, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  constexpr std::size_t block = 4096;
  auto data = make_file(env, "f", 8 * block);
  file f = c.open("f", O_RDONLY);
  constexpr int threads = 2;
  std::atomic<int> reads{0}, wrong{0};
  std::vector<std::error_code> ended(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      std::vector<std::byte> b(block);
      for (;;) {
        try {
          const std::size_t at = std::size_t(reads % 8) * block;
          if (c.pread(f, at, std::span<std::byte>(b)) != block ||
              !std::equal(b.begin(), b.end(), data.begin() + std::ptrdiff_t(at)))
            wrong++;
          reads++;
        } catch (const std::system_error& e) {
          ended[t] = e.code();
          return;
        }
      }
    });
  while (reads < 100) std::this_thread::yield();  // both threads are reading
  c.close();
  for (auto& w : workers) w.join();
  CHECK(wrong == 0);
  for (const auto& ec : ended) CHECK(ec == errc::closed);
}

TEST_CASE("Asio tokens for every operation, in one coroutine", "[client][async][asio]") {
  FOR_TARGETS(target::vnfsd, target::local, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  asio::io_context io;
  std::vector<std::string> steps;
  std::string link_text;
  file_stat st{}, fst{};
  std::vector<std::string> names;
  // Operations without a value complete with void(std::error_code), which use_awaitable hands
  // back as the error_code itself; those with one as a (error_code, value) tuple.
  auto coro = [&]() -> asio::awaitable<void> {
    auto ok = [&](std::error_code ec, const char* what) {
      steps.push_back(std::string(what) + (ec ? ": " + ec.message() : ""));
    };
    ok(co_await c.async_mkdir("d", 0755, asio::use_awaitable), "mkdir");
    auto [eo, f] = co_await c.async_open("d/f", O_CREAT | O_RDWR, 0600, asio::use_awaitable);
    ok(eo, "open");
    ok(co_await c.async_fsync(f, asio::use_awaitable), "fsync");
    auto [ef, s1] = co_await c.async_fstat(f, asio::use_awaitable);
    ok(ef, "fstat");
    fst = s1;
    ok(co_await c.async_close(f, asio::use_awaitable), "close");
    ok(co_await c.async_truncate("d/f", 10, asio::use_awaitable), "truncate");
    auto [es, s2] = co_await c.async_stat("d/f", asio::use_awaitable);
    ok(es, "stat");
    st = s2;
    ok(co_await c.async_symlink("f", "d/l", asio::use_awaitable), "symlink");
    auto [er, text] = co_await c.async_readlink("d/l", asio::use_awaitable);
    ok(er, "readlink");
    link_text = text;
    ok(co_await c.async_link("d/f", "d/g", asio::use_awaitable), "link");
    ok(co_await c.async_rename("d/g", "d/h", asio::use_awaitable), "rename");
    dir_stream d{"d"};
    while (!d.eof) {
      ok(co_await c.async_readdir(d, asio::use_awaitable), "readdir");
      for (auto& e : d.entries) names.push_back(e.name);
    }
    for (const char* n : {"d/f", "d/h", "d/l"}) ok(co_await c.async_unlink(n, asio::use_awaitable), "unlink");
    ok(co_await c.async_rmdir("d", asio::use_awaitable), "rmdir");
    auto [missing, none] = co_await c.async_stat("d", asio::use_awaitable);
    CHECK(missing == std::errc::no_such_file_or_directory);
  };
  asio::co_spawn(io, coro(), asio::detached);
  io.run();
  std::vector<std::string> expected{"mkdir", "open", "fsync", "fstat", "close", "truncate", "stat",
                                    "symlink", "readlink", "link", "rename"};
  REQUIRE(steps.size() >= expected.size());
  CHECK(std::vector<std::string>(steps.begin(), steps.begin() + expected.size()) == expected);
  for (const auto& s : steps) CHECK(s.find(':') == std::string::npos);
  CHECK(fst.type == file_type::regular);
  CHECK(fst.mode == 0600);
  CHECK(st.size == 10);
  CHECK(st.nlink == 1);
  CHECK(link_text == "f");
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"f", "h", "l"});
  CHECK(steps.back() == "rmdir");
}

// ---- registered memory -----------------------------------------------------------------

TEST_CASE("registered memory: the cap, deregistration, slices of destroyed regions", "[client][memory]") {
  FOR_TARGETS(target::vnfsd, target::local, target::vnfsd_rdma);
  client_options o;
  o.max_registered_bytes = MiB;
  client_env env(kind, o);
  client& c = env.c();
  std::vector<std::byte> a(MiB / 2), b(MiB / 2), extra(1);

  std::optional<memory_region> ra(c.register_memory(a.data(), a.size()));
  memory_region rb = c.register_memory(b.data(), b.size());
  CHECK(ra->size() == MiB / 2);
  CHECK(rb.access() == access::read_write);
  // At the cap: one more byte is refused.
  CHECK(error_of([&] { c.register_memory(extra.data(), 1); }) == errc::registration_limit);
  CHECK(error_of([&] { c.register_memory(nullptr, 10); }) == errc::bad_argument);
  CHECK(error_of([&] { c.register_memory(extra.data(), 0); }) == errc::bad_argument);

  auto data = make_file(env, "f", 4096);
  file f = c.open("f", O_RDONLY);
  memory_slice keep = ra->slice(0, 4096);
  CHECK(c.pread(f, 0, keep) == 4096);

  // Destroying a region frees its bytes at once, even while a slice object still exists...
  ra.reset();
  std::optional<memory_region> again(c.register_memory(extra.data(), 1));
  CHECK(again->size() == 1);
  // ...and that slice can no longer be used.
  CHECK(error_of([&] { c.pread(f, 0, keep); }) == errc::bad_argument);
  completion_group g = c.make_group();
  c.read(f, 0, keep, g, 42);
  completion e = g.wait();
  CHECK(e.tag == 42);
  CHECK(e.status == errc::bad_argument);

  // Slices are bounded by their region.
  CHECK_THROWS_AS(rb.slice(MiB / 2 - 10, 11), std::out_of_range);
  CHECK_THROWS_AS(rb.slice(0, 100).sub(50, 51), std::out_of_range);
  CHECK(rb.slice(10, 100).sub(5, 10).data() == b.data() + 15);

  // Direction is enforced: write-only memory cannot receive a read, read-only cannot be sent.
  std::vector<std::byte> w(64), r(64);
  again.reset();
  memory_region wo = c.register_memory(w.data(), w.size(), access::write);
  memory_region ro = c.register_memory(r.data(), r.size(), access::read);
  CHECK(error_of([&] { c.pread(f, 0, wo.all()); }) == errc::bad_argument);
  file fw = c.open("f", O_WRONLY);
  CHECK(error_of([&] { c.pwrite(fw, 0, ro.all()); }) == errc::bad_argument);
  CHECK(c.pwrite(fw, 0, wo.all()) == 64);
  CHECK(c.pread(f, 0, ro.all()) == 64);
  c.close(fw);
  c.close(f);
}

// ---- close with operations in flight ---------------------------------------------------

TEST_CASE("close with operations in flight: every completion once, the unfinished ones closed",
          "[client][async][close]") {
  FOR_TARGETS(target::vnfsd, target::local, target::vnfsd_rdma);
  client_env env(kind);
  client& c = env.c();
  constexpr std::size_t n = 512, block = 4096;
  make_file(env, "f", 64 * block);
  std::vector<std::byte> buf(n * block);
  memory_region mr = c.register_memory(buf.data(), buf.size());
  file f = c.open("f", O_RDONLY);
  completion_group g = c.make_group();
  for (std::size_t i = 0; i < n; ++i) c.read(f, (i % 64) * block, mr.slice(i * block, block), g, i);
  c.close();

  std::vector<int> seen(n);
  std::size_t ok = 0, closed = 0, other = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto e = g.wait_for(std::chrono::seconds(30));
    REQUIRE(e);
    REQUIRE(e->tag < n);
    seen[e->tag]++;
    if (!e->status && e->bytes == block)
      ok++;
    else if (e->status == errc::closed && e->bytes == 0)
      closed++;
    else
      other++;
  }
  CHECK(ok + closed == n);
  CHECK(other == 0);
  CHECK(std::count(seen.begin(), seen.end(), 1) == std::ptrdiff_t(n));
  CHECK(g.outstanding() == 0);
  CHECK(!g.poll());

  // After close, every call fails with errc::closed, in each form.
  CHECK(error_of([&] { c.stat(""); }) == errc::closed);
  CHECK(error_of([&] { c.pread(f, 0, mr.slice(0, 1)); }) == errc::closed);
  c.read(f, 0, mr.slice(0, 1), g, 7);
  auto e = g.wait();
  CHECK(e.tag == 7);
  CHECK(e.status == errc::closed);
  CHECK(std::get<0>(c.async_read(f, 0, mr.slice(0, 1), asio::use_future).get()) == errc::closed);
  c.close();  // idempotent
}
