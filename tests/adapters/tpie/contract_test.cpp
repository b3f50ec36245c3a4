// The accessor's contract, case by case: every scenario runs twice, once on a local file
// (POSIX underneath) and once on a file on vnfsd, and both must tell the same story — the
// same bytes, sizes, positions and the same exceptions — and leave the same bytes on disk.
// vnfsd runs over TCP; the engine's settings are small so that scenarios cross request
// and window boundaries (4 KiB requests, 16 KiB read-ahead, 8 KiB write-behind).
#include <catch2/catch.hpp>

#include <cerrno>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tpie_fixture.hpp"
#include "vnfs/tpie/raw_file_accessor.hpp"

using namespace vnfs::tpie;
using vnfs::tpie::test::mounted_server;
using vnfs::tpie::test::pattern_bytes;

namespace {

/// What a scenario observed, line by line.
struct transcript {
  std::ostringstream out;
  template <class T>
  transcript& operator<<(const T& v) {
    out << v;
    return *this;
  }
};

/// Runs `step`, writing what it returned or which exception it threw.
void attempt(transcript& t, const std::string& label, const std::function<std::string()>& step) {
  t << label << ": ";
  try {
    t << step() << "\n";
  } catch (const end_of_file_error& e) {
    t << "end_of_file_error\n";
  } catch (const out_of_space_error& e) {
    t << "out_of_space_error\n";
  } catch (const io_error& e) {
    const std::error_code ec = e.code();
    t << "io_error "
      << (ec == std::errc::no_such_file_or_directory ? "ENOENT"
          : ec == std::errc::bad_file_descriptor     ? "EBADF"
                                                     : "other: " + ec.message())
      << "\n";
  }
}

std::string digest(const std::vector<char>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : v) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return std::to_string(v.size()) + " bytes #" + std::to_string(h);
}

std::string read_n(raw_file_accessor& a, std::size_t n) {
  std::vector<char> buf(n, '\x55');
  try {
    a.read_i(buf.data(), n);
  } catch (const end_of_file_error&) {
    // What was delivered before the end counts too: keep the buffer's state.
    throw;
  }
  return digest(buf);
}

void write_pattern(raw_file_accessor& a, std::uint64_t offset, std::size_t n) {
  auto v = pattern_bytes(offset, n);
  a.write_i(v.data(), v.size());
}

using scenario = std::function<void(raw_file_accessor&, const std::string& path, transcript&)>;

/// The scenario on a local file and on a file on vnfs: same transcript, same bytes left.
void same_on_both(mounted_server& s, const std::string& name, const scenario& run) {
  engine_options o;
  o.request_bytes = 4096;
  o.read_ahead_bytes = 16384;
  o.write_behind_bytes = 8192;
  transcript local_t, remote_t;
  {
    raw_file_accessor a;
    a.set_engine_options(o);
    run(a, s.local_path(name), local_t);
  }
  {
    raw_file_accessor a;
    a.set_engine_options(o);
    run(a, s.remote(name), remote_t);
  }
  INFO("scenario " << name);
  CHECK(remote_t.out.str() == local_t.out.str());
  CHECK(s.server_bytes(name) == mounted_server::file_bytes(s.local / name));
  UNSCOPED_INFO("transcript:\n" << local_t.out.str());
}

}  // namespace

TEST_CASE("raw_file_accessor: the same results on vnfs as on a local file") {
  mounted_server s;

  SECTION("write, size, seek, read back, reopen") {
    same_on_both(s, "basic", [](raw_file_accessor& a, const std::string& p, transcript& t) {
      a.open_wo(p);
      attempt(t, "open_wo is_open", [&] { return std::to_string(a.is_open()); });
      write_pattern(a, 0, 10000);
      attempt(t, "size after writes", [&] { return std::to_string(a.file_size_i()); });
      a.seek_i(0);
      attempt(t, "read all", [&] { return read_n(a, 10000); });
      a.seek_i(4000);
      attempt(t, "read middle", [&] { return read_n(a, 3000); });
      attempt(t, "read on", [&] { return read_n(a, 3000); });
      a.close_i();
      attempt(t, "closed is_open", [&] { return std::to_string(a.is_open()); });
      a.open_ro(p);
      attempt(t, "reopened size", [&] { return std::to_string(a.file_size_i()); });
      attempt(t, "reopened read", [&] { return read_n(a, 10000); });
      a.close_i();
      attempt(t, "try_open_rw existing", [&] { return std::to_string(a.try_open_rw(p)); });
      attempt(t, "rw size", [&] { return std::to_string(a.file_size_i()); });
      a.close_i();
      a.open_wo(p);  // empties the file
      attempt(t, "open_wo again size", [&] { return std::to_string(a.file_size_i()); });
      write_pattern(a, 0, 77);
      a.close_i();
    });
  }

  SECTION("reads past the end of the file") {
    same_on_both(s, "past-eof", [](raw_file_accessor& a, const std::string& p, transcript& t) {
      a.open_wo(p);
      write_pattern(a, 0, 5000);
      a.seek_i(4000);
      std::vector<char> buf(3000, '\x55');
      attempt(t, "read across the end", [&]() -> std::string {
        a.read_i(buf.data(), buf.size());
        return "no exception";
      });
      t << "delivered " << digest(std::vector<char>(buf.begin(), buf.begin() + 1000)) << "\n";
      t << "untouched " << digest(std::vector<char>(buf.begin() + 1000, buf.end())) << "\n";
      attempt(t, "read at the end", [&] { return read_n(a, 1); });
      a.seek_i(9000);
      attempt(t, "read beyond the end", [&] { return read_n(a, 10); });
      attempt(t, "size unchanged", [&] { return std::to_string(a.file_size_i()); });
      a.seek_i(0);
      attempt(t, "read from the start", [&] { return read_n(a, 5000); });
      a.close_i();
    });
  }

  SECTION("writes that extend, seek beyond the end") {
    same_on_both(s, "extend", [](raw_file_accessor& a, const std::string& p, transcript& t) {
      a.open_wo(p);
      write_pattern(a, 0, 100);
      a.seek_i(20000);
      attempt(t, "size after seek beyond", [&] { return std::to_string(a.file_size_i()); });
      write_pattern(a, 20000, 10);
      attempt(t, "size after write beyond", [&] { return std::to_string(a.file_size_i()); });
      a.seek_i(50);
      write_pattern(a, 50, 9000);  // overwrites and extends into the hole
      attempt(t, "size after overwrite", [&] { return std::to_string(a.file_size_i()); });
      a.seek_i(0);
      attempt(t, "whole file", [&] { return read_n(a, 20010); });
      a.close_i();
    });
  }

  SECTION("truncate down and up") {
    same_on_both(s, "truncate", [](raw_file_accessor& a, const std::string& p, transcript& t) {
      a.open_wo(p);
      write_pattern(a, 0, 30000);
      a.truncate_i(7000);
      attempt(t, "size after truncate down", [&] { return std::to_string(a.file_size_i()); });
      // The position (30000) is kept: a read there is past the end.
      attempt(t, "read at the old end", [&] { return read_n(a, 1); });
      a.seek_i(0);
      attempt(t, "read what remains", [&] { return read_n(a, 7000); });
      attempt(t, "read past it", [&] { return read_n(a, 1); });
      a.truncate_i(12000);
      attempt(t, "size after truncate up", [&] { return std::to_string(a.file_size_i()); });
      a.seek_i(6000);
      attempt(t, "the zeros", [&] { return read_n(a, 6000); });
      write_pattern(a, 12000, 500);
      attempt(t, "size after appending", [&] { return std::to_string(a.file_size_i()); });
      a.close_i();
      a.open_ro(p);
      attempt(t, "reopened", [&] { return read_n(a, 12500); });
      a.close_i();
    });
  }

  SECTION("open_ro and try_open_rw of a missing file") {
    same_on_both(s, "missing", [](raw_file_accessor& a, const std::string& p, transcript& t) {
      attempt(t, "open_ro missing", [&] {
        a.open_ro(p);
        return std::string("opened");
      });
      attempt(t, "is_open", [&] { return std::to_string(a.is_open()); });
      attempt(t, "try_open_rw missing", [&] { return std::to_string(a.try_open_rw(p)); });
      attempt(t, "is_open", [&] { return std::to_string(a.is_open()); });
      attempt(t, "read while closed", [&] { return read_n(a, 1); });
      a.open_rw_new(p);  // leaves the file for the byte comparison
      a.close_i();
    });
    // The exception names the path the application gave.
    raw_file_accessor a;
    try {
      a.open_ro(s.remote("really-missing"));
      FAIL("open_ro of a missing file did not throw");
    } catch (const io_error& e) {
      CHECK(e.path() == s.remote("really-missing"));
      CHECK(e.code() == std::errc::no_such_file_or_directory);
      CHECK(std::string(e.what()).find(s.remote("really-missing")) != std::string::npos);
    }
  }

  SECTION("open_rw_new over an existing file keeps it (as TPIE's posix accessor)") {
    same_on_both(s, "rw-new", [](raw_file_accessor& a, const std::string& p, transcript& t) {
      a.open_rw_new(p);
      attempt(t, "new size", [&] { return std::to_string(a.file_size_i()); });
      const std::string foobar = "foobar";
      a.write_i(foobar.data(), foobar.size());
      a.close_i();
      a.open_rw_new(p);
      attempt(t, "existing size", [&] { return std::to_string(a.file_size_i()); });
      attempt(t, "existing read", [&] { return read_n(a, 6); });
      a.seek_i(3);
      a.write_i("BAR", 3);
      a.close_i();
    });
  }
}

TEST_CASE("raw_file_accessor: creating a file in directories the server lacks makes them (TPIE's temporary subdirectory)") {
  mounted_server s;
  raw_file_accessor a;
  a.open_wo(s.remote("tpie-subdir/deeper/tmp-file"));
  a.write_i("abc", 3);
  a.close_i();
  CHECK(s.server_bytes("tpie-subdir/deeper/tmp-file") == std::vector<char>{'a', 'b', 'c'});
  // Opening without creating does not make directories.
  CHECK_FALSE(a.try_open_rw(s.remote("other-subdir/file")));
  CHECK_FALSE(std::filesystem::exists(s.export_path / "other-subdir"));
}
