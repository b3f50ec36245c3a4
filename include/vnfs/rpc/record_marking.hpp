// vnfs RPC layer: record marking for RPC over stream transports (RFC 5531 §11).
//
// A record is a sequence of fragments; each fragment is a 4-byte big-endian header (bit 31:
// last fragment, bits 0-30: fragment length) followed by that many bytes.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace vnfs::rpc {

inline constexpr std::uint32_t last_fragment_bit = 0x80000000u;
inline constexpr std::size_t max_fragment_length = 0x7fffffffu;

using fragment_header_bytes = std::array<std::byte, 4>;

/// A fragment header: how many bytes follow, and whether they end the record.
struct fragment_header {
  std::size_t length = 0;
  bool last = false;
};

inline fragment_header_bytes make_fragment_header(std::size_t length, bool last) {
  std::uint32_t v = static_cast<std::uint32_t>(length) | (last ? last_fragment_bit : 0u);
  return {std::byte(v >> 24), std::byte(v >> 16), std::byte(v >> 8), std::byte(v)};
}

/// The fragment header in the 4 bytes at `h`.
inline fragment_header read_fragment_header(std::span<const std::byte, 4> h) {
  std::uint32_t v = (std::uint32_t(h[0]) << 24) | (std::uint32_t(h[1]) << 16) | (std::uint32_t(h[2]) << 8) |
                    std::uint32_t(h[3]);
  return {v & ~last_fragment_bit, (v & last_fragment_bit) != 0};
}

/// An outgoing record ready for one gather write: `buffers` interleaves fragment headers
/// (owned by `headers`) with the caller's pieces (not owned). Moving a framed_record keeps
/// `buffers` valid; copying it does not.
struct framed_record {
  std::vector<fragment_header_bytes> headers;
  std::vector<std::span<const std::byte>> buffers;
  std::size_t size = 0;  // total bytes, headers included

  framed_record() = default;
  framed_record(framed_record&&) = default;
  framed_record& operator=(framed_record&&) = default;
  framed_record(const framed_record&) = delete;
  framed_record& operator=(const framed_record&) = delete;
};

/// Frames `pieces` (a message, e.g. xdr::encoder::pieces()) as one record of fragments of
/// at most `max_fragment` bytes: a single fragment unless the message is larger. Pieces are
/// split, never copied. An empty message becomes one empty last fragment.
inline framed_record frame_record(std::span<const std::span<const std::byte>> pieces,
                                  std::size_t max_fragment = max_fragment_length) {
  if (max_fragment == 0 || max_fragment > max_fragment_length)
    throw std::invalid_argument("rpc: fragment size must be 1..2^31-1");
  std::size_t total = 0;
  for (auto p : pieces) total += p.size();
  std::size_t fragments = total == 0 ? 1 : (total + max_fragment - 1) / max_fragment;

  framed_record r;
  r.headers.reserve(fragments);  // never reallocates below: buffers point into it
  r.buffers.reserve(pieces.size() + 2 * fragments);
  r.size = total + 4 * fragments;

  std::size_t left = total;
  auto start_fragment = [&] {
    std::size_t n = std::min(left, max_fragment);
    r.headers.push_back(make_fragment_header(n, n == left));
    r.buffers.emplace_back(r.headers.back().data(), 4);
    return n;
  };
  std::size_t room = start_fragment();  // bytes still to place in the current fragment
  for (auto p : pieces) {
    while (!p.empty()) {
      if (room == 0) room = start_fragment();
      std::size_t n = std::min(room, p.size());
      r.buffers.push_back(p.first(n));
      p = p.subspan(n);
      room -= n;
      left -= n;
    }
  }
  return r;
}

/// A record whose fragments add up to more than the assembler's maximum.
class record_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reassembles records from a byte stream, however the stream is split.
///
/// Two ways to give it bytes:
///   feed(bytes)             — copies them in (tests, small reads);
///   prepare() / commit(n)   — read straight into the buffer prepare() returns, then say how
///                             many bytes arrived. While a large fragment body is pending,
///                             prepare() returns the record's own storage, so payload is
///                             received with no intermediate copy.
/// Complete records come out of next_record() in order.
///
/// A record exceeding max_record_size (known as soon as a fragment header arrives, before
/// any allocation for it) throws record_error; the assembler is then failed and every
/// later feed/commit throws too — the stream cannot be resynchronised. Memory held per
/// assembler is bounded by max_record_size plus its staging buffer.
class record_assembler {
 public:
  explicit record_assembler(std::size_t max_record_size, std::size_t staging_size = 64 * 1024)
      : max_record_(max_record_size), stage_(staging_size) {}

  void feed(std::span<const std::byte> data) {
    check_ok();
    consume(data.data(), data.size());
  }

  /// Where the next read should land; never empty.
  std::span<std::byte> prepare() {
    check_ok();
    if (in_body_ && frag_left_ >= direct_threshold) {
      direct_ = true;
      if (record_.size() < filled_ + frag_left_) record_.resize(filled_ + frag_left_);
      return {record_.data() + filled_, frag_left_};
    }
    direct_ = false;
    return stage_;
  }

  /// Accounts for `n` bytes written into the span the last prepare() returned.
  void commit(std::size_t n) {
    check_ok();
    if (!direct_) {
      consume(stage_.data(), n);
      return;
    }
    filled_ += n;
    frag_left_ -= n;
    if (frag_left_ == 0) end_fragment();
  }

  /// The oldest complete record not yet taken, if any.
  std::optional<std::vector<std::byte>> next_record() {
    if (done_.empty()) return std::nullopt;
    std::vector<std::byte> r = std::move(done_.front());
    done_.pop_front();
    return r;
  }
  std::size_t ready_count() const { return done_.size(); }
  /// True when no partial record is buffered (a clean place for the stream to end).
  bool at_record_boundary() const { return !in_body_ && in_header_ == 0 && !in_record_; }
  bool failed() const { return failed_; }
  std::size_t max_record_size() const { return max_record_; }

 private:
  // Bodies at least this large are read in place rather than through the staging buffer.
  static constexpr std::size_t direct_threshold = 16 * 1024;

  void check_ok() const {
    if (failed_) throw record_error("rpc: record stream failed earlier (oversize record)");
  }

  void consume(const std::byte* p, std::size_t n) {
    while (n > 0) {
      if (!in_body_) {
        std::size_t k = std::min<std::size_t>(4 - in_header_, n);
        std::memcpy(header_.data() + in_header_, p, k);
        in_header_ += k;
        p += k;
        n -= k;
        if (in_header_ == 4) start_fragment();
        continue;
      }
      std::size_t k = std::min(frag_left_, n);
      if (record_.size() < filled_ + k) record_.resize(filled_ + k);
      std::memcpy(record_.data() + filled_, p, k);
      filled_ += k;
      frag_left_ -= k;
      p += k;
      n -= k;
      if (frag_left_ == 0) end_fragment();
    }
  }

  void start_fragment() {
    const fragment_header h = read_fragment_header(header_);
    in_header_ = 0;
    last_ = h.last;
    frag_left_ = h.length;
    in_record_ = true;
    if (frag_left_ > max_record_ || filled_ + frag_left_ > max_record_) {
      failed_ = true;
      record_ = {};
      throw record_error("rpc: record larger than the maximum of " + std::to_string(max_record_) + " bytes");
    }
    in_body_ = true;
    if (frag_left_ == 0) end_fragment();
  }

  void end_fragment() {
    in_body_ = false;
    direct_ = false;
    if (!last_) return;
    record_.resize(filled_);
    done_.push_back(std::move(record_));
    record_ = {};
    filled_ = 0;
    in_record_ = false;
  }

  std::size_t max_record_;
  std::vector<std::byte> stage_;
  std::vector<std::byte> record_;  // the record being assembled; bytes [0, filled_) are valid
  std::size_t filled_ = 0;
  std::array<std::byte, 4> header_{};
  std::size_t in_header_ = 0;  // header bytes received so far
  std::size_t frag_left_ = 0;  // body bytes still due for the current fragment
  bool in_body_ = false;
  bool in_record_ = false;
  bool last_ = false;
  bool direct_ = false;
  bool failed_ = false;
  std::deque<std::vector<std::byte>> done_;
};

}  // namespace vnfs::rpc
