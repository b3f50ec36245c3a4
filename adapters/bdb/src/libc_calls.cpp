#include "libc_calls.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include "mapped_fs.hpp"

namespace vnfs::bdb::detail {

namespace {

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

int fail(int err) {
  errno = err;
  return -1;
}

/// A mapped file's contents, read whole for fopen(path, "r") (DB_CONFIG).
struct read_cookie {
  std::string data;
  std::size_t pos = 0;
};

ssize_t cookie_read(void* c, char* buf, size_t n) {
  auto* rc = static_cast<read_cookie*>(c);
  std::size_t k = std::min(n, rc->data.size() - rc->pos);
  std::memcpy(buf, rc->data.data() + rc->pos, k);
  rc->pos += k;
  return static_cast<ssize_t>(k);
}

int cookie_close(void* c) {
  delete static_cast<read_cookie*>(c);
  return 0;
}

}  // namespace

int stat_path(const char* path, struct stat* sb) {
  static auto real = next<int (*)(const char*, struct stat*)>("stat");
  auto r = lookup(path);
  if (!r) return real(path, sb);
  if (r->error) return fail(r->error);
  file_stat st;
  if (int err = call(*r, "stat of", path, [&](client& c) { st = c.stat(r->path); })) return fail(err);
  adapters::to_posix_stat(st, r->t->map.url, sb);
  return 0;
}

}  // namespace vnfs::bdb::detail

using namespace vnfs;
using namespace vnfs::bdb::detail;

extern "C" {

int stat(const char* path, struct stat* sb) noexcept { return stat_path(path, sb); }

int mkdir(const char* path, mode_t mode) noexcept {
  static auto real = next<int (*)(const char*, mode_t)>("mkdir");
  auto r = lookup(path);
  if (!r) return real(path, mode);
  if (r->error) return fail(r->error);
  if (int err = call(*r, "mkdir of", path, [&](client& c) { c.mkdir(r->path, mode); })) return fail(err);
  return 0;
}

int chmod(const char* path, mode_t mode) noexcept {
  static auto real = next<int (*)(const char*, mode_t)>("chmod");
  auto r = lookup(path);
  if (!r) return real(path, mode);
  if (r->error) return fail(r->error);
  vattr a(r->path, attr::mode);
  a.stat.mode = mode & 07777;
  if (int err = call(*r, "chmod of", path, [&](client& c) {
        vresult res = c.vsetattrs(std::span<const vattr>(&a, 1));
        if (res.error) throw std::system_error(res.error);
      }))
    return fail(err);
  return 0;
}

FILE* fopen(const char* path, const char* mode) {
  static auto real = next<FILE* (*)(const char*, const char*)>("fopen");
  auto r = lookup(path);
  if (!r) return real(path, mode);
  if (r->error) {
    errno = r->error;
    return nullptr;
  }
  if (std::strcmp(mode, "r") != 0 && std::strcmp(mode, "rb") != 0 && std::strcmp(mode, "re") != 0) {
    report(*r->t, "fopen for writing is not supported for", path, "refused");
    errno = ENOTSUP;
    return nullptr;
  }
  auto* cookie = new read_cookie;
  if (int err = call(*r, "read of", path, [&](client& c) {
        file f = c.open(r->path, O_RDONLY);
        char buf[65536];
        for (;;) {
          std::size_t k = c.pread(f, cookie->data.size(), std::span<std::byte>(reinterpret_cast<std::byte*>(buf), sizeof buf));
          if (k == 0) break;
          cookie->data.append(buf, k);
          if (cookie->data.size() > (std::size_t(16) << 20))
            throw std::system_error(std::make_error_code(std::errc::file_too_large));
        }
        c.close(f);
      })) {
    delete cookie;
    errno = err;
    return nullptr;
  }
  FILE* fp = ::fopencookie(cookie, "r", cookie_io_functions_t{cookie_read, nullptr, nullptr, cookie_close});
  if (!fp) delete cookie;
  return fp;
}

}  // extern "C"
