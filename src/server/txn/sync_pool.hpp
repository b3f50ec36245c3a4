// vnfsd transactions: fsync of many files at once. A commit makes every object its
// transaction changed durable; one fsync after another waits for the device once per file,
// while fsyncs that run at the same time share the file system's journal commits and the
// device's cache flushes. A fixed set of threads (made once per server) runs them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

namespace vnfs::server::txn {

class sync_pool {
 public:
  /// `threads` helpers (0: every fsync runs on the caller).
  explicit sync_pool(unsigned threads);
  ~sync_pool();  ///< waits for the helpers, which finish what is queued
  sync_pool(const sync_pool&) = delete;
  sync_pool& operator=(const sync_pool&) = delete;

  /// fsyncs every fd of `fds` (the caller and the helpers together) and returns when all
  /// are done: the first error, or {} if every fsync succeeded. Callers may overlap.
  std::error_code fsync_all(std::span<const int> fds);

 private:
  struct batch {
    std::span<const int> fds;
    std::size_t next = 0, done = 0;
    std::error_code first_error;
  };
  /// Runs fsyncs of `b` until none is left to start (mu_ held, released meanwhile).
  void work_on(batch& b, std::unique_lock<std::mutex>& g);
  void helper();

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<batch*> queue_;  ///< batches with fsyncs not yet started
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vnfs::server::txn
