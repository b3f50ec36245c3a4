#include "server/state/client_records.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "server/fs/error.hpp"
#include "server/fs/identity.hpp"
#include "server/fs/unique_fd.hpp"

namespace vnfs::server {

namespace {

constexpr const char* header = "vnfsd-clients 1";
constexpr const char* temp_name = "clients.tmp";

using fs::last_error;

std::string to_hex(const std::string& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool from_hex(const std::string& hex, std::string& out) {
  auto value = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (hex.empty() || hex.size() % 2 != 0) return false;
  out.clear();
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = value(hex[i]), lo = value(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi << 4 | lo);
  }
  return true;
}

/// write(2) of all of `data`.
bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

client_records::client_records(std::filesystem::path dir) : dir_(std::move(dir)) {}

client_records::list client_records::load() const {
  list out;
  if (dir_.empty()) return out;
  fs::scoped_fs_root root;
  const std::filesystem::path file = dir_ / file_name;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return out;
    throw std::runtime_error("cannot read the client records " + file.string() + ": " +
                             last_error().message());
  }
  auto corrupt = [&](std::size_t line) {
    return std::runtime_error("the client records " + file.string() + " are corrupt (line " +
                              std::to_string(line) + "); start with --no-grace to discard them");
  };
  std::string line;
  if (!std::getline(in, line) || line != header) throw corrupt(1);
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    std::istringstream fields(line);
    client_principal who;
    std::string hex, owner, extra;
    if (!(fields >> who.flavor >> who.uid >> who.gid >> hex) || (fields >> extra) ||
        !from_hex(hex, owner) || owner.size() > 1024)
      throw corrupt(n);
    out[owner] = who;
  }
  if (in.bad()) throw corrupt(0);
  return out;
}

std::error_code client_records::store(const list& clients) {
  if (dir_.empty()) return {};
  fs::scoped_fs_root root;
  std::string text = std::string(header) + "\n";
  for (const auto& [owner, who] : clients)
    text += std::to_string(who.flavor) + " " + std::to_string(who.uid) + " " +
            std::to_string(who.gid) + " " + to_hex(owner) + "\n";

  if (::mkdir(dir_.c_str(), 0700) == 0) {
    // A new directory: its entry in the parent must be durable too.
    fs::unique_fd parent(::open(dir_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!parent || ::fsync(parent.get()) != 0) return last_error();
  } else if (errno != EEXIST) {
    return last_error();
  }
  fs::unique_fd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return last_error();
  {
    fs::unique_fd tmp(
        ::openat(dir.get(), temp_name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!tmp) return last_error();
    if (!write_all(tmp.get(), text) || ::fsync(tmp.get()) != 0) {
      std::error_code ec = last_error();
      ::unlinkat(dir.get(), temp_name, 0);
      return ec ? ec : std::make_error_code(std::errc::io_error);
    }
  }
  if (::renameat(dir.get(), temp_name, dir.get(), file_name) != 0) {
    std::error_code ec = last_error();
    ::unlinkat(dir.get(), temp_name, 0);
    return ec;
  }
  if (::fsync(dir.get()) != 0) return last_error();
  return {};
}

}  // namespace vnfs::server
