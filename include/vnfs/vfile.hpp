// vnfs public API: how an item of a vectorized call names its file (papers/000 Figure 5).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "vnfs/file.hpp"

namespace vnfs {

/// A file handle: the server's own name for an object, opaque to the application. Obtained
/// from vgetattrs (attr::handle); valid for the client that returned it (over file:// it is
/// the object's path).
struct file_handle {
  std::vector<std::byte> bytes;
  bool operator==(const file_handle&) const = default;
};

/// A file named by path (relative to the client's root, as in the scalar calls), by an open
/// file, or by a file handle. Items named by path are opened and closed by the call itself;
/// items named by an open file use its open state; items named by a handle use the
/// anonymous stateid (the server must allow I/O without an OPEN, as vnfsd and Ganesha do).
class vfile {
 public:
  vfile() = default;
  vfile(std::string path) : kind_(kind::path), path_(std::move(path)) {}
  vfile(const char* path) : kind_(kind::path), path_(path) {}
  vfile(file f) : kind_(kind::descriptor), file_(std::move(f)) {}
  vfile(file_handle h) : kind_(kind::handle), handle_(std::move(h)) {}

  const std::string* path() const { return kind_ == kind::path ? &path_ : nullptr; }
  const file* descriptor() const { return kind_ == kind::descriptor ? &file_ : nullptr; }
  const file_handle* handle() const { return kind_ == kind::handle ? &handle_ : nullptr; }

 private:
  // Three members rather than a std::variant: g++ 12 reports false maybe-uninitialized
  // warnings for vectors of variants holding vectors, which would break -Werror builds of
  // applications.
  enum class kind { path, descriptor, handle } kind_ = kind::path;
  std::string path_;
  file file_;
  file_handle handle_;
};

}  // namespace vnfs
