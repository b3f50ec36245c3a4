// vnfs XDR layer: RFC 4506 encoder producing a buffer chain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace vnfs::xdr {

using bytes_view = std::span<const std::byte>;

/// A payload that stays in a file until it is sent: `size` bytes of the open descriptor `fd`
/// from `offset`. A transport that can send file ranges (TCP: sendfile) sends it from the
/// page cache. Whoever encodes it keeps the descriptor open until the encoding is sent.
struct file_range {
  int fd = -1;
  std::uint64_t offset = 0;
  std::size_t size = 0;
};

/// Encodes XDR into an owned byte buffer interleaved with *referenced* spans.
///
/// put_opaque_ref() does not copy the payload: the span is recorded as a separate piece of
/// the output chain, so READ/WRITE data can leave straight from the caller's memory by a
/// gather write. The caller keeps referenced memory alive and unchanged until the chain
/// returned by pieces() has been consumed. A payload under 64 bytes is copied instead, but
/// chain() still names it as a payload: every put_opaque_ref() is one payload piece there,
/// whatever its length (RPC-over-RDMA matches chunks to payloads by their order).
class encoder {
 public:
  encoder() { own_.reserve(256); }

  void put_u32(std::uint32_t v) {
    std::byte b[4] = {std::byte(v >> 24), std::byte(v >> 16), std::byte(v >> 8), std::byte(v)};
    copy_in(b, 4);
  }
  void put_i32(std::int32_t v) { put_u32(static_cast<std::uint32_t>(v)); }
  void put_u64(std::uint64_t v) {
    put_u32(static_cast<std::uint32_t>(v >> 32));
    put_u32(static_cast<std::uint32_t>(v));
  }
  void put_i64(std::int64_t v) { put_u64(static_cast<std::uint64_t>(v)); }
  void put_bool(bool v) { put_u32(v ? 1 : 0); }

  /// Fixed-length opaque: the bytes, then zero padding to a multiple of four.
  void put_fixed_opaque(bytes_view data) {
    copy_in(data.data(), data.size());
    pad(data.size());
  }
  /// Variable-length opaque (length prefix), copied into the encoder.
  void put_opaque(bytes_view data) {
    put_u32(static_cast<std::uint32_t>(data.size()));
    put_fixed_opaque(data);
  }
  /// Variable-length opaque whose payload is referenced, not copied (zero-copy): a payload
  /// piece of chain().
  void put_opaque_ref(bytes_view data) {
    put_u32(static_cast<std::uint32_t>(data.size()));
    if (data.size() < small_copy_limit) {  // a tiny piece costs more than its copy
      pieces_.push_back({own_.size(), {}, data.size(), {}});
      put_fixed_opaque(data);
      return;
    }
    pieces_.push_back({own_.size(), data, 0, {}});
    referenced_ += data.size();
    pad(data.size());
  }
  /// Variable-length opaque whose payload stays in a file (see file_range). Only chain()
  /// describes such a piece; pieces() and flatten() refuse an encoding that holds one.
  void put_opaque_file(const file_range& r) {
    put_u32(static_cast<std::uint32_t>(r.size));
    pieces_.push_back({own_.size(), bytes_view(), 0, r});
    referenced_ += r.size;
    ++files_;
    pad(r.size);
  }
  /// Whether the encoding holds a payload left in a file (put_opaque_file).
  bool has_file_payloads() const { return files_ != 0; }
  void put_string(std::string_view s) {
    put_opaque(std::as_bytes(std::span<const char>(s.data(), s.size())));
  }

  /// Appends another encoder's output: its owned bytes are copied, its references stay
  /// references (the referenced memory must outlive this encoder's use, as before).
  void append(const encoder& other) {
    std::size_t own_at = 0;
    for (const piece& p : other.pieces_) {
      copy_in(other.own_.data() + own_at, p.own_end - own_at);
      own_at = p.own_end;  // a copied payload's bytes are copied with the owned bytes after it
      pieces_.push_back({own_.size(), p.ref, p.copied, p.file});
      referenced_ += p.file.fd >= 0 ? p.file.size : p.ref.size();
    }
    files_ += other.files_;
    copy_in(other.own_.data() + own_at, other.own_.size() - own_at);
  }

  /// Reserves a 32-bit slot to be filled later with patch_u32 (counts known only at the end).
  std::size_t reserve_u32() {
    std::size_t at = own_.size();
    put_u32(0);
    return at;
  }
  void patch_u32(std::size_t at, std::uint32_t v) {
    own_[at] = std::byte(v >> 24);
    own_[at + 1] = std::byte(v >> 16);
    own_[at + 2] = std::byte(v >> 8);
    own_[at + 3] = std::byte(v);
  }

  /// A position in the encoding, to go back to with truncate().
  struct mark_t {
    std::size_t own = 0, pieces = 0, referenced = 0, files = 0;
  };
  mark_t mark() const { return {own_.size(), pieces_.size(), referenced_, files_}; }
  /// Drops everything encoded after `m` (a mark() of this encoder).
  void truncate(const mark_t& m) {
    own_.resize(m.own);
    pieces_.resize(m.pieces);
    referenced_ = m.referenced;
    files_ = m.files;
  }

  /// Total encoded length in bytes, referenced pieces included.
  std::size_t size() const { return own_.size() + referenced_; }
  /// Bytes referenced rather than copied so far.
  std::size_t referenced_bytes() const { return referenced_; }

  /// The output chain, in order. Valid until the encoder is next modified or destroyed.
  /// Throws std::logic_error when the encoding holds a payload left in a file.
  std::vector<bytes_view> pieces() const {
    no_file_payloads();
    std::vector<bytes_view> out;
    std::size_t own_at = 0;
    for (const piece& p : pieces_) {
      if (p.is_copy()) continue;  // among the owned bytes
      if (p.own_end > own_at) out.emplace_back(own_.data() + own_at, p.own_end - own_at);
      own_at = p.own_end;
      out.push_back(p.ref);
    }
    if (own_.size() > own_at) out.emplace_back(own_.data() + own_at, own_.size() - own_at);
    return out;
  }
  /// One piece of the output chain, and whether it is a payload (put_opaque_ref), referenced
  /// or copied, rather than other encoded bytes. A payload's XDR padding, if any, is the
  /// first bytes of the next piece, which is not a payload.
  struct chain_piece {
    bytes_view bytes;
    bool payload = false;
    /// A payload left in a file (put_opaque_file): file.fd >= 0, and `bytes` is empty.
    file_range file{};
  };
  /// The encoding split at its payloads: one payload piece per put_opaque_ref(), in order,
  /// empty ones included. Transports that move payloads separately (RPC-over-RDMA chunks)
  /// find them here. Valid until the encoder is next modified or destroyed.
  std::vector<chain_piece> chain() const {
    std::vector<chain_piece> out;
    std::size_t own_at = 0;
    for (const piece& p : pieces_) {
      if (p.own_end > own_at) out.push_back({bytes_view(own_.data() + own_at, p.own_end - own_at), false});
      if (p.is_copy()) {
        out.push_back({bytes_view(own_.data() + p.own_end, p.copied), true});
        own_at = p.own_end + p.copied;
      } else {
        out.push_back({p.ref, true, p.file});
        own_at = p.own_end;
      }
    }
    if (own_.size() > own_at) out.push_back({bytes_view(own_.data() + own_at, own_.size() - own_at), false});
    return out;
  }
  /// The whole encoding as one contiguous buffer (copies referenced pieces). Throws
  /// std::logic_error when the encoding holds a payload left in a file.
  std::vector<std::byte> flatten() const {
    std::vector<std::byte> out;
    out.reserve(size());
    for (bytes_view p : pieces()) out.insert(out.end(), p.begin(), p.end());
    return out;
  }

 private:
  static constexpr std::size_t small_copy_limit = 64;
  /// A payload: referenced (`ref`), left in a file (`file`), or copied into own_ at own_end
  /// (`copied` bytes; ref empty, no file). Copied payloads are empty or shorter than
  /// small_copy_limit.
  struct piece {
    std::size_t own_end;  // the owned bytes preceding this payload end here
    bytes_view ref;       // referenced payload
    std::size_t copied;   // length of a copied payload
    file_range file{};    // or, with file.fd >= 0, a payload left in a file
    bool is_copy() const { return ref.data() == nullptr && file.fd < 0; }
  };

  void no_file_payloads() const {
    if (files_ != 0) throw std::logic_error("xdr: the encoding holds a payload left in a file");
  }

  void copy_in(const void* p, std::size_t n) {
    if (n == 0) return;
    auto* b = static_cast<const std::byte*>(p);
    own_.insert(own_.end(), b, b + n);
  }
  void pad(std::size_t n) {
    static constexpr std::byte zeros[4] = {};
    copy_in(zeros, (4 - (n & 3)) & 3);
  }

  std::vector<std::byte> own_;
  std::vector<piece> pieces_;
  std::size_t referenced_ = 0;
  std::size_t files_ = 0;  // pieces that are file ranges
};

}  // namespace vnfs::xdr
