// vnfs Berkeley DB adapter, internal: the C library calls libdb makes on paths outside its
// hooks (stat, mkdir, chmod, fopen). This library defines them (libc_calls.cpp): a mapped
// path is served by vnfs, any other goes on to the next definition (the C library's).
#pragma once
#include <sys/stat.h>

namespace vnfs::bdb::detail {

/// stat(2) of a local or mapped path: 0, or -1 with errno.
int stat_path(const char* path, struct stat* sb);

}  // namespace vnfs::bdb::detail
