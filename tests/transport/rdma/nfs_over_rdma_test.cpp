// NFSv4.1 over RPC-over-RDMA (cma provider) end to end: vnfsd in this process with an RDMA
// listener, the SDK client over nfs+rdma://. Every chunk type is exercised and counted on
// the server side (exact counts and bytes).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "client/backend.hpp"
#include "client/memory/registration.hpp"
#include "client/nfs/reply_decoder.hpp"
#include "client/nfs/session_call.hpp"
#include "client/nfs/session_engine.hpp"
#include "client/result_size.hpp"
#include "fabric_fixture.hpp"
#include "server/vnfsd.hpp"
#include "transport/rdma/fabric.hpp"
#include "transport/rdma/rpc_server.hpp"
#include "transport/rpc_channel.hpp"
#include "vnfs/rpc/message.hpp"
#include "vnfs/client.hpp"
#include "vnfs/completion_group.hpp"
#include "vnfs/test/blocking_session.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using namespace vnfs;

namespace {

constexpr std::size_t MiB = 1 << 20;

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte((i * 2654435761u + seed) >> 13);
  return v;
}

/// vnfsd with TCP and RDMA (cma) listeners on free ports, served by a thread of its own.
struct rdma_vnfsd {
  test::temp_dir dir{"vnfs-rdma-e2e"};
  server::vnfsd server{options(dir.path())};
  std::thread serving{[this] { server.run(); }};

  ~rdma_vnfsd() {
    server.stop();
    serving.join();
  }
  static server::server_options options(const std::filesystem::path& d) {
    server::server_options o;
    o.export_dir = d;
    o.listen_port = 0;
    o.threads = 2;
    o.rdma_provider = "cma";
    o.rdma_port = 0;
    return o;
  }
  std::string url(const std::string& path = "/") const {
    return "nfs+rdma://127.0.0.1:" + std::to_string(server.rdma_port()) + path + "?provider=cma";
  }
  transport::rdma::rpc_server_stats stats() const { return server.rdma_stats(); }
};

client_stats minus(const client_stats& a, const client_stats& b) {
  client_stats d;
  d.compounds = a.compounds - b.compounds;
  d.payload_bytes_direct = a.payload_bytes_direct - b.payload_bytes_direct;
  d.payload_bytes_copied = a.payload_bytes_copied - b.payload_bytes_copied;
  return d;
}

void write_local(const std::filesystem::path& p, const std::vector<std::byte>& data) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

/// An RPC-over-RDMA channel (cma) to `port` driven by hand: hand-built COMPOUNDs with the
/// read targets a test chooses, decoded by the client's reply decoder.
struct hand_channel {
  test::io_thread t;
  std::atomic<std::uint64_t> sent{0}, received{0}, direct{0}, copied{0};
  std::optional<std::promise<std::vector<std::byte>>> got;
  std::shared_ptr<transport::rpc_channel> ch;

  explicit hand_channel(std::uint16_t port) {
    transport::channel_events ev;
    ev.on_reply = [this](std::uint32_t, std::vector<std::byte> rec) { got->set_value(std::move(rec)); };
    ev.on_call_failed = [this](std::uint32_t, std::error_code) { got->set_value({}); };
    ev.on_lost = [](std::error_code) {};
    ch = transport::make_rdma_channel(t.io, "cma", "127.0.0.1", port, ev, {sent, received, direct, copied});
    std::promise<std::error_code> connected;
    auto cf = connected.get_future();
    boost::asio::post(t.io, [&] { ch->connect([&](std::error_code ec) { connected.set_value(ec); }); });
    REQUIRE_FALSE(test::wait_for(cf));
  }
  ~hand_channel() {
    test::on_io(t.io, [this] {
      ch->close();
      return 0;
    });
  }
  /// Sends `ops` as `xid` and decodes the reply into `out`; false when the call failed
  /// (RDMA_ERROR or a lost connection).
  bool call(std::uint32_t xid, std::vector<nfs4::nfs_argop4> ops, std::vector<std::span<std::byte>> targets,
            detail::compound_reply& out) {
    detail::session_call c;
    c.ops = std::move(ops);
    c.read_targets = std::move(targets);
    detail::encode_call(c, xid, detail::authsys_credential(0, 0, {}));
    c.decoder = std::make_shared<detail::reply_decoder>(c.reads);
    got.emplace();
    auto f = got->get_future();
    boost::asio::post(t.io, [&] { ch->send(xid, c.request, c.decoder, {}, detail::reply_size_bound(c.ops)); });
    auto rec = test::wait_for(f);
    if (rec.empty()) return false;
    REQUIRE_FALSE(c.decoder->finish(std::move(rec), out));
    return true;
  }
  /// The data of READ result `i` of `r`.
  static std::vector<std::byte> read_data(const detail::compound_reply& r, std::size_t i) {
    const auto& d = std::get<nfs4::READ4res>(r.res.resarray.at(i)).resok4.data;
    return std::vector<std::byte>(d.begin(), d.end());
  }
};

}  // namespace

TEST_CASE("nfs over rdma: the ready URL and the second listener") {
  rdma_vnfsd s;
  CHECK(s.server.rdma_url() == "rdma+cma://127.0.0.1:" + std::to_string(s.server.rdma_port()));
  CHECK(s.server.rdma_port() != 0);
}

TEST_CASE("nfs over rdma: a READ lands straight in a registered region by RDMA Write (Write list)") {
  rdma_vnfsd s;
  auto data = pattern(MiB, 1);
  write_local(s.dir.path() / "f", data);
  auto c = client::connect(s.url());
  std::vector<std::byte> in(MiB + 4096, std::byte{0x77});
  memory_region rd = c.register_memory(in.data(), in.size(), access::read);
  file f = c.open("f", O_RDONLY, 0);
  auto s0 = s.stats();
  auto c0 = c.stats();
  REQUIRE(c.pread(f, 0, rd.slice(4096, MiB)) == MiB);
  auto s1 = s.stats();
  auto d = minus(c.stats(), c0);
  CHECK(std::memcmp(in.data() + 4096, data.data(), MiB) == 0);
  CHECK(in[4095] == std::byte{0x77});
  CHECK(d.payload_bytes_direct == MiB);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(d.compounds == 1);
  CHECK(s1.write_list_replies - s0.write_list_replies == 1);
  CHECK(s1.bytes_rdma_written - s0.bytes_rdma_written == MiB);
  CHECK(s1.reply_chunk_replies == s0.reply_chunk_replies);
  // An unaligned part: 4001 bytes at offset 12345.
  REQUIRE(c.pread(f, 12345, rd.slice(3, 4001)) == 4001);
  CHECK(std::memcmp(in.data() + 3, data.data() + 12345, 4001) == 0);
  CHECK(s.stats().bytes_rdma_written - s1.bytes_rdma_written == 4001);
  c.close(f);
}

TEST_CASE("nfs over rdma: vreads into one registered region register it with the fabric once; its release follows the region") {
  rdma_vnfsd s;
  constexpr std::size_t reads = 8, part = 64 * 1024;
  auto data = pattern(reads * part, 4);
  write_local(s.dir.path() / "v", data);
  auto c = client::connect(s.url());
  const detail::registration_table& table = detail::internals::backend_of(c).registrations();
  std::vector<std::byte> in(reads * part, std::byte{0x55});
  std::optional<memory_region> rd(c.register_memory(in.data(), in.size(), access::read));
  // Observes the region's registration after the region is gone.
  std::shared_ptr<detail::registration> reg = detail::internals::registration_of(rd->all());
  CHECK(reg->attachments() == 0);  // nothing before the first call through the region
  CHECK(table.attachments_made() == 0);
  file f = c.open("v", O_RDONLY, 0);
  auto s0 = s.stats();
  auto c0 = c.stats();
  for (std::size_t i = 0; i < reads; ++i) {
    vio v(f, i * part, rd->slice(i * part, part));
    REQUIRE(c.vread(std::span(&v, 1)).ok());
    CHECK(v.bytes == part);
  }
  auto d = minus(c.stats(), c0);
  auto s1 = s.stats();
  CHECK(in == data);
  // Exactly one fabric registration for 8 reads into the region, still attached to it.
  CHECK(table.attachments_made() == 1);
  CHECK(table.attachments_held() == 1);
  CHECK(reg->attachments() == 1);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(d.payload_bytes_direct == reads * part);
  CHECK(d.compounds == reads);
  CHECK(s1.write_list_replies - s0.write_list_replies == reads);
  CHECK(s1.bytes_rdma_written - s0.bytes_rdma_written == reads * part);
  // A scalar pread into it reuses the same registration.
  REQUIRE(c.pread(f, 0, rd->slice(0, part)) == part);
  CHECK(table.attachments_made() == 1);
  // Destroying the region (no I/O in flight) releases the fabric registration at once.
  rd.reset();
  CHECK_FALSE(reg->valid());
  CHECK(reg->attachments() == 0);
  CHECK(table.attachments_held() == 0);
  CHECK(table.attachments_made() == 1);
  c.close(f);
}

TEST_CASE("nfs over rdma: one vread of several READs: every payload placed by RDMA Write, each in its own registered buffer") {
  rdma_vnfsd s;
  // Items of 4, 8, 16, 32 and 64 KiB, by path (OPEN, READ, CLOSE) and by open file (PUTFH,
  // READ); one asks 64 KiB of a 10000-byte file (a short READ at EOF), one reads at the end
  // of a file (an empty READ at EOF). Each buffer is a region of its own with guard bytes.
  const std::vector<std::size_t> sizes{4096, 8192, 16384, 32768, 65536, 65536, 4096};
  const std::vector<std::size_t> file_sizes{4096, 8192, 16384, 32768, 65536, 10000, 3000};
  const std::vector<std::uint64_t> offsets{0, 0, 0, 0, 0, 0, 3000};
  std::vector<std::vector<std::byte>> data;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    data.push_back(pattern(file_sizes[i], static_cast<unsigned>(i + 10)));
    write_local(s.dir.path() / ("m" + std::to_string(i)), data.back());
  }
  auto c = client::connect(s.url());
  constexpr std::size_t guard = 64;
  std::vector<std::vector<std::byte>> bufs;
  std::vector<memory_region> regions;
  for (auto n : sizes) bufs.emplace_back(n + 2 * guard, std::byte{0x5a});
  for (auto& b : bufs) regions.push_back(c.register_memory(b.data(), b.size(), access::read));
  std::vector<file> open_files;
  for (std::size_t i = 3; i < sizes.size(); ++i) open_files.push_back(c.open("m" + std::to_string(i), O_RDONLY, 0));
  std::vector<vio> items;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    vfile f = i < 3 ? vfile("m" + std::to_string(i)) : vfile(open_files[i - 3]);
    items.emplace_back(f, offsets[i], regions[i].slice(guard, sizes[i]));
  }
  auto s0 = s.stats();
  auto c0 = c.stats();
  REQUIRE(c.vread(items).ok());
  auto s1 = s.stats();
  auto d = minus(c.stats(), c0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t expect = file_sizes[i] - offsets[i];
    total += expect;
    CHECK(items[i].bytes == expect);
    CHECK(std::memcmp(bufs[i].data() + guard, data[i].data() + offsets[i], expect) == 0);
    CHECK(std::all_of(bufs[i].begin(), bufs[i].begin() + guard, [](std::byte b) { return b == std::byte{0x5a}; }));
    CHECK(std::all_of(bufs[i].begin() + static_cast<std::ptrdiff_t>(guard + expect), bufs[i].end(),
                      [](std::byte b) { return b == std::byte{0x5a}; }));
  }
  CHECK(items[5].eof);
  CHECK(items[6].eof);
  CHECK(total == 4096 + 8192 + 16384 + 32768 + 65536 + 10000);
  // One COMPOUND, one Write chunk per READ (7 chunks, the empty READ's included), every
  // byte placed, none copied.
  CHECK(d.compounds == 1);
  CHECK(d.payload_bytes_direct == total);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(s1.calls - s0.calls == 1);
  CHECK(s1.write_list_replies - s0.write_list_replies == 1);
  CHECK(s1.write_chunks_used - s0.write_chunks_used == sizes.size());
  CHECK(s1.bytes_rdma_written - s0.bytes_rdma_written == total);
  CHECK(s1.reply_chunk_replies == s0.reply_chunk_replies);
  for (auto& f : open_files) c.close(f);
}

TEST_CASE("nfs over rdma: a reply whose payloads are inline leaves the Write chunks unused; the client reads the data from it") {
  // A server that answers SEQUENCE, PUTFH, READ (3000 bytes), READ (100 bytes) as vnfsd
  // does, or with the reply flattened (as vnfsd's reply cache once replayed replies): no
  // payload left for the Write chunks. (The flattened reply fits inline: a longer one would
  // need a Reply chunk, which the client offers only for what the Write chunks do not take.)
  test::io_thread t;
  const auto data = pattern(3100, 3);
  std::atomic<bool> flat{false};
  auto fab = transport::rdma::make_fabric("cma", t.io);
  using responder = transport::rdma::rpc_server::responder;
  transport::rdma::rpc_server srv(*fab, "127.0.0.1", 0, {}, [&](std::vector<std::byte> rec, std::shared_ptr<responder> r) {
    nfs4::COMPOUND4res res;
    res.resarray.push_back(nfs4::SEQUENCE4res{});
    res.resarray.push_back(nfs4::PUTFH4res{});
    res.resarray.push_back(nfs4::READ4res{nfs4::nfsstat4::NFS4_OK, {false, std::span(data).first(3000)}});
    res.resarray.push_back(nfs4::READ4res{nfs4::nfsstat4::NFS4_OK, {true, std::span(data).subspan(3000, 100)}});
    xdr::encoder e;
    rpc::encode_accepted_reply(e, xdr::decoder(rec).get_u32(), rpc::accept_stat::success);
    xdr::encode(e, res);
    if (flat) {
      xdr::encoder f;
      f.put_fixed_opaque(e.flatten());
      e = std::move(f);
    }
    r->reply(std::move(e), nullptr);  // `data` outlives the server
  });
  hand_channel h(srv.port());
  // The two targets lie in one arena between guard bytes.
  std::vector<std::byte> arena(64 + 3000 + 64 + 100 + 64, std::byte{0xa5});
  auto call = [&](std::uint32_t xid, detail::compound_reply& out) {
    REQUIRE(h.call(xid,
                   {nfs4::SEQUENCE4args{}, nfs4::PUTFH4args{}, nfs4::READ4args{{}, 0, 3000}, nfs4::READ4args{{}, 3000, 100}},
                   {std::span(arena).subspan(64, 3000), std::span(arena).subspan(64 + 3000 + 64, 100)}, out));
  };
  auto read_data = hand_channel::read_data;
  const std::vector<std::byte> first(data.begin(), data.begin() + 3000), second(data.begin() + 3000, data.end());

  detail::compound_reply placed;
  call(1, placed);
  CHECK(placed.placed == std::vector<bool>{false, false, true, true});
  CHECK(read_data(placed, 2) == first);
  CHECK(read_data(placed, 3) == second);
  CHECK(std::equal(first.begin(), first.end(), arena.begin() + 64));
  CHECK(h.direct == 3100);
  CHECK(srv.stats().write_chunks_used == 2);

  std::fill(arena.begin(), arena.end(), std::byte{0xa5});
  flat = true;
  detail::compound_reply replayed;
  call(2, replayed);
  CHECK(replayed.placed == std::vector<bool>{false, false, false, false});
  CHECK(read_data(replayed, 2) == first);
  CHECK(read_data(replayed, 3) == second);
  CHECK(std::all_of(arena.begin(), arena.end(), [](std::byte b) { return b == std::byte{0xa5}; }));
  CHECK(h.direct == 3100);
  CHECK(srv.stats().write_chunks_used == 2);
}

TEST_CASE("nfs over rdma: a retransmitted cached COMPOUND is replayed as it was sent: READ payload in the Write chunk, the long rest in the Reply chunk") {
  // SEQUENCE (slot 1, cachethis), PUTROOTFH, LOOKUP, READ 8 KiB into a registered target,
  // READ 6000 bytes with no target: the first payload goes by RDMA Write into the target,
  // the second stays in the reply, which is then beyond the 4 KiB inline size and goes
  // through the Reply chunk (offered for what the Write chunk does not take). The same
  // slot and sequence id again must be answered from the reply cache exactly as the first
  // time: the first payload placed in the same place, the rest in the Reply chunk.
  rdma_vnfsd s;
  const auto before = pattern(16384, 31), after = pattern(16384, 32);
  write_local(s.dir.path() / "r", before);
  // The session comes from vnfsd's TCP listener; its slots serve any connection.
  test::blocking_session setup("127.0.0.1", s.server.port(), {});
  REQUIRE(setup.fore().ca_maxresponsesize_cached >= 16384);

  hand_channel h(s.server.rdma_port());
  std::vector<nfs4::nfs_argop4> ops{nfs4::SEQUENCE4args{setup.session_id(), 1, 1, 1, true}};
  for (auto& op : setup.path_ops("r")) ops.push_back(op);
  ops.push_back(nfs4::READ4args{{}, 0, 8192});
  ops.push_back(nfs4::READ4args{{}, 8192, 6000});
  const std::size_t first_read = ops.size() - 2, second_read = ops.size() - 1;
  // The target lies in an arena between guard bytes.
  std::vector<std::byte> arena(64 + 8192 + 64, std::byte{0xa5});
  // Sends `ops` as `xid`, with the target or without any; false when the call failed.
  auto call = [&](std::uint32_t xid, bool with_target, detail::compound_reply& out) {
    std::vector<std::span<std::byte>> targets;
    if (with_target) targets.push_back(std::span(arena).subspan(64, 8192));
    return h.call(xid, ops, targets, out);
  };
  const auto read_data = hand_channel::read_data;
  const std::vector<std::byte> head(before.begin(), before.begin() + 8192), tail(before.begin() + 8192, before.begin() + 14192);
  std::vector<bool> placed(ops.size(), false);
  placed[first_read] = true;
  auto check_reply = [&](const detail::compound_reply& r, const std::vector<bool>& expect_placed) {
    CHECK(r.res.status == nfs4::nfsstat4::NFS4_OK);
    REQUIRE(r.res.resarray.size() == ops.size());
    CHECK(r.placed == expect_placed);
    CHECK(read_data(r, first_read) == head);
    CHECK(read_data(r, second_read) == tail);
  };
  // One transmission with the target: the first payload placed between intact guards, by
  // one Write chunk, the rest through the Reply chunk. Returns the bytes RDMA-written.
  auto placed_round = [&](std::uint32_t xid) {
    std::fill(arena.begin(), arena.end(), std::byte{0xa5});
    auto s0 = s.stats();
    detail::compound_reply r;
    REQUIRE(call(xid, true, r));
    auto s1 = s.stats();
    check_reply(r, placed);
    CHECK(std::equal(head.begin(), head.end(), arena.begin() + 64));
    CHECK(std::all_of(arena.begin(), arena.begin() + 64, [](std::byte b) { return b == std::byte{0xa5}; }));
    CHECK(std::all_of(arena.end() - 64, arena.end(), [](std::byte b) { return b == std::byte{0xa5}; }));
    CHECK(s1.write_list_replies - s0.write_list_replies == 1);
    CHECK(s1.write_chunks_used - s0.write_chunks_used == 1);
    CHECK(s1.reply_chunk_replies - s0.reply_chunk_replies == 1);
    CHECK(s1.err_chunk_sent == s0.err_chunk_sent);
    return s1.bytes_rdma_written - s0.bytes_rdma_written;
  };

  auto s0 = s.stats();
  const std::uint64_t original_written = placed_round(1);
  CHECK(original_written > 8192 + 6000);  // the payload, and the reply with the second READ's data
  // The file changes: only a reply from the cache still has the old bytes.
  write_local(s.dir.path() / "r", after);
  CHECK(placed_round(2) == original_written);
  auto s2 = s.stats();

  // Retransmitted with no Write chunk, the same reply comes whole through the Reply chunk
  // (the requester's chunks decide the placement, RFC 8166 §3.4): no byte in the arena.
  std::fill(arena.begin(), arena.end(), std::byte{0xa5});
  detail::compound_reply unplaced;
  REQUIRE(call(3, false, unplaced));
  auto s3 = s.stats();
  check_reply(unplaced, std::vector<bool>(ops.size(), false));
  CHECK(std::all_of(arena.begin(), arena.end(), [](std::byte b) { return b == std::byte{0xa5}; }));
  CHECK(s3.write_list_replies == s2.write_list_replies);
  CHECK(s3.reply_chunk_replies - s2.reply_chunk_replies == 1);
  CHECK(s3.err_chunk_sent == s0.err_chunk_sent);
  CHECK(s3.calls - s0.calls == 3);
}

TEST_CASE("nfs over rdma: vwrites from one registered region go through one fabric registration too") {
  rdma_vnfsd s;
  constexpr std::size_t writes = 4, part = 256 * 1024;
  auto out = pattern(writes * part, 8);
  auto c = client::connect(s.url());
  const detail::registration_table& table = detail::internals::backend_of(c).registrations();
  std::optional<memory_region> wr(c.register_memory(out.data(), out.size(), access::write));
  file f = c.open("w", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  auto s0 = s.stats();
  auto c0 = c.stats();
  for (std::size_t i = 0; i < writes; ++i) {
    vio v(f, i * part, wr->slice(i * part, part));
    REQUIRE(c.vwrite(std::span(&v, 1)).ok());
    CHECK(v.bytes == part);
  }
  auto d = minus(c.stats(), c0);
  auto s1 = s.stats();
  CHECK(table.attachments_made() == 1);
  CHECK(d.payload_bytes_direct == writes * part);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(s1.read_chunk_calls - s0.read_chunk_calls == writes);
  CHECK(s1.bytes_rdma_read - s0.bytes_rdma_read == writes * part);
  c.fsync(f);
  c.close(f);
  wr.reset();
  CHECK(table.attachments_held() == 0);
  std::ifstream in(s.dir.path() / "w", std::ios::binary);
  std::vector<char> back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(back.size() == out.size());
  CHECK(std::memcmp(back.data(), out.data(), out.size()) == 0);
}

TEST_CASE("nfs over rdma: a region destroyed while its vread is in flight keeps its fabric registration until the reply") {
  rdma_vnfsd s;
  auto data = pattern(MiB, 5);
  write_local(s.dir.path() / "big", data);
  auto c = client::connect(s.url());
  const detail::registration_table& table = detail::internals::backend_of(c).registrations();
  std::vector<std::byte> in(MiB);
  std::optional<memory_region> rd(c.register_memory(in.data(), in.size(), access::read));
  file f = c.open("big", O_RDONLY, 0);
  for (int round = 0; round < 4; ++round) {
    completion_group g;
    vio v(f, 0, rd->all());
    vresult out;
    c.async_vread(std::span(&v, 1), &out, g, 1);
    if (round == 3) rd.reset();  // the call's copy of the slice keeps the registration object
    CHECK_FALSE(g.wait().status);
    CHECK(out.ok());
    CHECK(v.bytes == MiB);
  }
  CHECK(in == data);
  // Made by the first round; released once the last call through it completed, whether
  // the region went before that call was sent (it then registers its target itself) or after.
  CHECK(table.attachments_made() == 1);
  CHECK(table.attachments_held() == 0);
  c.close(f);
}

TEST_CASE("nfs over rdma: a WRITE payload is pulled by the server with RDMA Read (Read list)") {
  rdma_vnfsd s;
  auto c = client::connect(s.url());
  auto out = pattern(MiB, 2);
  memory_region wr = c.register_memory(out.data(), out.size(), access::write);
  file f = c.open("w", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  auto s0 = s.stats();
  auto c0 = c.stats();
  REQUIRE(c.pwrite(f, 0, wr.all()) == MiB);
  auto s1 = s.stats();
  auto d = minus(c.stats(), c0);
  CHECK(d.payload_bytes_direct == MiB);
  CHECK(d.payload_bytes_copied == 0);
  CHECK(s1.read_chunk_calls - s0.read_chunk_calls == 1);
  CHECK(s1.bytes_rdma_read - s0.bytes_rdma_read == MiB);
  CHECK(s1.nomsg_calls == s0.nomsg_calls);
  c.fsync(f);
  c.close(f);
  std::ifstream in(s.dir.path() / "w", std::ios::binary);
  std::vector<char> back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(back.size() == MiB);
  CHECK(std::memcmp(back.data(), out.data(), MiB) == 0);
}

TEST_CASE("nfs over rdma: a long READDIR reply comes back through the Reply chunk") {
  rdma_vnfsd s;
  std::filesystem::create_directory(s.dir.path() / "d");
  const int n = 300;
  for (int i = 0; i < n; ++i) {
    std::string name = "entry-with-a-fairly-long-name-" + std::to_string(i);
    std::ofstream(s.dir.path() / "d" / name) << i;
  }
  auto c = client::connect(s.url());
  auto s0 = s.stats();
  dir_stream d;
  d.path = "d";
  std::set<std::string> names;
  for (int guard = 0; guard < 2 * n; ++guard) {
    auto e = c.readdir(d);
    if (!e) break;
    names.insert(e->name);
  }
  CHECK(names.size() == n);
  CHECK(names.count("entry-with-a-fairly-long-name-299") == 1);
  auto s1 = s.stats();
  CHECK(s1.reply_chunk_replies - s0.reply_chunk_replies >= 1);
  CHECK(s1.err_chunk_sent == 0);
}

TEST_CASE("nfs over rdma: a long COMPOUND goes as RDMA_NOMSG (position-zero Read chunk)") {
  rdma_vnfsd s;
  detail::session_engine::settings st;
  st.host = "127.0.0.1";
  st.port = s.server.rdma_port();
  st.rdma_provider = "cma";
  detail::session_engine engine(st);
  // 300 PUTROOTFH + GETATTR(type) pairs: 6 KB of call, beyond the 4 KiB inline threshold.
  std::vector<nfs4::nfs_argop4> ops;
  for (int i = 0; i < 300; ++i) {
    ops.push_back(nfs4::PUTROOTFH4args{});
    ops.push_back(nfs4::GETATTR4args{nfs4::bitmap4::of({nfs4::FATTR4_TYPE})});
  }
  auto s0 = s.stats();
  std::promise<std::pair<std::error_code, std::size_t>> p;
  auto fut = p.get_future();
  engine.submit(std::move(ops), [&](std::error_code ec, detail::compound_reply& r) {
    std::size_t ok = 0;
    for (const auto& res : r.res.resarray)
      if (nfs4::status_of(res) == nfs4::nfsstat4::NFS4_OK) ++ok;
    p.set_value({ec ? ec : std::error_code(r.res.status), ok});
  });
  REQUIRE(fut.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  auto [ec, ok] = fut.get();
  CHECK_FALSE(ec);
  CHECK(ok == 601);  // SEQUENCE and every operation
  auto s1 = s.stats();
  CHECK(s1.nomsg_calls - s0.nomsg_calls == 1);
  CHECK(s1.reply_chunk_replies - s0.reply_chunk_replies == 1);  // the reply is long too
  CHECK(s1.err_chunk_sent == 0);
  engine.close();
}

TEST_CASE("nfs over rdma: small calls and replies stay inline") {
  rdma_vnfsd s;
  std::ofstream(s.dir.path() / "small") << "hello";
  auto c = client::connect(s.url());
  auto s0 = s.stats();
  auto st = c.stat("small");
  CHECK(st.size == 5);
  auto s1 = s.stats();
  CHECK(s1.inline_replies - s0.inline_replies == s1.calls - s0.calls);
  CHECK(s1.write_list_replies == s0.write_list_replies);
  CHECK(s1.reply_chunk_replies == s0.reply_chunk_replies);
  CHECK(s1.read_chunk_calls + s1.nomsg_calls == s0.read_chunk_calls + s0.nomsg_calls);
}

TEST_CASE("nfs over rdma: the client reconnects to a restarted vnfsd and carries on") {
  test::temp_dir dir("vnfs-rdma-restart");
  test::vnfsd_process server(dir.path(), {"--rdma", "cma:127.0.0.1:0"});
  REQUIRE(server.rdma_port() != 0);
  auto url = "nfs+rdma://127.0.0.1:" + std::to_string(server.rdma_port()) + "/?provider=cma";
  auto c = client::connect(url);
  auto data = pattern(200000, 9);
  file f = c.open("r", O_CREAT | O_RDWR | O_TRUNC, 0644);
  REQUIRE(c.pwrite(f, 0, std::span<const std::byte>(data)) == data.size());
  c.fsync(f);
  std::uint16_t port = server.rdma_port();
  server.restart();
  CHECK(server.rdma_port() == port);  // the same address again
  // As over TCP: a new connection, a new session; the old open was reclaimed in the grace
  // period and still works, and a new one too.
  CHECK(c.stat("r").size == data.size());
  CHECK(c.stats().reconnects >= 1);
  std::vector<std::byte> back(data.size());
  REQUIRE(c.pread(f, 0, std::span<std::byte>(back)) == data.size());
  CHECK(back == data);
  c.close(f);
  std::fill(back.begin(), back.end(), std::byte{0});
  file g = c.open("r", O_RDONLY, 0);
  REQUIRE(c.pread(g, 0, std::span<std::byte>(back)) == data.size());
  CHECK(back == data);
  c.close(g);
}

TEST_CASE("nfs over rdma: the provider defaults to verbs with a device, else cma; verbs without one is refused") {
  rdma_vnfsd s;
  std::string plain = "nfs+rdma://127.0.0.1:" + std::to_string(s.server.rdma_port()) + "/";
  if (transport::rdma::rdma_device_present()) {
    WARN("an RDMA device is present: the default provider is verbs, not exercised against this cma server");
    CHECK(transport::rdma::default_provider() == "verbs");
    return;
  }
  CHECK(transport::rdma::default_provider() == "cma");
  auto c = client::connect(plain);  // no ?provider=: cma here
  std::ofstream(s.dir.path() / "x") << "abc";
  CHECK(c.stat("x").size == 3);
  try {
    (void)client::connect(plain + "?provider=verbs");
    FAIL("verbs without a device connected");
  } catch (const std::system_error& e) {
    CHECK(e.code() == std::errc::no_such_device);
  }
}
