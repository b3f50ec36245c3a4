#include "transport/tcp/send_file.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>

#include <cerrno>
#include <ctime>

namespace vnfs::transport::tcp {

ssize_t send_file(int sock, int fd, off_t* offset, std::size_t count) noexcept {
  sigset_t pipe, old, pending;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  // A SIGPIPE already pending is not ours to take; one can be only if the thread had it
  // blocked already (else it would have been delivered), so the usual case asks nothing.
  const bool was_pending =
      sigismember(&old, SIGPIPE) == 1 && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  const ssize_t n = ::sendfile(sock, fd, offset, count);
  const int saved = errno;
  // sendfile sends in pieces: the peer may go after some were sent, and then the call
  // returns their count while the piece that failed has raised SIGPIPE. So any short
  // result may leave one pending, not only a failure with EPIPE.
  const bool short_or_pipe = n < 0 ? saved == EPIPE : static_cast<std::size_t>(n) < count;
  if (short_or_pipe && !was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const timespec none{};
    while (sigtimedwait(&pipe, nullptr, &none) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return n;
}

}  // namespace vnfs::transport::tcp
