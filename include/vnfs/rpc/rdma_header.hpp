// vnfs RPC layer: the RPC-over-RDMA version 1 transport header (RFC 8166 §4) and the
// RDMA-CM private data that carries connection parameters (RFC 8797).
//
// A message on an RPC-over-RDMA connection is this header followed, for RDMA_MSG, by the
// inline part of the RPC message (the "Payload stream" minus what chunks carry). The chunk
// lists describe memory of the *requester* that the responder reads (Read list) or writes
// (Write list, Reply chunk) with one-sided RDMA.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "vnfs/xdr/codec.hpp"

namespace vnfs::rpc::rdma {

/// The only version this implementation speaks (rdma_vers).
inline constexpr std::uint32_t version = 1;

/// msg_type (RFC 8166 §4.2.1). RDMA_MSGP and RDMA_DONE are obsolete: a receiver answers
/// them like any unknown type (ERR_CHUNK from a responder, disconnect from a requester).
enum class msg_type : std::uint32_t {
  rdma_msg = 0,
  rdma_nomsg = 1,
  rdma_msgp = 2,
  rdma_done = 3,
  rdma_error = 4,
};

/// rpc_rdma_errcode (RFC 8166 §4.2.2).
enum class error_code : std::uint32_t {
  err_vers = 1,
  err_chunk = 2,
};

/// xdr_rdma_segment: a registered range of the requester's memory. `offset` is the
/// address the provider understands for `handle` (a virtual address, as with verbs).
struct segment {
  std::uint32_t handle = 0;
  std::uint32_t length = 0;
  std::uint64_t offset = 0;
  VNFS_XDR_FIELDS(handle, length, offset)
  bool operator==(const segment&) const = default;
};

/// xdr_read_chunk: one segment of a Read chunk. Segments with the same position form one
/// chunk; position is the XDR offset in the Payload stream where the chunk's data belongs
/// (0: the chunk is the whole RPC message, sent with RDMA_NOMSG).
struct read_segment {
  std::uint32_t position = 0;
  segment target;
  VNFS_XDR_FIELDS(position, target)
  bool operator==(const read_segment&) const = default;
};

/// xdr_write_chunk: a counted array of segments. As a Write list entry or the Reply chunk;
/// in a reply, each segment's length says how many bytes the responder wrote into it.
struct write_chunk {
  std::vector<segment> segments;
  VNFS_XDR_FIELDS(segments)
  bool operator==(const write_chunk&) const = default;

  /// Sum of the segment lengths (64-bit: 32-bit lengths of many segments may overflow).
  std::uint64_t total_length() const {
    std::uint64_t n = 0;
    for (const auto& s : segments) n += s.length;
    return n;
  }
};

/// ERR_VERS carries the range of versions the sender supports.
struct version_range {
  std::uint32_t low = version;
  std::uint32_t high = version;
  bool operator==(const version_range&) const = default;
};

/// Any RPC-over-RDMA v1 header, flattened: `type` says which members are meaningful.
///   rdma_msg, rdma_nomsg: read_list, write_list, reply_chunk.
///   rdma_error: error, and versions when error == err_vers.
/// vers is kept as received, so a receiver can answer ERR_VERS to another version; the
/// body of a header whose vers is not 1 is not decoded (its layout is unknown).
struct header {
  std::uint32_t xid = 0;
  std::uint32_t vers = version;
  std::uint32_t credits = 0;
  msg_type type = msg_type::rdma_msg;
  std::vector<read_segment> read_list;
  std::vector<write_chunk> write_list;
  std::optional<write_chunk> reply_chunk;
  error_code error = error_code::err_chunk;
  version_range versions;

  bool operator==(const header&) const = default;
};

/// Bounds that keep a hostile header from costing more than its size (decoding also checks
/// every count against the bytes left).
inline constexpr std::uint32_t max_list_entries = 64;
inline constexpr std::uint32_t max_chunk_segments = 64;

/// The header of a message that is not RPC-over-RDMA v1 (decode_header's verdict). It
/// carries what a receiver needs to answer with RDMA_ERROR.
struct header_error : xdr::decode_error {
  header_error(const char* what, std::uint32_t xid_, error_code code_)
      : xdr::decode_error(what), xid(xid_), code(code_) {}
  std::uint32_t xid;
  error_code code;
};

/// Encodes `h` (as far as its type needs; vers is written as given).
inline void encode_header(xdr::encoder& e, const header& h) {
  e.put_u32(h.xid);
  e.put_u32(h.vers);
  e.put_u32(h.credits);
  e.put_u32(static_cast<std::uint32_t>(h.type));
  switch (h.type) {
    case msg_type::rdma_msg:
    case msg_type::rdma_nomsg:
      // The lists are XDR optional-data linked lists: each entry preceded by TRUE, then FALSE.
      for (const auto& r : h.read_list) {
        e.put_bool(true);
        xdr::encode(e, r);
      }
      e.put_bool(false);
      for (const auto& w : h.write_list) {
        e.put_bool(true);
        xdr::encode(e, w);
      }
      e.put_bool(false);
      xdr::encode(e, h.reply_chunk);
      break;
    case msg_type::rdma_error:
      e.put_u32(static_cast<std::uint32_t>(h.error));
      if (h.error == error_code::err_vers) {
        e.put_u32(h.versions.low);
        e.put_u32(h.versions.high);
      }
      break;
    case msg_type::rdma_msgp:
    case msg_type::rdma_done:
      break;  // never sent by this implementation; encodable for tests
  }
}

namespace detail {
inline write_chunk decode_write_chunk(xdr::decoder& d) {
  write_chunk w;
  std::uint32_t n = d.get_count(max_chunk_segments, 16);
  w.segments.resize(n);
  for (auto& s : w.segments) xdr::decode(d, s);
  return w;
}
}  // namespace detail

/// Decodes a header from the front of `d`, leaving `d` at the first byte after it (the
/// inline RPC message of an RDMA_MSG). Throws header_error with err_vers when vers != 1
/// (nothing after the fixed fields is read), with err_chunk for an unknown or obsolete
/// message type or malformed/oversized chunk lists; xdr::decode_error when even the xid
/// is missing.
inline header decode_header(xdr::decoder& d) {
  header h;
  h.xid = d.get_u32();
  try {
    h.vers = d.get_u32();
    h.credits = d.get_u32();
    if (h.vers != version) throw header_error("rpc-over-rdma: unsupported version", h.xid, error_code::err_vers);
    std::uint32_t type = d.get_u32();
    h.type = static_cast<msg_type>(type);
    switch (h.type) {
      case msg_type::rdma_msg:
      case msg_type::rdma_nomsg: {
        std::uint32_t n = 0;
        while (d.get_bool()) {
          if (++n > max_list_entries) throw xdr::decode_error("rpc-over-rdma: Read list too long");
          h.read_list.push_back(xdr::decode<read_segment>(d));
        }
        n = 0;
        while (d.get_bool()) {
          if (++n > max_list_entries) throw xdr::decode_error("rpc-over-rdma: Write list too long");
          h.write_list.push_back(detail::decode_write_chunk(d));
        }
        if (d.get_bool()) h.reply_chunk = detail::decode_write_chunk(d);
        break;
      }
      case msg_type::rdma_error: {
        std::uint32_t code = d.get_u32();
        h.error = static_cast<error_code>(code);
        if (h.error == error_code::err_vers) {
          h.versions.low = d.get_u32();
          h.versions.high = d.get_u32();
        } else if (h.error != error_code::err_chunk) {
          throw xdr::decode_error("rpc-over-rdma: unknown error code");
        }
        break;
      }
      default:
        throw xdr::decode_error("rpc-over-rdma: unknown or obsolete message type");
    }
  } catch (const header_error&) {
    throw;
  } catch (const xdr::decode_error& e) {
    throw header_error(e.what(), h.xid, error_code::err_chunk);
  }
  return h;
}

/// An RDMA_ERROR header answering `xid`.
inline header make_error(std::uint32_t xid, error_code code, std::uint32_t credits) {
  header h;
  h.xid = xid;
  h.credits = credits;
  h.type = msg_type::rdma_error;
  h.error = code;
  return h;
}

// ---- RFC 8797 private data -------------------------------------------------------------

/// Inline threshold when the peer sends no (valid) private data (RFC 8166 §3.3.3).
inline constexpr std::uint32_t default_inline_size = 1024;
/// What this implementation offers by default in its private data.
inline constexpr std::uint32_t preferred_inline_size = 4096;

/// rpcrdma1_priv_data (RFC 8797 §5.1): 8 octets, the magic in network byte order, then
/// version, flags, and the send and receive sizes, each in 1 KiB units minus one (so
/// 1 KiB .. 256 KiB are expressible).
struct private_data {
  static constexpr std::uint32_t magic = 0xf6ab0e18;
  static constexpr std::uint8_t format_version = 1;
  static constexpr std::uint8_t flag_remote_invalidation = 0x01;
  static constexpr std::size_t encoded_size = 8;

  std::uint8_t flags = 0;
  std::uint32_t inline_send = preferred_inline_size;  ///< bytes, a multiple of 1 KiB
  std::uint32_t inline_recv = preferred_inline_size;  ///< bytes, a multiple of 1 KiB

  bool operator==(const private_data&) const = default;

  /// Sizes are rounded down to 1 KiB units and clamped to 1 KiB .. 256 KiB.
  std::array<std::byte, encoded_size> encode() const {
    auto units = [](std::uint32_t bytes) {
      std::uint32_t u = bytes / 1024;
      u = u < 1 ? 1 : (u > 256 ? 256 : u);
      return std::byte(u - 1);
    };
    return {std::byte(magic >> 24), std::byte(magic >> 16), std::byte(magic >> 8), std::byte(magic),
            std::byte(format_version), std::byte(flags), units(inline_send), units(inline_recv)};
  }

  /// The peer's parameters, or nothing when `in` is not RFC 8797 private data of version 1
  /// (too short, wrong magic, other version): the peer then "says nothing" and both
  /// thresholds are default_inline_size. Bytes beyond the first eight are ignored (RDMA-CM
  /// pads private data).
  static std::optional<private_data> decode(xdr::bytes_view in) {
    if (in.size() < encoded_size) return std::nullopt;
    std::uint32_t m = (std::uint32_t(in[0]) << 24) | (std::uint32_t(in[1]) << 16) |
                      (std::uint32_t(in[2]) << 8) | std::uint32_t(in[3]);
    if (m != magic || std::uint8_t(in[4]) != format_version) return std::nullopt;
    private_data p;
    p.flags = std::uint8_t(in[5]);
    p.inline_send = (std::uint32_t(in[6]) + 1) * 1024;
    p.inline_recv = (std::uint32_t(in[7]) + 1) * 1024;
    return p;
  }
};

}  // namespace vnfs::rpc::rdma
