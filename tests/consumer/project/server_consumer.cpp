// A consumer of the installed vnfs SDK that runs its own server: vnfs::embedded_server
// (library vnfs::server, pkg-config vnfs-server) on a temporary directory, and vnfs::client
// connected to it.
//
//   server_consumer
//
// Writes a file through the client and finds it, with the same bytes, in the directory the
// server exports. Prints OK and exits 0 on success; exits 1 on any mismatch or error.
#include <fcntl.h>

#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include <vnfs/client.hpp>
#include <vnfs/embedded_server.hpp>

int main() try {
  vnfs::embedded_server server;  // 127.0.0.1, a free port, a temporary directory
  server.start();
  const std::string text = "written through the embedded server of the installed vnfs package\n";
  {
    vnfs::client c = vnfs::client::connect(server.url());
    vnfs::file f = c.open("served.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    c.pwrite(f, 0, std::as_bytes(std::span(text)));
    c.close(f);
  }
  std::ifstream in(server.export_dir() / "served.txt", std::ios::binary);
  const std::string on_disk{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  server.stop();

  const bool ok = on_disk == text;
  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "server_consumer: " << e.what() << "\n";
  return 1;
}
