// A small persistent thread pool behind parallel_for. Workers spin briefly after a job before
// sleeping, so back-to-back operator calls (an optimizer step over many tensors) do not pay a
// kernel wake-up each; the caller works on chunks too and waits for the helpers it recruited.
// An exception thrown by a chunk on any thread ends the job (chunks not yet claimed are skipped)
// and is rethrown on the calling thread once every helper has left it, where the operator's entry
// turns it into a status: a worker never lets one escape (that would end the process).
#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "core/fpenv.h"
#include "core/runtime_internal.h"

namespace mantissa::detail {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A few tens of microseconds of pause instructions before a worker sleeps (or the caller yields):
// long enough to bridge consecutive operator calls, short enough not to starve other threads
// when the machine is oversubscribed.
constexpr int kSpinIterations = 2048;

class ThreadPool {
 public:
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_.store(true);
      generation_.fetch_add(1);
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
    // A worker that cannot be started (thread limits, memory) leaves its chunks to the others:
    // the chunks, and so the results, are the same.
    try {
      ensure_workers(threads - 1);
    } catch (...) {
    }
    Job job{n, grain, chunk_count(n, grain), &fn};
    const int tickets = std::min(threads - 1, static_cast<int>(workers_.size()));
    job_.store(&job, std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    // Release: a worker whose ticket CAS reads this value also sees job_ and finished_.
    tickets_.store(tickets, std::memory_order_release);
    generation_.fetch_add(1);  // seq_cst: pairs with the sleepers_ handshake in worker_loop
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
    work_on(job);
    // Every chunk is claimed. Tickets nobody took are withdrawn; wait for those who took one.
    const int taken = tickets - tickets_.exchange(0);
    for (int spins = 0; finished_.load(std::memory_order_acquire) != taken; ++spins) {
      if (spins < kSpinIterations) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
    job_.store(nullptr, std::memory_order_relaxed);
    // Acquire (finished_ above): a helper's error was stored before its release increment.
    if (job.error) std::rethrow_exception(job.error);
  }

  static void run_serial(int64_t n, int64_t grain, RangeFn fn) {
    for (int64_t begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
  }

 private:
  struct Job {
    int64_t n, grain, chunks;
    RangeFn* fn;
    std::atomic<int64_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error{};  // the first exception, stored by the thread that set `failed`
  };

  // Claims and runs chunks until none is left. Never throws: a chunk's exception is kept in the
  // job (the first one; later ones are dropped) and the remaining chunks are withdrawn.
  static void work_on(Job& job) noexcept {
    for (;;) {
      const int64_t k = job.next.fetch_add(1, std::memory_order_relaxed);
      if (k >= job.chunks) return;
      const int64_t begin = k * job.grain;
      try {
        (*job.fn)(begin, std::min(job.n, begin + job.grain));
      } catch (...) {
        if (!job.failed.exchange(true, std::memory_order_relaxed)) {
          job.error = std::current_exception();
        }
        job.next.store(job.chunks, std::memory_order_relaxed);
        return;
      }
    }
  }

  void ensure_workers(int wanted) {
    while (static_cast<int>(workers_.size()) < wanted) {
      workers_.emplace_back([this] { worker_loop(); });
    }
  }

  // Takes one helper ticket of the current job if any is left.
  bool take_ticket() {
    int t = tickets_.load(std::memory_order_acquire);
    while (t > 0) {
      if (tickets_.compare_exchange_weak(t, t - 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }

  void worker_loop() {
    uint64_t seen = generation_.load();
    for (;;) {
      // Spin a little for the next job, then sleep until one is posted.
      for (int i = 0; i < kSpinIterations && generation_.load(std::memory_order_acquire) == seen;
           ++i) {
        cpu_relax();
      }
      if (generation_.load() == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);  // seq_cst, then re-read generation_ under the lock
        // stopping_ too: the destructor's generation bump may already be in `seen` when it was
        // read after the last stop check, and the worker must not sleep through it.
        wake_.wait(lock, [&] { return generation_.load() != seen || stopping_.load(); });
        sleepers_.fetch_sub(1);
      }
      if (stopping_.load()) return;
      seen = generation_.load(std::memory_order_acquire);
      if (!take_ticket()) continue;  // the job needs no more helpers (or is over)
      // A worker inherits its creator's floating-point environment: compute in the default one.
      DefaultFpEnv::enforce();
      Job* job = job_.load(std::memory_order_relaxed);
      work_on(*job);
      finished_.fetch_add(1, std::memory_order_release);
    }
  }

  std::mutex region_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  std::atomic<Job*> job_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> tickets_{0};
  std::atomic<int> finished_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  const DefaultFpEnv env;  // the caller's environment is restored on return
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
