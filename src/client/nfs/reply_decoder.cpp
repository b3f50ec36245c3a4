#include "client/nfs/reply_decoder.hpp"

#include <algorithm>

#include "client/result_size.hpp"
#include "vnfs/error.hpp"
#include "vnfs/rpc/message.hpp"

namespace vnfs::detail {

namespace {

/// While looking for READ results to place, a result of variable size (GETATTR, GETFH, OPEN
/// with a delegation, ...) is received in steps of this many bytes; what of a following
/// payload arrives with the last step is copied into its target.
constexpr std::size_t parse_step = 256;

/// Results a reply may carry (a COMPOUND the client sends has fewer operations).
constexpr std::uint32_t max_results = 1024;

constexpr std::size_t none = SIZE_MAX;

std::uint32_t pad_of(std::uint32_t n) { return (4 - (n & 3)) & 3; }

/// The XDR unsigned int at `off` in `body`.
std::uint32_t u32_at(std::span<const std::byte> body, std::size_t off) {
  if (off + 4 > body.size()) throw xdr::decode_error("reply truncated");
  return xdr::decoder(body.subspan(off, 4)).get_u32();
}

}  // namespace

void reply_decoder::placed_elsewhere(std::size_t read_index, std::uint32_t len) {
  if (plan_ && read_index < plan_->targets.size()) {
    if (elsewhere_.size() <= read_index) elsewhere_.resize(read_index + 1, 0);
    elsewhere_[read_index] = len;
  } else if (len > 0) {
    failed_ = true;  // a payload for a READ that has no target
  }
}

std::span<const std::span<std::byte>> reply_decoder::targets() const {
  if (!plan_) return {};
  return plan_->targets;
}

std::size_t reply_decoder::next_target(std::size_t k) const {
  for (; plan_ && k < plan_->targets.size(); ++k)
    if (!plan_->targets[k].empty()) return k;
  return none;
}

bool reply_decoder::decode_header(xdr::decoder& d) {
  const rpc::reply_header h = rpc::decode_reply(d);
  if (!h.is_success()) return false;
  const auto c = xdr::decode<nfs4::compound_res_header>(d);
  if (c.numres > max_results) return false;
  reply_.res.status = c.status;
  reply_.res.tag = c.tag;
  reply_.res.resarray.reserve(c.numres);
  reply_.placed.reserve(c.numres);
  results_left_ = c.numres;
  header_done_ = true;
  return true;
}

void reply_decoder::decode_result(xdr::decoder& d) {
  // A successful READ result carries the reply's next payload (RFC 8166 matches Write
  // chunks to payloads in order: a failed READ has none).
  xdr::decoder peek = d;
  const bool payload = peek.remaining() >= 8 &&
                       peek.get_u32() == static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_READ) &&
                       peek.get_u32() == static_cast<std::uint32_t>(nfs4::nfsstat4::NFS4_OK);
  const std::uint32_t placed = payload && payloads_ < elsewhere_.size() ? elsewhere_[payloads_] : 0;
  if (placed > 0) {
    // opnum, status, eof and length (16 bytes); the payload is in its target already, as
    // long as the length says.
    d.get_u32();
    nfs4::READ4res r;
    r.status = static_cast<nfs4::nfsstat4>(d.get_u32());
    r.resok4.eof = d.get_bool();
    const std::span<std::byte> target = plan_->targets[payloads_];
    if (d.get_u32() != placed || placed > target.size()) throw xdr::decode_error("misplaced READ payload");
    r.resok4.data = target.first(placed);
    reply_.res.resarray.push_back(std::move(r));
    reply_.placed.push_back(true);
    elsewhere_[payloads_] = 0;
    ++reads_;
    ++payloads_;
    return;
  }
  // Any other result, or a READ whose payload is in the record whole.
  reply_.res.resarray.push_back(nfs4::decode_resop(d));
  reply_.placed.push_back(false);
  if (std::holds_alternative<nfs4::READ4res>(reply_.res.resarray.back())) ++reads_;
  if (payload) ++payloads_;
}

// Each receive takes what surely precedes the next payload (read_plan::earliest), so a
// successful reply of fixed-size results costs one receive before each payload. Anything
// unexpected (an RPC error, a result that does not decode) ends the placing: the rest of the
// record is received, and finish() has the last word.
reply_decoder::step reply_decoder::advance(std::span<const std::byte> body, std::size_t left) {
  auto receive = [](std::size_t until) {
    step s;
    s.what = step::kind::receive;
    s.until = until;
    return s;
  };
  // Makes the record hold `n` bytes before going on (false: it does, or it has no more).
  auto lacks = [&](std::size_t n) { return body.size() < n && left > 0; };
  if (failed_) return {};
  for (;;) {
    const std::size_t next = next_target(reads_);
    if (next == none || (header_done_ && results_left_ == 0)) return {};
    const std::size_t at = at_;
    // Bytes to have before trying to decode: the header with an empty verifier and tag
    // (xid 4, reply header 20, COMPOUND status, tag and count 12), or a result's opnum and
    // status; and in the same receive, all that surely comes before the next payload.
    std::size_t want = header_done_ ? at + 8 : at + 36;
    if (next < plan_->earliest.size()) want = std::max(want, plan_->earliest[next]);
    if (lacks(want)) return receive(want);
    try {
      xdr::decoder d(body.subspan(at));
      if (!header_done_) {
        if (!decode_header(d)) {
          failed_ = true;
          return {};
        }
        at_ += d.position();
        continue;
      }
      xdr::decoder peek = d;
      const std::uint32_t opnum = peek.get_u32();
      const bool ok = peek.get_u32() == 0;  // NFS4_OK
      if (opnum == static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_READ) && ok) {
        if (lacks(at + 16)) return receive(at + 16);
        const bool eof = peek.get_bool();
        const std::uint32_t len = peek.get_u32();
        const std::span<std::byte> target = reads_ < plan_->targets.size() ? plan_->targets[reads_] : std::span<std::byte>();
        if (len > 0 && len <= target.size() && len + pad_of(len) <= body.size() - (at + 16) + left) {
          nfs4::READ4res r;
          r.status = nfs4::nfsstat4::NFS4_OK;
          r.resok4.eof = eof;
          r.resok4.data = target.first(len);
          reply_.res.resarray.push_back(std::move(r));
          reply_.placed.push_back(true);
          ++reads_;
          ++payloads_;
          --results_left_;
          at_ = at + 16;
          step s;
          s.what = step::kind::place;
          s.at = at_;
          s.len = len;
          s.pad = pad_of(len);
          s.target = target.first(len);
          return s;
        }
        if (lacks(at + 16 + len + pad_of(len))) return receive(at + 16 + len + pad_of(len));
      } else if (ok) {
        const std::size_t fixed = fixed_ok_result_size(static_cast<nfs4::nfs_opnum4>(opnum));
        std::size_t end = fixed != 0 ? at + fixed : 0;
        if (opnum == static_cast<std::uint32_t>(nfs4::nfs_opnum4::OP_OPEN)) {
          // stateid, change_info, rflags (40 bytes), the attrset bitmap, the delegation
          // type: without a delegation, that is all.
          if (lacks(at + 52)) return receive(at + 52);
          const std::uint32_t words = u32_at(body, at + 48);
          if (words <= 8) {
            if (lacks(at + 56 + 4 * words)) return receive(at + 56 + 4 * words);
            if (u32_at(body, at + 52 + 4 * words) == 0 /* OPEN_DELEGATE_NONE */) end = at + 56 + 4 * words;
          }
        }
        if (end != 0 && lacks(end)) return receive(end);
      }
      decode_result(d);  // throws decode_error while the result is incomplete
      at_ += d.position();
      --results_left_;
    } catch (const xdr::decode_error&) {
      if (left == 0) {  // malformed
        failed_ = true;
        return {};
      }
      // Incomplete (a result of variable size, or a header with a verifier or tag): a little
      // more. What arrives past this result and belongs to a payload is copied.
      return receive(body.size() + std::min(left, parse_step));
    }
  }
}

std::error_code reply_decoder::finish(std::vector<std::byte> record, compound_reply& out) {
  if (!failed_ && at_ <= record.size()) {
    try {
      xdr::decoder d(std::span<const std::byte>(record).subspan(at_));
      if (!header_done_ && !decode_header(d)) failed_ = true;
      for (; !failed_ && results_left_ > 0; --results_left_) decode_result(d);
      for (std::uint32_t n : elsewhere_)
        if (n > 0) throw xdr::decode_error("READ payload without its result");
    } catch (const xdr::decode_error&) {
      failed_ = true;
    }
  } else {
    failed_ = true;
  }
  out.res = std::move(reply_.res);
  out.placed = std::move(reply_.placed);
  out.buffer = std::move(record);
  return failed_ ? make_error_code(errc::protocol_error) : std::error_code();
}

}  // namespace vnfs::detail
