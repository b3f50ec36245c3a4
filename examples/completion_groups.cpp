// Example: completion groups — many reads in flight at once, their completions collected from
// two groups, one polled and one waited on.
//
//   completion_groups [URL]    (no URL: an embedded vnfsd on a temporary directory)
//
// An asynchronous call returns at once; its completion (tag, status, bytes) is delivered to
// the group the call named. Over nfs:// all reads in flight share one TCP connection and one
// session: they are sent back to back and the server answers them in any order.
#include <fcntl.h>

#include <array>
#include <cstdint>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"

namespace {

constexpr std::size_t block_size = 16 * 1024;
constexpr std::size_t blocks = 64;

/// The byte at `offset` of the test file: every block is recognisable.
std::byte pattern(std::size_t offset) { return std::byte((offset / block_size * 7 + offset) & 0xff); }

}  // namespace

int main(int argc, char** argv) try {
  std::optional<vnfs::embedded_server> server;  // without a URL: vnfsd in this process
  if (argc < 2) server.emplace().start();
  const std::string url = server ? server->url() : argv[1];
  vnfs::client c = vnfs::client::connect(url);

  std::vector<std::byte> content(block_size * blocks);
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = pattern(i);
  vnfs::file f = c.open("blocks.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  c.pwrite(f, 0, content);

  // Two groups: say, one for a latency-critical stream, one for background work. A group is
  // just a queue; any number may exist and any thread may poll or wait on one.
  vnfs::completion_group even = c.make_group();
  vnfs::completion_group odd = c.make_group();

  // Start every read before taking any completion. The tag identifies the operation: here,
  // the block number. Destination buffers must stay alive until their completion.
  std::vector<std::vector<std::byte>> buffers(blocks, std::vector<std::byte>(block_size));
  for (std::size_t b = 0; b < blocks; ++b)
    c.read(f, b * block_size, buffers[b], b % 2 == 0 ? even : odd, /*tag=*/b);
  std::cout << "started " << blocks << " reads: " << even.outstanding() << " on group 'even', "
            << odd.outstanding() << " on group 'odd'\n";

  std::vector<int> seen(blocks, 0);
  bool ok = true;
  auto check = [&](const vnfs::completion& e) {
    if (e.status || e.bytes != block_size || e.tag >= blocks) {
      std::cerr << "read " << e.tag << " failed: " << e.status.message() << ", " << e.bytes << " bytes\n";
      ok = false;
      return;
    }
    ++seen[e.tag];
    for (std::size_t i = 0; i < block_size; ++i)
      if (buffers[e.tag][i] != pattern(e.tag * block_size + i)) ok = false;
  };

  // 'even' is polled: poll() never blocks, it takes whatever is ready (here, up to 8 at a
  // time). A real program does other work between polls; this one only yields.
  std::size_t polls = 0;
  while (even.outstanding() > 0) {
    std::array<vnfs::completion, 8> batch;
    std::size_t n = even.poll(batch);
    for (std::size_t i = 0; i < n; ++i) check(batch[i]);
    ++polls;
    if (n == 0) std::this_thread::yield();  // "other work"
  }
  // 'odd' is waited on: wait() blocks until one completion is ready.
  std::size_t waits = 0;
  while (odd.outstanding() > 0) {
    check(odd.wait());
    ++waits;
  }
  std::cout << "group 'even': drained by polling (" << polls << " polls)\n"
            << "group 'odd':  drained by " << waits << " waits\n";

  for (std::size_t b = 0; b < blocks; ++b)
    if (seen[b] != 1) ok = false;  // each completion arrives exactly once

  // Non-I/O operations have the same form; close completes on a group too.
  vnfs::completion_group misc;
  c.close(f, misc, /*tag=*/1000);
  vnfs::completion closed = misc.wait();
  if (closed.tag != 1000 || closed.status) ok = false;

  vnfs::client_stats s = c.stats();
  std::cout << "client stats: " << s.compounds << " COMPOUNDs, " << s.operations << " operations\n";
  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "completion_groups: " << e.what() << "\n";
  return 1;
}
