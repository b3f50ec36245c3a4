// vnfsd export file system: error values.
//
// The layer reports failures as std::error_code. Most are plain errno values in
// std::system_category(), exactly as the kernel returned them (after a few documented
// normalizations); the few conditions that have no errno of their own are fs::errc values
// in fs::category(). Suggested mapping for the NFSv4.1 handlers:
//
//   fs::errc::bad_handle   -> NFS4ERR_BADHANDLE   (wrong format/size/version or bad MAC)
//   fs::errc::empty_name   -> NFS4ERR_INVAL       (zero-length component)
//   fs::errc::bad_name     -> NFS4ERR_BADNAME     ("." / ".." / contains '/' or NUL)
//   fs::errc::bad_cookie   -> NFS4ERR_BAD_COOKIE  (readdir cookie rejected)
//   fs::errc::wrong_type   -> NFS4ERR_WRONG_TYPE  (data I/O on a fifo/socket/device, ...)
//   ESTALE       -> NFS4ERR_STALE      (valid handle, object gone; includes nlink == 0)
//   ELOOP        -> NFS4ERR_SYMLINK    (data I/O or OPEN on a symlink)
//   EISDIR       -> NFS4ERR_ISDIR      ENOTDIR -> NFS4ERR_NOTDIR
//   ENOENT       -> NFS4ERR_NOENT      EEXIST  -> NFS4ERR_EXIST    ENOTEMPTY -> NFS4ERR_NOTEMPTY
//   EACCES       -> NFS4ERR_ACCESS     EPERM   -> NFS4ERR_PERM     EROFS     -> NFS4ERR_ROFS
//   EXDEV        -> NFS4ERR_XDEV       ENAMETOOLONG -> NFS4ERR_NAMETOOLONG
//   ENOSPC       -> NFS4ERR_NOSPC      EDQUOT  -> NFS4ERR_DQUOT    EFBIG     -> NFS4ERR_FBIG
//   EMLINK       -> NFS4ERR_MLINK      EINVAL  -> NFS4ERR_INVAL    EOPNOTSUPP -> NFS4ERR_NOTSUPP
//   anything else -> NFS4ERR_IO (EIO) or NFS4ERR_SERVERFAULT.
#pragma once

#include <cerrno>
#include <system_error>
#include <type_traits>

namespace vnfs::server::fs {

enum class errc {
  bad_handle = 1,  ///< not a filehandle of this export (format or MAC check failed)
  empty_name,      ///< a name component is empty
  bad_name,        ///< "." or "..", or a name containing '/' or NUL
  bad_cookie,      ///< a readdir cookie the file system rejects
  wrong_type,      ///< operation not defined for this kind of object
};

/// The category of fs::errc ("vnfs.server.fs").
const std::error_category& category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), category()};
}

/// errno as an error_code in the system category.
inline std::error_code sys_error(int e) noexcept { return {e, std::system_category()}; }
/// The errno the system call that just failed left.
inline std::error_code last_error() noexcept { return sys_error(errno); }

/// Whether resolving a filehandle failed because its object is gone (ESTALE, ENOENT) or it
/// names nothing of this export (errc::bad_handle): an undo or replay step that needs the
/// object has nothing to do.
inline bool object_gone(const std::error_code& ec) noexcept {
  return ec == sys_error(ESTALE) || ec == sys_error(ENOENT) || ec == make_error_code(errc::bad_handle);
}

}  // namespace vnfs::server::fs

template <>
struct std::is_error_code_enum<vnfs::server::fs::errc> : std::true_type {};
