// vnfs client: the file:// backend's worker threads (see worker_pool.hpp).
#include "client/local/worker_pool.hpp"

#include <system_error>
#include <utility>

namespace vnfs::detail {

worker_pool::worker_pool(unsigned max_threads) : max_threads_(max_threads == 0 ? 1 : max_threads) {
  threads_.emplace_back([this] { work(); });
  started_ = 1;
}

worker_pool::~worker_pool() { join(); }

void worker_pool::post(std::function<void()> job) {
  std::lock_guard lock(mutex_);
  jobs_.push_back(std::move(job));
  // Every worker not running a job (waiting, or still starting) will take one of the queued
  // jobs; a job beyond them gets a new worker.
  if (jobs_.size() > started_ - busy_ && started_ < max_threads_) {
    try {
      threads_.emplace_back([this] { work(); });
      ++started_;
    } catch (const std::system_error&) {
      // No more threads now: the running workers take the job in turn.
    }
  }
  wake_.notify_one();
}

void worker_pool::join() {
  while (true) {
    std::vector<std::thread> ending;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      wake_.notify_all();
      if (threads_.empty()) return;
      ending.swap(threads_);
    }
    // A job still running may post more (and start a worker): the loop joins that one too.
    for (std::thread& t : ending) t.join();
  }
}

std::size_t worker_pool::threads_started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

void worker_pool::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (!jobs_.empty()) {
      {
        std::function<void()> job = std::move(jobs_.front());
        jobs_.pop_front();
        ++busy_;
        lock.unlock();
        job();
      }  // the job's captures are released before the lock is taken again
      lock.lock();
      --busy_;
      continue;
    }
    if (stopping_) return;
    wake_.wait(lock);
  }
}

}  // namespace vnfs::detail
