// vnfs client, nfs backend: the operations per COMPOUND a server really takes (see
// operation_limit.hpp): known servers, and the bisection by probes after a refusal.
#include "client/nfs/operation_limit.hpp"

#include <algorithm>
#include <string_view>

#include "client/nfs/session_engine_impl.hpp"

namespace vnfs::detail {

using nfs4::nfsstat4;

std::optional<std::uint32_t> known_operation_limit(std::span<const std::byte> server_scope) {
  std::string_view scope(reinterpret_cast<const char*>(server_scope.data()), server_scope.size());
  while (!scope.empty() && scope.back() == '\0') scope.remove_suffix(1);  // Ganesha sends its terminating NUL
  constexpr std::string_view ganesha = "_NFS-Ganesha";
  if (scope.size() >= ganesha.size() && scope.substr(scope.size() - ganesha.size()) == ganesha) return 100;
  return std::nullopt;
}

bool refused_for_length(const nfs4::COMPOUND4res& res) {
  if (res.resarray.empty())
    return res.status == nfsstat4::NFS4ERR_RESOURCE || res.status == nfsstat4::NFS4ERR_TOO_MANY_OPS;
  return res.resarray.size() == 1 && std::holds_alternative<nfs4::SEQUENCE4res>(res.resarray[0]) &&
         nfs4::status_of(res.resarray[0]) == nfsstat4::NFS4ERR_TOO_MANY_OPS;
}

std::uint32_t session_engine::impl::operation_limit() const {
  std::lock_guard lock(limits_mu);
  return std::min(fore.ca_maxoperations, ops_cap);
}

bool session_engine::impl::take_length_refusal(std::unique_ptr<session_call>& c, const compound_reply& reply) {
  if (c->length_probe || !refused_for_length(reply.res) || c->ops.size() <= ops_accepted) return false;
  slots.release(c->slot);
  take_back_riders(*c);  // they did not run either: they ride on the next call
  const auto refused = static_cast<std::uint32_t>(c->ops.size());
  length_refused.push_back(std::move(c));
  if (probing) return true;  // the search under way answers it too
  if (refused > operation_limit()) {
    // The limit learned meanwhile is below it already.
    complete_length_refusals();
    return true;
  }
  probing = true;
  probe_lo = std::max<std::uint32_t>(ops_accepted, 1);
  probe_hi = refused;
  probe_next();
  return true;
}

void session_engine::impl::probe_next() {
  if (probe_hi - probe_lo <= 1) {
    {
      std::lock_guard lock(limits_mu);
      ops_cap = std::min(ops_cap, std::max<std::uint32_t>(probe_lo, 2));
    }
    probing = false;
    complete_length_refusals();
    return pump();
  }
  const std::uint32_t mid = probe_lo + (probe_hi - probe_lo) / 2;
  auto p = std::make_unique<session_call>();
  p->ops.assign(mid, nfs4::nfs_argop4{nfs4::PUTROOTFH4args{}});
  p->length_probe = true;
  p->done = [self = shared_from_this(), mid](std::error_code ec, compound_reply& r) {
    if (refused_for_length(r.res))
      self->probe_hi = mid;
    else if (!ec && !r.res.resarray.empty() && nfs4::status_of(r.res.resarray[0]) == nfsstat4::NFS4_OK)
      self->probe_lo = mid;
    else
      self->probe_hi = self->probe_lo + 1;  // no answer (closing, connection lost): what ran so far
    self->probe_next();
  };
  waiting.push_front(std::move(p));
  pump();
}

void session_engine::impl::complete_length_refusals() {
  auto refused = std::move(length_refused);
  length_refused.clear();
  for (auto& c : refused) {
    compound_reply reply;
    reply.res.status = nfsstat4::NFS4ERR_TOO_MANY_OPS;
    c->done(std::error_code(nfsstat4::NFS4ERR_TOO_MANY_OPS), reply);
  }
}

}  // namespace vnfs::detail
