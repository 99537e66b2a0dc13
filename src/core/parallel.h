// Deterministic parallel-for: the range is cut into chunks of a fixed grain, whatever the thread
// count, so any per-chunk result (a partial sum, say) is the same for 1 thread or 64.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace mantissa::detail {

// Elements per chunk for streaming element-wise kernels: big enough to amortise a chunk claim,
// small enough to balance two threads on mid-sized tensors.
inline constexpr int64_t kDefaultGrain = 32768;

// A non-owning reference to a callable void(int64_t begin, int64_t end).
class RangeFn {
 public:
  template <class F>
  RangeFn(F& f) noexcept  // NOLINT: implicit by design
      : object_(&f), call_([](void* o, int64_t b, int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t);
};

// Calls fn(begin, end) for the chunks [k*grain, min(n, (k+1)*grain)) of [0, n). Runs serially
// when there is one chunk or one thread; otherwise the calling thread and the pool's workers
// claim chunks until none is left. Returns after every chunk is done. If fn throws, on any
// thread, the chunks not yet claimed are skipped and the first exception is rethrown here once
// every thread has left fn (which chunks ran is then unspecified).
void parallel_for(int64_t n, int64_t grain, RangeFn fn);

// Number of chunks parallel_for cuts [0, n) into.
constexpr int64_t chunk_count(int64_t n, int64_t grain) noexcept {
  return n <= 0 ? 0 : (n + grain - 1) / grain;
}

}  // namespace mantissa::detail
