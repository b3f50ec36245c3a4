// vnfs_tpie_paths: TPIE manages its temporary files with std::filesystem on the local
// spelling of their paths. With the library linked, those calls on a mapped path act on the
// server (checked on the export directory itself), calls on other paths stay local, and the
// sequence TPIE's temp_file goes through (the accessor writes the file, then exists, then
// remove) leaves nothing behind on the server.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "tpie_fixture.hpp"
#include "vnfs/tpie/raw_file_accessor.hpp"

namespace fs = std::filesystem;
using vnfs::tpie::test::mounted_server;

TEST_CASE("std::filesystem on a mapped path acts on the server", "[tpie][paths]") {
  mounted_server s;
  const fs::path dir = s.remote("tmp-subdir");
  const fs::path file = dir / "TPIE_temp.tpie";

  // The prefix is the export's root: a directory, though it does not exist on local disk.
  CHECK(fs::is_directory(s.prefix));
  CHECK(!fs::exists(dir));

  // create_directory -> mkdir on the server.
  REQUIRE(fs::create_directory(dir));
  CHECK(fs::is_directory(s.export_path / "tmp-subdir"));
  CHECK(!fs::create_directory(dir));  // exists already: false, no error

  // A file written through the accessor is seen by exists and file_size with its size.
  {
    vnfs::tpie::raw_file_accessor a;
    a.open_wo(file.string());
    const std::string bytes(12345, 'x');
    a.write_i(bytes.data(), bytes.size());
    a.close_i();
  }
  CHECK(fs::exists(file));
  CHECK(fs::is_regular_file(file));
  CHECK(fs::file_size(file) == 12345);
  CHECK(fs::file_size(s.export_path / "tmp-subdir" / "TPIE_temp.tpie") == 12345);

  // remove of a file, then of the (now empty) directory: gone from the export.
  CHECK(fs::remove(file));
  CHECK(!fs::exists(s.export_path / "tmp-subdir" / "TPIE_temp.tpie"));
  CHECK(!fs::exists(file));
  CHECK(!fs::remove(file));  // absent: false, no error
  CHECK(fs::remove(dir));
  CHECK(!fs::exists(s.export_path / "tmp-subdir"));

  // remove of a non-empty directory fails with ENOTEMPTY (and removes nothing).
  fs::create_directories(s.export_path / "full" / "inner");
  std::error_code ec;
  CHECK(!fs::remove(s.remote("full"), ec));
  CHECK(ec == std::errc::directory_not_empty);
  CHECK(fs::is_directory(s.export_path / "full" / "inner"));
}

TEST_CASE("the C calls on mapped paths answer with errno; other paths stay local", "[tpie][paths]") {
  mounted_server s;
  struct stat sb {};
  errno = 0;
  CHECK(::stat(s.remote("missing").c_str(), &sb) == -1);
  CHECK(errno == ENOENT);
  CHECK(::unlink(s.remote("missing").c_str()) == -1);
  CHECK(errno == ENOENT);
  CHECK(::mkdir(s.remote("a").c_str(), 0750) == 0);
  CHECK(::stat(s.remote("a").c_str(), &sb) == 0);
  CHECK(S_ISDIR(sb.st_mode));
  CHECK((sb.st_mode & 07777) == 0750);
  CHECK(::mkdir(s.remote("a").c_str(), 0750) == -1);
  CHECK(errno == EEXIST);
  CHECK(::rmdir(s.remote("a").c_str()) == 0);
  CHECK(!fs::exists(s.export_path / "a"));

  // A local file beside the prefix: created, seen and removed locally.
  const fs::path local = s.local_path("plain");
  std::ofstream(local) << "local";
  CHECK(::stat(local.c_str(), &sb) == 0);
  CHECK(sb.st_size == 5);
  CHECK(::remove(local.c_str()) == 0);
  CHECK(!fs::exists(local));
  CHECK(!fs::exists(s.export_path / "plain"));
}

TEST_CASE("a mapped path whose server is gone fails with EIO, not a hang or a crash", "[tpie][paths]") {
  mounted_server s;
  struct stat sb {};
  REQUIRE(::stat(s.prefix.c_str(), &sb) == 0);  // connected
  s.vnfsd->stop();
  vnfs::tpie::unmount_all();
  vnfs::tpie::mount(s.prefix, s.url);  // a fresh client: its connect is refused
  errno = 0;
  CHECK(::stat(s.remote("x").c_str(), &sb) == -1);
  CHECK(errno == EIO);
}

TEST_CASE("a malformed VNFS_MAP leaves every path local for the C calls; an open reports it", "[tpie][paths]") {
  vnfs::test::temp_dir local("vnfs-tpie-badmap");
  vnfs::tpie::unmount_all();  // VNFS_MAP is read again
  REQUIRE(::setenv("VNFS_MAP", "no-equals-sign", 1) == 0);
  struct stat sb {};
  CHECK(::stat(local.path().c_str(), &sb) == 0);  // the process's other file calls carry on
  CHECK(S_ISDIR(sb.st_mode));
  vnfs::tpie::raw_file_accessor a;
  bool reported = false;
  try {
    a.open_wo((local.path() / "f").string());
  } catch (const vnfs::tpie::io_error& e) {
    reported = std::string(e.what()).find("VNFS_MAP") != std::string::npos;
  }
  CHECK(reported);
  ::unsetenv("VNFS_MAP");
  vnfs::tpie::unmount_all();
}
