// A small persistent thread pool behind parallel_for.
#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/runtime_internal.h"

namespace mantissa::detail {
namespace {

class ThreadPool {
 public:
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void run(int64_t n, int64_t grain, RangeFn fn, int threads) {
    // One parallel region at a time; a nested or concurrent call runs serially in its caller.
    std::unique_lock<std::mutex> busy(region_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) {
      run_serial(n, grain, fn);
      return;
    }
    ensure_workers(threads - 1);
    Job job{n, grain, chunk_count(n, grain), &fn};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      helpers_wanted_ = threads - 1;
      ++generation_;
    }
    wake_.notify_all();
    work_on(job);
    std::unique_lock<std::mutex> lock(mutex_);
    // Every chunk is claimed: helpers that have not woken yet are not needed any more.
    helpers_wanted_ = 0;
    done_.wait(lock, [&] { return job.active_helpers == 0; });
    job_ = nullptr;
  }

  static void run_serial(int64_t n, int64_t grain, RangeFn fn) {
    for (int64_t begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
  }

 private:
  struct Job {
    int64_t n, grain, chunks;
    RangeFn* fn;
    std::atomic<int64_t> next{0};
    int active_helpers = 0;  // guarded by mutex_
  };

  static void work_on(Job& job) {
    for (;;) {
      const int64_t k = job.next.fetch_add(1, std::memory_order_relaxed);
      if (k >= job.chunks) return;
      const int64_t begin = k * job.grain;
      (*job.fn)(begin, std::min(job.n, begin + job.grain));
    }
  }

  void ensure_workers(int wanted) {
    while (static_cast<int>(workers_.size()) < wanted) {
      workers_.emplace_back([this] { worker_loop(); });
    }
  }

  void worker_loop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && helpers_wanted_ > 0); });
      if (stopping_) return;
      seen = generation_;
      Job* job = job_;
      --helpers_wanted_;
      ++job->active_helpers;
      lock.unlock();
      work_on(*job);
      lock.lock();
      --job->active_helpers;
      if (job->active_helpers == 0) done_.notify_all();
    }
  }

  std::mutex region_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  Job* job_ = nullptr;
  int helpers_wanted_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = chunk_count(n, grain);
  const int threads = static_cast<int>(std::min<int64_t>(configured_threads(), chunks));
  if (threads <= 1) {
    ThreadPool::run_serial(n, grain, fn);
    return;
  }
  pool().run(n, grain, fn, threads);
}

}  // namespace mantissa::detail
