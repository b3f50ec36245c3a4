// Fuzzes read_journal (src/server/txn/journal.hpp), which vnfsd's recovery runs at start-up
// on every journal file of its state directory, whatever a crash or a damaged disk left
// there. The first input byte picks how the rest becomes the file:
//   bit 0 clear  the bytes as they are (headers, frames and checksums mostly wrong);
//   bit 0 set    a valid header for the generation in the next 8 bytes, then records
//                framed with correct lengths, checksums and generation around bodies taken
//                from the input ({u16 length, body}...), so that the record decoder itself
//                is reached: "VNFSTXN3" with CRC-32 (what vnfsd writes) if bit 1 is set,
//                else "VNFSTXN2" with FNV-1a (what vnfsd wrote before).
// Properties: read_journal returns (no crash, no exception) with no error for a file that
// exists; a file without a valid header yields no records; a framed file yields its
// generation and at most one record per frame; and what it decoded, written again by
// journal_writer under the same generation (redo writes through append_write, the others
// through append), reads back as the same records.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <zlib.h>

#include "fuzz_input.hpp"
#include "server/txn/journal.hpp"
#include "vnfs/xdr/encoder.hpp"

using namespace vnfs;
using vnfs::fuzz::require;

namespace {

/// The journal's checksums (journal.cpp's file layout): CRC-32 (VNFSTXN3), FNV-1a (VNFSTXN2).
/// The CRC-32 is zlib's, a second implementation beside the one vnfsd uses (ISA-L's).
std::uint32_t crc32_of(std::span<const std::byte> b) {
  return static_cast<std::uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(b.data()), static_cast<uInt>(b.size())));
}
std::uint32_t fnv1a(std::span<const std::byte> b) {
  std::uint32_t h = 2166136261u;
  for (std::byte c : b) h = (h ^ std::to_integer<std::uint32_t>(c)) * 16777619u;
  return h;
}

/// A scratch directory for the files, made once per process and removed at its exit.
char scratch_name[] = "/tmp/vnfs-fuzz-journal-XXXXXX";

int scratch_dir() {
  static const int fd = [] {
    require(::mkdtemp(scratch_name) != nullptr, "mkdtemp");
    std::atexit([] {
      for (const char* f : {"journal", "again"}) ::unlinkat(scratch_dir(), f, 0);
      ::rmdir(scratch_name);
    });
    return ::open(scratch_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }();
  return fd;
}

void write_file(const char* name, std::span<const std::byte> bytes) {
  const int fd = ::openat(scratch_dir(), name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  require(fd >= 0, "open the scratch file");
  require(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()), "write the scratch file");
  ::close(fd);
}

std::vector<std::byte> encoded(const server::txn::record& r) {
  xdr::encoder e;
  e.put_u32(static_cast<std::uint32_t>(r.index()));
  std::visit([&](const auto& v) { xdr::encode(e, v); }, r);
  return e.flatten();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input_reader in(fuzz::bytes_of(data, size));
  const std::uint8_t how = in.u8();
  const bool framed = (how & 1) != 0, v3 = (how & 2) != 0;
  auto sum = [&](std::span<const std::byte> b) { return v3 ? crc32_of(b) : fnv1a(b); };
  std::uint64_t gen = 0;
  std::size_t frames = 0;
  std::vector<std::byte> file;
  if (!framed) {
    const auto rest = in.rest();
    file.assign(rest.begin(), rest.end());
  } else {
    for (int i = 0; i < 8; ++i) gen = gen << 8 | in.u8();
    xdr::encoder g;
    g.put_u64(gen);
    const std::vector<std::byte> gen_bytes = g.flatten();
    xdr::encoder h;
    const char magic[8] = {'V', 'N', 'F', 'S', 'T', 'X', 'N', v3 ? '3' : '2'};
    h.put_fixed_opaque(std::as_bytes(std::span(magic)));
    h.put_fixed_opaque(gen_bytes);
    h.put_u32(sum(gen_bytes));
    file = h.flatten();
    while (!in.at_end()) {
      const std::uint32_t len = in.u16();
      std::vector<std::byte> body;
      for (std::uint32_t i = 0; i < len && !in.at_end(); ++i) body.push_back(std::byte{in.u8()});
      xdr::encoder f;
      f.put_u32(static_cast<std::uint32_t>(body.size()));
      f.put_u32(sum(body));
      f.put_u64(gen);
      f.put_fixed_opaque(body);  // padded to 4 bytes, as the writer does
      const std::vector<std::byte> frame = f.flatten();
      file.insert(file.end(), frame.begin(), frame.end());
      ++frames;
    }
  }
  write_file("journal", file);

  std::error_code ec;
  const server::txn::journal_contents got = server::txn::read_journal(scratch_dir(), "journal", ec);
  require(!ec, "an existing journal file is read without an error");
  const char v1[8] = {'V', 'N', 'F', 'S', 'T', 'X', 'N', '1'};  // the format before generations
  const bool old_format = file.size() >= 8 && std::memcmp(file.data(), v1, 8) == 0;
  if (got.gen == 0) require(got.records.empty() || old_format, "without a valid header, records only in the old format");
  if (framed) {
    require(got.gen == gen, "a valid header's generation is the journal's");
    require(got.records.size() <= frames, "at most one record per frame");
  }
  if (got.gen == 0 || got.records.empty()) return 0;

  // What was decoded, written again, reads back the same.
  const int fd = ::openat(scratch_dir(), "again", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  require(fd >= 0, "open the second scratch file");
  server::txn::journal_writer w(fd, got.gen, got.records[0]);
  for (std::size_t i = 1; i < got.records.size(); ++i) {
    const auto* rw = std::get_if<server::txn::rec_redo_write>(&got.records[i]);
    if (rw && rw->data.size() <= server::txn::max_redo_data)
      w.append_write(rw->fh, rw->offset, rw->cut, rw->data);
    else
      w.append(got.records[i]);
  }
  w.write(ec);
  ::close(fd);
  require(!ec, "the records are written again");
  const server::txn::journal_contents back = server::txn::read_journal(scratch_dir(), "again", ec);
  require(!ec && back.gen == got.gen, "the rewritten journal has the generation");
  require(back.records.size() == got.records.size(), "the rewritten journal has every record");
  for (std::size_t i = 0; i < got.records.size(); ++i)
    require(encoded(back.records[i]) == encoded(got.records[i]), "each record reads back the same");
  return 0;
}
