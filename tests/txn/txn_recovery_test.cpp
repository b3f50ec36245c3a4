// Recovery at start-up (txn::manager's constructor, docs/transactions.md "Recovery at
// start-up") over state directories written by hand: journal slots whose files a
// transaction was being written over when the server died, graves of ended transactions,
// a slot whose making was cut short, a journal of the format before slots. Afterwards the
// export holds exactly what committed, nothing ended is undone again, the outcomes are
// recorded, the state directory holds only the outcome log and complete slots, and a second
// recovery changes nothing.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "server/fs/directory.hpp"
#include "server/fs/export_root.hpp"
#include "server/fs/unique_fd.hpp"
#include "server/txn/journal.hpp"
#include "server/txn/journal_pool.hpp"
#include "server/txn/manager.hpp"
#include "state_leftovers.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/xdr/encoder.hpp"

using namespace vnfs;
using nfs4::txn_outcome4;
namespace txn = vnfs::server::txn;

namespace {

void write_file(const std::filesystem::path& p, const std::string& s) { std::ofstream(p) << s; }

/// Writes `records` as the journal of generation `gen` into `state`/`name`, durably.
void write_journal(const std::filesystem::path& state, const std::string& name, std::uint64_t gen,
                   const std::vector<txn::record>& records) {
  server::fs::unique_fd fd(::open((state / name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE(fd);
  txn::journal_writer w(fd.get(), gen, records.front());
  for (std::size_t i = 1; i < records.size(); ++i) w.append(records[i]);
  std::error_code ec;
  w.sync(ec);
  REQUIRE(!ec);
}

/// A journal as an older vnfsd wrote it, with FNV-1a checksums: "VNFSTXN2" (header with
/// generation `gen`, records with it), or for `gen` 0 "VNFSTXN1" (no generations).
std::string legacy_journal(std::uint64_t gen, const std::vector<txn::record>& records) {
  auto fnv1a = [](std::span<const std::byte> b) {
    std::uint32_t h = 2166136261u;
    for (std::byte c : b) h = (h ^ std::to_integer<std::uint32_t>(c)) * 16777619u;
    return h;
  };
  xdr::encoder out;
  if (gen == 0) {
    out.put_fixed_opaque(std::as_bytes(std::span("VNFSTXN1", 8)));
  } else {
    xdr::encoder g;
    g.put_u64(gen);
    const std::vector<std::byte> gen_bytes = g.flatten();
    out.put_fixed_opaque(std::as_bytes(std::span("VNFSTXN2", 8)));
    out.put_fixed_opaque(gen_bytes);
    out.put_u32(fnv1a(gen_bytes));
  }
  for (const txn::record& r : records) {
    xdr::encoder body;
    body.put_u32(static_cast<std::uint32_t>(r.index()));
    std::visit([&](const auto& v) { xdr::encode(body, v); }, r);
    const std::vector<std::byte> b = body.flatten();
    out.put_u32(static_cast<std::uint32_t>(b.size()));
    out.put_u32(fnv1a(b));
    if (gen != 0) out.put_u64(gen);
    out.put_fixed_opaque(b);  // padded to 4 bytes
  }
  const std::vector<std::byte> all = out.flatten();
  return std::string(reinterpret_cast<const char*>(all.data()), all.size());
}

std::set<std::string> names_in(const std::filesystem::path& d) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(d)) out.insert(e.path().filename().string());
  return out;
}

txn::journal_contents read(const std::filesystem::path& state, const std::string& name) {
  server::fs::unique_fd sfd(::open(state.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::error_code ec;
  txn::journal_contents j = txn::read_journal(sfd.get(), name, ec);
  REQUIRE(!ec);
  return j;
}

}  // namespace

TEST_CASE("recovery undoes only the newest journal of a slot, sweeps graves and leftovers, and is idempotent",
          "[txn][recovery]") {
  test::temp_dir d("vnfs-txn-recovery");
  const auto root = d.path();
  const auto state = root / ".vnfsd-txn";
  std::filesystem::create_directory(state);
  std::vector<std::byte> root_fh;
  {
    server::fs::export_root exp(root);
    std::error_code ec;
    root_fh = exp.fh_of(exp.root(), ec);
    REQUIRE(!ec);
  }
  const auto begin = [](std::uint64_t id) { return txn::rec_begin{1, id}; };
  const auto created = [&](const std::string& n) { return txn::rec_created{root_fh, n}; };
  const auto removed = [&](const std::string& n, const std::string& grave) { return txn::rec_removed{root_fh, n, grave}; };

  // Slot 0: j1 (generation 7) committed "x"; j0 held generation 5, which created "old" and
  // committed, and was being written over by generation 9, whose header never reached the
  // disk: j0 still names generation 5 but its records stop before the commit. Generation 5
  // ended before 7 began: nothing of it is undone ("old" stays).
  write_file(root / "x", "x");
  write_file(root / "old", "old");
  write_journal(state, "s0.j1", 7, {begin(107), created("x"), txn::rec_commit{}});
  write_journal(state, "s0.j0", 5, {begin(105), created("old"), txn::rec_commit{}});
  {
    const auto full = std::filesystem::file_size(state / "s0.j0");
    write_journal(state, "s0.tmp", 9, {begin(109), created("new9"), created("more9")});
    // The commit record of generation 5 overwritten by a later part of generation 9's write.
    std::ifstream in(state / "s0.tmp", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::filesystem::remove(state / "s0.tmp");
    std::fstream out(state / "s0.j0", std::ios::in | std::ios::out | std::ios::binary);
    const auto cut = static_cast<std::streamoff>(full - 20);
    out.seekp(cut);
    out.write(bytes.data() + cut, static_cast<std::streamsize>(std::min<std::uintmax_t>(bytes.size(), full) - cut));
  }
  REQUIRE(read(state, "s0.j0").gen == 5);
  REQUIRE_FALSE(read(state, "s0.j0").committed());
  write_file(state / "s0.data", "");

  // Slot 1: j0 (generation 3) committed; j1 (generation 8) unfinished: it created "y" and
  // removed "z" (its grave holds it): undone, "y" goes, "z" comes back from the grave.
  write_file(root / "y", "y");
  write_file(state / "g8.0", "zzz");
  write_file(state / "s1.j0", legacy_journal(3, {begin(103), txn::rec_commit{}}));  // as vnfsd wrote it before CRC-32
  write_journal(state, "s1.j1", 8, {begin(108), created("y"), removed("z", "g8.0")});
  write_file(state / "s1.data", "");

  // A grave of an ended transaction (its removal of "w" committed; the grave stayed).
  write_file(root / "w-link", "w");
  std::filesystem::create_hard_link(root / "w-link", state / "g7.0");
  REQUIRE(std::filesystem::hard_link_count(root / "w-link") == 2);
  // A slot whose making was cut short, and a journal of the format before slots: unfinished,
  // it created "v".
  write_file(state / "s2.j0", "");
  write_file(root / "v", "v");
  {
    const std::string v1 = legacy_journal(0, {begin(110), created("v")});
    write_file(state / "t0000000000000001.journal", v1);
    write_file(state / "t0000000000000001.data", "");
  }
  REQUIRE(read(state, "t0000000000000001.journal").records.size() == 2);

  // Slot 3: generation 11 committed with redo records and no checkpoint: its changes may not
  // be in place ("r" still holds what it held before; "q" was not cut): replayed. Slot 4:
  // generation 12 committed with a redo record and its checkpoint; "r2" changed after it:
  // not replayed.
  write_file(root / "r", "old contents of r");
  write_file(root / "q", "qqqq");
  write_file(root / "r2", "changed after the checkpoint");
  {
    server::fs::export_root exp(root);
    auto fh = [&](const char* n) {
      std::error_code ec;
      server::fs::object o = server::fs::lookup(exp.root(), n, ec);
      REQUIRE(!ec);
      std::vector<std::byte> h = exp.fh_of(o, ec);
      REQUIRE(!ec);
      return h;
    };
    const std::string data = "NEW";
    const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data.data()),
                                       reinterpret_cast<const std::byte*>(data.data()) + data.size());
    write_journal(state, "s3.j0", 11, {begin(111), txn::rec_redo_write{fh("r"), 0, true, bytes},
                                       txn::rec_redo_size{fh("q"), 2}, txn::rec_commit{}});
    write_journal(state, "s4.j0", 12, {begin(112), txn::rec_redo_write{fh("r2"), 0, true, bytes},
                                       txn::rec_commit{}, txn::rec_checkpoint{}});
  }
  for (const char* f : {"s3.j1", "s3.data", "s4.j1", "s4.data"}) write_file(state / f, "");
  REQUIRE(read(state, "s3.j0").pending());
  REQUIRE_FALSE(read(state, "s4.j0").pending());

  for (int round = 0; round < 2; ++round) {
    INFO("recovery " << round + 1);
    server::fs::export_root exp(root);
    txn::manager m(exp, true, txn::limits{});
    CHECK(std::filesystem::exists(root / "x"));
    CHECK(std::filesystem::exists(root / "old"));  // generation 5 is not undone again
    CHECK_FALSE(std::filesystem::exists(root / "y"));
    CHECK(std::filesystem::exists(root / "z"));
    CHECK(std::filesystem::hard_link_count(root / "z") == 1);
    CHECK(std::filesystem::hard_link_count(root / "w-link") == 1);
    CHECK_FALSE(std::filesystem::exists(root / "v"));
    auto contents = [&](const char* n) {
      std::ifstream in(root / n, std::ios::binary);
      return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    CHECK(contents("r") == "NEW");
    CHECK(contents("q") == "qq");
    CHECK(contents("r2") == "changed after the checkpoint");
    CHECK(read(state, "s3.j0").committed());
    CHECK_FALSE(read(state, "s3.j0").pending());  // checkpointed by the first recovery
    CHECK(m.outcome_of(111) == txn_outcome4::TXN_COMMITTED);
    CHECK(m.outcome_of(112) == txn_outcome4::TXN_COMMITTED);
    CHECK(names_in(state) == std::set<std::string>{"outcomes", "s0.data", "s0.j0", "s0.j1", "s1.data", "s1.j0", "s1.j1",
                                                   "s3.data", "s3.j0", "s3.j1", "s4.data", "s4.j0", "s4.j1"});
    CHECK(vnfs::txn_test::state_leftovers(root).empty());
    CHECK(read(state, "s1.j1").ended());
    CHECK(m.outcome_of(107) == txn_outcome4::TXN_COMMITTED);
    CHECK(m.outcome_of(103) == txn_outcome4::TXN_COMMITTED);
    CHECK(m.outcome_of(108) == txn_outcome4::TXN_ABORTED);
    CHECK(m.outcome_of(110) == txn_outcome4::TXN_ABORTED);
    CHECK(m.outcome_of(105) == txn_outcome4::TXN_UNKNOWN);  // torn: recorded before it was written over
    CHECK(m.outcome_of(109) == txn_outcome4::TXN_UNKNOWN);
  }
}

TEST_CASE("the sync threads start only when a transaction needs them", "[txn][recovery]") {
  test::temp_dir d("vnfs-txn-syncpool");
  server::fs::export_root exp(d.path());
  txn::manager off(exp, false, txn::limits{});
  CHECK_FALSE(off.syncer_started());
  txn::manager on(exp, true, txn::limits{});
  CHECK_FALSE(on.syncer_started());
  server::fs::unique_fd a(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  server::fs::unique_fd b(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const int fds[] = {a.get(), b.get()};
  CHECK_FALSE(on.syncer().fsync_all(fds));
  CHECK(on.syncer_started());
}
