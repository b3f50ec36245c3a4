// vnfs transport: sendfile(2) to a socket that never raises SIGPIPE.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace vnfs::transport::tcp {

/// sendfile(2) of `count` bytes of file `fd` from *offset to socket `sock`, as the system
/// call does (return value, errno, *offset advanced), except that a peer that has gone
/// makes it fail with EPIPE and never raises SIGPIPE, whatever the process does with that
/// signal: sendfile has no MSG_NOSIGNAL, and a server in a program that keeps SIGPIPE's
/// default disposition would die of the first client that disconnects at the wrong moment.
/// SIGPIPE is blocked on the calling thread for the call, and one it raised is taken
/// before the thread's signal mask is restored, also when the call returns a short count
/// because the peer went after part of it was sent.
ssize_t send_file(int sock, int fd, off_t* offset, std::size_t count) noexcept;

}  // namespace vnfs::transport::tcp
