#include "server/txn/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "server/fs/unique_fd.hpp"
#include "vnfs/xdr/decoder.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::server::txn {

namespace {

// File layout: a 20-byte header, then records. The header: "VNFSTXN2", u64 generation,
// u32 FNV-1a of the generation's 8 bytes. Each record:
//   u32 length of the body, u32 FNV-1a of the body, u64 generation, body = u32 record
//   index + XDR fields.
// The format before generations ("VNFSTXN1", one transaction per file, a journal made and
// removed for each) had an 8-byte header and records without the generation; it is still
// read, so that recovery finishes what a crash of an older vnfsd left.
constexpr std::array<char, 8> header = {'V', 'N', 'F', 'S', 'T', 'X', 'N', '2'};
constexpr std::array<char, 8> header_v1 = {'V', 'N', 'F', 'S', 'T', 'X', 'N', '1'};
constexpr std::size_t header_size = 20;
constexpr std::uint32_t max_record = 1u << 20;

std::error_code last_error() { return {errno, std::system_category()}; }

std::uint32_t fnv1a(std::span<const std::byte> b) {
  std::uint32_t h = 2166136261u;
  for (std::byte c : b) h = (h ^ std::to_integer<std::uint32_t>(c)) * 16777619u;
  return h;
}

std::vector<std::byte> encode_header(std::uint64_t gen) {
  xdr::encoder g;
  g.put_u64(gen);
  const std::vector<std::byte> gen_bytes = g.flatten();
  xdr::encoder e;
  e.put_fixed_opaque(std::as_bytes(std::span(header)));
  e.put_fixed_opaque(gen_bytes);
  e.put_u32(fnv1a(gen_bytes));
  return e.flatten();
}

std::vector<std::byte> encode_record(const record& r, std::uint64_t gen) {
  xdr::encoder body;
  body.put_u32(static_cast<std::uint32_t>(r.index()));
  std::visit([&](const auto& v) { xdr::encode(body, v); }, r);
  std::vector<std::byte> b = body.flatten();
  xdr::encoder framed;
  framed.put_u32(static_cast<std::uint32_t>(b.size()));
  framed.put_u32(fnv1a(b));
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
  size_ += pending_.size();
  pending_.clear();
}

void journal_writer::write(std::error_code& ec) {
  wrote_ = true;
  // Positional: a write cut short by an error is written again whole from size_.
  std::span<const std::byte> b(pending_);
  for (auto at = static_cast<off_t>(size_); !b.empty();) {
    ssize_t n = ::pwrite(fd_, b.data(), b.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ec = n < 0 ? last_error() : std::make_error_code(std::errc::io_error);
      return;
    }
    b = b.subspan(static_cast<std::size_t>(n));
    at += n;
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
  bool v1 = false;
  if (rest.size() >= header_v1.size() && std::memcmp(rest.data(), header_v1.data(), header_v1.size()) == 0) {
    v1 = true;
    rest = rest.subspan(header_v1.size());
  } else {
    if (rest.size() < header_size || std::memcmp(rest.data(), header.data(), header.size()) != 0) return out;
    xdr::decoder h(rest.subspan(header.size(), 12));
    const std::uint64_t gen = h.get_u64();
    if (h.get_u32() != fnv1a(rest.subspan(header.size(), 8)) || gen == 0) return out;
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
    if (fnv1a(body) != sum) break;
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
