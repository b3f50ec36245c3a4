// vnfs-demo — starts the embedded vnfsd on a temporary export, walks through a real NFSv4.1
// exchange with it over TCP (printing every COMPOUND and what came back), then uses the same
// server through the vnfs client API.

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <fcntl.h>

#include "client/blocking_session.hpp"  // allowed by scripts/check_layers.py: hand-built COMPOUNDs
#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"
#include "vnfs/nfs4/attributes.hpp"
#include "vnfs/nfs4/nfs4.hpp"

using namespace vnfs;
using namespace vnfs::nfs4;

namespace {

int compounds = 0;

std::string status_text(nfsstat4 s) {
  std::string m = std::error_code(s).message();
  return m.substr(0, m.find(':'));
}

/// Sends one COMPOUND (SEQUENCE first) and prints the operations with their statuses.
COMPOUND4res run(vnfs::detail::blocking_session& s, const std::string& what,
                 std::vector<nfs_argop4> ops) {
  COMPOUND4res r = s.compound(std::move(ops));
  ++compounds;
  std::cout << "\n" << compounds << ". " << what << "\n   COMPOUND:";
  for (const auto& res : r.resarray) {
    std::cout << " " << op_name(opnum_of(res));
    if (status_of(res) != nfsstat4::NFS4_OK) std::cout << "(" << status_text(status_of(res)) << ")";
  }
  std::cout << "\n   status:   " << status_text(r.status) << "\n";
  return r;
}

template <class R>
const R& last(const COMPOUND4res& r) {
  return std::get<R>(r.resarray.back());
}
template <class R>
const R& find(const COMPOUND4res& r) {
  for (const auto& res : r.resarray)
    if (auto* p = std::get_if<R>(&res)) return *p;
  throw std::runtime_error(std::string("no ") + op_name(R::opnum) + " result");
}

open_owner4 owner(const vnfs::detail::blocking_session& s) {
  return {s.client_id(), vnfs::detail::to_byte_vector("demo-owner")};
}

OPEN4args open_args(const vnfs::detail::blocking_session& s, const std::string& name, bool create,
                    std::uint32_t access) {
  OPEN4args o;
  o.share_access = access;
  o.share_deny = OPEN4_SHARE_DENY_NONE;
  o.owner = owner(s);
  o.openhow.opentype = create ? opentype4::OPEN4_CREATE : opentype4::OPEN4_NOCREATE;
  if (create) {
    attributes a;
    a.mode = 0644;
    o.openhow.how.mode = createmode4::UNCHECKED4;
    o.openhow.how.createattrs = encode_attributes(a);
  }
  o.claim.claim = open_claim_type4::CLAIM_NULL;
  o.claim.file = name;
  return o;
}

bitmap4 bits(std::initializer_list<unsigned> attrs) {
  bitmap4 b;
  for (unsigned a : attrs) b.set(a);
  return b;
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

  {
    vnfs::detail::blocking_session s("127.0.0.1", server.port(), {});
    std::cout << "session: EXCHANGE_ID + CREATE_SESSION done; the server granted "
              << s.fore().ca_maxoperations << " operations and "
              << (s.fore().ca_maxrequestsize >> 10) << " KiB per COMPOUND, "
              << s.fore().ca_maxrequests << " slots\n";

    CREATE4args mkdir;
    mkdir.objtype.type = nfs_ftype4::NF4DIR;
    mkdir.objname = "docs";
    mkdir.createattrs = encode_attributes(attributes{.mode = 0755});
    run(s, "make directory docs", {PUTROOTFH4args{}, mkdir});

    const std::string text = "Hello from vnfs: written with OPEN+WRITE+CLOSE in one round trip.\n";
    WRITE4args w{stateid4::current(), 0, stable_how4::FILE_SYNC4, std::as_bytes(std::span(text))};
    auto wr = run(s, "create docs/hello.txt and write it, one COMPOUND (current stateid)",
                  {PUTROOTFH4args{}, LOOKUP4args{"docs"},
                   open_args(s, "hello.txt", true, OPEN4_SHARE_ACCESS_WRITE), w,
                   CLOSE4args{0, stateid4::current()}});
    if (wr.status == nfsstat4::NFS4_OK)
      std::cout << "   wrote " << find<WRITE4res>(wr).resok4.count << " bytes, FILE_SYNC4\n";

    auto rd = run(s, "read it back: OPEN + READ + CLOSE",
                  {PUTROOTFH4args{}, LOOKUP4args{"docs"},
                   open_args(s, "hello.txt", false, OPEN4_SHARE_ACCESS_READ),
                   READ4args{stateid4::current(), 0, 4096}, CLOSE4args{0, stateid4::current()}});
    if (rd.status == nfsstat4::NFS4_OK) {
      const auto& data = find<READ4res>(rd).resok4;
      std::cout << "   read " << data.data.size() << " bytes, eof=" << (data.eof ? "true" : "false")
                << ": " << vnfs::detail::to_string(data.data);
    }

    const std::string more = "Appended at end of file by a WRITE at offset 2^64-1 (vNFS).\n";
    WRITE4args ap{stateid4::current(), NFS4_UINT64_MAX, stable_how4::FILE_SYNC4,
                  std::as_bytes(std::span(more))};
    run(s, "append with the vNFS append extension",
        {PUTROOTFH4args{}, LOOKUP4args{"docs"},
         open_args(s, "hello.txt", false, OPEN4_SHARE_ACCESS_WRITE), ap,
         CLOSE4args{0, stateid4::current()}});

    READDIR4args rdir;
    rdir.dircount = 4096;
    rdir.maxcount = 16384;
    rdir.attr_request = bits({FATTR4_TYPE, FATTR4_SIZE, FATTR4_MODE, FATTR4_OWNER});
    auto ls = run(s, "list docs with attributes (READDIR)", {PUTROOTFH4args{}, LOOKUP4args{"docs"}, rdir});
    if (ls.status == nfsstat4::NFS4_OK) {
      for (const auto& e : last<READDIR4res>(ls).resok4.reply.entries) {
        attributes a = decode_attributes(e.attrs);
        std::printf("   %-12s size %-6llu mode %04o owner %s\n", e.name.c_str(),
                    static_cast<unsigned long long>(a.size.value_or(0)), a.mode.value_or(0),
                    a.owner.value_or("?").c_str());
      }
    }

    auto attrs = run(s, "GETATTR of the export root",
                     {PUTROOTFH4args{}, GETATTR4args{bits({FATTR4_TYPE, FATTR4_FILEID, FATTR4_NUMLINKS,
                                                            FATTR4_LEASE_TIME, FATTR4_MAXREAD})}});
    if (attrs.status == nfsstat4::NFS4_OK) {
      attributes a = decode_attributes(last<GETATTR4res>(attrs).resok4.obj_attributes);
      std::cout << "   fileid " << a.fileid.value_or(0) << ", " << a.numlinks.value_or(0)
                << " links, lease " << a.lease_time.value_or(0) << " s, maxread "
                << a.maxread.value_or(0) << " bytes\n";
    }

    run(s, "try to escape the export: LOOKUP \"..\" is refused", {PUTROOTFH4args{}, LOOKUP4args{".."}});
    run(s, "LOOKUPP above the export root is refused", {PUTROOTFH4args{}, LOOKUPP4args{}});

    std::ifstream local(export_dir / "docs" / "hello.txt");
    std::stringstream content;
    content << local.rdbuf();
    std::cout << "\nOn the server's disk, " << (export_dir / "docs" / "hello.txt").string() << " holds:\n"
              << content.str();
  }  // DESTROY_SESSION + DESTROY_CLIENTID

  std::cout << "\n" << compounds << " COMPOUNDs above, plus EXCHANGE_ID, CREATE_SESSION, "
            << "DESTROY_SESSION and DESTROY_CLIENTID.\n";

  client_api_tour(server.url());
  vectorized_tour(server.url());

  server.stop();
  std::cout << "\nvnfsd stopped, export removed.\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "vnfs-demo: " << e.what() << "\n";
  return 1;
}
