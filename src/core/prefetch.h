// Software prefetch for the element-wise kernels that stream 16-bit tensors from memory.
//
// Out of cache, one thread of a 16-bit optimizer step reached only 72-88% of the bandwidth probe
// with the same streams, where fp32 reaches 90-106%: with twice the elements per cache line it
// does twice the work per line, and the hardware prefetcher alone kept too few lines in flight.
// Fetching every input stream kPrefetchAheadBytes ahead brings it to the probe's rate
// (docs/performance.md). In cache the prefetches only take issue slots (up to 15% slower on 64K
// elements), so a kernel issues them only for calls that stream more than kPrefetchMinBytes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "hwy/cache_control.h"

namespace mantissa::detail {

// How far ahead of the element being computed each input stream is fetched (512 elements of a
// 16-bit tensor; measured against 2 and 4 KiB, which gained less).
inline constexpr int64_t kPrefetchAheadBytes = 1024;

// Below this many bytes read per call, the streams come from the core's own caches.
inline constexpr int64_t kPrefetchMinBytes = int64_t{1} << 20;

inline bool prefetch_pays(int64_t elements, int64_t bytes_read_per_element) {
  return elements > kPrefetchMinBytes / bytes_read_per_element;
}

// Calls fn(std::bool_constant<prefetch>) for a call of `elements` elements over `streams` input
// streams of Storage: prefetch is true for a 16-bit call that outgrows the caches (fp32 streams
// at the probe's rate without help, so its kernels are never instantiated prefetching).
template <class Storage, class Fn>
HWY_INLINE void visit_prefetch(int64_t elements, int64_t streams, Fn&& fn) {
  if constexpr (sizeof(Storage) == 2) {
    if (prefetch_pays(elements, streams * 2)) return fn(std::true_type{});
  }
  fn(std::false_type{});
}

// Fetches the cache line kPrefetchAheadBytes past p + i. The address is formed as an integer: it
// may lie past the end of the buffer, which a prefetch may name (it never faults) but a pointer
// may not point to.
// Always inlined, with hwy::Prefetch's own target attribute (a subset of every x86 target), and
// callers inline it all the way into their loop (their fetch lambdas are MANTISSA_VECTOR_BODY):
// GCC 12 deleted an out-of-line lambda that only prefetched, as a call without effects.
template <class T>
HWY_INLINE HWY_ATTR_CACHE void prefetch_ahead(const T* p, int64_t i) {
  hwy::Prefetch(reinterpret_cast<const T*>(reinterpret_cast<std::uintptr_t>(p + i) +
                                           static_cast<std::uintptr_t>(kPrefetchAheadBytes)));
}

// prefetch_ahead for each stream of a kernel, at the same element index.
template <class... T>
HWY_INLINE HWY_ATTR_CACHE void prefetch_ahead_each(int64_t i, const T*... streams) {
  (prefetch_ahead(streams, i), ...);
}

}  // namespace mantissa::detail
