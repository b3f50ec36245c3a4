#include "server/fs/io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <limits>
#include <vector>

#include "server/fs/detail.hpp"
#include "server/fs/identity.hpp"

namespace vnfs::server::fs {
namespace {

int sync_flags(stability how) noexcept {
  switch (how) {
    case stability::unstable:
    case stability::writeback: return 0;
    case stability::data_sync: return O_DSYNC;
    case stability::file_sync: return O_SYNC;
  }
  return O_SYNC;
}

// Plain read/write copy for when copy_file_range cannot serve the pair.
std::uint64_t copy_by_hand(int in, std::uint64_t in_off, int out, std::uint64_t out_off,
                           std::uint64_t count, std::error_code& ec) {
  std::vector<char> buf(1 << 20);
  std::uint64_t done = 0;
  while (count == 0 || done < count) {
    std::size_t want = buf.size();
    if (count != 0 && count - done < want) want = static_cast<std::size_t>(count - done);
    ssize_t r = ::pread(in, buf.data(), want, static_cast<off_t>(in_off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      ec = last_error();
      return done;
    }
    if (r == 0) break;
    for (ssize_t w = 0; w < r;) {
      ssize_t k = ::pwrite(out, buf.data() + w, static_cast<std::size_t>(r - w),
                           static_cast<off_t>(out_off + done + static_cast<std::uint64_t>(w)));
      if (k < 0) {
        if (errno == EINTR) continue;
        ec = last_error();
        return done + static_cast<std::uint64_t>(w);
      }
      w += k;
    }
    done += static_cast<std::uint64_t>(r);
  }
  ec.clear();
  return done;
}

// Whether a copy within one file would read what it writes (RFC 7862: NFS4ERR_INVAL).
bool overlapping(int in, std::uint64_t in_off, int out, std::uint64_t out_off, std::uint64_t count,
                 std::error_code& ec) {
  struct stat a {}, b {};
  if (::fstat(in, &a) != 0 || ::fstat(out, &b) != 0) {
    ec = last_error();
    return true;
  }
  if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) return false;
  const std::uint64_t in_end = count == 0 ? std::numeric_limits<std::uint64_t>::max() : in_off + count;
  const std::uint64_t out_end = count == 0 ? std::numeric_limits<std::uint64_t>::max() : out_off + count;
  return in_off < out_end && out_off < in_end;
}

}  // namespace

read_result read_at(int fd, std::uint64_t offset, std::span<std::byte> buf, std::error_code& ec) {
  // Each pread asks for one byte more than the buffer still holds, into `probe`: getting it
  // says that the file goes on past the read, and not getting it that the read reached the
  // end, so no fstat is needed to tell.
  // No file goes past `limit`: a read that reaches it has nothing to probe, and ends the file.
  read_result res;
  constexpr std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max());
  const bool to_limit = offset >= limit || buf.size() >= limit - offset;
  if (offset >= limit) {
    res.eof = true;
    ec.clear();
    return res;
  }
  std::byte probe;
  for (;;) {
    iovec iov[2] = {{buf.data() + res.count, buf.size() - res.count}, {&probe, 1}};
    ssize_t r = ::preadv(fd, iov, to_limit ? 1 : 2, static_cast<off_t>(offset + res.count));
    if (r < 0) {
      if (errno == EINTR) continue;
      ec = last_error();
      return res;
    }
    if (r == 0) {
      res.eof = true;
      break;
    }
    if (static_cast<std::size_t>(r) > buf.size() - res.count) {
      res.count = buf.size();
      break;
    }
    res.count += static_cast<std::size_t>(r);
    if (to_limit && res.count == buf.size()) {
      res.eof = true;
      break;
    }
  }
  ec.clear();
  return res;
}

std::size_t write_at(int fd, std::int64_t offset, std::span<const std::byte> data, int rwf_flags,
                     std::error_code& ec) {
  std::size_t done = 0;
  while (done < data.size()) {
    iovec iov{const_cast<std::byte*>(data.data() + done), data.size() - done};
    const off_t at = offset < 0 ? -1 : static_cast<off_t>(offset + static_cast<std::int64_t>(done));
    ssize_t w = ::pwritev2(fd, &iov, 1, at, rwf_flags);
    if (w < 0) {
      if (errno == EINTR) continue;
      ec = last_error();
      return done;
    }
    done += static_cast<std::size_t>(w);
  }
  ec.clear();
  return done;
}

int reader(const object& file, std::error_code& ec, const std::optional<timestamp>& settled_ctime) {
  int fd = file.kept_reader();
  if (fd >= 0) {
    ec.clear();
    if (settled_ctime && file.read_granted(*settled_ctime)) return fd;
    // The descriptor was opened by an earlier caller: this one is checked as open(2) would
    // check it. AT_EACCESS makes the kernel use the thread's file-system identity (the
    // caller's), not the process's real one.
    if (::faccessat(file.fd(), "", R_OK, AT_EMPTY_PATH | AT_EACCESS) != 0) {
      ec = last_error();
      return -1;
    }
    if (settled_ctime) file.grant_read(*settled_ctime);
    return fd;
  }
  unique_fd own(detail::open_data(file, O_RDONLY, ec));
  if (!own) return -1;
  if (settled_ctime) file.grant_read(*settled_ctime);
  return file.keep_reader(std::move(own));
}

read_result extent(int fd, std::uint64_t offset, std::size_t count, std::error_code& ec) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ec = last_error();
    return {};
  }
  ec.clear();
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (offset >= size) return {0, true};
  const std::uint64_t left = size - offset;
  if (left <= count) return {static_cast<std::size_t>(left), true};
  return {count, false};
}

bool in_page_cache(int fd, std::uint64_t offset, std::size_t count) {
  // cachestat(2) is not in every C library's headers yet: its number and structures.
  constexpr long sys_cachestat = 451;  // the same number on every Linux architecture
  struct range_t {
    std::uint64_t off, len;
  } range{offset, count};
  struct cachestat_t {
    std::uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } cs{};
  if (count == 0) return true;
  if (::syscall(sys_cachestat, fd, &range, &cs, 0) != 0) return false;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t pages = (offset + count + page - 1) / page - offset / page;
  return cs.nr_cache >= pages;
}

read_result read(const object& file, std::uint64_t offset, std::span<std::byte> buf,
                 std::error_code& ec, const std::optional<timestamp>& settled_ctime) {
  const int fd = reader(file, ec, settled_ctime);
  if (fd < 0) return {};
  return read_at(fd, offset, buf, ec);
}

std::size_t write(const object& file, std::uint64_t offset, std::span<const std::byte> data,
                  stability how, std::error_code& ec) {
  unique_fd fd(detail::open_data(file, O_WRONLY | sync_flags(how), ec));
  if (!fd) return 0;
  detail::drop_create_verifier(file, fd.get());
  const std::size_t n = write_at(fd.get(), static_cast<std::int64_t>(offset), data, 0, ec);
  if (how == stability::writeback && n > 0) start_writeback(fd.get(), offset, n);
  return n;
}

void start_writeback(int fd, std::uint64_t offset, std::uint64_t count) noexcept {
  (void)::sync_file_range(fd, static_cast<off64_t>(offset), static_cast<off64_t>(count), SYNC_FILE_RANGE_WRITE);
}

append_result append(const object& file, std::span<const std::byte> data, stability how,
                     std::error_code& ec) {
  append_result res;
  unique_fd fd(detail::open_data(file, O_WRONLY | O_APPEND | sync_flags(how), ec));
  if (!fd) return res;
  detail::drop_create_verifier(file, fd.get());
  ssize_t w;
  do {
    w = ::write(fd.get(), data.data(), data.size());
  } while (w < 0 && errno == EINTR);
  if (w < 0) {
    ec = last_error();
    return res;
  }
  // The descriptor is private, so its position is the end of exactly our write.
  off_t end = ::lseek(fd.get(), 0, SEEK_CUR);
  if (end < 0) {
    ec = last_error();
    return res;
  }
  res.count = static_cast<std::size_t>(w);
  res.offset = static_cast<std::uint64_t>(end) - res.count;
  if (res.count < data.size()) ec = sys_error(ENOSPC);
  else ec.clear();
  return res;
}

void sync(const object& file, bool data_only, std::error_code& ec) {
  unique_fd fd;
  {
    scoped_fs_root as_root;
    if (file.is_directory()) {
      fd.reset(::openat(file.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!fd) ec = last_error();
    } else {
      fd.reset(detail::open_data(file, O_RDONLY, ec));
    }
  }
  if (!fd) return;
  if ((data_only ? ::fdatasync(fd.get()) : ::fsync(fd.get())) != 0) {
    ec = last_error();
    return;
  }
  ec.clear();
}

std::uint64_t copy(const object& src, std::uint64_t src_offset, const object& dst,
                   std::uint64_t dst_offset, std::uint64_t count, std::error_code& ec) {
  unique_fd in(detail::open_data(src, O_RDONLY, ec));
  if (!in) return 0;
  unique_fd out(detail::open_data(dst, O_WRONLY, ec));
  if (!out) return 0;
  if (overlapping(in.get(), src_offset, out.get(), dst_offset, count, ec)) {
    if (!ec) ec = sys_error(EINVAL);
    return 0;
  }
  detail::drop_create_verifier(dst, out.get());

  std::uint64_t done = 0;
  while (count == 0 || done < count) {
    std::uint64_t want = count == 0 ? (1u << 30) : count - done;
    if (want > (1u << 30)) want = 1u << 30;
    loff_t in_off = static_cast<loff_t>(src_offset + done);
    loff_t out_off = static_cast<loff_t>(dst_offset + done);
    ssize_t r = ::copy_file_range(in.get(), &in_off, out.get(), &out_off,
                                  static_cast<std::size_t>(want), 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS) {
        std::uint64_t rest = count == 0 ? 0 : count - done;
        done += copy_by_hand(in.get(), src_offset + done, out.get(), dst_offset + done, rest, ec);
        return done;
      }
      ec = last_error();
      return done;
    }
    if (r == 0) break;  // end of src
    done += static_cast<std::uint64_t>(r);
  }
  ec.clear();
  return done;
}

}  // namespace vnfs::server::fs
