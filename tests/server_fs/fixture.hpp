// Shared helpers of the server_fs tests: a temporary export under /tmp.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "server/fs/export_root.hpp"

namespace vnfs::server::fs::test {

/// mkdtemp under /tmp, removed recursively on destruction.
class temp_tree {
 public:
  temp_tree() {
    std::string tmpl = "/tmp/vnfs-fs-test-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::system_category(), "mkdtemp");
    path_ = tmpl;
  }
  ~temp_tree() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_tree(const temp_tree&) = delete;
  temp_tree& operator=(const temp_tree&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// A temporary tree whose subdirectory "export" is the export (so "outside" exists too).
struct export_fixture {
  temp_tree tree;
  std::filesystem::path dir = make_dir(tree.path() / "export");
  std::filesystem::path outside = make_dir(tree.path() / "outside");
  export_root exp{dir};

  static std::filesystem::path make_dir(const std::filesystem::path& p) {
    std::filesystem::create_directory(p);
    return p;
  }
};

}  // namespace vnfs::server::fs::test
