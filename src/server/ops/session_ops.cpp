// Session and client operations (RFC 8881 §18.34-18.37, §18.50-18.51). SEQUENCE itself is
// executed by the dispatcher, which owns the slot and reply-cache logic.
#include "server/ops/handlers.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;

nfs4::EXCHANGE_ID4res handle(compound_context& ctx, const nfs4::EXCHANGE_ID4args& a) {
  return ctx.server.clients.exchange_id(a, ctx.principal);
}

nfs4::CREATE_SESSION4res handle(compound_context& ctx, const nfs4::CREATE_SESSION4args& a) {
  return ctx.server.clients.create_session(a, ctx.principal);
}

nfs4::DESTROY_SESSION4res handle(compound_context& ctx, const nfs4::DESTROY_SESSION4args& a) {
  nfs4::DESTROY_SESSION4res res;
  res.status = ctx.server.clients.destroy_session(a.dsa_sessionid);
  return res;
}

nfs4::DESTROY_CLIENTID4res handle(compound_context& ctx, const nfs4::DESTROY_CLIENTID4args& a) {
  nfs4::DESTROY_CLIENTID4res res;
  res.status = ctx.server.clients.destroy_clientid(a.dca_clientid);
  return res;
}

// Connections are not bound to sessions (no state protection, no back channel): any
// connection may carry any session's traffic, so binding only checks the session exists.
nfs4::BIND_CONN_TO_SESSION4res handle(compound_context& ctx,
                                      const nfs4::BIND_CONN_TO_SESSION4args& a) {
  nfs4::BIND_CONN_TO_SESSION4res res;
  if (!ctx.server.clients.find_session(a.bctsa_sessid)) {
    res.status = nfsstat4::NFS4ERR_BADSESSION;
    return res;
  }
  res.resok4.bctsr_sessid = a.bctsa_sessid;
  res.resok4.bctsr_dir = nfs4::channel_dir_from_server4::CDFS4_FORE;
  res.resok4.bctsr_use_conn_in_rdma_mode = false;
  res.status = nfsstat4::NFS4_OK;
  return res;
}

// rca_one_fs TRUE ends reclaims for the file system of the current filehandle only; vnfsd
// exports one file system and ends the client's reclaims when rca_one_fs is FALSE, so a
// per-file-system RECLAIM_COMPLETE only needs a current filehandle and changes nothing, and
// a later global one still succeeds (§18.51.3, §18.51.4).
nfs4::RECLAIM_COMPLETE4res handle(compound_context& ctx, const nfs4::RECLAIM_COMPLETE4args& a) {
  nfs4::RECLAIM_COMPLETE4res res;
  if (a.rca_one_fs) {
    res.status = ctx.current ? nfsstat4::NFS4_OK : nfsstat4::NFS4ERR_NOFILEHANDLE;
    return res;
  }
  res.status = ctx.server.clients.reclaim_complete(ctx.clientid);
  return res;
}

}  // namespace vnfs::server
