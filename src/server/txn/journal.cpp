#include "server/txn/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "vnfs/xdr/decoder.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::server::txn {

namespace {

// File layout: the 8-byte header, then records, each
//   u32 length of the body, u32 FNV-1a of the body, body = u32 record index + XDR fields.
constexpr std::array<char, 8> header = {'V', 'N', 'F', 'S', 'T', 'X', 'N', '1'};
constexpr std::uint32_t max_record = 1u << 20;

std::error_code last_error() { return {errno, std::system_category()}; }

std::uint32_t fnv1a(std::span<const std::byte> b) {
  std::uint32_t h = 2166136261u;
  for (std::byte c : b) h = (h ^ std::to_integer<std::uint32_t>(c)) * 16777619u;
  return h;
}

std::vector<std::byte> encode_record(const record& r) {
  xdr::encoder body;
  body.put_u32(static_cast<std::uint32_t>(r.index()));
  std::visit([&](const auto& v) { xdr::encode(body, v); }, r);
  std::vector<std::byte> b = body.flatten();
  xdr::encoder framed;
  framed.put_u32(static_cast<std::uint32_t>(b.size()));
  framed.put_u32(fnv1a(b));
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

journal_writer journal_writer::create(int dirfd, const std::string& name, const record& first,
                                      std::error_code& ec) {
  journal_writer w;
  int fd = ::openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    ec = last_error();
    return w;
  }
  w.fd_ = fs::unique_fd(fd);
  const auto h = std::as_bytes(std::span(header));
  w.pending_.assign(h.begin(), h.end());
  w.append(first);
  ec.clear();
  return w;
}

void journal_writer::append(const record& r) {
  std::vector<std::byte> b = encode_record(r);
  pending_.insert(pending_.end(), b.begin(), b.end());
}

void journal_writer::sync(std::error_code& ec) {
  write(ec);
  if (ec) return;
  if (::fdatasync(fd_.get()) != 0) {
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
    ssize_t n = ::pwrite(fd_.get(), b.data(), b.size(), at);
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

std::vector<record> read_journal(int dirfd, const std::string& name, std::error_code& ec) {
  std::vector<record> out;
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
  if (all.size() < header.size() || std::memcmp(all.data(), header.data(), header.size()) != 0)
    return out;
  std::span<const std::byte> rest(all.data() + header.size(), all.size() - header.size());
  while (rest.size() >= 8) {
    xdr::decoder frame(rest);
    std::uint32_t len = frame.get_u32();
    std::uint32_t sum = frame.get_u32();
    if (len > max_record || len > rest.size() - 8) break;  // torn
    std::span<const std::byte> body = rest.subspan(8, len);
    if (fnv1a(body) != sum) break;
    try {
      xdr::decoder d(body);
      out.push_back(decode_alternative(d.get_u32(), d));
    } catch (const xdr::decode_error&) {
      break;
    }
    rest = rest.subspan(8 + ((len + 3) & ~3u));
  }
  return out;
}

}  // namespace vnfs::server::txn
