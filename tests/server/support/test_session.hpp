// vnfs server tests: a blocking NFSv4.1 session over the shared codec and TCP transport,
// and the servers it runs against (vnfsd, NFS-Ganesha).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "vnfs/nfs4/compound.hpp"
#include "vnfs/test/ganesha_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"
#include "vnfs/transport/tcp/blocking_channel.hpp"

namespace vnfs::test {

enum class server_kind { vnfsd, ganesha };
const char* name_of(server_kind k);

/// A real server on loopback exporting a fresh temporary directory.
class test_server {
 public:
  explicit test_server(server_kind kind, std::vector<std::string> vnfsd_args = {});
  server_kind kind() const { return kind_; }
  std::string host() const;
  std::uint16_t port() const;
  const std::filesystem::path& export_dir() const;
  /// Components to LOOKUP after PUTROOTFH to reach the export (empty on vnfsd).
  std::vector<std::string> root_path() const;
  /// vnfsd only: stop and start again on the same export and port.
  void restart();
  vnfsd_process* vnfsd() { return vnfsd_.get(); }

 private:
  server_kind kind_;
  std::unique_ptr<temp_dir> dir_;
  std::unique_ptr<vnfsd_process> vnfsd_;
  std::unique_ptr<ganesha_process> ganesha_;
};

struct session_options {
  bool auth_sys = true;  ///< false: AUTH_NONE
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::uint32_t> gids;
  std::string owner;  ///< client owner; empty: a unique one per session
  nfs4::channel_attrs4 fore{0, 4u << 20, 4u << 20, 64u << 10, 1024, 16, std::nullopt};
};

/// EXCHANGE_ID + CREATE_SESSION at construction; compound() sends SEQUENCE + ops on slot 0
/// with the next sequence id. The destructor destroys the session and client ID.
class test_session {
 public:
  test_session(const std::string& host, std::uint16_t port, std::vector<std::string> root_path,
               session_options opts = {});
  explicit test_session(test_server& s, session_options opts = {})
      : test_session(s.host(), s.port(), s.root_path(), std::move(opts)) {}
  ~test_session();
  test_session(const test_session&) = delete;
  test_session& operator=(const test_session&) = delete;

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
  transport::tcp::blocking_channel& channel() { return *channel_; }
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
  std::unique_ptr<transport::tcp::blocking_channel> channel_;
  nfs4::clientid4 clientid_ = 0;
  nfs4::sessionid4 session_{};
  nfs4::channel_attrs4 fore_{};
  std::vector<nfs4::sequenceid4> seqids_;
  std::vector<std::byte> last_request_;
  std::uint32_t last_xid_ = 0;
  bool destroyed_ = false;
};

/// The result at `index`, which must be of type R (a Catch2 failure names what it was).
template <class R>
const R& result_at(const nfs4::COMPOUND4res& res, std::size_t index);

/// Status of the result at `index` (NFS4_OK ... ), or throws if there is no such result.
nfs4::nfsstat4 status_at(const nfs4::COMPOUND4res& res, std::size_t index);

std::vector<std::byte> to_byte_vector(std::string_view s);
std::string to_string(xdr::bytes_view b);

}  // namespace vnfs::test

#include "support/test_session_inl.hpp"
