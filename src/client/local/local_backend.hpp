// vnfs client: the file:// backend — the client API over local POSIX calls, so tools work
// without a server and tests can compare results with NFS.
//
// Confinement: every call is made relative to an O_PATH descriptor of the root, and no
// symlink is ever followed on the way (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
// or a component-by-component O_NOFOLLOW walk where openat2 is missing), so a symlink inside
// the root cannot lead out of it. Every path is checked again to be normal (is_normal_path:
// no "." or ".." component, no NUL), whatever the front did, and refused with EINVAL. As with the nfs backend: open refuses a symlink (ELOOP), a
// directory (EISDIR) and other non-regular files (EINVAL); stat describes a link itself.
// New files and directories get exactly the requested permission bits (no umask), as vnfsd
// creates them.
//
// Threads: the POSIX calls run on at most client_options::local_threads workers, started as
// calls need them (worker_pool.hpp); `done` is called on a worker. A scalar call is one hand-off to a worker; a vectorized call is one too: its
// items run one after another on that worker, each making the POSIX calls its scalar
// calls would (same results and errors, stopping at the first failure), and the
// directories the call's paths name are resolved once per call (an O_PATH descriptor each,
// opened as above) and the items' last components made relative to them (openat, mkdirat,
// fstatat, ...). vscopy copies on the spot with copy_file_range (through memory where the
// kernel cannot), as vcopy would copy: source regular (else EINVAL), destination created
// with its permission bits, truncated for a whole-file copy. Errors are system errors (errno values in std::system_category()).
// Reads and writes go straight between the file and the caller's memory (pread/pwrite),
// registered or not: both count as payload_bytes_direct; compounds and operations stay 0.
// A registered slice that was deregistered, or whose access does not allow the transfer,
// is refused with errc::bad_argument. A file of another backend (or a closed one) is EBADF.
//
// readdir: pages of at most local_readdir_page entries ("." and ".." left out); the cookie is
// a telldir() position of the directory (0 = its start). An entry removed between readdir(3)
// and its fstatat is left out.
//
// close_all: calls accepted before it finish (queued ones with errc::closed), then the
// descriptors of files still open are closed; later calls complete with errc::closed, still on
// a worker. It may be called from a done callback (it does not wait for that call); the
// backend must not be destroyed from one (its destructor joins the workers).
#pragma once

#include <filesystem>
#include <memory>

#include "client/backend.hpp"

namespace vnfs::detail {

/// The number of entries one readdir call returns at most (one "page" of a listing).
inline constexpr std::size_t local_readdir_page = 1024;

/// A backend rooted at `root` (which must name a directory; symlinks in `root` itself are
/// followed, as the user named it). Throws std::system_error if it cannot be opened.
std::unique_ptr<backend> make_local_backend(const std::filesystem::path& root, const client_options& options);

/// For tests: the worker threads a file:// backend (`b`, made by make_local_backend) has
/// started so far.
std::size_t local_workers_started(backend& b);

/// For tests: resolve paths by the portable component-by-component O_NOFOLLOW walk (used
/// where openat2 is missing) instead of openat2, in every local backend of the process.
void set_local_resolution_walk(bool on);

}  // namespace vnfs::detail
