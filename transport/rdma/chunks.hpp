// vnfs RPC-over-RDMA: moving XDR data items between the Payload stream and chunks
// (RFC 8166 §3.4-3.5), as pure functions both sides share.
//
// Conventions of this implementation (and of the Linux one):
// - Only opaque payloads are DDP-eligible (RFC 8267: WRITE data in calls, READ data in
//   replies): the payload pieces of xdr::encoder::chain(), which are exactly these in NFSv4
//   messages. Reducing one removes its bytes AND its XDR padding from the Payload stream;
//   its length field stays inline. Chunks carry no padding.
// - A reply's Write chunks are matched to its payloads in order (RFC 8166 §3.4, §4.3):
//   the first payload to the first chunk, and so on, whatever each payload's length (an
//   empty payload uses its chunk with nothing written).
// - A Read chunk's position is the offset in the complete (unreduced) XDR stream where the
//   data would begin inline. Position 0 is the whole message (RDMA_NOMSG).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "vnfs/rpc/rdma_header.hpp"
#include "vnfs/xdr/encoder.hpp"

namespace vnfs::transport::rdma {

using gather_list = std::vector<xdr::bytes_view>;

inline std::size_t total_size(const gather_list& g) {
  std::size_t n = 0;
  for (auto v : g) n += v.size();
  return n;
}
inline std::size_t xdr_pad(std::size_t n) { return (4 - (n & 3)) & 3; }

/// A DDP-eligible data item taken out of the Payload stream.
struct ddp_item {
  std::uint32_t position = 0;  ///< offset in the complete XDR stream
  xdr::bytes_view data;        ///< without padding
};

/// A Payload stream with up to `max_items` payloads of at least `min_size` bytes taken out
/// (in stream order), and the inline rest.
struct reduced_stream {
  gather_list inline_part;
  std::vector<ddp_item> items;
};

inline reduced_stream reduce(const std::vector<xdr::encoder::chain_piece>& chain, std::size_t min_size,
                             std::size_t max_items) {
  reduced_stream out;
  std::size_t position = 0;  // in the complete stream
  std::size_t skip = 0;      // padding of the last reduced item still to drop
  for (const auto& p : chain) {
    xdr::bytes_view b = p.bytes;
    if (p.payload && b.size() >= min_size && out.items.size() < max_items && skip == 0) {
      out.items.push_back({static_cast<std::uint32_t>(position), b});
      position += b.size();
      skip = xdr_pad(b.size());
      continue;
    }
    std::size_t drop = std::min(skip, b.size());
    skip -= drop;
    position += b.size();
    if (b.size() > drop) out.inline_part.push_back(b.subspan(drop));
  }
  return out;
}

/// The sub-views of `src` that go into each of `segments` in order, filling each segment
/// before the next. Sets `written[i]` to the bytes for segment i. Returns false when src
/// is longer than the segments together.
inline bool split_over(const std::vector<rpc::rdma::segment>& segments, const gather_list& src,
                       std::vector<gather_list>& parts, std::vector<std::uint32_t>& written) {
  parts.assign(segments.size(), {});
  written.assign(segments.size(), 0);
  std::size_t seg = 0, room = segments.empty() ? 0 : segments[0].length;
  for (xdr::bytes_view v : src) {
    while (!v.empty()) {
      while (room == 0) {
        if (++seg >= segments.size()) return false;
        room = segments[seg].length;
      }
      std::size_t n = std::min(room, v.size());
      parts[seg].push_back(v.first(n));
      written[seg] += static_cast<std::uint32_t>(n);
      room -= n;
      v = v.subspan(n);
    }
  }
  return true;
}

/// Where each Read chunk's data goes when the receiver rebuilds the complete stream:
/// `inline_size` bytes arrived inline; chunks (grouped by position, positions ascending)
/// are inserted with their padding. Returns the complete size and the offset of each
/// chunk in it, or nothing when positions are out of order, beyond the stream, or the
/// total exceeds `max_size`.
struct chunk_layout {
  std::size_t total = 0;
  std::vector<std::size_t> offsets;   // per chunk, in the rebuilt stream
  std::vector<std::uint64_t> lengths;  // per chunk: sum of its segments
};
inline std::optional<chunk_layout> layout_read_chunks(std::size_t inline_size,
                                                      const std::vector<std::vector<rpc::rdma::read_segment>>& chunks,
                                                      std::size_t max_size) {
  chunk_layout l;
  std::size_t full = 0;         // complete-stream bytes placed so far
  std::size_t inline_used = 0;  // inline bytes placed so far
  for (const auto& c : chunks) {
    std::uint64_t len = 0;
    for (const auto& s : c) len += s.target.length;
    std::size_t pos = c.front().position;
    if (pos < full || pos - full > inline_size - inline_used) return std::nullopt;
    inline_used += pos - full;
    full = pos;
    if (len > max_size || full + len + xdr_pad(len) > max_size) return std::nullopt;
    l.offsets.push_back(full);
    l.lengths.push_back(len);
    full += len + xdr_pad(len);
  }
  full += inline_size - inline_used;
  if (full > max_size) return std::nullopt;
  l.total = full;
  return l;
}

/// Groups a Read list into chunks (consecutive segments with the same position).
inline std::vector<std::vector<rpc::rdma::read_segment>> group_read_list(const std::vector<rpc::rdma::read_segment>& list) {
  std::vector<std::vector<rpc::rdma::read_segment>> out;
  for (const auto& s : list) {
    if (out.empty() || out.back().front().position != s.position) out.emplace_back();
    out.back().push_back(s);
  }
  return out;
}

}  // namespace vnfs::transport::rdma
