// vnfs TPIE adapter, library vnfs_tpie_paths: the C library's path calls answered by vnfs for
// paths under a mapped prefix, so that TPIE's own file management reaches the server. TPIE
// manages its temporary files and directories with std::filesystem (exists, is_directory,
// create_directory, remove), which call stat, mkdir, remove, unlink and rmdir: without this,
// a temporary file on vnfs looks absent locally, is never removed from the server, and TPIE's
// temporary-space accounting never returns to zero.
//
// Defining these symbols in the program interposes them for the whole process (the C++
// library's calls included), so the library is linked whole, into TPIE programs only (the
// VNFS_TPIE_ROOT build does). Every path outside the mappings goes to the C library
// unchanged; a mapped path whose server cannot be reached fails with the errno of the cause
// (EIO for the connection's own failures).
#include <dlfcn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <system_error>

#include "mount_table.hpp"
#include "vnfs/adapters/posix_results.hpp"
#include "vnfs/tpie/errors.hpp"

namespace {

using vnfs::tpie::detail::remote_location;

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

int fail(int err) {
  errno = err;
  return -1;
}

/// Runs `call(location, remote path)` when `path` is mapped and returns 0 or -1 with errno set;
/// returns nothing for a path that is not mapped (the caller hands it to the C library).
template <class F>
std::optional<int> on_vnfs(const char* path, F&& call) {
  if (path == nullptr || *path == '\0') return std::nullopt;
  try {
    std::optional<remote_location> where =
        vnfs::tpie::detail::locate(path, vnfs::tpie::detail::on_bad_map::as_local);
    if (!where) return std::nullopt;
    call(*where, where->remote_path.empty() ? std::string("/") : where->remote_path);
    return 0;
  } catch (const vnfs::tpie::io_error& e) {
    return fail(vnfs::adapters::to_errno(e.code()));
  } catch (const std::system_error& e) {
    return fail(vnfs::adapters::to_errno(e.code()));
  } catch (const std::exception&) {
    return fail(EIO);
  }
}

/// stat and lstat of a mapped path (std::filesystem's status and symlink_status): the
/// server's attributes of the object itself.
std::optional<int> stat_on_vnfs(const char* path, struct stat* sb) {
  return on_vnfs(path, [&](const remote_location& at, const std::string& p) {
    vnfs::adapters::to_posix_stat(at.client->stat(p), at.url, sb);
  });
}

}  // namespace

extern "C" {

int stat(const char* path, struct stat* sb) noexcept {
  std::optional<int> r = stat_on_vnfs(path, sb);
  return r ? *r : real<int (*)(const char*, struct stat*)>("stat")(path, sb);
}

int lstat(const char* path, struct stat* sb) noexcept {
  std::optional<int> r = stat_on_vnfs(path, sb);
  return r ? *r : real<int (*)(const char*, struct stat*)>("lstat")(path, sb);
}

int mkdir(const char* path, mode_t mode) noexcept {
  std::optional<int> r = on_vnfs(path, [&](const remote_location& at, const std::string& p) { at.client->mkdir(p, mode & 07777); });
  return r ? *r : real<int (*)(const char*, mode_t)>("mkdir")(path, mode);
}

int unlink(const char* path) noexcept {
  std::optional<int> r = on_vnfs(path, [&](const remote_location& at, const std::string& p) { at.client->unlink(p); });
  return r ? *r : real<int (*)(const char*)>("unlink")(path);
}

int rmdir(const char* path) noexcept {
  std::optional<int> r = on_vnfs(path, [&](const remote_location& at, const std::string& p) { at.client->rmdir(p); });
  return r ? *r : real<int (*)(const char*)>("rmdir")(path);
}

// remove(3): a directory is removed as rmdir does, anything else as unlink does.
int remove(const char* path) noexcept {
  std::optional<int> r = on_vnfs(path, [&](const remote_location& at, const std::string& p) {
    if (at.client->stat(p).type == vnfs::file_type::directory)
      at.client->rmdir(p);
    else
      at.client->unlink(p);
  });
  return r ? *r : real<int (*)(const char*)>("remove")(path);
}

}  // extern "C"
