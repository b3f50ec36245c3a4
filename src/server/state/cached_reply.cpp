#include "server/state/cached_reply.hpp"

#include <stdexcept>

namespace vnfs::server {

cached_reply::cached_reply(const xdr::encoder& body) {
  bytes_.reserve(body.size());
  for (const auto& p : body.chain()) {
    if (p.file.fd >= 0) throw std::logic_error("cached_reply: a payload left in a file cannot be cached");
    if (p.payload) payloads_.push_back({bytes_.size(), p.bytes.size()});
    bytes_.insert(bytes_.end(), p.bytes.begin(), p.bytes.end());
  }
}

void cached_reply::encode(xdr::encoder& out) const {
  // Each payload is preceded by its XDR length field and followed by its padding, both
  // written again by put_opaque_ref.
  const xdr::bytes_view all(bytes_);
  std::size_t at = 0;
  for (const payload& p : payloads_) {
    out.put_fixed_opaque(all.subspan(at, p.at - 4 - at));
    out.put_opaque_ref(all.subspan(p.at, p.size));
    at = p.at + p.size + ((4 - (p.size & 3)) & 3);
  }
  out.put_fixed_opaque(all.subspan(at));
}

}  // namespace vnfs::server
