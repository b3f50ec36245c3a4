// vnfs NFSv4 layer: client ID and session operations — EXCHANGE_ID, CREATE_SESSION,
// DESTROY_SESSION, SEQUENCE, BIND_CONN_TO_SESSION, DESTROY_CLIENTID, RECLAIM_COMPLETE
// (RFC 8881 §18.33-18.37, §18.46, §18.50, §18.51).
//
// The RFC prefixes these results' status and OK arm (eir_status / eir_resok4, csr_status,
// sr_resok4, ...); here they are named status / resok4 as in every other result.
#pragma once

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

enum class state_protect_how4 : std::uint32_t { SP4_NONE = 0, SP4_MACH_CRED = 1, SP4_SSV = 2 };

enum class channel_dir_from_client4 : std::uint32_t {
  CDFC4_FORE = 0x1,
  CDFC4_BACK = 0x2,
  CDFC4_FORE_OR_BOTH = 0x3,
  CDFC4_BACK_OR_BOTH = 0x7,
};
enum class channel_dir_from_server4 : std::uint32_t {
  CDFS4_FORE = 0x1,
  CDFS4_BACK = 0x2,
  CDFS4_BOTH = 0x3,
};

struct state_protect_ops4 {
  bitmap4 spo_must_enforce;
  bitmap4 spo_must_allow;
  VNFS_XDR_FIELDS(spo_must_enforce, spo_must_allow)
  bool operator==(const state_protect_ops4&) const = default;
};

struct ssv_sp_parms4 {
  state_protect_ops4 ssp_ops;
  std::vector<sec_oid4> ssp_hash_algs;
  std::vector<sec_oid4> ssp_encr_algs;
  std::uint32_t ssp_window{};
  std::uint32_t ssp_num_gss_handles{};
  VNFS_XDR_FIELDS(ssp_ops, ssp_hash_algs, ssp_encr_algs, ssp_window, ssp_num_gss_handles)
  bool operator==(const ssv_sp_parms4&) const = default;
};

/// union state_protect4_a switch (state_protect_how4 spa_how) { SP4_NONE: void;
/// SP4_MACH_CRED: spa_mach_ops; SP4_SSV: spa_ssv_parms; } — other values are malformed.
struct state_protect4_a {
  state_protect_how4 spa_how{};
  state_protect_ops4 spa_mach_ops;
  ssv_sp_parms4 spa_ssv_parms;
  bool operator==(const state_protect4_a&) const = default;
};

struct EXCHANGE_ID4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_EXCHANGE_ID;
  client_owner4 eia_clientowner;
  std::uint32_t eia_flags{};  // EXCHGID4_FLAG_*
  state_protect4_a eia_state_protect;
  std::optional<nfs_impl_id4> eia_client_impl_id;  // nfs_impl_id4 eia_client_impl_id<1>
  VNFS_XDR_FIELDS(eia_clientowner, eia_flags, eia_state_protect, eia_client_impl_id)
  bool operator==(const EXCHANGE_ID4args&) const = default;
};

struct ssv_prot_info4 {
  state_protect_ops4 spi_ops;
  std::uint32_t spi_hash_alg{};
  std::uint32_t spi_encr_alg{};
  std::uint32_t spi_ssv_len{};
  std::uint32_t spi_window{};
  std::vector<gsshandle4_t> spi_handles;
  VNFS_XDR_FIELDS(spi_ops, spi_hash_alg, spi_encr_alg, spi_ssv_len, spi_window, spi_handles)
  bool operator==(const ssv_prot_info4&) const = default;
};

/// union state_protect4_r switch (state_protect_how4 spr_how) { SP4_NONE: void;
/// SP4_MACH_CRED: spr_mach_ops; SP4_SSV: spr_ssv_info; } — other values are malformed.
struct state_protect4_r {
  state_protect_how4 spr_how{};
  state_protect_ops4 spr_mach_ops;
  ssv_prot_info4 spr_ssv_info;
  bool operator==(const state_protect4_r&) const = default;
};

/// eir_server_scope is at most NFS4_OPAQUE_LIMIT bytes.
struct EXCHANGE_ID4resok {
  clientid4 eir_clientid{};
  sequenceid4 eir_sequenceid{};
  std::uint32_t eir_flags{};
  state_protect4_r eir_state_protect;
  server_owner4 eir_server_owner;
  std::vector<std::byte> eir_server_scope;
  std::optional<nfs_impl_id4> eir_server_impl_id;  // nfs_impl_id4 eir_server_impl_id<1>
  bool operator==(const EXCHANGE_ID4resok&) const = default;
};
struct EXCHANGE_ID4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_EXCHANGE_ID;
  nfsstat4 status{};
  EXCHANGE_ID4resok resok4;
  bool operator==(const EXCHANGE_ID4res&) const = default;
};

struct channel_attrs4 {
  count4 ca_headerpadsize{};
  count4 ca_maxrequestsize{};
  count4 ca_maxresponsesize{};
  count4 ca_maxresponsesize_cached{};
  count4 ca_maxoperations{};
  count4 ca_maxrequests{};
  std::optional<std::uint32_t> ca_rdma_ird;  // uint32_t ca_rdma_ird<1>
  VNFS_XDR_FIELDS(ca_headerpadsize, ca_maxrequestsize, ca_maxresponsesize,
                  ca_maxresponsesize_cached, ca_maxoperations, ca_maxrequests, ca_rdma_ird)
  bool operator==(const channel_attrs4&) const = default;
};

struct gss_cb_handles4 {
  rpc_gss_svc_t gcbp_service{rpc_gss_svc_t::RPC_GSS_SVC_NONE};
  gsshandle4_t gcbp_handle_from_server;
  gsshandle4_t gcbp_handle_from_client;
  VNFS_XDR_FIELDS(gcbp_service, gcbp_handle_from_server, gcbp_handle_from_client)
  bool operator==(const gss_cb_handles4&) const = default;
};

/// union callback_sec_parms4 switch (uint32_t cb_secflavor) { AUTH_NONE: void;
/// AUTH_SYS: cbsp_sys_cred; RPCSEC_GSS: cbsp_gss_handles; } — other flavors are malformed.
struct callback_sec_parms4 {
  std::uint32_t cb_secflavor{AUTH_NONE};
  authsys_parms cbsp_sys_cred;
  gss_cb_handles4 cbsp_gss_handles;
  bool operator==(const callback_sec_parms4&) const = default;
};

struct CREATE_SESSION4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_CREATE_SESSION;
  clientid4 csa_clientid{};
  sequenceid4 csa_sequence{};
  std::uint32_t csa_flags{};  // CREATE_SESSION4_FLAG_*
  channel_attrs4 csa_fore_chan_attrs;
  channel_attrs4 csa_back_chan_attrs;
  std::uint32_t csa_cb_program{};
  std::vector<callback_sec_parms4> csa_sec_parms;
  VNFS_XDR_FIELDS(csa_clientid, csa_sequence, csa_flags, csa_fore_chan_attrs,
                  csa_back_chan_attrs, csa_cb_program, csa_sec_parms)
  bool operator==(const CREATE_SESSION4args&) const = default;
};
struct CREATE_SESSION4resok {
  sessionid4 csr_sessionid{};
  sequenceid4 csr_sequence{};
  std::uint32_t csr_flags{};
  channel_attrs4 csr_fore_chan_attrs;
  channel_attrs4 csr_back_chan_attrs;
  VNFS_XDR_FIELDS(csr_sessionid, csr_sequence, csr_flags, csr_fore_chan_attrs,
                  csr_back_chan_attrs)
  bool operator==(const CREATE_SESSION4resok&) const = default;
};
struct CREATE_SESSION4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_CREATE_SESSION;
  nfsstat4 status{};
  CREATE_SESSION4resok resok4;
  bool operator==(const CREATE_SESSION4res&) const = default;
};

struct DESTROY_SESSION4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_DESTROY_SESSION;
  sessionid4 dsa_sessionid{};
  VNFS_XDR_FIELDS(dsa_sessionid)
  bool operator==(const DESTROY_SESSION4args&) const = default;
};
struct DESTROY_SESSION4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_DESTROY_SESSION;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const DESTROY_SESSION4res&) const = default;
};

struct SEQUENCE4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SEQUENCE;
  sessionid4 sa_sessionid{};
  sequenceid4 sa_sequenceid{};
  slotid4 sa_slotid{};
  slotid4 sa_highest_slotid{};
  bool sa_cachethis{};
  VNFS_XDR_FIELDS(sa_sessionid, sa_sequenceid, sa_slotid, sa_highest_slotid, sa_cachethis)
  bool operator==(const SEQUENCE4args&) const = default;
};
struct SEQUENCE4resok {
  sessionid4 sr_sessionid{};
  sequenceid4 sr_sequenceid{};
  slotid4 sr_slotid{};
  slotid4 sr_highest_slotid{};
  slotid4 sr_target_highest_slotid{};
  std::uint32_t sr_status_flags{};  // SEQ4_STATUS_*
  VNFS_XDR_FIELDS(sr_sessionid, sr_sequenceid, sr_slotid, sr_highest_slotid,
                  sr_target_highest_slotid, sr_status_flags)
  bool operator==(const SEQUENCE4resok&) const = default;
};
struct SEQUENCE4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_SEQUENCE;
  nfsstat4 status{};
  SEQUENCE4resok resok4;
  bool operator==(const SEQUENCE4res&) const = default;
};

struct BIND_CONN_TO_SESSION4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_BIND_CONN_TO_SESSION;
  sessionid4 bctsa_sessid{};
  channel_dir_from_client4 bctsa_dir{channel_dir_from_client4::CDFC4_FORE};
  bool bctsa_use_conn_in_rdma_mode{};
  VNFS_XDR_FIELDS(bctsa_sessid, bctsa_dir, bctsa_use_conn_in_rdma_mode)
  bool operator==(const BIND_CONN_TO_SESSION4args&) const = default;
};
struct BIND_CONN_TO_SESSION4resok {
  sessionid4 bctsr_sessid{};
  channel_dir_from_server4 bctsr_dir{channel_dir_from_server4::CDFS4_FORE};
  bool bctsr_use_conn_in_rdma_mode{};
  VNFS_XDR_FIELDS(bctsr_sessid, bctsr_dir, bctsr_use_conn_in_rdma_mode)
  bool operator==(const BIND_CONN_TO_SESSION4resok&) const = default;
};
struct BIND_CONN_TO_SESSION4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_BIND_CONN_TO_SESSION;
  nfsstat4 status{};
  BIND_CONN_TO_SESSION4resok resok4;
  bool operator==(const BIND_CONN_TO_SESSION4res&) const = default;
};

struct DESTROY_CLIENTID4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_DESTROY_CLIENTID;
  clientid4 dca_clientid{};
  VNFS_XDR_FIELDS(dca_clientid)
  bool operator==(const DESTROY_CLIENTID4args&) const = default;
};
struct DESTROY_CLIENTID4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_DESTROY_CLIENTID;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const DESTROY_CLIENTID4res&) const = default;
};

struct RECLAIM_COMPLETE4args {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_RECLAIM_COMPLETE;
  bool rca_one_fs{};
  VNFS_XDR_FIELDS(rca_one_fs)
  bool operator==(const RECLAIM_COMPLETE4args&) const = default;
};
struct RECLAIM_COMPLETE4res {
  static constexpr nfs_opnum4 opnum = nfs_opnum4::OP_RECLAIM_COMPLETE;
  nfsstat4 status{};
  VNFS_XDR_FIELDS(status)
  bool operator==(const RECLAIM_COMPLETE4res&) const = default;
};

}  // namespace vnfs::nfs4

VNFS_NFS4_CODEC(state_protect4_a);
VNFS_NFS4_CODEC(state_protect4_r);
VNFS_NFS4_CODEC(EXCHANGE_ID4resok);
VNFS_NFS4_CODEC(callback_sec_parms4);
