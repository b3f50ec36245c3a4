// vnfs NFSv4 layer: data operations — READ, WRITE, COMMIT (RFC 8881 §18.22, §18.32, §18.3)
// and the NFSv4.2 COPY (RFC 7862 §15.2).
//
// READ and WRITE payloads are xdr::bytes_view: encoded by reference (gather write from the
// caller's buffer) and decoded as a view into the received message, never copied. A decoded
// view is valid only as long as the buffer it was decoded from.
#pragma once

#include <algorithm>

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

struct READ4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_READ;
  stateid4 stateid;
  offset4 offset{};
  count4 count{};
  VNFS_XDR_FIELDS(stateid, offset, count)
  bool operator==(const READ4args&) const = default;
};
struct READ4resok {
  bool eof{};
  xdr::bytes_view data;
  /// A server's payload left in a file (xdr::file_range), encoded in place of `data` when
  /// file.fd >= 0: the transport sends it from the page cache. Never decoded.
  xdr::file_range file{};
  /// Compares the payload bytes, not the views' addresses.
  bool operator==(const READ4resok& o) const {
    return eof == o.eof && std::ranges::equal(data, o.data);
  }
};
struct READ4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_READ;
  nfsstat4 status{};
  READ4resok resok4;
  bool operator==(const READ4res&) const = default;
};

struct WRITE4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_WRITE;
  stateid4 stateid;
  offset4 offset{};
  stable_how4 stable{};
  xdr::bytes_view data;
  VNFS_XDR_FIELDS(stateid, offset, stable, data)
  /// Compares the payload bytes, not the views' addresses.
  bool operator==(const WRITE4args& o) const {
    return stateid == o.stateid && offset == o.offset && stable == o.stable &&
           std::ranges::equal(data, o.data);
  }
};
struct WRITE4resok {
  count4 count{};
  stable_how4 committed{};
  verifier4 writeverf{};
  VNFS_XDR_FIELDS(count, committed, writeverf)
  bool operator==(const WRITE4resok&) const = default;
};
struct WRITE4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_WRITE;
  nfsstat4 status{};
  WRITE4resok resok4;
  bool operator==(const WRITE4res&) const = default;
};

struct COMMIT4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_COMMIT;
  offset4 offset{};
  count4 count{};
  VNFS_XDR_FIELDS(offset, count)
  bool operator==(const COMMIT4args&) const = default;
};
struct COMMIT4resok {
  verifier4 writeverf{};
  VNFS_XDR_FIELDS(writeverf)
  bool operator==(const COMMIT4resok&) const = default;
};
struct COMMIT4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_COMMIT;
  nfsstat4 status{};
  COMMIT4resok resok4;
  bool operator==(const COMMIT4res&) const = default;
};

enum class netloc_type4 : std::uint32_t { NL4_NAME = 1, NL4_URL = 2, NL4_NETADDR = 3 };

/// union netloc4 switch (netloc_type4 nl_type) { NL4_NAME: nl_name; NL4_URL: nl_url;
/// NL4_NETADDR: nl_addr; } — no default arm: other types are malformed.
struct netloc4 {
  netloc_type4 nl_type{netloc_type4::NL4_NAME};
  utf8str_cis nl_name;
  utf8str_cis nl_url;
  netaddr4 nl_addr;
  bool operator==(const netloc4&) const = default;
};

struct COPY4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_COPY;
  stateid4 ca_src_stateid;
  stateid4 ca_dst_stateid;
  offset4 ca_src_offset{};
  offset4 ca_dst_offset{};
  length4 ca_count{};
  bool ca_consecutive{};
  bool ca_synchronous{};
  std::vector<netloc4> ca_source_server;  // empty: intra-server copy
  VNFS_XDR_FIELDS(ca_src_stateid, ca_dst_stateid, ca_src_offset, ca_dst_offset, ca_count,
                  ca_consecutive, ca_synchronous, ca_source_server)
  bool operator==(const COPY4args&) const = default;
};

struct write_response4 {
  std::optional<stateid4> wr_callback_id;  // stateid4 wr_callback_id<1>
  length4 wr_count{};
  stable_how4 wr_committed{};
  verifier4 wr_writeverf{};
  VNFS_XDR_FIELDS(wr_callback_id, wr_count, wr_committed, wr_writeverf)
  bool operator==(const write_response4&) const = default;
};

struct copy_requirements4 {
  bool cr_consecutive{};
  bool cr_synchronous{};
  VNFS_XDR_FIELDS(cr_consecutive, cr_synchronous)
  bool operator==(const copy_requirements4&) const = default;
};

struct COPY4resok {
  write_response4 cr_response;
  copy_requirements4 cr_requirements;
  VNFS_XDR_FIELDS(cr_response, cr_requirements)
  bool operator==(const COPY4resok&) const = default;
};

/// union COPY4res switch (nfsstat4 cr_status) { NFS4_OK: cr_resok4;
/// NFS4ERR_OFFLOAD_NO_REQS: cr_requirements; default: void; } (status/resok4 named as in
/// every other result).
struct COPY4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_COPY;
  nfsstat4 status{};
  COPY4resok resok4;
  copy_requirements4 cr_requirements;
  bool operator==(const COPY4res&) const = default;
};

}  // namespace vnfs::nfs4

namespace vnfs::xdr {

/// READ4resok: eof, then the payload as opaque<> by reference, or left in its file.
template <>
struct codec<nfs4::READ4resok> {
  static void encode(encoder& e, const nfs4::READ4resok& v) {
    e.put_bool(v.eof);
    if (v.file.fd >= 0) e.put_opaque_file(v.file);
    else e.put_opaque_ref(v.data);
  }
  static void decode(decoder& d, nfs4::READ4resok& v) {
    v.eof = d.get_bool();
    v.data = d.get_opaque();
  }
};

}  // namespace vnfs::xdr

VNFS_NFS4_CODEC(netloc4);
VNFS_NFS4_CODEC(COPY4res);
