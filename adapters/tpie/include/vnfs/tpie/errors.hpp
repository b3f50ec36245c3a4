// vnfs TPIE adapter: the exceptions the accessor throws. C++17, independent of TPIE.
//
// Every failure is an io_error carrying the std::error_code that caused it and the local
// path the application named; what() is one line naming both. The TPIE-facing layer
// (override/tpie/file_accessor/vnfs_accessor.h) rethrows them as TPIE's own types:
//   out_of_space_error -> tpie::out_of_space_exception
//   io_error (end_of_file_error included) -> tpie::io_exception, with the same message
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace vnfs::tpie {

/// An I/O operation failed (open, read, write, seek, size, truncate, close, or a write that
/// was queued by an earlier write_i and failed behind the application).
class io_error : public std::runtime_error {
 public:
  io_error(const std::string& what, std::error_code code, std::string path)
      : std::runtime_error(what), code_(code), path_(std::move(path)) {}
  /// What the file system or the server answered (NFS4ERR_* in vnfs::nfs4's category,
  /// errno values in the generic or system category).
  std::error_code code() const noexcept { return code_; }
  /// The path given to open_* (the local spelling, also for files on vnfs).
  const std::string& path() const noexcept { return path_; }

 private:
  std::error_code code_;
  std::string path_;
};

/// The file system or the export is full (ENOSPC, EDQUOT, NFS4ERR_NOSPC, NFS4ERR_DQUOT).
class out_of_space_error : public io_error {
 public:
  using io_error::io_error;
};

/// read_i asked for bytes beyond the end of the file. The bytes that exist were delivered
/// and the position is the end of the file.
class end_of_file_error : public io_error {
 public:
  using io_error::io_error;
};

}  // namespace vnfs::tpie
