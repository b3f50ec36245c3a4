// Hand-written codecs: discriminated unions (only the selected arm travels; a discriminant
// outside a union without a default arm is malformed) and structs with RFC-bounded members.
#include <string>

#include "vnfs/nfs4/compound.hpp"

namespace vnfs::xdr {

using namespace vnfs::nfs4;
using nfs4::detail::get_bounded;

namespace {
[[noreturn]] void bad_discriminant(const char* type) {
  throw decode_error(std::string("nfs4: invalid discriminant for ") + type);
}
void put_enum(encoder& e, auto v) { e.put_u32(static_cast<std::uint32_t>(v)); }
template <class E>
E get_enum(decoder& d) {
  return static_cast<E>(d.get_u32());
}
}  // namespace

// ---- types.hpp

void codec<settime4>::encode(encoder& e, const settime4& v) {
  put_enum(e, v.set_it);
  if (v.set_it == time_how4::SET_TO_CLIENT_TIME4) xdr::encode(e, v.time);
}
void codec<settime4>::decode(decoder& d, settime4& v) {
  v.set_it = get_enum<time_how4>(d);
  if (v.set_it == time_how4::SET_TO_CLIENT_TIME4) xdr::decode(d, v.time);
}

void codec<state_owner4>::encode(encoder& e, const state_owner4& v) {
  e.put_u64(v.clientid);
  e.put_opaque(v.owner);
}
void codec<state_owner4>::decode(decoder& d, state_owner4& v) {
  v.clientid = d.get_u64();
  get_bounded(d, v.owner, NFS4_OPAQUE_LIMIT);
}

void codec<client_owner4>::encode(encoder& e, const client_owner4& v) {
  xdr::encode(e, v.co_verifier);
  e.put_opaque(v.co_ownerid);
}
void codec<client_owner4>::decode(decoder& d, client_owner4& v) {
  xdr::decode(d, v.co_verifier);
  get_bounded(d, v.co_ownerid, NFS4_OPAQUE_LIMIT);
}

void codec<server_owner4>::encode(encoder& e, const server_owner4& v) {
  e.put_u64(v.so_minor_id);
  e.put_opaque(v.so_major_id);
}
void codec<server_owner4>::decode(decoder& d, server_owner4& v) {
  v.so_minor_id = d.get_u64();
  get_bounded(d, v.so_major_id, NFS4_OPAQUE_LIMIT);
}

void codec<authsys_parms>::encode(encoder& e, const authsys_parms& v) {
  e.put_u32(v.stamp);
  e.put_string(v.machinename);
  e.put_u32(v.uid);
  e.put_u32(v.gid);
  xdr::encode(e, v.gids);
}
void codec<authsys_parms>::decode(decoder& d, authsys_parms& v) {
  v.stamp = d.get_u32();
  v.machinename = d.get_string(255);
  v.uid = d.get_u32();
  v.gid = d.get_u32();
  std::uint32_t n = d.get_count(16);
  v.gids.resize(n);
  for (auto& g : v.gids) g = d.get_u32();
}

// ---- filehandle_ops.hpp

void codec<PUTFH4args>::encode(encoder& e, const PUTFH4args& v) { e.put_opaque(v.object); }
void codec<PUTFH4args>::decode(decoder& d, PUTFH4args& v) {
  get_bounded(d, v.object, NFS4_FHSIZE);
}
void codec<GETFH4resok>::encode(encoder& e, const GETFH4resok& v) { e.put_opaque(v.object); }
void codec<GETFH4resok>::decode(decoder& d, GETFH4resok& v) {
  get_bounded(d, v.object, NFS4_FHSIZE);
}

// ---- namespace_ops.hpp

void codec<createtype4>::encode(encoder& e, const createtype4& v) {
  put_enum(e, v.type);
  switch (v.type) {
    case nfs_ftype4::NF4LNK: e.put_string(v.linkdata); break;
    case nfs_ftype4::NF4BLK:
    case nfs_ftype4::NF4CHR: xdr::encode(e, v.devdata); break;
    default: break;
  }
}
void codec<createtype4>::decode(decoder& d, createtype4& v) {
  v.type = get_enum<nfs_ftype4>(d);
  switch (v.type) {
    case nfs_ftype4::NF4LNK: v.linkdata = d.get_string(); break;
    case nfs_ftype4::NF4BLK:
    case nfs_ftype4::NF4CHR: xdr::decode(d, v.devdata); break;
    default: break;
  }
}

void codec<dirlist4>::encode(encoder& e, const dirlist4& v) {
  for (const entry4& x : v.entries) {
    e.put_bool(true);  // the *entry4 link to this entry
    xdr::encode(e, x);
  }
  e.put_bool(false);
  e.put_bool(v.eof);
}
void codec<dirlist4>::decode(decoder& d, dirlist4& v) {
  v.entries.clear();
  // Each entry consumes input, so a hostile list is bounded by the message size.
  while (d.get_bool()) xdr::decode(d, v.entries.emplace_back());
  v.eof = d.get_bool();
}

void codec<secinfo4>::encode(encoder& e, const secinfo4& v) {
  e.put_u32(v.flavor);
  if (v.flavor == RPCSEC_GSS) xdr::encode(e, v.flavor_info);
}
void codec<secinfo4>::decode(decoder& d, secinfo4& v) {
  v.flavor = d.get_u32();
  if (v.flavor == RPCSEC_GSS) xdr::decode(d, v.flavor_info);
}

// ---- io_ops.hpp

void codec<netloc4>::encode(encoder& e, const netloc4& v) {
  put_enum(e, v.nl_type);
  switch (v.nl_type) {
    case netloc_type4::NL4_NAME: e.put_string(v.nl_name); break;
    case netloc_type4::NL4_URL: e.put_string(v.nl_url); break;
    case netloc_type4::NL4_NETADDR: xdr::encode(e, v.nl_addr); break;
  }
}
void codec<netloc4>::decode(decoder& d, netloc4& v) {
  v.nl_type = get_enum<netloc_type4>(d);
  switch (v.nl_type) {
    case netloc_type4::NL4_NAME: v.nl_name = d.get_string(); return;
    case netloc_type4::NL4_URL: v.nl_url = d.get_string(); return;
    case netloc_type4::NL4_NETADDR: xdr::decode(d, v.nl_addr); return;
  }
  bad_discriminant("netloc4");
}

void codec<COPY4res>::encode(encoder& e, const COPY4res& v) {
  put_enum(e, v.status);
  if (v.status == nfsstat4::NFS4_OK) xdr::encode(e, v.resok4);
  else if (v.status == nfsstat4::NFS4ERR_OFFLOAD_NO_REQS) xdr::encode(e, v.cr_requirements);
}
void codec<COPY4res>::decode(decoder& d, COPY4res& v) {
  v.status = get_enum<nfsstat4>(d);
  if (v.status == nfsstat4::NFS4_OK) xdr::decode(d, v.resok4);
  else if (v.status == nfsstat4::NFS4ERR_OFFLOAD_NO_REQS) xdr::decode(d, v.cr_requirements);
}

// ---- state_ops.hpp

void codec<createhow4>::encode(encoder& e, const createhow4& v) {
  put_enum(e, v.mode);
  switch (v.mode) {
    case createmode4::UNCHECKED4:
    case createmode4::GUARDED4: xdr::encode(e, v.createattrs); break;
    case createmode4::EXCLUSIVE4: xdr::encode(e, v.createverf); break;
    case createmode4::EXCLUSIVE4_1: xdr::encode(e, v.ch_createboth); break;
  }
}
void codec<createhow4>::decode(decoder& d, createhow4& v) {
  v.mode = get_enum<createmode4>(d);
  switch (v.mode) {
    case createmode4::UNCHECKED4:
    case createmode4::GUARDED4: xdr::decode(d, v.createattrs); return;
    case createmode4::EXCLUSIVE4: xdr::decode(d, v.createverf); return;
    case createmode4::EXCLUSIVE4_1: xdr::decode(d, v.ch_createboth); return;
  }
  bad_discriminant("createhow4");
}

void codec<openflag4>::encode(encoder& e, const openflag4& v) {
  put_enum(e, v.opentype);
  if (v.opentype == opentype4::OPEN4_CREATE) xdr::encode(e, v.how);
}
void codec<openflag4>::decode(decoder& d, openflag4& v) {
  v.opentype = get_enum<opentype4>(d);
  if (v.opentype == opentype4::OPEN4_CREATE) xdr::decode(d, v.how);
}

void codec<open_claim4>::encode(encoder& e, const open_claim4& v) {
  put_enum(e, v.claim);
  switch (v.claim) {
    case open_claim_type4::CLAIM_NULL: e.put_string(v.file); break;
    case open_claim_type4::CLAIM_PREVIOUS: put_enum(e, v.delegate_type); break;
    case open_claim_type4::CLAIM_DELEGATE_CUR: xdr::encode(e, v.delegate_cur_info); break;
    case open_claim_type4::CLAIM_DELEGATE_PREV: e.put_string(v.file_delegate_prev); break;
    case open_claim_type4::CLAIM_FH:
    case open_claim_type4::CLAIM_DELEG_PREV_FH: break;
    case open_claim_type4::CLAIM_DELEG_CUR_FH: xdr::encode(e, v.oc_delegate_stateid); break;
  }
}
void codec<open_claim4>::decode(decoder& d, open_claim4& v) {
  v.claim = get_enum<open_claim_type4>(d);
  switch (v.claim) {
    case open_claim_type4::CLAIM_NULL: v.file = d.get_string(); return;
    case open_claim_type4::CLAIM_PREVIOUS:
      v.delegate_type = get_enum<open_delegation_type4>(d);
      return;
    case open_claim_type4::CLAIM_DELEGATE_CUR: xdr::decode(d, v.delegate_cur_info); return;
    case open_claim_type4::CLAIM_DELEGATE_PREV: v.file_delegate_prev = d.get_string(); return;
    case open_claim_type4::CLAIM_FH:
    case open_claim_type4::CLAIM_DELEG_PREV_FH: return;
    case open_claim_type4::CLAIM_DELEG_CUR_FH: xdr::decode(d, v.oc_delegate_stateid); return;
  }
  bad_discriminant("open_claim4");
}

void codec<nfs_space_limit4>::encode(encoder& e, const nfs_space_limit4& v) {
  put_enum(e, v.limitby);
  switch (v.limitby) {
    case limit_by4::NFS_LIMIT_SIZE: e.put_u64(v.filesize); break;
    case limit_by4::NFS_LIMIT_BLOCKS: xdr::encode(e, v.mod_blocks); break;
  }
}
void codec<nfs_space_limit4>::decode(decoder& d, nfs_space_limit4& v) {
  v.limitby = get_enum<limit_by4>(d);
  switch (v.limitby) {
    case limit_by4::NFS_LIMIT_SIZE: v.filesize = d.get_u64(); return;
    case limit_by4::NFS_LIMIT_BLOCKS: xdr::decode(d, v.mod_blocks); return;
  }
  bad_discriminant("nfs_space_limit4");
}

void codec<open_none_delegation4>::encode(encoder& e, const open_none_delegation4& v) {
  put_enum(e, v.ond_why);
  if (v.ond_why == why_no_delegation4::WND4_CONTENTION) e.put_bool(v.ond_server_will_push_deleg);
  else if (v.ond_why == why_no_delegation4::WND4_RESOURCE)
    e.put_bool(v.ond_server_will_signal_avail);
}
void codec<open_none_delegation4>::decode(decoder& d, open_none_delegation4& v) {
  v.ond_why = get_enum<why_no_delegation4>(d);
  if (v.ond_why == why_no_delegation4::WND4_CONTENTION) v.ond_server_will_push_deleg = d.get_bool();
  else if (v.ond_why == why_no_delegation4::WND4_RESOURCE)
    v.ond_server_will_signal_avail = d.get_bool();
}

void codec<open_delegation4>::encode(encoder& e, const open_delegation4& v) {
  put_enum(e, v.delegation_type);
  switch (v.delegation_type) {
    case open_delegation_type4::OPEN_DELEGATE_NONE: break;
    case open_delegation_type4::OPEN_DELEGATE_READ: xdr::encode(e, v.read); break;
    case open_delegation_type4::OPEN_DELEGATE_WRITE: xdr::encode(e, v.write); break;
    case open_delegation_type4::OPEN_DELEGATE_NONE_EXT: xdr::encode(e, v.od_whynone); break;
  }
}
void codec<open_delegation4>::decode(decoder& d, open_delegation4& v) {
  v.delegation_type = get_enum<open_delegation_type4>(d);
  switch (v.delegation_type) {
    case open_delegation_type4::OPEN_DELEGATE_NONE: return;
    case open_delegation_type4::OPEN_DELEGATE_READ: xdr::decode(d, v.read); return;
    case open_delegation_type4::OPEN_DELEGATE_WRITE: xdr::decode(d, v.write); return;
    case open_delegation_type4::OPEN_DELEGATE_NONE_EXT: xdr::decode(d, v.od_whynone); return;
  }
  bad_discriminant("open_delegation4");
}

void codec<CLOSE4res>::encode(encoder& e, const CLOSE4res& v) {
  put_enum(e, v.status);
  if (v.status == nfsstat4::NFS4_OK) xdr::encode(e, v.open_stateid);
}
void codec<CLOSE4res>::decode(decoder& d, CLOSE4res& v) {
  v.status = get_enum<nfsstat4>(d);
  if (v.status == nfsstat4::NFS4_OK) xdr::decode(d, v.open_stateid);
}

void codec<locker4>::encode(encoder& e, const locker4& v) {
  e.put_bool(v.new_lock_owner);
  if (v.new_lock_owner) xdr::encode(e, v.open_owner);
  else xdr::encode(e, v.lock_owner);
}
void codec<locker4>::decode(decoder& d, locker4& v) {
  v.new_lock_owner = d.get_bool();
  if (v.new_lock_owner) xdr::decode(d, v.open_owner);
  else xdr::decode(d, v.lock_owner);
}

void codec<LOCK4res>::encode(encoder& e, const LOCK4res& v) {
  put_enum(e, v.status);
  if (v.status == nfsstat4::NFS4_OK) xdr::encode(e, v.resok4);
  else if (v.status == nfsstat4::NFS4ERR_DENIED) xdr::encode(e, v.denied);
}
void codec<LOCK4res>::decode(decoder& d, LOCK4res& v) {
  v.status = get_enum<nfsstat4>(d);
  if (v.status == nfsstat4::NFS4_OK) xdr::decode(d, v.resok4);
  else if (v.status == nfsstat4::NFS4ERR_DENIED) xdr::decode(d, v.denied);
}

void codec<LOCKT4res>::encode(encoder& e, const LOCKT4res& v) {
  put_enum(e, v.status);
  if (v.status == nfsstat4::NFS4ERR_DENIED) xdr::encode(e, v.denied);
}
void codec<LOCKT4res>::decode(decoder& d, LOCKT4res& v) {
  v.status = get_enum<nfsstat4>(d);
  if (v.status == nfsstat4::NFS4ERR_DENIED) xdr::decode(d, v.denied);
}

void codec<LOCKU4res>::encode(encoder& e, const LOCKU4res& v) {
  put_enum(e, v.status);
  if (v.status == nfsstat4::NFS4_OK) xdr::encode(e, v.lock_stateid);
}
void codec<LOCKU4res>::decode(decoder& d, LOCKU4res& v) {
  v.status = get_enum<nfsstat4>(d);
  if (v.status == nfsstat4::NFS4_OK) xdr::decode(d, v.lock_stateid);
}

// ---- txn_ops.hpp

void codec<VNFS_TXN4args>::encode(encoder& e, const VNFS_TXN4args& v) {
  e.put_u32(v.action);
  e.put_u64(v.txnid);
  e.put_u32(v.flags);
  if (v.flags & TXN_RETRY) e.put_u64(v.retries);
}
void codec<VNFS_TXN4args>::decode(decoder& d, VNFS_TXN4args& v) {
  v.action = d.get_u32();
  v.txnid = d.get_u64();
  v.flags = d.get_u32();
  v.retries = v.flags & TXN_RETRY ? d.get_u64() : 0;
}

// ---- session_ops.hpp

void codec<state_protect4_a>::encode(encoder& e, const state_protect4_a& v) {
  put_enum(e, v.spa_how);
  switch (v.spa_how) {
    case state_protect_how4::SP4_NONE: break;
    case state_protect_how4::SP4_MACH_CRED: xdr::encode(e, v.spa_mach_ops); break;
    case state_protect_how4::SP4_SSV: xdr::encode(e, v.spa_ssv_parms); break;
  }
}
void codec<state_protect4_a>::decode(decoder& d, state_protect4_a& v) {
  v.spa_how = get_enum<state_protect_how4>(d);
  switch (v.spa_how) {
    case state_protect_how4::SP4_NONE: return;
    case state_protect_how4::SP4_MACH_CRED: xdr::decode(d, v.spa_mach_ops); return;
    case state_protect_how4::SP4_SSV: xdr::decode(d, v.spa_ssv_parms); return;
  }
  bad_discriminant("state_protect4_a");
}

void codec<state_protect4_r>::encode(encoder& e, const state_protect4_r& v) {
  put_enum(e, v.spr_how);
  switch (v.spr_how) {
    case state_protect_how4::SP4_NONE: break;
    case state_protect_how4::SP4_MACH_CRED: xdr::encode(e, v.spr_mach_ops); break;
    case state_protect_how4::SP4_SSV: xdr::encode(e, v.spr_ssv_info); break;
  }
}
void codec<state_protect4_r>::decode(decoder& d, state_protect4_r& v) {
  v.spr_how = get_enum<state_protect_how4>(d);
  switch (v.spr_how) {
    case state_protect_how4::SP4_NONE: return;
    case state_protect_how4::SP4_MACH_CRED: xdr::decode(d, v.spr_mach_ops); return;
    case state_protect_how4::SP4_SSV: xdr::decode(d, v.spr_ssv_info); return;
  }
  bad_discriminant("state_protect4_r");
}

void codec<EXCHANGE_ID4resok>::encode(encoder& e, const EXCHANGE_ID4resok& v) {
  e.put_u64(v.eir_clientid);
  e.put_u32(v.eir_sequenceid);
  e.put_u32(v.eir_flags);
  xdr::encode(e, v.eir_state_protect);
  xdr::encode(e, v.eir_server_owner);
  e.put_opaque(v.eir_server_scope);
  xdr::encode(e, v.eir_server_impl_id);
}
void codec<EXCHANGE_ID4resok>::decode(decoder& d, EXCHANGE_ID4resok& v) {
  v.eir_clientid = d.get_u64();
  v.eir_sequenceid = d.get_u32();
  v.eir_flags = d.get_u32();
  xdr::decode(d, v.eir_state_protect);
  xdr::decode(d, v.eir_server_owner);
  get_bounded(d, v.eir_server_scope, NFS4_OPAQUE_LIMIT);
  xdr::decode(d, v.eir_server_impl_id);
}

void codec<callback_sec_parms4>::encode(encoder& e, const callback_sec_parms4& v) {
  e.put_u32(v.cb_secflavor);
  if (v.cb_secflavor == AUTH_SYS) xdr::encode(e, v.cbsp_sys_cred);
  else if (v.cb_secflavor == RPCSEC_GSS) xdr::encode(e, v.cbsp_gss_handles);
}
void codec<callback_sec_parms4>::decode(decoder& d, callback_sec_parms4& v) {
  v.cb_secflavor = d.get_u32();
  switch (v.cb_secflavor) {
    case AUTH_NONE: return;
    case AUTH_SYS: xdr::decode(d, v.cbsp_sys_cred); return;
    case RPCSEC_GSS: xdr::decode(d, v.cbsp_gss_handles); return;
  }
  bad_discriminant("callback_sec_parms4");
}

}  // namespace vnfs::xdr

namespace vnfs::nfs4 {

std::size_t xdr_size(const entry4& e) noexcept {
  auto padded = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
  return 4 /* link */ + 8 /* cookie */ + 4 + padded(e.name.size()) +
         4 + 4 * e.attrs.attrmask.words.size() + 4 + padded(e.attrs.attr_vals.size());
}

}  // namespace vnfs::nfs4
