#include "vnfs/tpie/raw_file_accessor.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>

#include "failure.hpp"
#include "local_file.hpp"
#include "mount_table.hpp"
#include "remote_file.hpp"

namespace vnfs::tpie {

namespace {

/// The mode new files get: 0666 less the process's umask, as open(2) gives local files
/// (the server applies no umask). Read once.
std::uint32_t creation_mode() {
  static const std::uint32_t mode = [] {
    mode_t mask = ::umask(022);
    ::umask(mask);
    return static_cast<std::uint32_t>(0666 & ~mask);
  }();
  return mode;
}

}  // namespace

raw_file_accessor::raw_file_accessor() = default;

raw_file_accessor::~raw_file_accessor() {
  std::lock_guard lock(mu_);
  if (!file_) return;
  try {
    file_->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s (reported on destruction of the accessor)\n", e.what());
  }
  file_.reset();
}

void raw_file_accessor::open(const std::string& path, int flags, bool missing_ok, bool* opened) {
  if (file_) {
    std::unique_ptr<detail::open_file> old = std::move(file_);
    old->close();
  }
  position_ = 0;
  if (!options_set_) options_ = default_engine_options();
  std::optional<detail::remote_location> where = detail::locate(path);
  if (!where) {
    file_ = detail::local_file::open(path, flags, missing_ok);
  } else {
    vnfs::file f;
    try {
      try {
        f = where->client->open(where->remote_path, flags, creation_mode());
      } catch (const std::system_error& e) {
        // Creating a file in a directory that exists locally only (TPIE makes its temporary
        // subdirectory with std::filesystem): the directories are made on the server too.
        const auto slash = where->remote_path.find_last_of('/');
        if (!(flags & O_CREAT) || e.code() != std::errc::no_such_file_or_directory || slash == std::string::npos ||
            slash == 0)
          throw;
        where->client->ensure_directory(where->remote_path.substr(0, slash), 0777 & ~(0666 & ~creation_mode()));
        f = where->client->open(where->remote_path, flags, creation_mode());
      }
    } catch (const std::system_error& e) {
      if (missing_ok && e.code() == std::errc::no_such_file_or_directory) {
        if (opened) *opened = false;
        return;
      }
      detail::throw_io_error(e.code(), "open", path);
    }
    std::optional<std::uint64_t> size;
    if (flags & O_TRUNC) size = 0;
    file_ = std::make_unique<detail::remote_file>(where->client, std::move(f), flags & O_ACCMODE, path, options_, size,
                                                   stats_);
  }
  if (opened) *opened = static_cast<bool>(file_);
}

detail::open_file& raw_file_accessor::require_open(const char* what) {
  if (!file_) throw io_error(std::string("vnfs::tpie: ") + what + ": no file is open", std::make_error_code(std::errc::bad_file_descriptor), "");
  return *file_;
}

void raw_file_accessor::open_ro(const std::string& path) {
  std::lock_guard lock(mu_);
  open(path, O_RDONLY, false, nullptr);
}

void raw_file_accessor::open_wo(const std::string& path) {
  std::lock_guard lock(mu_);
  open(path, O_RDWR | O_CREAT | O_TRUNC, false, nullptr);
}

bool raw_file_accessor::try_open_rw(const std::string& path) {
  std::lock_guard lock(mu_);
  bool opened = false;
  open(path, O_RDWR, true, &opened);
  return opened;
}

void raw_file_accessor::open_rw_new(const std::string& path) {
  std::lock_guard lock(mu_);
  open(path, O_RDWR | O_CREAT, false, nullptr);
}

void raw_file_accessor::read_i(void* data, std::size_t size) {
  std::lock_guard lock(mu_);
  detail::open_file& f = require_open("read");
  const std::size_t got = f.read(position_, static_cast<std::byte*>(data), size, hint_);
  position_ += got;
  if (got < size)
    throw end_of_file_error("vnfs::tpie: read of " + std::to_string(size) + " bytes at offset " +
                                std::to_string(position_ - got) + " of " + f.path() + ": the file ends after " +
                                std::to_string(got) + " of them",
                            std::make_error_code(std::errc::io_error), f.path());
}

void raw_file_accessor::write_i(const void* data, std::size_t size) {
  std::lock_guard lock(mu_);
  detail::open_file& f = require_open("write");
  f.write(position_, static_cast<const std::byte*>(data), size);
  position_ += size;
}

void raw_file_accessor::seek_i(std::uint64_t offset) {
  std::lock_guard lock(mu_);
  require_open("seek").check();
  position_ = offset;
}

std::uint64_t raw_file_accessor::file_size_i() {
  std::lock_guard lock(mu_);
  detail::open_file& f = require_open("size");
  f.check();
  return f.size();
}

void raw_file_accessor::close_i() {
  std::lock_guard lock(mu_);
  if (!file_) return;
  std::unique_ptr<detail::open_file> f = std::move(file_);
  position_ = 0;
  f->close();
}

void raw_file_accessor::truncate_i(std::uint64_t size) {
  std::lock_guard lock(mu_);
  require_open("truncate").truncate(size);
}

bool raw_file_accessor::is_open() const {
  std::lock_guard lock(mu_);
  return static_cast<bool>(file_);
}

void raw_file_accessor::set_cache_hint(cache_hint hint) {
  std::lock_guard lock(mu_);
  hint_ = hint;
}

void raw_file_accessor::set_engine_options(const engine_options& options) {
  std::lock_guard lock(mu_);
  options_ = options;
  options_set_ = true;
}

bool raw_file_accessor::on_vnfs() const {
  std::lock_guard lock(mu_);
  return file_ && file_->on_vnfs();
}

std::string raw_file_accessor::path() const {
  std::lock_guard lock(mu_);
  return file_ ? file_->path() : std::string();
}

transfer_stats raw_file_accessor::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace vnfs::tpie
