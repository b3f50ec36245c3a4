#include "server/txn/redo.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <variant>

#include "server/fs/detail.hpp"
#include "server/fs/error.hpp"
#include "server/fs/identity.hpp"

namespace vnfs::server::txn {

namespace {

using fs::last_error;

}  // namespace

std::error_code redo_write(int fd, std::uint64_t offset, std::span<const std::byte> data, bool cut) {
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? last_error() : fs::sys_error(EIO);
    done += static_cast<std::size_t>(n);
  }
  if (cut) {
    // Most overwrites leave the size as it was: no change to make.
    const auto end = static_cast<off_t>(offset + data.size());
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) return last_error();
    if (st.st_size != end && ::ftruncate(fd, end) != 0) return last_error();
  }
  return {};
}

std::error_code replay(const fs::export_root& exp, const std::vector<record>& records) {
  fs::scoped_fs_root as_root;
  std::map<std::vector<std::byte>, fs::unique_fd> open;  // by filehandle; empty: gone
  auto fd_of = [&](const std::vector<std::byte>& fh, std::error_code& ec) -> int {
    auto it = open.find(fh);
    if (it == open.end()) {
      fs::unique_fd fd;
      fs::object obj = exp.resolve(fh, ec);
      if (!ec) fd = fs::unique_fd(fs::detail::open_data(obj, O_WRONLY, ec));
      if (ec && !fs::object_gone(ec)) return -1;
      ec.clear();
      it = open.emplace(fh, std::move(fd)).first;
    }
    return it->second ? it->second.get() : -1;
  };
  for (const record& r : records) {
    std::error_code ec;
    if (const auto* w = std::get_if<rec_redo_write>(&r)) {
      const int fd = fd_of(w->fh, ec);
      if (ec) return ec;
      if (fd >= 0)
        if ((ec = redo_write(fd, w->offset, w->data, w->cut))) return ec;
    } else if (const auto* z = std::get_if<rec_redo_size>(&r)) {
      const int fd = fd_of(z->fh, ec);
      if (ec) return ec;
      if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(z->size)) != 0) return last_error();
    }
  }
  return {};
}

}  // namespace vnfs::server::txn
