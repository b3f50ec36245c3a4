// vnfs client, nfs backend: the one decoder of a COMPOUND reply. It decodes each reply once,
// result by result: while the reply arrives (TCP), far enough to tell the channel where the
// next READ payload is so that it lands in the caller's memory (it is the channel's
// transport::reply_guide); the rest when the record is whole. It knows which payloads were
// placed, and the reply it makes says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <system_error>
#include <vector>

#include "transport/reply_guide.hpp"
#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

/// Where the READ payloads of a call may be received, and how much of its reply can safely
/// be received before each. Made with the call (its encoding knows the operations) and sent
/// with it to the channel.
struct read_plan {
  /// Per READ of the COMPOUND, in order: where its payload may be placed when it fits (an
  /// empty span: not that one).
  std::vector<std::span<std::byte>> targets;
  /// Per READ: a lower bound of the offset of its payload in the reply record (from the
  /// xid, less the payloads placed before it), were every result before it successful.
  /// Receiving up to there never reads into that payload (a failed result ends the reply).
  std::vector<std::size_t> earliest;
};

/// The reply to one COMPOUND. `res.resarray[0]` is the SEQUENCE result of a sequenced call;
/// opaque payloads in it are views into `buffer`, or into the caller's read targets.
struct compound_reply {
  nfs4::COMPOUND4res res;
  std::vector<std::byte> buffer;
  /// Per entry of res.resarray: whether it is a READ whose payload the transport placed
  /// straight into the caller's read target (its data views the target). Otherwise a READ's
  /// data views `buffer`.
  std::vector<bool> placed;
  bool placed_at(std::size_t i) const { return i < placed.size() && placed[i]; }
  /// Set by session_engine for a COMPOUND that ended a transaction (ended_transaction(),
  /// session_call.hpp) which committed, but whose reply was lost with its session: the
  /// engine asked TXN_STATUS on the new session, and `res` is that answer — SEQUENCE's
  /// result and VNFS_TXN4res {NFS4_OK, TXN_COMMITTED}, no result of the COMPOUND's other
  /// operations.
  bool results_lost = false;
};

/// What runs with the reply to a COMPOUND (or the error that ended it).
using compound_done = std::function<void(std::error_code, compound_reply&)>;

/// Decodes one RPC reply record (from its xid on) carrying COMPOUND4res. The payloads a
/// channel places (transport::reply_guide) are the READ payloads, in order.
///
/// The record is given as it grows: `body`, the bytes received so far less the payloads
/// placed, in one buffer that is never reallocated while the reply is decoded (results
/// already decoded view it), and that keeps its bytes when it moves into the reply.
class reply_decoder final : public transport::reply_guide {
 public:
  /// Places nothing: every payload stays in the record.
  reply_decoder() = default;
  /// Places READ payloads into `plan`'s targets (null: nowhere).
  explicit reply_decoder(std::shared_ptr<const read_plan> plan) : plan_(std::move(plan)) {}

  /// RPC-over-RDMA: the reply's `read_index`-th payload (that of its `read_index`-th
  /// successful READ: the `read_index`-th READ, as a failed one ends the COMPOUND) is
  /// already in target `read_index`, `len` bytes (the server wrote it there); the record
  /// keeps only its length. With `len` 0, the record has the payload whole, if any (a Write
  /// chunk left unused, e.g. by a reply from the server's reply cache). finish() fails the
  /// reply when a payload so placed has another length or no READ, or `len` > 0 names a
  /// target that does not exist.
  void placed_elsewhere(std::size_t read_index, std::uint32_t len) override;

  /// The plan's targets, one per READ.
  std::span<const std::span<std::byte>> targets() const override;

  /// While the record arrives: decodes what `body` holds, and says what to receive next
  /// (step::kind::rest: the rest of the record, then finish()).
  step advance(std::span<const std::byte> body, std::size_t left) override;

  /// The record is whole: decodes what advance() did not, and makes the reply (`record`
  /// becomes its buffer). An RPC error or a malformed reply gives errc::protocol_error.
  std::error_code finish(std::vector<std::byte> record, compound_reply& out);

 private:
  /// Decodes the RPC reply header and the COMPOUND header at at_; false on an RPC error.
  bool decode_header(xdr::decoder& d);
  /// The first READ from the k-th on that has a target, or none.
  std::size_t next_target(std::size_t k) const;
  /// Bytes the next result surely has, from at_, before decoding it is worth trying.
  std::size_t want_before_result(std::span<const std::byte> body, std::size_t next) const;
  /// Appends one result decoded from `d` (a READ placed elsewhere, or decoded in place).
  void decode_result(xdr::decoder& d);

  std::shared_ptr<const read_plan> plan_;
  bool header_done_ = false;
  bool failed_ = false;          // an RPC error or malformed reply: finish() says so
  std::size_t at_ = 0;           // in the record: where the next thing to decode starts
  std::uint32_t results_left_ = 0;
  std::size_t reads_ = 0;        // READ results decoded so far
  std::size_t payloads_ = 0;     // of those, successful ones (each carries a payload)
  std::vector<std::uint32_t> elsewhere_;  // per READ: bytes placed_elsewhere() not yet decoded
  compound_reply reply_;         // res and placed, as decoded so far
};

}  // namespace vnfs::detail
