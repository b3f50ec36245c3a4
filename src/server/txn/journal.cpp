#include "server/txn/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cerrno>
#include <cstring>

#include <isa-l/crc.h>

#include "server/fs/error.hpp"
#include "server/fs/unique_fd.hpp"
#include "vnfs/xdr/decoder.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::server::txn {

namespace {

// File layout: a 20-byte header, then records. The header: "VNFSTXN3", u64 generation,
// u32 CRC-32 (the one of zlib and gzip) of the generation's 8 bytes. Each record:
//   u32 length of the body, u32 CRC-32 of the body, u64 generation, body = u32 record
//   index + XDR fields.
// Earlier formats are still read, so that recovery finishes what a crash of an older vnfsd
// left: "VNFSTXN2" is the same with FNV-1a for CRC-32 (too slow for redo records, which
// carry file data); "VNFSTXN1" (one transaction per file, a journal made and removed for
// each) had an 8-byte header and FNV-1a records without the generation.
constexpr std::array<char, 8> header = {'V', 'N', 'F', 'S', 'T', 'X', 'N', '3'};
constexpr std::array<char, 8> header_v2 = {'V', 'N', 'F', 'S', 'T', 'X', 'N', '2'};
constexpr std::array<char, 8> header_v1 = {'V', 'N', 'F', 'S', 'T', 'X', 'N', '1'};
constexpr std::size_t header_size = 20;
constexpr std::uint32_t max_record = 1u << 20;

using fs::last_error;

std::uint32_t fnv1a(std::span<const std::byte> b) {
  std::uint32_t h = 2166136261u;
  for (std::byte c : b) h = (h ^ std::to_integer<std::uint32_t>(c)) * 16777619u;
  return h;
}

/// CRC-32 of `b` (reflected, polynomial 0x04C11DB7: zlib's crc32()), continuing `crc` (0 to
/// start). ISA-L computes it with carry-less multiplication where the CPU has it.
std::uint32_t crc32_of(std::span<const std::byte> b, std::uint32_t crc = 0) {
  while (!b.empty()) {
    const std::size_t n = std::min<std::size_t>(b.size(), 1u << 30);
    crc = ::crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(b.data()), n);
    b = b.subspan(n);
  }
  return crc;
}

std::vector<std::byte> encode_header(std::uint64_t gen) {
  xdr::encoder g;
  g.put_u64(gen);
  const std::vector<std::byte> gen_bytes = g.flatten();
  xdr::encoder e;
  e.put_fixed_opaque(std::as_bytes(std::span(header)));
  e.put_fixed_opaque(gen_bytes);
  e.put_u32(crc32_of(gen_bytes));
  return e.flatten();
}

std::vector<std::byte> encode_record(const record& r, std::uint64_t gen) {
  xdr::encoder body;
  body.put_u32(static_cast<std::uint32_t>(r.index()));
  std::visit([&](const auto& v) { xdr::encode(body, v); }, r);
  std::vector<std::byte> b = body.flatten();
  xdr::encoder framed;
  framed.put_u32(static_cast<std::uint32_t>(b.size()));
  framed.put_u32(crc32_of(b));
  framed.put_u64(gen);
  framed.put_fixed_opaque(b);
  return framed.flatten();
}

template <std::size_t I = 0>
record decode_alternative(std::uint32_t index, xdr::decoder& d) {
  if constexpr (I == std::variant_size_v<record>) {
    throw xdr::decode_error("txn journal: unknown record");
  } else {
    if (index == I) return record(std::in_place_index<I>, xdr::decode<std::variant_alternative_t<I, record>>(d));
    return decode_alternative<I + 1>(index, d);
  }
}

}  // namespace

journal_writer::journal_writer(int fd, std::uint64_t gen, const record& first)
    : fd_(fd), gen_(gen), pending_(encode_header(gen)) {
  append(first);
}

void journal_writer::append(const record& r) {
  std::vector<std::byte> b = encode_record(r, gen_);
  pending_.insert(pending_.end(), b.begin(), b.end());
}

void journal_writer::append_write(std::span<const std::byte> fh, std::uint64_t offset, bool cut,
                                  std::span<const std::byte> data) {
  // The body as xdr::encode(rec_redo_write) lays it out: index, fh, offset, cut, data; the
  // frame, the fields and the padding go into pending_, the data stays where it is.
  xdr::encoder head;
  head.put_u32(static_cast<std::uint32_t>(record(rec_redo_write{}).index()));
  head.put_opaque(fh);
  head.put_u64(offset);
  head.put_bool(cut);
  head.put_u32(static_cast<std::uint32_t>(data.size()));
  const std::vector<std::byte> h = head.flatten();
  static constexpr std::byte zeros[4] = {};
  const std::span<const std::byte> pad(zeros, (4 - data.size() % 4) % 4);
  const std::size_t body = h.size() + data.size() + pad.size();
  xdr::encoder frame;
  frame.put_u32(static_cast<std::uint32_t>(body));
  frame.put_u32(crc32_of(pad, crc32_of(data, crc32_of(h))));
  frame.put_u64(gen_);
  const std::vector<std::byte> f = frame.flatten();
  pending_.insert(pending_.end(), f.begin(), f.end());
  pending_.insert(pending_.end(), h.begin(), h.end());
  if (!data.empty()) {
    referenced_.push_back({pending_.size(), data});
    referenced_bytes_ += data.size();
  }
  pending_.insert(pending_.end(), pad.begin(), pad.end());
}

void journal_writer::sync(std::error_code& ec) {
  write(ec);
  if (ec) return;
  if (::fdatasync(fd_) != 0) {
    ec = last_error();
    return;
  }
  written_durable();
}

void journal_writer::written_durable() {
  size_ += pending_.size() + referenced_bytes_;
  pending_.clear();
  referenced_.clear();
  referenced_bytes_ = 0;
}

void journal_writer::drop_unwritten() {
  if (size_ == 0) return;
  pending_.clear();
  referenced_.clear();
  referenced_bytes_ = 0;
}

void journal_writer::write(std::error_code& ec) {
  // Room first, for this write and a rollback's end record after it (its size does not
  // depend on the outcome it names).
  static const std::size_t end_record = encode_record(rec_end{}, 0).size();
  const auto room = static_cast<off_t>(pending_.size() + referenced_bytes_ + end_record);
  if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(size_), room) != 0 && errno != EOPNOTSUPP &&
      errno != ENOSYS) {
    ec = last_error();
    return;
  }
  wrote_ = true;
  // Positional: a write cut short by an error is written again whole from size_. The pieces
  // in file order: pending_'s bytes, with the referenced data in between.
  std::vector<iovec> iov;
  std::size_t from = 0;
  auto add = [&](std::span<const std::byte> b) {
    if (!b.empty()) iov.push_back({const_cast<std::byte*>(b.data()), b.size()});
  };
  for (const by_reference& r : referenced_) {
    add(std::span(pending_).subspan(from, r.at - from));
    add(r.data);
    from = r.at;
  }
  add(std::span(pending_).subspan(from));
  std::size_t first = 0;  // iov[first..] is still to be written
  for (auto at = static_cast<off_t>(size_); first < iov.size();) {
    const int count = static_cast<int>(std::min<std::size_t>(iov.size() - first, IOV_MAX));
    ssize_t n = ::pwritev(fd_, iov.data() + first, count, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ec = n < 0 ? last_error() : std::make_error_code(std::errc::io_error);
      return;
    }
    at += n;
    for (auto left = static_cast<std::size_t>(n); left > 0;) {  // past what was written
      const std::size_t k = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + k;
      iov[first].iov_len -= k;
      left -= k;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  ec.clear();
}

journal_contents read_journal(int dirfd, const std::string& name, std::error_code& ec) {
  journal_contents out;
  fs::unique_fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    ec = last_error();
    return out;
  }
  std::vector<std::byte> all;
  std::array<std::byte, 65536> buf;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ec = last_error();
      return out;
    }
    if (n == 0) break;
    all.insert(all.end(), buf.begin(), buf.begin() + n);
  }
  ec.clear();
  std::span<const std::byte> rest(all);
  bool v1 = false, fnv = false;
  if (rest.size() >= header_v1.size() && std::memcmp(rest.data(), header_v1.data(), header_v1.size()) == 0) {
    v1 = fnv = true;
    rest = rest.subspan(header_v1.size());
  } else {
    if (rest.size() < header_size) return out;
    fnv = std::memcmp(rest.data(), header_v2.data(), header_v2.size()) == 0;
    if (!fnv && std::memcmp(rest.data(), header.data(), header.size()) != 0) return out;
    xdr::decoder h(rest.subspan(header.size(), 12));
    const std::uint64_t gen = h.get_u64();
    const std::span<const std::byte> gen_bytes = rest.subspan(header.size(), 8);
    if (h.get_u32() != (fnv ? fnv1a(gen_bytes) : crc32_of(gen_bytes)) || gen == 0) return out;
    out.gen = gen;
    rest = rest.subspan(header_size);
  }
  const std::size_t frame = v1 ? 8 : 16;
  while (rest.size() >= frame) {
    xdr::decoder f(rest);
    std::uint32_t len = f.get_u32();
    std::uint32_t sum = f.get_u32();
    if (!v1 && f.get_u64() != out.gen) break;  // another transaction's record
    if (len > max_record || len > rest.size() - frame) break;  // torn
    std::span<const std::byte> body = rest.subspan(frame, len);
    if ((fnv ? fnv1a(body) : crc32_of(body)) != sum) break;
    try {
      xdr::decoder d(body);
      out.records.push_back(decode_alternative(d.get_u32(), d));
    } catch (const xdr::decode_error&) {
      break;
    }
    rest = rest.subspan(std::min(rest.size(), frame + ((len + 3) & ~std::size_t(3))));
  }
  return out;
}

}  // namespace vnfs::server::txn
