// Example: registered memory and direct I/O — data moves between the socket and the
// application's own buffer with no copy through a library buffer.
//
//   registered_memory [URL]    (no URL: an embedded vnfsd on a temporary directory)
//
// register_memory() makes a buffer a place the transport reads into and writes from
// directly (over TCP: READ payload is received straight into it, WRITE payload is sent from
// it by scatter-gather). Operations name slices of the region; client::stats() counts the
// payload that went direct and the payload that was copied.
#include <fcntl.h>

#include <cstring>
#include <exception>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <boost/asio/use_future.hpp>

#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"

int main(int argc, char** argv) try {
  std::optional<vnfs::embedded_server> server;  // without a URL: vnfsd in this process
  if (argc < 2) server.emplace().start();
  const std::string url = server ? server->url() : argv[1];
  vnfs::client c = vnfs::client::connect(url);

  // One region, used in halves: the first half is the source of writes, the second the
  // destination of reads. The memory stays ours; the region only registers it.
  constexpr std::size_t half = 512 * 1024, chunk = 128 * 1024;
  std::vector<std::byte> memory(2 * half);
  vnfs::memory_region region = c.register_memory(memory.data(), memory.size());
  for (std::size_t i = 0; i < half; ++i) memory[i] = std::byte((i * 31 + 7) & 0xff);

  const vnfs::client_stats before = c.stats();
  vnfs::file f = c.open("direct.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);

  // Writes from slices of the region, all in flight at once on one group.
  vnfs::completion_group g = c.make_group();
  for (std::size_t off = 0; off < half; off += chunk) c.write(f, off, region.slice(off, chunk), g, off);
  // Reads into the other half once the writes are done.
  bool ok = true;
  while (g.outstanding() > 0) {
    vnfs::completion e = g.wait();
    if (e.status || e.bytes != chunk) ok = false;
  }
  const vnfs::client_stats written = c.stats();
  for (std::size_t off = 0; off < half - chunk; off += chunk) c.read(f, off, region.slice(half + off, chunk), g, off);

  // The last chunk with an Asio completion token instead of a group: asio::use_future turns
  // the operation into a std::future of its (std::error_code, bytes) result.
  std::future<std::tuple<std::error_code, std::size_t>> last =
      c.async_read(f, half - chunk, region.slice(2 * half - chunk, chunk), boost::asio::use_future);
  while (g.outstanding() > 0) {
    vnfs::completion e = g.wait();
    if (e.status || e.bytes != chunk) ok = false;
  }
  auto [last_status, last_bytes] = last.get();
  if (last_status || last_bytes != chunk) ok = false;
  c.close(f);

  const vnfs::client_stats after = c.stats();
  const std::uint64_t direct = after.payload_bytes_direct - before.payload_bytes_direct;
  const std::uint64_t copied = after.payload_bytes_copied - before.payload_bytes_copied;
  std::cout << "wrote and read back " << half << " bytes through registered slices\n"
            << "payload moved directly: " << direct << " bytes (writes "
            << written.payload_bytes_direct - before.payload_bytes_direct << ", reads "
            << after.payload_bytes_direct - written.payload_bytes_direct << "); copied: " << copied << " bytes\n";

  ok = ok && std::memcmp(memory.data(), memory.data() + half, half) == 0 && copied == 0 && direct == 2 * half;
  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "registered_memory: " << e.what() << "\n";
  return 1;
}
