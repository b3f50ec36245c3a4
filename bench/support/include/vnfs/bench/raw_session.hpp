// vnfs bench support: a raw NFSv4.1 session for benchmarks of a server's COMPOUND rate — the
// few COMPOUNDs they send, encoded by hand, over one blocking TCP connection.
//
// It needs no part of the SDK (the client never sends a bare SEQUENCE+PUTFH+GETATTR at a
// fixed rate), and so measures the server, not a client: one call on the wire at a time, the
// reply read whole and checked (RPC acceptance, xid, COMPOUND status, a READ's length).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vnfs::bench {

/// XDR (RFC 4506) encoding into a growing byte vector: what raw_session writes.
class xdr_writer {
 public:
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  /// Fixed-length opaque: the bytes, padded to 4.
  void fixed(const std::byte* p, std::size_t n);
  /// Variable-length opaque or string: the length, then fixed().
  void opaque(const std::byte* p, std::size_t n);
  void string(const std::string& s);
  const std::vector<std::byte>& bytes() const { return b_; }
  std::size_t size() const { return b_.size(); }

 private:
  std::vector<std::byte> b_;
};

/// XDR decoding of a reply; throws std::runtime_error past the end.
class xdr_reader {
 public:
  xdr_reader(const std::byte* p, std::size_t n) : p_(p), n_(n) {}
  std::uint32_t u32();
  std::uint64_t u64();
  /// Skips `n` bytes of fixed-length opaque (and its padding).
  void skip_fixed(std::size_t n);
  /// A variable-length opaque: its bytes (padding skipped).
  std::vector<std::byte> opaque();
  std::size_t position() const { return at_; }

 private:
  const std::byte* need(std::size_t n);
  const std::byte* p_;
  std::size_t n_;
  std::size_t at_ = 0;
};

/// One NFSv4.1 client ID and session over one TCP connection: EXCHANGE_ID and
/// CREATE_SESSION when constructed, DESTROY_SESSION and DESTROY_CLIENTID when destroyed.
/// Every COMPOUND goes on slot 0 with the slot's next sequence id and sa_cachethis false,
/// under AUTH_SYS as root. Not thread-safe: one session per thread. Transport and RPC
/// failures throw std::runtime_error or std::system_error (a receive waits at most 30 s).
class raw_session {
 public:
  /// `root_path`: the components from the server's root to the export (NFS-Ganesha's
  /// pseudo path; empty for vnfsd).
  raw_session(const std::string& host, std::uint16_t port, std::vector<std::string> root_path);
  ~raw_session();
  raw_session(const raw_session&) = delete;
  raw_session& operator=(const raw_session&) = delete;

  /// SEQUENCE, PUTROOTFH, LOOKUP of each root_path component and of `name`, GETFH: the
  /// filehandle of `name` in the export's top directory. Throws if the COMPOUND fails.
  std::vector<std::byte> lookup(const std::string& name);
  /// SEQUENCE, PUTFH, GETATTR of `attrs` (FATTR4_* numbers): the COMPOUND's status.
  std::uint32_t getattr(const std::vector<std::byte>& fh, const std::vector<std::uint32_t>& attrs);
  /// SEQUENCE, PUTFH, READ `count` bytes at `offset` with the anonymous stateid: the
  /// COMPOUND's status; `*got` the READ's payload length when it is NFS4_OK.
  std::uint32_t read(const std::vector<std::byte>& fh, std::uint64_t offset, std::uint32_t count, std::size_t* got);

 private:
  /// Sends a COMPOUND of `numops` operations already encoded in `ops` (after SEQUENCE on
  /// slot 0 when `sequenced`) and receives its reply into `reply`; `*results_at` is where
  /// in it the results begin, after SEQUENCE's. Returns the COMPOUND status.
  std::uint32_t compound(const xdr_writer& ops, std::uint32_t numops, bool sequenced, std::vector<std::byte>& reply,
                         std::size_t* results_at);
  void send_record(const std::vector<std::byte>& msg);
  std::vector<std::byte> receive_record();

  int fd_ = -1;
  std::vector<std::string> root_path_;
  std::uint32_t xid_ = 1;
  std::uint64_t clientid_ = 0;
  std::byte sessionid_[16]{};
  std::uint32_t seqid_ = 0;  // of slot 0, last used
  bool have_session_ = false;
};

}  // namespace vnfs::bench
