// Per-target pieces of the kernels that read a short row once (LayerNormGrad, RmsNormGrad): which
// row lengths qualify, and the row loop that keeps two rows in flight. Their row sums are
// core/reduce-inl.h's NaiveSumsOfVectors.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_CORE_SHORT_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_CORE_SHORT_ROWS_INL_H_
#undef MANTISSA_CORE_SHORT_ROWS_INL_H_
#else
#define MANTISSA_CORE_SHORT_ROWS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/reduce-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Calls body(kVectors) where rows of n elements are one or two of core/reduce.h's lane groups,
// kVectors vectors of AccTag<double>, on targets of at least four fp64 lanes (AVX2, AVX-512: at
// most 16 vectors per row, a pair of rows held in registers or close to them), and returns true;
// returns false otherwise (other lengths and the narrower targets keep their multi-pass kernels).
template <class Body>
bool WithShortRowVectors(int64_t n, Body&& body) {
  if constexpr (hn::MaxLanes(AccTag<double>()) < 4) {
    (void)n, (void)body;
    return false;
  } else {
    constexpr size_t kV = kAccVectors<AccTag<double>>;
    constexpr int64_t kGroup = detail::kReduceLanes;
    if (n == kGroup) return body(std::integral_constant<size_t, kV>()), true;
    if (n == 2 * kGroup) return body(std::integral_constant<size_t, 2 * kV>()), true;
    return false;
  }
}

// Rows [r0, r1) in order, software-pipelined over two Row slots: read(row + 1, slot) runs before
// write(row, other slot), so that the latency of one row's sums (a chain of dependent additions
// ending in a division) overlaps the other row's work. Each row is read once, then written once.
template <class Row, class Read, class Write>
HWY_INLINE void ForEachRowTwoInFlight(int64_t r0, int64_t r1, const Read& read,
                                      const Write& write) {
  if (r0 >= r1) return;
  Row even{}, odd{};
  read(r0, even);
  for (int64_t row = r0; row < r1; row += 2) {
    if (row + 1 < r1) read(row + 1, odd);
    write(row, even);
    if (row + 1 >= r1) break;
    if (row + 2 < r1) read(row + 2, even);
    write(row + 1, odd);
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_SHORT_ROWS_INL_H_
