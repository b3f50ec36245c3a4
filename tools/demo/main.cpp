// vnfs-demo — starts the embedded vnfsd on a temporary export, walks through a few calls of
// the vnfs client API against it, printing for each the NFSv4.1 COMPOUNDs and operations it
// cost on the wire, then shows registered memory, completion groups and the vectorized calls.

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <fcntl.h>

#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"

using namespace vnfs;

namespace {

int steps = 0;

/// Runs one step through the client and prints what it cost: COMPOUNDs and operations
/// (SEQUENCE included), from the client's counters. A step that fails prints its error.
template <class F>
void step(vnfs::client& c, const std::string& what, F&& body) {
  const vnfs::client_stats before = c.stats();
  std::cout << "\n" << ++steps << ". " << what << "\n";
  std::string outcome = "ok";
  try {
    body();
  } catch (const std::system_error& e) {
    outcome = "refused: " + e.code().message();
  }
  const vnfs::client_stats after = c.stats();
  std::cout << "   " << outcome << "; " << after.compounds - before.compounds << " COMPOUND(s), "
            << after.operations - before.operations << " operations\n";
}

const char* type_name(vnfs::file_type t) {
  switch (t) {
    case vnfs::file_type::regular: return "file";
    case vnfs::file_type::directory: return "dir";
    case vnfs::file_type::symlink: return "symlink";
    default: return "other";
  }
}

/// The session and a first file, call by call.
void session_tour(const std::string& url, const std::filesystem::path& export_dir) {
  vnfs::client_options o;
  o.compound_vectors = true;
  auto c = vnfs::client::connect(url, o);
  vnfs::client_stats s = c.stats();
  std::cout << "connected to " << url << ": the session set-up (EXCHANGE_ID, CREATE_SESSION, "
            << "RECLAIM_COMPLETE, ...) took " << s.compounds << " COMPOUNDs\n";

  step(c, "make directory docs (CREATE)", [&] { c.mkdir("docs"); });

  const std::string text = "Hello from vnfs: written with OPEN+WRITE+CLOSE in one round trip.\n";
  step(c, "create docs/hello.txt and write it: one vwrite item", [&] {
    std::vector<vnfs::vio> w{{"docs/hello.txt", 0, std::as_bytes(std::span(text)),
                              vnfs::vio_flags::create | vnfs::vio_flags::truncate | vnfs::vio_flags::stable}};
    vnfs::vresult r = c.vwrite(w);
    if (!r.ok()) throw std::system_error(r.error, "vwrite");
    std::cout << "   wrote " << w[0].bytes << " bytes\n";
  });

  std::vector<std::byte> back(4096);
  step(c, "read it back: one vread item (OPEN + READ + CLOSE)", [&] {
    std::vector<vnfs::vio> rd{{"docs/hello.txt", 0, std::span<std::byte>(back)}};
    vnfs::vresult r = c.vread(rd);
    if (!r.ok()) throw std::system_error(r.error, "vread");
    std::cout << "   read " << rd[0].bytes << " bytes, eof=" << (rd[0].eof ? "true" : "false") << ": "
              << std::string(reinterpret_cast<const char*>(back.data()), rd[0].bytes);
  });

  const std::string more = "Appended at end of file by a WRITE at offset 2^64-1 (vNFS).\n";
  step(c, "append with the vNFS append extension (vio_flags::append)", [&] {
    std::vector<vnfs::vio> ap{{"docs/hello.txt", 0, std::as_bytes(std::span(more)), vnfs::vio_flags::append}};
    vnfs::vresult r = c.vwrite(ap);
    if (!r.ok()) throw std::system_error(r.error, "vwrite");
  });

  step(c, "list docs with attributes (vlistdir: READDIR)", [&] {
    std::string dir = "docs";
    vnfs::vlistdir_options lo;
    lo.callback = [](const std::string&, const vnfs::dir_entry& e, std::size_t, void*) {
      std::printf("   %-12s %-4s size %-6llu mode %04o uid %u\n", e.name.c_str(), type_name(e.stat.type),
                  static_cast<unsigned long long>(e.stat.size), e.stat.mode, e.stat.uid);
    };
    vnfs::vresult r = c.vlistdir(std::span<const std::string>(&dir, 1), lo);
    if (!r.ok()) throw std::system_error(r.error, "vlistdir");
  });

  step(c, "stat the export root (GETATTR)", [&] {
    vnfs::file_stat st = c.stat("");
    std::cout << "   fileid " << st.fileid << ", " << st.nlink << " links, mode " << std::oct << st.mode << std::dec
              << "\n";
  });

  step(c, "try to escape the export: \"../outside\" is refused by the client, nothing is sent",
       [&] { c.stat("../outside"); });
  step(c, "a name the export lacks: the server answers NFS4ERR_NOENT", [&] { c.stat("docs/missing"); });

  std::ifstream local(export_dir / "docs" / "hello.txt");
  std::stringstream content;
  content << local.rdbuf();
  std::cout << "\nOn the server's disk, " << (export_dir / "docs" / "hello.txt").string() << " holds:\n"
            << content.str();
  c.close();  // DESTROY_SESSION + DESTROY_CLIENTID
}

/// The same service through the SDK: vnfs::client with registered memory and a completion group.
void client_api_tour(const std::string& url) {
  std::cout << "\n--- the same server through the vnfs client API (" << url << ") ---\n";
  auto c = vnfs::client::connect(url);
  std::vector<std::byte> buffer(64 * 1024);
  vnfs::memory_region mr = c.register_memory(buffer.data(), buffer.size());

  c.mkdir("api");
  vnfs::file f = c.open("api/data.bin", O_CREAT | O_RDWR | O_TRUNC, 0644);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = std::byte(i * 31);
  std::size_t written = c.pwrite(f, 0, mr.slice(0, buffer.size()));
  std::cout << "pwrite from registered memory: " << written << " bytes\n";

  // Sixteen 4 KiB reads in flight at once, into slices of the same region, on one group.
  vnfs::completion_group g = c.make_group();
  for (std::uint64_t i = 0; i < 16; ++i) c.read(f, i * 4096, mr.slice(i * 4096, 4096), g, i);
  std::uint64_t bytes = 0;
  for (int i = 0; i < 16; ++i) {
    vnfs::completion e = g.wait();
    if (e.status) throw std::system_error(e.status, "read");
    bytes += e.bytes;
  }
  std::cout << "16 asynchronous reads completed on one completion group: " << bytes << " bytes\n";
  vnfs::file_stat st = c.fstat(f);
  std::cout << "fstat: size " << st.size << ", mode " << std::oct << st.mode << std::dec << "\n";
  c.close(f);
  auto d = c.opendir("api");
  while (auto e = c.readdir(d)) std::cout << "readdir: " << e->name << " (" << e->stat.size << " bytes)\n";
  c.unlink("api/data.bin");
  c.rmdir("api");
  vnfs::client_stats s = c.stats();
  std::cout << "client stats: " << s.compounds << " COMPOUNDs, " << s.operations << " operations, "
            << s.payload_bytes_direct << " payload bytes moved directly, " << s.payload_bytes_copied
            << " copied\n";
  c.close();
}

/// The vectorized calls: 1,000 small files written, stat'ed, read and removed, each step one
/// call packed into few COMPOUNDs, next to the same work as scalar calls.
void vectorized_tour(const std::string& url) {
  std::cout << "\n--- the vectorized calls: 1,000 files of 1 KiB (" << url << ") ---\n";
  for (bool vectorized : {true, false}) {
    vnfs::client_options o;
    o.compound_vectors = vectorized;
    auto c = vnfs::client::connect(url, o);
    const std::string dir = vectorized ? "vec" : "scalar";
    c.mkdir(dir);
    std::vector<std::byte> data(1024, std::byte{'v'});
    std::vector<std::vector<std::byte>> back(1000, std::vector<std::byte>(1024));
    std::vector<vnfs::vio> writes, reads;
    std::vector<vnfs::vattr> attrs;
    std::vector<std::string> paths;
    for (int i = 0; i < 1000; ++i) {
      paths.push_back(dir + "/f" + std::to_string(i));
      writes.emplace_back(paths.back(), 0, std::span<const std::byte>(data), vnfs::vio_flags::create);
      reads.emplace_back(paths.back(), 0, std::span<std::byte>(back[i]));
      attrs.emplace_back(paths.back(), vnfs::attr::size);
    }
    std::cout << (vectorized ? "vectorized:" : "as scalar calls:") << "\n";
    auto step = [&](const char* what, auto&& call) {
      vnfs::client_stats before = c.stats();
      vnfs::vresult r = call();
      if (!r.ok()) throw std::system_error(r.error, std::string(what) + " item " + std::to_string(r.failed_index));
      vnfs::client_stats after = c.stats();
      std::cout << "  " << what << ": " << r.ok_count << " items in " << after.compounds - before.compounds
                << " COMPOUNDs (" << after.operations - before.operations << " operations)\n";
    };
    step("vwrite (create + write)", [&] { return c.vwrite(writes); });
    step("vgetattrs", [&] { return c.vgetattrs(attrs); });
    step("vread", [&] { return c.vread(reads); });
    step("vremove", [&] { return c.vremove(paths); });
    c.rmdir(dir);
    c.close();
  }
}

}  // namespace

int main() try {
  embedded_server server(server_options{.threads = 2});  // on a temporary directory, removed at the end
  server.start();
  const std::filesystem::path& export_dir = server.export_dir();
  std::cout << "vnfs demo: embedded vnfsd serving " << export_dir.string() << " on tcp://" << server.address()
            << ":" << server.port() << "\n";

  session_tour(server.url(), export_dir);
  client_api_tour(server.url());
  vectorized_tour(server.url());

  server.stop();
  std::cout << "\nvnfsd stopped, export removed.\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "vnfs-demo: " << e.what() << "\n";
  return 1;
}
