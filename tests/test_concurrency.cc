// Concurrency: several user threads call every operator through every entry point (the C++ API,
// aclnn's two-phase calls, op-by-name) at the same time, each on its own tensors, while another
// thread keeps changing the thread count; every result must have the bits of a serial run. Built
// into the normal and sanitizer builds, and the test the ThreadSanitizer stage runs
// (scripts/test.sh), so a data race in the pool, the C layer's registries or a kernel is a
// failure there.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/parallel.h"
#include "mantissa/runtime.h"
#include "precision/kit.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

namespace pk = mantissa::precision;

// User threads calling operators, and the most threads the changer sets: enough for the pool's
// region lock to be contended and for calls to start with one thread count and meet another.
constexpr int kUserThreads = 4;
constexpr int kMaxPoolThreads = 4;
// Cases up to this many elements (inputs together): several chunks of kDefaultGrain, so calls
// run on the pool, yet the whole test stays fast under ThreadSanitizer.
constexpr int64_t kMaxCaseElements = int64_t{1} << 17;

// One operator call: a shipped case through one entry point, and the bits a serial run gave.
struct Call {
  std::string what;
  pk::OpEntry op;  // instantiated for the case's list lengths
  pk::Backend backend;
  pk::OpInputs in;
  std::vector<pk::HostTensor> want;
};

// Every case of the shipped case files (cases/) up to kMaxCaseElements, through every entry point
// its operator has. `ops` receives the operators covered.
std::vector<std::unique_ptr<Call>> load_calls(std::set<std::string>& ops) {
  std::vector<std::unique_ptr<Call>> calls;
  const char* src = std::getenv("MANTISSA_SOURCE_DIR");
  if (src == nullptr) {
    ADD_FAILURE() << "MANTISSA_SOURCE_DIR must name the source tree";
    return calls;
  }
  for (const pk::LoadedCase& lc : pk::load_case_dir(std::string(src) + "/cases")) {
    if (!lc.spec) continue;
    const pk::OpEntry* entry = pk::find_op(lc.spec->op);
    if (entry == nullptr) {
      ADD_FAILURE() << "unknown operator " << lc.spec->op;
      continue;
    }
    std::vector<int64_t> list_sizes;
    pk::OpEntry instance = entry->instantiate(*lc.spec, list_sizes);
    pk::OpInputs in;
    const std::string err = pk::generate_inputs(*lc.spec, instance, 0, in);
    if (!err.empty()) {
      ADD_FAILURE() << lc.id << ": " << err;
      continue;
    }
    in.list_sizes = list_sizes;
    int64_t elements = 0;
    for (const pk::HostTensor& t : in.tensors) elements += t.numel();
    if (elements > kMaxCaseElements) continue;
    for (const auto& entry_backend : instance.backends) {
      auto call = std::make_unique<Call>();
      call->what = lc.spec->op + " " + lc.id + " " + pk::backend_name(entry_backend.first);
      call->op = instance;
      call->backend = entry_backend.first;
      call->in = in;
      calls.push_back(std::move(call));
    }
    ops.insert(lc.spec->op);
  }
  return calls;
}

std::string run_call(const Call& c, std::vector<pk::HostTensor>& out) {
  return c.op.backends.at(c.backend)(c.in, out);
}

// Changes the thread count (1..kMaxPoolThreads, and the default) until stopped. The user threads
// call operators until the changer has made kChangesDuringCalls changes while they were running
// (`started` is set by the first call), so every round overlaps calls with changes however the
// threads are scheduled; kMaxPasses bounds a round whose changer never runs.
constexpr int kChangesDuringCalls = 3;
constexpr int kMaxPasses = 1000;

class ThreadCountChanger {
 public:
  ThreadCountChanger()
      : thread_([this] {
          while (!started_.load() && !stop_.load()) std::this_thread::yield();
          for (int k = 0; !stop_.load(); ++k) {
            const int threads = k % (kMaxPoolThreads + 1);  // 0: the default
            if (!mantissa::set_num_threads(threads).ok()) failures_.fetch_add(1);
            changes_.fetch_add(1);
            std::this_thread::yield();
          }
        }) {}
  ~ThreadCountChanger() { stop(); }
  // Called by the user threads before their first call: the changer starts changing then.
  void start() { started_.store(true); }
  // True once enough changes were made after start(): the calls so far overlapped them.
  bool enough() const { return changes_.load() >= kChangesDuringCalls; }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int changes() const { return changes_.load(); }
  int failures() const { return failures_.load(); }

 private:
  std::atomic<bool> started_{false}, stop_{false};
  std::atomic<int> changes_{0}, failures_{0};
  std::thread thread_;
};

TEST(Concurrency, EveryOperatorEveryEntryPointFromSeveralThreads) {
  mantissa::testing::ThreadCountGuard guard;
  std::set<std::string> ops;
  std::vector<std::unique_ptr<Call>> calls = load_calls(ops);
  ASSERT_FALSE(calls.empty());
  // Every operator the kit declares is exercised (a new operator needs a small shipped case).
  for (const auto& [name, entry] : pk::registry()) {
    EXPECT_TRUE(ops.count(name)) << name << " has no shipped case of at most " << kMaxCaseElements
                                 << " elements";
  }

  std::printf("%zu calls (%zu operators, every entry point), %d user threads\n", calls.size(),
              ops.size(), kUserThreads);
  // The serial results: one thread, the default SIMD target.
  ASSERT_TRUE(mantissa::set_num_threads(1).ok());
  for (auto& c : calls) {
    ASSERT_EQ(run_call(*c, c->want), "") << c->what;
  }

  // Rounds of concurrent calls. The SIMD target may only change between calls
  // (set_simd_target), so each round runs on the next available target.
  const std::vector<std::string> targets = mantissa::available_simd_targets();
  const int rounds = std::max<int>(2, static_cast<int>(targets.size()));
  for (int round = 0; round < rounds; ++round) {
    const std::string& target = targets[static_cast<std::size_t>(round) % targets.size()];
    ASSERT_TRUE(mantissa::set_simd_target(target).ok()) << target;
    SCOPED_TRACE("round " + std::to_string(round) + ", SIMD target " + target);
    std::mutex failures_mutex;
    std::vector<std::string> failures;
    ThreadCountChanger changer;
    std::vector<std::thread> users;
    for (int u = 0; u < kUserThreads; ++u) {
      users.emplace_back([&, u] {
        // Each user thread starts at a different call, so different operators and entry points
        // overlap; its outputs are its own (the backends allocate them per call). It makes half
        // a pass of calls from its start (the four threads start a quarter apart, so every call
        // runs on two of them in each round), and more until the changer has made its changes
        // (at most kMaxPasses passes).
        const std::size_t n = calls.size();
        // Half a pass and two calls: the starts are at most ceil(n / 4) apart, so that covers
        // every call twice for any n. (A whole pass each ran every call on all four threads and
        // made the test under ThreadSanitizer nearly twice as long.)
        const std::size_t share = std::min(n, n / 2 + 2);
        changer.start();
        for (std::size_t k = 0; k < share || (!changer.enough() && k < n * kMaxPasses); ++k) {
          const Call& c = *calls[(k + static_cast<std::size_t>(u) * n / kUserThreads) % n];
          std::vector<pk::HostTensor> got;
          std::string err = run_call(c, got);
          if (err.empty()) {
            if (got.size() != c.want.size()) {
              err = "wrong number of outputs";
            } else {
              for (std::size_t i = 0; i < got.size() && err.empty(); ++i) {
                if (got[i].bytes != c.want[i].bytes)
                  err = "output " + std::to_string(i) + " differs";
              }
            }
          }
          if (!err.empty()) {
            const std::lock_guard<std::mutex> lock(failures_mutex);
            failures.push_back(c.what + ": " + err);
          }
        }
      });
    }
    for (std::thread& t : users) t.join();
    changer.stop();
    std::printf("round %d (%s): %d thread-count changes during the calls\n", round, target.c_str(),
                changer.changes());
    EXPECT_GE(changer.changes(), kChangesDuringCalls);
    EXPECT_EQ(changer.failures(), 0);
    EXPECT_TRUE(failures.empty()) << failures.size()
                                  << " calls gave other results; the first: " << failures.front();
  }
  ASSERT_TRUE(mantissa::set_simd_target("auto").ok());
}

// The pool itself: parallel_for from several threads at once, with the thread count changing,
// calls every chunk of every range exactly once and returns only when all are done.
TEST(Concurrency, ParallelForFromSeveralThreadsCoversEachChunkOnce) {
  mantissa::testing::ThreadCountGuard guard;
  constexpr int64_t kN = 200000, kGrain = 1000;
  constexpr int kCallsPerThread = 200;
  std::atomic<int> bad{0};
  ThreadCountChanger changer;
  std::vector<std::thread> users;
  for (int u = 0; u < kUserThreads; ++u) {
    users.emplace_back([&] {
      std::vector<std::atomic<int>> hits(mantissa::detail::chunk_count(kN, kGrain));
      changer.start();
      // kCallsPerThread calls, and more until the changer has made its changes (bounded).
      for (int call = 0;
           call < kCallsPerThread || (!changer.enough() && call < kCallsPerThread * kMaxPasses);
           ++call) {
        for (auto& h : hits) h.store(0, std::memory_order_relaxed);
        auto body = [&](int64_t begin, int64_t end) {
          if (begin % kGrain != 0 || end != std::min(kN, begin + kGrain)) bad.fetch_add(1);
          hits[static_cast<std::size_t>(begin / kGrain)].fetch_add(1, std::memory_order_relaxed);
        };
        mantissa::detail::parallel_for(kN, kGrain, body);
        // parallel_for has returned: every chunk is done, once.
        for (auto& h : hits) {
          if (h.load(std::memory_order_relaxed) != 1) bad.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : users) t.join();
  changer.stop();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(changer.changes(), kChangesDuringCalls);
  EXPECT_EQ(changer.failures(), 0);
}

}  // namespace

}  // namespace mantissa::testing
