// vnfs transport: the reply guide — what a channel asks, while a reply arrives, of the
// caller who knows the reply's format: how much to receive next, and which bytes are a
// payload that goes straight into the caller's memory. The transport knows no operation of
// the protocol it carries: placing payloads needs only what the guide says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace vnfs::transport {

/// The guide of the reply to one call, handed to the channel with the call
/// (rpc_channel::send). One reply at a time: a guide is used for one reply only.
class reply_guide {
 public:
  virtual ~reply_guide() = default;

  /// What the channel receives next.
  struct step {
    enum class kind {
      receive,  ///< until `body` holds `until` bytes (or the record ends), then advance again
      place,    ///< the reply's next payload: `len` bytes and `pad` bytes of padding at `at`
                ///< in the record go to `target` (and the padding nowhere), then advance
      rest,     ///< the rest of the record (nothing more to place)
    } what = kind::rest;
    std::size_t until = 0;
    std::size_t at = 0;
    std::uint32_t len = 0;
    std::uint32_t pad = 0;
    std::span<std::byte> target;
  };

  /// While the record arrives: `body` is the record received so far (from the xid on) less
  /// the payloads placed, in one buffer that is never reallocated while the reply arrives;
  /// `left`: bytes of the record not yet received. A step `place` counts the payload as
  /// placed: the channel must put it in the target and cut it out of `body`.
  virtual step advance(std::span<const std::byte> body, std::size_t left) = 0;

  /// Where the reply's payloads may be placed, in their order in the reply (an empty span:
  /// not that one). Unchanged for the guide's life; the memory is valid as long as it lives.
  virtual std::span<const std::span<std::byte>> targets() const = 0;

  /// A transport whose peer writes payloads into the targets itself (RPC-over-RDMA's Write
  /// chunks): the `index`-th payload is already in its target, `len` bytes, and the record
  /// carries only its length. `len` 0: nothing was written there, and the record carries
  /// that payload, if any, whole (an unused chunk; an empty payload). Called, once per
  /// index at most, before the channel hands the record over.
  virtual void placed_elsewhere(std::size_t index, std::uint32_t len) = 0;
};

}  // namespace vnfs::transport
