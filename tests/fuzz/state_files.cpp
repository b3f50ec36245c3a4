// Fuzzes what vnfsd reads at start-up from the files it keeps for itself, whatever a crash or
// a damaged disk left in them: the transactions' outcome log (src/server/txn/outcome_log.hpp,
// the `outcomes` file of the state directory) and the stable client records
// (src/server/state/client_records.hpp, the `clients` file of the recovery directory).
// The first input byte picks the file (bit 0 clear: outcomes, set: clients); the rest is the
// file's content, for the outcome log with each whole entry's check made right first when
// bit 1 is set (so that what the entries say reaches the log, past their checks).
// Properties: the outcome log opens without a crash or an exception; every entry before the
// first one whose check fails, and whose outcome is committed or aborted, is found with the
// outcome of its last such entry; find() answers nothing but committed, aborted or unknown;
// afterwards the file holds whole entries only, and an outcome recorded then is found again
// when the log is opened anew. The client records' load() returns or throws
// std::runtime_error (a clear error naming the file), nothing else; a list it returns,
// stored and loaded again, is the same.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "server/state/client_records.hpp"
#include "server/txn/outcome_log.hpp"

using namespace vnfs;
using vnfs::fuzz::require;
using nfs4::txn_outcome4;

namespace {

/// A scratch directory for the files, made once per process and removed at its exit.
char scratch_name[] = "/tmp/vnfs-fuzz-state-XXXXXX";

void remove_files();

int scratch_dir() {
  static const int fd = [] {
    require(::mkdtemp(scratch_name) != nullptr, "mkdtemp");
    std::atexit(remove_files);
    return ::open(scratch_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }();
  return fd;
}

void remove_files() {
  for (const char* f : {"outcomes", "outcomes.new", "clients", "clients.tmp"}) ::unlinkat(scratch_dir(), f, 0);
  ::rmdir(scratch_name);
}

void write_file(const char* name, std::span<const std::byte> content) {
  const int fd = ::openat(scratch_dir(), name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  require(fd >= 0, "create the file");
  require(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()), "write the file");
  ::close(fd);
}

std::uint64_t be(std::span<const std::byte> b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | std::to_integer<std::uint64_t>(b[at + i]);
  return v;
}

/// The outcome log's entry check (outcome_log.hpp: FNV-1a of the entry's first 12 bytes).
std::uint32_t check_of(std::span<const std::byte> e) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < 12; ++i) h = (h ^ std::to_integer<std::uint32_t>(e[i])) * 16777619u;
  return h;
}

constexpr std::size_t entry = 16;

/// `content` with each whole entry's check set to what it should be.
std::vector<std::byte> with_checks(std::span<const std::byte> content) {
  std::vector<std::byte> out(content.begin(), content.end());
  for (std::size_t at = 0; at + entry <= out.size(); at += entry) {
    const std::uint32_t c = check_of(std::span<const std::byte>(out).subspan(at, entry));
    for (int i = 0; i < 4; ++i) out[at + 12 + i] = static_cast<std::byte>(c >> (24 - 8 * i));
  }
  return out;
}

void outcome_log_case(std::span<const std::byte> content) {
  ::unlinkat(scratch_dir(), "outcomes.new", 0);
  write_file("outcomes", content);
  // What the log must answer: its entries up to the first that fails its check.
  std::map<std::uint64_t, txn_outcome4> expected;
  for (std::size_t at = 0; at + entry <= content.size(); at += entry) {
    const auto e = content.subspan(at, entry);
    if (be(e, 12, 4) != check_of(e)) break;
    const auto o = static_cast<txn_outcome4>(be(e, 8, 4) & 0xff);
    if (o == txn_outcome4::TXN_COMMITTED || o == txn_outcome4::TXN_ABORTED) expected[be(e, 0, 8)] = o;
  }
  // A txnid the log answers unknown for (it remembers exactly `expected`).
  std::uint64_t fresh = 1;
  while (expected.contains(fresh)) ++fresh;
  {
    server::txn::outcome_log log(scratch_dir());
    for (std::size_t at = 0; at + 8 <= content.size(); at += entry) {
      const std::uint64_t id = be(content, at, 8);
      const txn_outcome4 found = log.find(id);
      require(found == txn_outcome4::TXN_COMMITTED || found == txn_outcome4::TXN_ABORTED ||
                  found == txn_outcome4::TXN_UNKNOWN,
              "the log answers only committed, aborted or unknown");
      const auto it = expected.find(id);
      require(found == (it == expected.end() ? txn_outcome4::TXN_UNKNOWN : it->second),
              "every entry before the first damaged one is found, with its last outcome");
    }
    require(!log.record(fresh, txn_outcome4::TXN_COMMITTED), "record an outcome after opening");
  }
  struct ::stat st {};
  require(::fstatat(scratch_dir(), "outcomes", &st, 0) == 0, "stat the log");
  require(st.st_size % entry == 0, "the log holds whole entries only");
  server::txn::outcome_log again(scratch_dir());
  require(again.find(fresh) == txn_outcome4::TXN_COMMITTED, "an outcome recorded after damage is found again");
}

void client_records_case(std::span<const std::byte> content) {
  write_file("clients", content);
  server::client_records records(scratch_name);
  server::client_records::list loaded;
  try {
    loaded = records.load();
  } catch (const std::runtime_error&) {
    return;  // refused with a clear error (the test of client_records checks the message)
  }
  require(!records.store(loaded), "store what was loaded");
  require(records.load() == loaded, "stored and loaded again, the list is the same");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto content = vnfs::fuzz::bytes_of(data + 1, size - 1);
  if (data[0] & 1) {
    client_records_case(content);
  } else if (data[0] & 2) {
    const std::vector<std::byte> checked = with_checks(content);
    outcome_log_case(checked);
  } else {
    outcome_log_case(content);
  }
  return 0;
}
