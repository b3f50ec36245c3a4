// vnfsd export file system: name-space operations inside directories of an export.
//
// Every function works relative to a directory object's descriptor (never by absolute
// path), validates each name with check_name() first (errc::empty_name / errc::bad_name),
// never follows a symlink, and leaves permission checks to the kernel under the calling
// thread's identity (see scoped_identity). Failures are reported through `ec` (cleared on
// success); the returned object is then empty.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "server/fs/error.hpp"
#include "server/fs/object.hpp"

namespace vnfs::server::fs {

/// The object named `name` in `dir` (LOOKUP). A symlink comes back as a symlink object,
/// not followed; a mount point inside the export gives EXDEV; ENOTDIR if `dir` is not a
/// directory.
object lookup(const object& dir, std::string_view name, std::error_code& ec);

enum class create_mode {
  unchecked,  ///< create, or open the existing regular file
  guarded,    ///< create; EEXIST if the name exists
  exclusive,  ///< create with a verifier; a retry with the same verifier succeeds
};

using create_verifier = std::array<std::byte, 8>;

struct create_how {
  create_mode mode = create_mode::guarded;
  std::uint32_t perm = 0644;  ///< permission bits of a new file, applied exactly (no umask)
  create_verifier verifier{};  ///< exclusive only
  bool truncate = false;       ///< unchecked only: truncate an existing file to 0
};

struct create_result {
  object file;
  bool created = false;  ///< false: an existing file (unchecked, or an exclusive replay)
};

/// Creates (or, per `how`, opens) the regular file `name` in `dir`.
///
/// Exclusive creation stores the 8-byte verifier in the xattr `trusted.vnfs.createverf` of
/// the new file; when the name exists as a regular file carrying the same verifier the call
/// is a replay and succeeds with created = false, otherwise EEXIST. The verifier is dropped
/// by the first setattr(), write(), append() or copy() into the file, after which a retry gets EEXIST. If the
/// file system refuses the xattr, the new file is removed again and the error (ENOTSUP) is
/// returned, so the handler can answer NFS4ERR_NOTSUPP and the client fall back to guarded.
///
/// An existing non-regular name: EEXIST for guarded and exclusive; for unchecked EISDIR
/// (directory), ELOOP (symlink, never followed), errc::wrong_type (anything else).
/// Truncating an existing file needs write access (EACCES otherwise).
create_result create(const object& dir, std::string_view name, const create_how& how,
                     std::error_code& ec);

/// New objects get exactly the requested permission bits: the process umask is undone by
/// a chmod after creation (a directory keeps a set-gid bit inherited from its parent).

/// mkdir; returns the new directory.
object mkdir(const object& dir, std::string_view name, std::uint32_t perm, std::error_code& ec);

/// Creates symlink `name` whose content is `target`, verbatim (the server never follows it).
/// EINVAL if `target` is empty or contains NUL.
object symlink(const object& dir, std::string_view name, std::string_view target,
               std::error_code& ec);

/// Creates a fifo, socket, or character/block device node (major/minor only for devices;
/// devices need CAP_MKNOD, i.e. root identity). errc::wrong_type for other types.
object mknod(const object& dir, std::string_view name, file_type type, std::uint32_t perm,
             std::uint32_t major, std::uint32_t minor, std::error_code& ec);

/// Hard link to `target` (any non-directory object; EPERM for directories) as `name` in `dir`.
void link(const object& target, const object& dir, std::string_view name, std::error_code& ec);

/// Removes `name` from `dir`: a non-directory, or an empty directory (ENOTEMPTY otherwise).
void remove(const object& dir, std::string_view name, std::error_code& ec);

/// Renames `from_dir`/`from_name` to `to_dir`/`to_name` (both directories are objects of the
/// export, so nothing moves in or out of it), replacing a compatible target as POSIX does.
/// ENOTEMPTY (never EEXIST) for a non-empty target directory.
void rename(const object& from_dir, std::string_view from_name, const object& to_dir,
            std::string_view to_name, std::error_code& ec);

/// The content of symlink `link`, verbatim. EINVAL if it is not a symlink.
std::string readlink(const object& link, std::error_code& ec);

}  // namespace vnfs::server::fs
