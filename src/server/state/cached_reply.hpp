// vnfsd: a slot's cached reply, kept with the structure of its encoding (RFC 8881 §2.10.6.1.3).
#pragma once

#include <cstddef>
#include <vector>

#include "vnfs/xdr/encoder.hpp"

namespace vnfs::server {

/// A COMPOUND4res kept for replay: its bytes in one buffer (sized once) and where its
/// payloads (the payload pieces of xdr::encoder::chain(), i.e. READ data) lie in them.
/// A replay is encoded exactly as the original was — every payload again a payload piece,
/// at the same place — so a transport that moves payloads apart from the rest
/// (RPC-over-RDMA: Write chunks, then inline or the Reply chunk) treats it as it treated
/// the original. Immutable once made: replays may share it from any thread.
class cached_reply {
 public:
  /// Copies `body`. Throws std::logic_error when it holds a payload left in a file
  /// (xdr::file_range): the dispatcher never leaves the payloads of a cached reply there.
  explicit cached_reply(const xdr::encoder& body);

  /// Appends the reply to `out`: its bytes copied except the payloads, which `out`
  /// references in this object (keep it alive until `out` has been sent).
  void encode(xdr::encoder& out) const;

  /// Encoded length, payloads included.
  std::size_t size() const { return bytes_.size(); }

 private:
  struct payload {
    std::size_t at = 0;  ///< offset of its first byte in bytes_ (after its length field)
    std::size_t size = 0;
  };
  std::vector<std::byte> bytes_;
  std::vector<payload> payloads_;
};

}  // namespace vnfs::server
