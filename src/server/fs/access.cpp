#include "server/fs/access.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/fs/detail.hpp"

namespace vnfs::server::fs {

unsigned access(const object& obj, unsigned requested, std::error_code& ec) {
  unsigned granted = 0;
  for (unsigned bit : {access_read, access_write, access_execute}) {
    if (!(requested & bit)) continue;
    // The raw system call: glibc's faccessat may emulate AT_EACCESS from the effective
    // ids, which ignores the fsuid this layer acts under.
    long r = ::syscall(SYS_faccessat2, obj.fd(), "", static_cast<int>(bit), AT_EACCESS | AT_EMPTY_PATH);
    if (r == 0) {
      granted |= bit;
    } else if (errno != EACCES && errno != EPERM && errno != EROFS && errno != ETXTBSY) {
      ec = last_error();
      return granted;
    }
  }
  ec.clear();
  return granted;
}

}  // namespace vnfs::server::fs
