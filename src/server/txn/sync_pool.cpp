#include "server/txn/sync_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace vnfs::server::txn {

sync_pool::sync_pool(unsigned threads) {
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { helper(); });
}

sync_pool::~sync_pool() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void sync_pool::work_on(batch& b, std::unique_lock<std::mutex>& g) {
  while (b.next < b.fds.size()) {
    const int fd = b.fds[b.next++];
    if (b.next == b.fds.size()) std::erase(queue_, &b);  // nothing left to start
    g.unlock();
    const std::error_code ec = ::fsync(fd) == 0 ? std::error_code() : std::error_code(errno, std::system_category());
    g.lock();
    if (ec && !b.first_error) b.first_error = ec;
    if (++b.done == b.fds.size()) done_cv_.notify_all();
  }
}

void sync_pool::helper() {
  std::unique_lock g(mu_);
  for (;;) {
    work_cv_.wait(g, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing queued
    work_on(*queue_.front(), g);
  }
}

std::error_code sync_pool::fsync_all(std::span<const int> fds) {
  if (fds.empty()) return {};
  batch b{fds};
  std::unique_lock g(mu_);
  if (fds.size() > 1 && !threads_.empty()) {
    queue_.push_back(&b);
    // One helper for each fsync beyond the caller's own: waking all of them for a batch of
    // two (the journal and the state directory) sent most back to sleep at once.
    const std::size_t helpers = std::min(fds.size() - 1, threads_.size());
    for (std::size_t i = 0; i < helpers; ++i) work_cv_.notify_one();
  }
  work_on(b, g);
  done_cv_.wait(g, [&] { return b.done == b.fds.size(); });
  return b.first_error;
}

}  // namespace vnfs::server::txn
