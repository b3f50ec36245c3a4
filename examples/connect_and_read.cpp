// Example: the synchronous API — connect, open, pwrite, pread, stat, close.
//
//   connect_and_read [URL]     e.g. nfs://127.0.0.1:2049/export or file:///tmp/x
//
// Without a URL it starts an embedded vnfsd on a temporary directory and uses that.
// Every synchronous call is a wait on the asynchronous one and throws std::system_error.
#include <fcntl.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"

int main(int argc, char** argv) try {
  std::optional<vnfs::embedded_server> server;  // without a URL: vnfsd in this process
  if (argc < 2) server.emplace().start();
  const std::string url = server ? server->url() : argv[1];

  // One client = one connection (an NFSv4.1 session for nfs://). Paths are relative to the
  // URL's path.
  vnfs::client c = vnfs::client::connect(url);
  std::cout << "connected to " << url << "\n";

  // open() takes the flags of open(2).
  vnfs::file f = c.open("hello.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);

  // Plain (unregistered) memory works everywhere: spans of bytes.
  const std::string text = "Hello, vnfs! Written with pwrite, read back with pread.\n";
  std::size_t written = c.pwrite(f, 0, std::as_bytes(std::span(text)));
  std::cout << "pwrite: " << written << " bytes\n";

  std::vector<std::byte> buf(4096);
  std::size_t got = c.pread(f, 0, buf);  // short read at end of file: returns what there is
  std::cout << "pread:  " << got << " bytes: " << std::string(reinterpret_cast<const char*>(buf.data()), got);

  vnfs::file_stat st = c.stat("hello.txt");
  std::cout << "stat:   size " << st.size << ", mode " << std::oct << st.mode << std::dec
            << (st.type == vnfs::file_type::regular ? ", regular file" : ", not a regular file") << "\n";

  c.close(f);

  // Errors are std::error_code values; the synchronous calls throw them as std::system_error.
  // NFS statuses compare equal to the matching std::errc.
  bool enoent = false;
  try {
    c.stat("no-such-file");
  } catch (const std::system_error& e) {
    enoent = e.code() == std::errc::no_such_file_or_directory;
    std::cout << "stat of a missing file: " << e.code().message() << (enoent ? " (ENOENT)" : "") << "\n";
  }

  c.close();  // ends the session in order; the destructor would do it too

  const bool ok = written == text.size() && got == text.size() &&
                  std::memcmp(buf.data(), text.data(), text.size()) == 0 && st.size == text.size() &&
                  st.type == vnfs::file_type::regular && enoent;
  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "connect_and_read: " << e.what() << "\n";
  return 1;
}
