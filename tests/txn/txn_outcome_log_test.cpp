// The outcome log (src/server/txn/outcome_log.hpp), which TXN_STATUS answers from: outcomes
// recorded by concurrent callers share fdatasyncs (group commit) and are all there after a
// reopen (a restart); the outcome of a transaction that changed nothing is kept in memory
// only — answered until a restart, unknown after it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/fs/unique_fd.hpp"
#include "server/txn/outcome_log.hpp"
#include "vnfs/test/temp_dir.hpp"

using namespace vnfs;
using nfs4::txn_outcome4;
using server::txn::outcome_log;

namespace {

server::fs::unique_fd open_dir(const std::filesystem::path& p) {
  server::fs::unique_fd fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(fd);
  return fd;
}

txn_outcome4 outcome_for(std::uint64_t id) { return id % 3 == 0 ? txn_outcome4::TXN_ABORTED : txn_outcome4::TXN_COMMITTED; }

}  // namespace

TEST_CASE("outcomes recorded at once share fdatasyncs, and every one survives a reopen", "[txn][outcome]") {
  test::temp_dir d("vnfs-txn-outcomes");
  auto dir = open_dir(d.path());
  constexpr int threads = 8, per_thread = 64;
  std::uint64_t syncs = 0;
  {
    outcome_log log(dir.get());
    std::vector<std::thread> ts;
    std::vector<std::error_code> errors(threads);
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          const std::uint64_t id = 1000 + static_cast<std::uint64_t>(t * per_thread + i);
          if (std::error_code ec = log.record(id, outcome_for(id))) errors[static_cast<std::size_t>(t)] = ec;
        }
      });
    for (auto& t : ts) t.join();
    for (const auto& ec : errors) CHECK(ec == std::error_code());
    for (std::uint64_t id = 1000; id < 1000 + threads * per_thread; ++id) CHECK(log.find(id) == outcome_for(id));
    syncs = log.syncs();
  }
  CHECK(syncs >= 1);
  CHECK(syncs <= threads * per_thread);  // one per record at most; fewer when callers overlapped
  WARN("fdatasyncs for " << threads * per_thread << " outcomes: " << syncs);
  CHECK(std::filesystem::file_size(d.path() / "outcomes") == threads * per_thread * 16);
  outcome_log again(dir.get());
  for (std::uint64_t id = 1000; id < 1000 + threads * per_thread; ++id) CHECK(again.find(id) == outcome_for(id));
  CHECK(again.find(999) == txn_outcome4::TXN_UNKNOWN);
}

TEST_CASE("an entry that passes its check but names no commit or abort is answered as unknown", "[txn][outcome]") {
  // A damaged disk can leave such an entry (vnfsd writes only commits and aborts); found by
  // fuzz_state_files, whose regression input is corpus/state_files/outcomes_unknown_outcome.
  test::temp_dir d("vnfs-txn-outcomes");
  auto dir = open_dir(d.path());
  auto entry = [](std::uint64_t id, std::uint32_t outcome) {  // outcome_log.hpp's layout, minute 100
    unsigned char e[16];
    const std::uint32_t v = 100u << 8 | outcome;
    for (int i = 0; i < 8; ++i) e[i] = static_cast<unsigned char>(id >> (56 - 8 * i));
    for (int i = 0; i < 4; ++i) e[8 + i] = static_cast<unsigned char>(v >> (24 - 8 * i));
    std::uint32_t h = 2166136261u;
    for (int i = 0; i < 12; ++i) h = (h ^ e[i]) * 16777619u;
    for (int i = 0; i < 4; ++i) e[12 + i] = static_cast<unsigned char>(h >> (24 - 8 * i));
    return std::string(reinterpret_cast<const char*>(e), sizeof e);
  };
  {
    std::ofstream f(d.path() / "outcomes", std::ios::binary);
    f << entry(5, 2) << entry(6, 0) << entry(7, 9) << entry(5, 1) << entry(8, 3);
  }
  outcome_log log(dir.get());
  CHECK(log.find(5) == txn_outcome4::TXN_COMMITTED);  // the damaged entry after it changes nothing
  CHECK(log.find(6) == txn_outcome4::TXN_UNKNOWN);
  CHECK(log.find(7) == txn_outcome4::TXN_UNKNOWN);
  CHECK(log.find(8) == txn_outcome4::TXN_ABORTED);  // entries after a damaged one are still read
  REQUIRE_FALSE(log.record(9, txn_outcome4::TXN_COMMITTED));
  outcome_log again(dir.get());
  CHECK(again.find(9) == txn_outcome4::TXN_COMMITTED);
  CHECK(again.find(6) == txn_outcome4::TXN_UNKNOWN);
}

TEST_CASE("the outcome of a transaction that changed nothing is answered until a restart, not after", "[txn][outcome]") {
  test::temp_dir d("vnfs-txn-outcomes");
  auto dir = open_dir(d.path());
  {
    outcome_log log(dir.get());
    REQUIRE(log.record(7, txn_outcome4::TXN_COMMITTED, false) == std::error_code());
    REQUIRE(log.record(8, txn_outcome4::TXN_ABORTED, false) == std::error_code());
    REQUIRE(log.record(9, txn_outcome4::TXN_COMMITTED) == std::error_code());
    CHECK(log.find(7) == txn_outcome4::TXN_COMMITTED);
    CHECK(log.find(8) == txn_outcome4::TXN_ABORTED);
    CHECK(log.find(9) == txn_outcome4::TXN_COMMITTED);
    CHECK(log.syncs() == 1);  // the durable one only
  }
  CHECK(std::filesystem::file_size(d.path() / "outcomes") == 16);
  outcome_log again(dir.get());
  CHECK(again.find(7) == txn_outcome4::TXN_UNKNOWN);
  CHECK(again.find(8) == txn_outcome4::TXN_UNKNOWN);
  CHECK(again.find(9) == txn_outcome4::TXN_COMMITTED);
}

TEST_CASE("an outcome is forgotten only past the count kept and txn_outcome_kept_seconds after it was recorded",
          "[txn][outcome]") {
  test::temp_dir d("vnfs-txn-outcomes");
  auto dir = open_dir(d.path());
  using wall = outcome_log::wall_clock;
  wall::time_point now = wall::time_point(std::chrono::seconds(1'800'000'000));
  const auto clock = [&] { return now; };
  {
    outcome_log log(dir.get(), 2, clock);
    for (std::uint64_t id = 1; id <= 4; ++id) REQUIRE(log.record(id, txn_outcome4::TXN_COMMITTED) == std::error_code());
    // More than 2, but all recorded just now: every one is kept.
    for (std::uint64_t id = 1; id <= 4; ++id) CHECK(log.find(id) == txn_outcome4::TXN_COMMITTED);
    // txn_outcome_kept_seconds later, still every one.
    now += std::chrono::seconds(nfs4::txn_outcome_kept_seconds);
    REQUIRE(log.record(6, txn_outcome4::TXN_ABORTED, false) == std::error_code());
    for (std::uint64_t id = 1; id <= 4; ++id) CHECK(log.find(id) == txn_outcome4::TXN_COMMITTED);
    // Two minutes more (past the guarantee and its minute of granularity): the next record
    // forgets the oldest down to the count kept.
    now += std::chrono::seconds(120);
    REQUIRE(log.record(5, txn_outcome4::TXN_ABORTED) == std::error_code());
    CHECK(log.find(1) == txn_outcome4::TXN_UNKNOWN);
    CHECK(log.find(2) == txn_outcome4::TXN_UNKNOWN);
    CHECK(log.find(3) == txn_outcome4::TXN_UNKNOWN);
    CHECK(log.find(4) == txn_outcome4::TXN_UNKNOWN);
    CHECK(log.find(6) == txn_outcome4::TXN_ABORTED);  // recorded 2 minutes ago
    CHECK(log.find(5) == txn_outcome4::TXN_ABORTED);
  }
  // Reopened at once: the file's entries carry their minutes; only 5 is young enough.
  {
    outcome_log again(dir.get(), 1, clock);
    for (std::uint64_t id = 1; id <= 4; ++id) CHECK(again.find(id) == txn_outcome4::TXN_UNKNOWN);
    CHECK(again.find(5) == txn_outcome4::TXN_ABORTED);
  }
  // That reopening rewrote the file with what it keeps: one entry.
  CHECK(std::filesystem::file_size(d.path() / "outcomes") == 16);
}

TEST_CASE("on a full file system, every transaction that got a place records its outcome; then begins are refused",
          "[txn][outcome]") {
  // A small tmpfs of our own, in a mount namespace of this process (the host's mounts are
  // never touched); where that is not allowed (not root, threads alive), the case stops.
  if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    WARN("no private mount namespace here: the full-file-system case is not run");
    return;
  }
  test::temp_dir d("vnfs-txn-outcomes-full");
  const auto fs_dir = d.path() / "fs";
  std::filesystem::create_directory(fs_dir);
  REQUIRE(::mount("tmpfs", fs_dir.c_str(), "tmpfs", 0, "size=256k") == 0);
  {
    auto dir = open_dir(fs_dir);
    outcome_log log(dir.get());
    // Fill every block that is left.
    {
      server::fs::unique_fd filler(::open((fs_dir / "filler").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
      REQUIRE(filler);
      const std::vector<char> block(4096, 'x');
      while (::write(filler.get(), block.data(), block.size()) > 0) {
      }
      CHECK(errno == ENOSPC);
    }
    // The room allocated ahead holds room_chunk entries: that many places, each recorded
    // durably, though no block is free.
    std::vector<outcome_log::place> places;
    for (std::uint64_t k = 0; k < outcome_log::room_chunk; ++k) {
      places.push_back(log.take_place());
      REQUIRE(places.back());
    }
    CHECK_FALSE(log.take_place());  // no more: a begin would be refused (ENOSPC), not run
    for (std::uint64_t k = 0; k < outcome_log::room_chunk; ++k) {
      INFO("entry " << k);
      REQUIRE(log.record(5000 + k, outcome_for(k)) == std::error_code());
      places[k] = outcome_log::place();  // its transaction ends
    }
    CHECK_FALSE(log.take_place());  // the room is used up, and the disk still full
    std::filesystem::remove(fs_dir / "filler");
    CHECK(log.take_place());  // room again
    CHECK(log.find(5000 + outcome_log::room_chunk - 1) == outcome_for(outcome_log::room_chunk - 1));
  }

  // Opening a log that wants rewriting (more than twice what it keeps, and a torn tail) on a
  // full disk: no room for the new file, so the torn tail is cut and the rest kept as it is.
  const auto sub = fs_dir / "again";
  std::filesystem::create_directory(sub);
  auto sdir = open_dir(sub);
  using wall = outcome_log::wall_clock;
  wall::time_point now = wall::time_point(std::chrono::seconds(1'800'000'000));
  const auto clock = [&] { return now; };
  {
    outcome_log log(sdir.get(), 2, clock);
    for (std::uint64_t id = 1; id <= 10; ++id) REQUIRE(log.record(id, outcome_for(id)) == std::error_code());
  }
  {
    std::ofstream torn(sub / "outcomes", std::ios::binary | std::ios::app);
    torn << "torn!";
  }
  {
    server::fs::unique_fd filler(::open((fs_dir / "filler").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    REQUIRE(filler);
    const std::vector<char> block(4096, 'x');
    while (::write(filler.get(), block.data(), block.size()) > 0) {
    }
  }
  now += std::chrono::seconds(nfs4::txn_outcome_kept_seconds + 180);  // only 2 need keeping now
  {
    std::optional<outcome_log> log;
    REQUIRE_NOTHROW(log.emplace(sdir.get(), 2, clock));
    CHECK(std::filesystem::file_size(sub / "outcomes") == 10 * 16);  // not rewritten; the tail cut
    CHECK_FALSE(std::filesystem::exists(sub / "outcomes.new"));
    CHECK(log->find(10) == outcome_for(10));
  }
  std::filesystem::remove(fs_dir / "filler");
  {
    outcome_log log(sdir.get(), 2, clock);  // room again: rewritten with what it keeps
    CHECK(std::filesystem::file_size(sub / "outcomes") == 2 * 16);
    CHECK(log.find(10) == outcome_for(10));
    CHECK(log.find(1) == txn_outcome4::TXN_UNKNOWN);
  }
  CHECK(::umount2(fs_dir.c_str(), MNT_DETACH) == 0);
}
