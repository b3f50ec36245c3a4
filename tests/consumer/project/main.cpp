// A consumer of the installed vnfs SDK: only the public headers and the installed libraries.
//
//   consumer URL     (nfs://HOST:PORT/PATH or file:///PATH)
//
// Writes a file through the synchronous API, reads it back through a registered buffer and a
// completion group, checks the bytes and the size, removes it. Prints OK and exits 0 on
// success; exits 1 on any mismatch or error.
#include <fcntl.h>

#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <vnfs/client.hpp>

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::cerr << "usage: consumer URL\n";
    return 2;
  }
  vnfs::client c = vnfs::client::connect(argv[1]);
  const std::string text = "written by a consumer of the installed vnfs package\n";

  vnfs::file f = c.open("consumer.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  const std::size_t written = c.pwrite(f, 0, std::as_bytes(std::span(text)));

  std::vector<std::byte> memory(4096);
  vnfs::memory_region region = c.register_memory(memory.data(), memory.size());
  vnfs::completion_group g = c.make_group();
  c.read(f, 0, region.slice(0, memory.size()), g, 7);
  const vnfs::completion e = g.wait();
  c.close(f);

  const vnfs::file_stat st = c.stat("consumer.txt");
  c.unlink("consumer.txt");
  bool gone = false;
  try {
    c.stat("consumer.txt");
  } catch (const std::system_error& err) {
    gone = err.code() == std::errc::no_such_file_or_directory;
  }

  const bool ok = written == text.size() && e.tag == 7 && !e.status && e.bytes == text.size() &&
                  std::memcmp(memory.data(), text.data(), text.size()) == 0 && st.size == text.size() &&
                  st.type == vnfs::file_type::regular && gone;
  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "consumer: " << e.what() << "\n";
  return 1;
}
