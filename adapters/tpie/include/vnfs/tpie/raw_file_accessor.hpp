// vnfs TPIE adapter: a raw file accessor with the interface and semantics of TPIE's
// (tpie::file_accessor::posix), for files on vnfs and local files alike. C++17, independent
// of TPIE: override/tpie/file_accessor/ makes it TPIE's default_raw_file_accessor.
//
// Where a path goes: see mounts.hpp. Local files are POSIX files; files on vnfs go through
// the block transfer engine (engine_options.hpp): reads ahead on sequential access, writes
// behind the application, all transfers between the server and registered memory.
//
// Contract (both kinds of file, checked against each other by tests/adapters/tpie):
//  - open_ro: an existing file, read-only. open_wo: created or emptied, for reading and
//    writing (as TPIE's posix accessor: O_RDWR|O_CREAT|O_TRUNC, mode 0666 & ~umask).
//    try_open_rw: an existing file for reading and writing; false when it does not exist.
//    open_rw_new: created if missing, contents kept if not (O_RDWR|O_CREAT).
//    Opening an open accessor closes its file first. Failures throw io_error. On vnfs, a
//    file created in a directory missing on the server gets its directories made there
//    (TPIE makes its temporary subdirectory locally, with std::filesystem).
//  - The position starts at 0. read_i and write_i move exactly `size` bytes at the position
//    and advance it; seek_i sets it anywhere, also beyond the end (a write there leaves
//    zeros between). read_i past the end delivers the bytes that exist, leaves the position
//    at the end and throws end_of_file_error.
//  - file_size_i counts every write_i made so far, queued or not. truncate_i sets the size
//    (shorter, or longer with zeros) and leaves the position alone.
//  - A queued write that fails is thrown (io_error with the path, or out_of_space_error) by
//    the next call on the accessor that starts after the failure arrived, at the latest by
//    close_i, once; the destructor prints an unreported failure on stderr. After such an
//    error the file stays open and usable.
//  - close_i waits for every queued write and closes; it does nothing when nothing is open.
//  - Every member may be called from any thread (TPIE's compressed streams call from their
//    background thread): calls on one accessor are serialised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "vnfs/tpie/cache_hint.hpp"
#include "vnfs/tpie/engine_options.hpp"
#include "vnfs/tpie/errors.hpp"
#include "vnfs/tpie/transfer_stats.hpp"

namespace vnfs::tpie {

namespace detail {
class open_file;
}

class raw_file_accessor {
 public:
  /// With default_engine_options() (read when a file is opened).
  raw_file_accessor();
  /// Closes the open file; a failure is printed on stderr (one line with the path).
  ~raw_file_accessor();
  raw_file_accessor(const raw_file_accessor&) = delete;
  raw_file_accessor& operator=(const raw_file_accessor&) = delete;

  void open_ro(const std::string& path);
  void open_wo(const std::string& path);
  bool try_open_rw(const std::string& path);
  void open_rw_new(const std::string& path);

  void read_i(void* data, std::size_t size);
  void write_i(const void* data, std::size_t size);
  void seek_i(std::uint64_t offset);
  std::uint64_t file_size_i();
  void close_i();
  void truncate_i(std::uint64_t size);
  bool is_open() const;
  /// For the files opened next and for the open one (from its next read).
  void set_cache_hint(cache_hint hint);

  /// Settings for the files opened from now on (the open one keeps its own).
  void set_engine_options(const engine_options& options);
  /// Whether the open file is on vnfs (false when it is local or nothing is open).
  bool on_vnfs() const;
  /// The path given to open_*; empty when nothing is open.
  std::string path() const;
  transfer_stats stats() const;

 private:
  mutable std::mutex mu_;
  std::unique_ptr<detail::open_file> file_;
  cache_hint hint_ = cache_hint::normal;
  engine_options options_;
  bool options_set_ = false;
  transfer_stats stats_;
  std::uint64_t position_ = 0;

  void open(const std::string& path, int flags, bool missing_ok, bool* opened);
  detail::open_file& require_open(const char* what);
};

}  // namespace vnfs::tpie
