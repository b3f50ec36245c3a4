// vnfs Berkeley DB adapter: the drop-in for unmodified Berkeley DB programs (LD_PRELOAD).
//
//   export VNFS_MAP='/local/prefix=nfs://host:port/path[;/other=URL...]'
//   LD_PRELOAD=libvnfs_bdb_preload.so db5.3_load -f dump /local/prefix/a.db
//
// At load time it reads VNFS_MAP (syntax in vnfs/bdb/vnfs_map.hpp) and attaches
// (vnfs/bdb/attach.hpp) to the Berkeley DB library the program uses, C (libdb-5.3) or C++
// (libdb_cxx-5.3), found by name among the loaded libraries. Without VNFS_MAP, or in a
// program without Berkeley DB, it does nothing. A malformed VNFS_MAP is one line on stderr,
// and then every file Berkeley DB opens fails with EINVAL (the prefixes being unknown,
// nothing may go to the local disk in their place).
#include <dlfcn.h>
#include <errno.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "vnfs/bdb/attach.hpp"

namespace {

int refuse_open(const char*, int, ...) {
  errno = EINVAL;
  return -1;
}

__attribute__((constructor)) void vnfs_bdb_preload() {
  const char* map = std::getenv("VNFS_MAP");
  if (!map || !::dlsym(RTLD_DEFAULT, "db_env_set_func_open")) return;
  try {
    vnfs::bdb::attach(vnfs::bdb::parse_vnfs_map(map));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vnfs bdb: %s\n", e.what());
    auto set_open = reinterpret_cast<int (*)(int (*)(const char*, int, ...))>(::dlsym(RTLD_DEFAULT, "db_env_set_func_open"));
    set_open(refuse_open);
  }
}

}  // namespace
