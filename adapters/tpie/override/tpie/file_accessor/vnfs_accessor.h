// vnfs TPIE adapter, TPIE-facing layer: tpie::file_accessor::vnfs_accessor, TPIE's raw file
// accessor interface over vnfs::tpie::raw_file_accessor. Compiled as part of TPIE (C++17),
// with TPIE's headers: it maps the core's exceptions onto TPIE's exception types and keeps
// TPIE's bookkeeping (open file count, bytes read and written) as its posix accessor does.
//
// Not included directly: override/tpie/file_accessor/file_accessor.h makes this class TPIE's
// default_raw_file_accessor when override/ comes before TPIE's own include directory.
#ifndef VNFS_TPIE_OVERRIDE_VNFS_ACCESSOR_H
#define VNFS_TPIE_OVERRIDE_VNFS_ACCESSOR_H

#include <tpie/cache_hint.h>
#include <tpie/exception.h>
#include <tpie/file_manager.h>
#include <tpie/stats.h>
#include <tpie/types.h>

#include <string>

#include "vnfs/tpie/raw_file_accessor.hpp"

namespace tpie {
namespace file_accessor {

class vnfs_accessor {
 public:
  vnfs_accessor() = default;
  /// TPIE copies accessors only while they have no file open: a std::vector of
  /// serialization_readers needs a copy constructor to grow, and TPIE's posix accessor, a
  /// bare descriptor, is copyable. A copy here is a new accessor with nothing open; copying
  /// one with an open file would share that file between two owners and is refused.
  vnfs_accessor(const vnfs_accessor& other) { refuse_if_open(other); }
  vnfs_accessor& operator=(const vnfs_accessor& other) {
    if (this != &other) {
      refuse_if_open(other);
      close_i();
    }
    return *this;
  }
  ~vnfs_accessor() {
    try {
      close_i();
    } catch (...) {
      // As TPIE's posix accessor cannot either, a destructor reports nothing; the core
      // prints a write failure that close_i could not report.
    }
  }

  void open_ro(const std::string& path) { opened([&] { m_impl.open_ro(path); }); }
  void open_wo(const std::string& path) { opened([&] { m_impl.open_wo(path); }); }
  bool try_open_rw(const std::string& path) {
    bool ok = false;
    opened([&] { ok = m_impl.try_open_rw(path); });
    return ok;
  }
  void open_rw_new(const std::string& path) { opened([&] { m_impl.open_rw_new(path); }); }

  void read_i(void* data, memory_size_type size) {
    translated([&] { m_impl.read_i(data, size); });
    increment_bytes_read(size);
  }
  void write_i(const void* data, memory_size_type size) {
    translated([&] { m_impl.write_i(data, size); });
    increment_bytes_written(size);
  }
  void seek_i(stream_size_type offset) { translated([&] { m_impl.seek_i(offset); }); }
  stream_size_type file_size_i() {
    stream_size_type n = 0;
    translated([&] { n = m_impl.file_size_i(); });
    return n;
  }
  void close_i() {
    if (!m_counted) return;
    m_counted = false;
    get_file_manager().decrement_open_file_count();
    translated([&] { m_impl.close_i(); });
  }
  void truncate_i(stream_size_type bytes) { translated([&] { m_impl.truncate_i(bytes); }); }
  bool is_open() const { return m_impl.is_open(); }
  void set_cache_hint(cache_hint hint) {
    m_impl.set_cache_hint(hint == access_sequential ? ::vnfs::tpie::cache_hint::sequential
                          : hint == access_random   ? ::vnfs::tpie::cache_hint::random
                                                    : ::vnfs::tpie::cache_hint::normal);
  }

  /// The core accessor (settings, counters, whether the file is on vnfs).
  ::vnfs::tpie::raw_file_accessor& core() { return m_impl; }

 private:
  static void refuse_if_open(const vnfs_accessor& other) {
    if (other.is_open()) throw exception("vnfs accessor: an accessor with an open file cannot be copied (" + other.m_impl.path() + ")");
  }

  /// Runs `f`, rethrowing the core's exceptions as TPIE's.
  template <class F>
  static void translated(F&& f) {
    try {
      f();
    } catch (const ::vnfs::tpie::out_of_space_error& e) {
      throw out_of_space_exception(e.what());
    } catch (const ::vnfs::tpie::io_error& e) {  // end_of_file_error too: TPIE's callers
                                                    // never read past the end they know, and
                                                    // end_of_stream_exception has no message
      throw io_exception(e.what());
    }
  }
  /// An open_*: closes what was open (counted), opens, counts the new file if one opened.
  template <class F>
  void opened(F&& f) {
    close_i();
    translated(f);
    if (m_impl.is_open()) {
      m_counted = true;
      get_file_manager().increment_open_file_count();
    }
  }

  ::vnfs::tpie::raw_file_accessor m_impl;
  bool m_counted = false;  ///< this file is in TPIE's open file count
};

}  // namespace file_accessor
}  // namespace tpie

#endif  // VNFS_TPIE_OVERRIDE_VNFS_ACCESSOR_H
