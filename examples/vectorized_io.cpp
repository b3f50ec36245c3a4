// Example: vectorized I/O — vwrite and vread move many files' data in one call each.
//
//   vectorized_io [URL]    (no URL: an embedded vnfsd on a temporary directory)
//
// A vectorized call takes a span of vio items (file, offset, memory) and returns a vresult:
// the first error, how many items succeeded and which failed first. Over nfs:// the items go
// into as few COMPOUNDs as the session allows, so 64 files are written, or read, in a round
// trip or two instead of three (OPEN, I/O, CLOSE) per file; client::stats() shows how many.
// Here the items name slices of registered memory, so over TCP every WRITE payload is sent
// from the application's buffer and every READ payload received into it, with no copy.
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"

namespace {

constexpr std::size_t files = 64;
constexpr std::size_t file_size = 4096;

std::byte pattern(std::size_t file, std::size_t offset) { return std::byte((file * 13 + offset * 7) & 0xff); }

/// COMPOUNDs (round trips over nfs://) a call made; 0 over file://, which sends none.
std::uint64_t compounds_since(const vnfs::client& c, const vnfs::client_stats& before) {
  return c.stats().compounds - before.compounds;
}

}  // namespace

int main(int argc, char** argv) try {
  std::optional<vnfs::embedded_server> server;  // without a URL: vnfsd in this process
  if (argc < 2) server.emplace().start();
  const std::string url = server ? server->url() : argv[1];
  vnfs::client c = vnfs::client::connect(url);
  bool ok = true;

  c.mkdir("vectorized");
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < files; ++i) paths.push_back("vectorized/f" + std::to_string(i));

  // vwrite: every file created (vio_flags::create) and written from its own slice of one
  // registered region (registered for writes: the data leaves it), one call.
  std::vector<std::byte> contents(files * file_size);
  for (std::size_t i = 0; i < files; ++i)
    for (std::size_t off = 0; off < file_size; ++off) contents[i * file_size + off] = pattern(i, off);
  vnfs::memory_region source = c.register_memory(contents.data(), contents.size(), vnfs::access::write);
  std::vector<vnfs::vio> writes;
  for (std::size_t i = 0; i < files; ++i)
    writes.emplace_back(paths[i], 0, source.slice(i * file_size, file_size), vnfs::vio_flags::create);
  vnfs::client_stats before = c.stats();
  vnfs::vresult w = c.vwrite(writes);
  const std::uint64_t written_direct = c.stats().payload_bytes_direct - before.payload_bytes_direct;
  std::cout << "vwrite: " << w.ok_count << " of " << files << " files written in " << compounds_since(c, before)
            << " COMPOUNDs, " << written_direct << " payload bytes moved directly\n";
  ok = ok && w.ok() && w.ok_count == files;
  for (const vnfs::vio& io : writes) ok = ok && io.bytes == file_size;

  // vread: every file read back into its own slice of another registered region (registered
  // for reads: data lands in it; over TCP the payload is received straight into the slices),
  // one call.
  std::vector<std::byte> memory(files * file_size);
  vnfs::memory_region region = c.register_memory(memory.data(), memory.size(), vnfs::access::read);
  std::vector<vnfs::vio> reads;
  for (std::size_t i = 0; i < files; ++i) reads.emplace_back(paths[i], 0, region.slice(i * file_size, file_size));
  before = c.stats();
  vnfs::vresult r = c.vread(reads);
  const std::uint64_t read_direct = c.stats().payload_bytes_direct - before.payload_bytes_direct;
  std::cout << "vread:  " << r.ok_count << " of " << files << " files read in " << compounds_since(c, before)
            << " COMPOUNDs, " << read_direct << " payload bytes moved directly\n";
  ok = ok && r.ok() && r.ok_count == files;
  for (std::size_t i = 0; i < files; ++i) ok = ok && reads[i].bytes == file_size;
  ok = ok && std::memcmp(memory.data(), contents.data(), contents.size()) == 0;
  // Against the embedded vnfsd (nfs:// over TCP) every payload byte moved directly, both
  // ways: no library buffer held any of it.
  if (server) ok = ok && written_direct == files * file_size && read_direct == files * file_size;

  // A call stops at its first failure, as a COMPOUND does: the vresult says which item failed
  // and why, and each item's status says whether it ran. Here the third of four is missing,
  // and the call runs asynchronously, its completion going to a group.
  std::vector<std::byte> small(16 * 4);
  std::vector<vnfs::vio> some{{paths[0], 0, std::span(small).subspan(0, 16)},
                              {paths[1], 0, std::span(small).subspan(16, 16)},
                              {"vectorized/missing", 0, std::span(small).subspan(32, 16)},
                              {paths[3], 0, std::span(small).subspan(48, 16)}};
  vnfs::completion_group g = c.make_group();
  vnfs::vresult partial;
  c.async_vread(some, &partial, g, 42);
  vnfs::completion done = g.wait();
  std::cout << "vread with a missing file: " << partial.ok_count << " items read, item " << partial.failed_index
            << " failed: " << partial.error.message() << "\n";
  ok = ok && done.tag == 42 && done.status == partial.error && partial.failed_index == 2 &&
       partial.error == std::errc::no_such_file_or_directory && !partial.status[0] && !partial.status[1];

  // vremove: the files go in one call too.
  vnfs::vresult gone = c.vremove(paths);
  ok = ok && gone.ok() && gone.ok_count == files;
  c.rmdir("vectorized");

  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "vectorized_io: " << e.what() << "\n";
  return 1;
}
