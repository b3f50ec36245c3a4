// vnfs test support: a blocking NFSv4.1 session for hand-built COMPOUNDs (the server tests).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vnfs/nfs4/compound.hpp"
#include "vnfs/test/blocking_channel.hpp"

namespace vnfs::test {

struct session_options {
  bool auth_sys = true;  ///< false: AUTH_NONE
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::uint32_t> gids;
  std::string owner;  ///< client owner; empty: a unique one per session
  nfs4::channel_attrs4 fore{0, 4u << 20, 4u << 20, 64u << 10, 1024, 16, std::nullopt};
};

/// A minimal synchronous NFSv4.1 session over one TCP connection, built directly on the
/// protocol layers: EXCHANGE_ID + CREATE_SESSION at construction; compound() sends SEQUENCE + ops on slot 0
/// with the next sequence id. The destructor destroys the session and client ID.
///
/// Results are decoded zero-copy: opaque payloads in them (READ data) are views into the
/// session's receive buffer, valid until the next call on the session.
///
/// It exposes the protocol as it is (hand-built COMPOUNDs, raw retransmissions), which is
/// what the server tests need. Not thread-safe: one
/// session per thread. Errors of the transport or RPC layer throw; NFS statuses are returned.
class blocking_session {
 public:
  blocking_session(const std::string& host, std::uint16_t port, std::vector<std::string> root_path,
               session_options opts = {});
  ~blocking_session();
  blocking_session(const blocking_session&) = delete;
  blocking_session& operator=(const blocking_session&) = delete;

  /// SEQUENCE (slot, next seqid, cachethis) + ops. The result includes SEQUENCE at index 0.
  nfs4::COMPOUND4res compound(std::vector<nfs4::nfs_argop4> ops, bool cachethis = true,
                              std::uint32_t slot = 0);
  /// A COMPOUND exactly as given (no SEQUENCE).
  nfs4::COMPOUND4res raw(std::vector<nfs4::nfs_argop4> ops, std::uint32_t minorversion = 1);
  /// Sends the previous request's bytes again (same xid): a retransmission.
  nfs4::COMPOUND4res resend_last();
  /// PUTROOTFH and the LOOKUPs that reach the export's top directory.
  std::vector<nfs4::nfs_argop4> root_ops() const;
  /// root_ops() followed by LOOKUP of each component of a relative path "a/b/c".
  std::vector<nfs4::nfs_argop4> path_ops(const std::string& relative) const;

  const nfs4::sessionid4& session_id() const { return session_; }
  nfs4::clientid4 client_id() const { return clientid_; }
  const nfs4::channel_attrs4& fore() const { return fore_; }
  /// The sequence id the next compound() on `slot` will use.
  nfs4::sequenceid4 next_seqid(std::uint32_t slot = 0) const { return seqids_.at(slot) + 1; }
  /// Skips ahead (tests of misordered requests).
  void set_seqid(std::uint32_t slot, nfs4::sequenceid4 last_used) { seqids_.at(slot) = last_used; }
  blocking_channel& channel() { return *channel_; }
  /// Reconnects the TCP connection (the session stays).
  void reconnect();
  /// Forget the session without destroying it (tests that destroy it themselves).
  void forget() { destroyed_ = true; }

  /// Sends a COMPOUND4args already encoded (after the RPC header) and decodes the reply.
  nfs4::COMPOUND4res call(const nfs4::COMPOUND4args& args);

 private:
  nfs4::COMPOUND4res exchange(const std::vector<std::byte>& request, std::uint32_t xid);
  std::vector<std::byte> encode_request(const nfs4::COMPOUND4args& args, std::uint32_t xid);

  std::string host_;
  std::uint16_t port_;
  std::vector<std::string> root_path_;
  session_options opts_;
  std::unique_ptr<blocking_channel> channel_;
  nfs4::clientid4 clientid_ = 0;
  nfs4::sessionid4 session_{};
  nfs4::channel_attrs4 fore_{};
  std::vector<nfs4::sequenceid4> seqids_;
  std::vector<std::byte> last_request_;
  std::vector<std::byte> last_reply_;  ///< what the views in the last result point into
  std::uint32_t last_xid_ = 0;
  bool destroyed_ = false;
};

std::vector<std::byte> to_byte_vector(std::string_view s);
std::string to_string(xdr::bytes_view b);

}  // namespace vnfs::test
