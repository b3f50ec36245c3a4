// A consumer of the installed TPIE adapter (vnfs::tpie, vnfs-tpie.pc), without TPIE: mounts a
// local prefix that does not exist on URL, writes 3 MiB + 5 bytes through the accessor (write-
// behind on), reads them back (read-ahead on), then checks with a vnfs client that the file is
// on the server with that size.
//
//   tpie_consumer URL     (nfs://HOST:PORT/PATH or file:///PATH)
//
// Prints OK and exits 0 on success; exits 1 on any mismatch or error.
#include <cstddef>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <vnfs/client.hpp>
#include <vnfs/tpie/mounts.hpp>
#include <vnfs/tpie/raw_file_accessor.hpp>

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::cerr << "usage: tpie_consumer URL\n";
    return 2;
  }
  const std::string prefix = "/nonexistent/vnfs-tpie-consumer";
  vnfs::tpie::mount(prefix, argv[1]);
  std::vector<unsigned char> data((3 << 20) + 5);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + i / 4096);
  bool ok = true;
  {
    vnfs::tpie::raw_file_accessor f;
    f.open_wo(prefix + "/consumer.tpie");
    ok = ok && f.on_vnfs();
    f.write_i(data.data(), data.size());
    f.close_i();
  }
  {
    vnfs::tpie::raw_file_accessor f;
    f.set_cache_hint(vnfs::tpie::cache_hint::sequential);
    f.open_ro(prefix + "/consumer.tpie");
    std::vector<unsigned char> back(data.size());
    ok = ok && f.file_size_i() == data.size();
    f.read_i(back.data(), back.size());
    ok = ok && back == data;
    f.close_i();
  }
  vnfs::tpie::unmount_all();

  vnfs::client c = vnfs::client::connect(argv[1]);
  ok = ok && c.stat("consumer.tpie").size == data.size();
  c.unlink("consumer.tpie");
  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "tpie_consumer: " << e.what() << "\n";
  return 1;
}
