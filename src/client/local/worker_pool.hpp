// vnfs client: the file:// backend's worker threads — at most `max_threads`, started as
// the work needs them: one at construction, another only when a job is posted while every
// started worker runs a job or has a queued one to take. A client used one call at a time
// (the command line) runs one worker: one thread created, one malloc arena, warm caches.
//
// Jobs run in the order they were posted, each on one worker. join() runs every job posted
// before it ends (jobs posted by jobs included), then joins the threads; post() must not
// be called after join() has returned.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vnfs::detail {

class worker_pool {
 public:
  /// Starts the first worker (throws std::system_error if it cannot); 0 counts as 1.
  explicit worker_pool(unsigned max_threads);
  ~worker_pool();  ///< join()
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  /// Queues `job`, starting a worker for it if none is free and fewer than the maximum run
  /// (a worker that cannot be started leaves the job to the running ones).
  void post(std::function<void()> job);

  /// Runs what is queued and what that posts, then ends and joins the workers. Not from a job.
  void join();

  /// The workers started so far.
  std::size_t threads_started() const;

 private:
  void work();

  const std::size_t max_threads_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;  ///< started and not yet joined
  std::size_t started_ = 0;
  std::size_t busy_ = 0;  ///< workers running a job
  bool stopping_ = false;
};

}  // namespace vnfs::detail
