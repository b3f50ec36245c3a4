#include "server/ops/status_mapping.hpp"

#include <cerrno>

#include "server/fs/error.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;

nfsstat4 to_nfsstat(std::error_code ec) noexcept {
  if (!ec) return nfsstat4::NFS4_OK;
  if (ec.category() == fs::category()) {
    switch (static_cast<fs::errc>(ec.value())) {
      case fs::errc::bad_handle: return nfsstat4::NFS4ERR_BADHANDLE;
      case fs::errc::empty_name: return nfsstat4::NFS4ERR_INVAL;
      case fs::errc::bad_name: return nfsstat4::NFS4ERR_BADNAME;
      case fs::errc::bad_cookie: return nfsstat4::NFS4ERR_BAD_COOKIE;
      case fs::errc::wrong_type: return nfsstat4::NFS4ERR_WRONG_TYPE;
    }
    return nfsstat4::NFS4ERR_SERVERFAULT;
  }
  if (ec.category() != std::system_category() && ec.category() != std::generic_category())
    return nfsstat4::NFS4ERR_SERVERFAULT;
  switch (ec.value()) {
    case EPERM: return nfsstat4::NFS4ERR_PERM;
    case ENOENT: return nfsstat4::NFS4ERR_NOENT;
    case EIO: return nfsstat4::NFS4ERR_IO;
    case ENXIO: return nfsstat4::NFS4ERR_NXIO;
    case EACCES: return nfsstat4::NFS4ERR_ACCESS;
    case EEXIST: return nfsstat4::NFS4ERR_EXIST;
    case EXDEV: return nfsstat4::NFS4ERR_XDEV;
    case ENOTDIR: return nfsstat4::NFS4ERR_NOTDIR;
    case EISDIR: return nfsstat4::NFS4ERR_ISDIR;
    case EINVAL: return nfsstat4::NFS4ERR_INVAL;
    case EFBIG: return nfsstat4::NFS4ERR_FBIG;
    case ENOSPC: return nfsstat4::NFS4ERR_NOSPC;
    case EROFS: return nfsstat4::NFS4ERR_ROFS;
    case EMLINK: return nfsstat4::NFS4ERR_MLINK;
    case ENAMETOOLONG: return nfsstat4::NFS4ERR_NAMETOOLONG;
    case ENOTEMPTY: return nfsstat4::NFS4ERR_NOTEMPTY;
    case EDQUOT: return nfsstat4::NFS4ERR_DQUOT;
    case ESTALE: return nfsstat4::NFS4ERR_STALE;
    case ELOOP: return nfsstat4::NFS4ERR_SYMLINK;
    case EOPNOTSUPP: return nfsstat4::NFS4ERR_NOTSUPP;
    case EAGAIN: return nfsstat4::NFS4ERR_DELAY;
    case EBADF: return nfsstat4::NFS4ERR_BAD_STATEID;
    case EOVERFLOW: return nfsstat4::NFS4ERR_FBIG;
    default: return nfsstat4::NFS4ERR_IO;
  }
}

}  // namespace vnfs::server
