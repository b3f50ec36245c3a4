// vnfs client, nfs backend: how many operations a server really takes in one COMPOUND.
//
// CREATE_SESSION's ca_maxoperations is the limit a server promises (RFC 8881 §18.36.3), and
// most keep it (vnfsd, the Linux server, which lowers what the client asks for to its own
// limit). Some grant what the client asks and refuse longer COMPOUNDs whole, before SEQUENCE
// runs: NFS-Ganesha echoes the requested channel attributes and answers NFS4ERR_RESOURCE
// with no results to a COMPOUND of more than 100 operations (NFS4_MAX_OPERATIONS in its
// sources, checked in nfs4_Compound for every minor version).
//
// The session engine (operation_limit.cpp) therefore
//   - takes the limit of a server known by its EXCHANGE_ID reply from known_operation_limit(),
//     which costs no round trip;
//   - otherwise, after the first COMPOUND refused whole for its length, finds the exact limit
//     by bisection between the longest COMPOUND the server ran and the refused one, with
//     probes of SEQUENCE and PUTROOTFHs (no state, nothing but the count matters), one at a
//     time; the refused COMPOUNDs then complete with NFS4ERR_TOO_MANY_OPS and are split.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "vnfs/nfs4/compound.hpp"

namespace vnfs::detail {

/// The operations per COMPOUND a known server takes, from its EXCHANGE_ID server scope:
/// NFS-Ganesha names its scope "<host>_NFS-Ganesha" and takes 100. nullopt for others.
std::optional<std::uint32_t> known_operation_limit(std::span<const std::byte> server_scope);

/// Whether a reply says the server refused the COMPOUND whole for its number of operations,
/// before SEQUENCE ran or by SEQUENCE itself: no results and NFS4ERR_RESOURCE or
/// NFS4ERR_TOO_MANY_OPS, or only SEQUENCE's result with NFS4ERR_TOO_MANY_OPS. (A COMPOUND no
/// longer than one the server ran is not refused for its length; the engine checks that.)
bool refused_for_length(const nfs4::COMPOUND4res& res);

}  // namespace vnfs::detail
