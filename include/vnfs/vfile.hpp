// vnfs public API: how an item of a vectorized call names its file (papers/000 Figure 5).
#pragma once

#include <cstddef>
#include <string>
#include <variant>
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
  vfile(std::string path) : v_(std::move(path)) {}
  vfile(const char* path) : v_(std::string(path)) {}
  vfile(file f) : v_(std::move(f)) {}
  vfile(file_handle h) : v_(std::move(h)) {}

  const std::string* path() const { return std::get_if<std::string>(&v_); }
  const file* descriptor() const { return std::get_if<file>(&v_); }
  const file_handle* handle() const { return std::get_if<file_handle>(&v_); }

 private:
  std::variant<std::string, file, file_handle> v_;
};

}  // namespace vnfs
