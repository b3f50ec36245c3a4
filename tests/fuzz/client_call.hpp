// vnfs fuzzing: the client call that the reply-path harnesses (client_replies over TCP,
// rdma_replies over RPC-over-RDMA) answer with the fuzzer's reply. The input chooses the
// COMPOUND's operations; the client's own encode_call encodes it and makes its read plan;
// the READ targets lie in one arena, each between guard bytes. check_reply() holds the
// properties every decoded reply keeps. tests/fuzz_corpus records seeds in this layout
// from real traffic (describe_call).
//
// Layout of the call in the input: a byte n (n % 16 operations after SEQUENCE), then per
// operation one byte (an index into call_kinds), a READ followed by one byte choosing its
// target's size (an index into target_sizes; the size 0: no target).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

#include "client/nfs/reply_decoder.hpp"
#include "client/nfs/session_call.hpp"
#include "client/result_size.hpp"
#include "fuzz_input.hpp"
#include "vnfs/error.hpp"
#include "vnfs/nfs4/compound.hpp"
#include "vnfs/rpc/message.hpp"

namespace vnfs::fuzz {

/// The operations a fuzzed call may have after its SEQUENCE, as the client sends them.
inline constexpr std::array<nfs4::nfs_opnum4, 16> call_kinds{
    nfs4::nfs_opnum4::OP_PUTFH,   nfs4::nfs_opnum4::OP_PUTROOTFH, nfs4::nfs_opnum4::OP_LOOKUP,
    nfs4::nfs_opnum4::OP_OPEN,    nfs4::nfs_opnum4::OP_READ,      nfs4::nfs_opnum4::OP_CLOSE,
    nfs4::nfs_opnum4::OP_GETATTR, nfs4::nfs_opnum4::OP_GETFH,     nfs4::nfs_opnum4::OP_WRITE,
    nfs4::nfs_opnum4::OP_SAVEFH,  nfs4::nfs_opnum4::OP_RESTOREFH, nfs4::nfs_opnum4::OP_READDIR,
    nfs4::nfs_opnum4::OP_READLINK, nfs4::nfs_opnum4::OP_REMOVE,   nfs4::nfs_opnum4::OP_ACCESS,
    nfs4::nfs_opnum4::OP_COMMIT};

/// Sizes a READ target may have (0: the READ has none).
inline constexpr std::array<std::size_t, 8> target_sizes{0, 1, 3, 8, 100, 1000, 4096, 70000};

/// Guard bytes before and after each target, and the byte the arena is filled with.
inline constexpr std::size_t guard_size = 64;
inline constexpr std::byte fill{0xa5};

/// One call and the arena its READ targets lie in. Not copyable: the targets view the arena.
class client_call {
 public:
  /// Reads the call's layout (above) from `in`.
  explicit client_call(input_reader& in) {
    const std::size_t n = in.u8() % 16;
    std::vector<std::size_t> sizes;
    c_.ops.push_back(nfs4::SEQUENCE4args{});
    for (std::size_t i = 0; i < n; ++i) {
      const nfs4::nfs_opnum4 op = call_kinds[in.u8() % call_kinds.size()];
      c_.ops.push_back(make_args(op));
      if (op == nfs4::nfs_opnum4::OP_READ) {
        sizes.push_back(target_sizes[in.u8() % target_sizes.size()]);
        std::get<nfs4::READ4args>(c_.ops.back()).count = static_cast<nfs4::count4>(sizes.back());
      }
    }
    std::size_t total = guard_size;
    for (std::size_t s : sizes) total += s + guard_size;
    arena_.assign(total, fill);
    std::size_t at = guard_size;
    for (std::size_t s : sizes) {
      c_.read_targets.push_back(std::span<std::byte>(arena_).subspan(at, s));
      at += s + guard_size;
    }
  }
  client_call(const client_call&) = delete;
  client_call& operator=(const client_call&) = delete;

  /// Encodes the call as `xid` (the read plan with it) and makes the decoder of its reply,
  /// as the session engine does for each transmission (null without read targets).
  void encode(std::uint32_t xid) {
    rpc::opaque_auth cred = detail::authsys_credential(0, 0, {});
    detail::encode_call(c_, xid, cred);
    c_.decoder = c_.reads ? std::make_shared<detail::reply_decoder>(c_.reads) : nullptr;
  }

  detail::session_call& call() { return c_; }
  std::span<const std::span<std::byte>> targets() const { return c_.read_targets; }
  std::span<const std::byte> arena() const { return arena_; }

  /// Finishes the reply as the session engine does: with the call's decoder, or with an
  /// unguided one when the call has no read targets.
  std::error_code finish(std::vector<std::byte> record, detail::compound_reply& out) {
    detail::reply_decoder unguided;
    return (c_.decoder ? *c_.decoder : unguided).finish(std::move(record), out);
  }

  /// Whether the arena outside the targets (the guards) still holds only `fill`, and each
  /// target's bytes from `written[k]` on too (what nobody wrote into it).
  bool untouched_beyond(std::span<const std::size_t> written) const {
    std::size_t at = 0;
    auto all_fill = [&](std::size_t from, std::size_t to) {
      return std::all_of(arena_.begin() + static_cast<std::ptrdiff_t>(from),
                         arena_.begin() + static_cast<std::ptrdiff_t>(to), [](std::byte b) { return b == fill; });
    };
    for (std::size_t k = 0; k < c_.read_targets.size(); ++k) {
      const std::size_t begin = static_cast<std::size_t>(c_.read_targets[k].data() - arena_.data());
      const std::size_t end = begin + c_.read_targets[k].size();
      const std::size_t w = k < written.size() ? std::min(written[k], c_.read_targets[k].size()) : 0;
      if (!all_fill(at, begin) || !all_fill(begin + w, end)) return false;
      at = end;
    }
    return all_fill(at, arena_.size());
  }

  /// The target [data, data + size) lies in, or none.
  std::optional<std::size_t> target_of(const std::byte* data, std::size_t size) const {
    for (std::size_t k = 0; k < c_.read_targets.size(); ++k) {
      const auto t = c_.read_targets[k];
      if (data >= t.data() && size <= t.size() && data - t.data() <= static_cast<std::ptrdiff_t>(t.size() - size))
        return k;
    }
    return std::nullopt;
  }

 private:
  static nfs4::nfs_argop4 make_args(nfs4::nfs_opnum4 op) {
    using nfs4::nfs_opnum4;
    switch (op) {
      case nfs_opnum4::OP_PUTFH: return nfs4::PUTFH4args{};
      case nfs_opnum4::OP_PUTROOTFH: return nfs4::PUTROOTFH4args{};
      case nfs_opnum4::OP_LOOKUP: return nfs4::LOOKUP4args{};
      case nfs_opnum4::OP_OPEN: return nfs4::OPEN4args{};
      case nfs_opnum4::OP_READ: return nfs4::READ4args{};
      case nfs_opnum4::OP_CLOSE: return nfs4::CLOSE4args{};
      case nfs_opnum4::OP_GETATTR: return nfs4::GETATTR4args{};
      case nfs_opnum4::OP_GETFH: return nfs4::GETFH4args{};
      case nfs_opnum4::OP_WRITE: return nfs4::WRITE4args{};
      case nfs_opnum4::OP_SAVEFH: return nfs4::SAVEFH4args{};
      case nfs_opnum4::OP_RESTOREFH: return nfs4::RESTOREFH4args{};
      case nfs_opnum4::OP_READDIR: return nfs4::READDIR4args{};
      case nfs_opnum4::OP_READLINK: return nfs4::READLINK4args{};
      case nfs_opnum4::OP_REMOVE: return nfs4::REMOVE4args{};
      case nfs_opnum4::OP_ACCESS: return nfs4::ACCESS4args{};
      default: return nfs4::COMMIT4args{};
    }
  }

  detail::session_call c_;
  std::vector<std::byte> arena_;
};

/// The call layout (above) of a COMPOUND the client sent, for a seed: nullopt when it has
/// an operation call_kinds lacks or more than 15 after SEQUENCE.
inline std::optional<std::vector<std::byte>> describe_call(const std::vector<nfs4::nfs_argop4>& ops) {
  if (ops.empty() || ops.size() > 16) return std::nullopt;
  std::vector<std::byte> out{std::byte(ops.size() - 1)};
  for (std::size_t i = 1; i < ops.size(); ++i) {
    auto k = std::find(call_kinds.begin(), call_kinds.end(), nfs4::opnum_of(ops[i]));
    if (k == call_kinds.end()) return std::nullopt;
    out.push_back(std::byte(k - call_kinds.begin()));
    if (auto* r = std::get_if<nfs4::READ4args>(&ops[i])) {
      // The smallest target that holds what the READ asked for (else the largest).
      auto s = std::find_if(target_sizes.begin() + 1, target_sizes.end(), [&](std::size_t n) { return n >= r->count; });
      out.push_back(std::byte(s == target_sizes.end() ? target_sizes.size() - 1 : s - target_sizes.begin()));
    }
  }
  return out;
}

/// The reply as plainly decoded from the whole record the server meant (nullopt: an RPC
/// error, or it does not decode).
inline std::optional<nfs4::COMPOUND4res> plain_decode(std::span<const std::byte> record) {
  try {
    xdr::decoder d(record);
    if (!rpc::decode_reply(d).is_success()) return std::nullopt;
    return xdr::decode<nfs4::COMPOUND4res>(d);
  } catch (const xdr::decode_error&) {
    return std::nullopt;
  }
}

/// What holds for every reply the client finished (`ec`, `got`): it failed only with
/// errc::protocol_error; a placed READ's data lies inside one target; and when the server's
/// whole record `meant` is known (the TCP channel received it all), the reply is exactly its
/// plain decoding, and is decoded whenever that one is (with at most 1024 results).
inline void check_reply(const client_call& c, std::error_code ec, const detail::compound_reply& got,
                        std::optional<std::span<const std::byte>> meant, void (*require)(bool, const char*)) {
  require(!ec || ec == make_error_code(errc::protocol_error), "a reply fails only with protocol_error");
  if (!ec) {
    require(got.placed.size() == got.res.resarray.size(), "one placed flag per result");
    for (std::size_t i = 0; i < got.res.resarray.size(); ++i) {
      if (!got.placed_at(i)) continue;
      const auto* r = std::get_if<nfs4::READ4res>(&got.res.resarray[i]);
      require(r != nullptr, "only READ results are placed");
      require(c.target_of(r->resok4.data.data(), r->resok4.data.size()).has_value(), "placed data inside a target");
    }
  }
  if (!meant) return;
  const auto plain = plain_decode(*meant);
  if (!ec) {
    require(plain.has_value(), "a reply decodes only if its whole record does");
    require(got.res == *plain, "the reply decoded as it arrived equals the whole record's");
  } else if (plain && plain->resarray.size() <= 1024) {
    require(false, "a reply the whole record decodes to is not refused");
  }
}

}  // namespace vnfs::fuzz
