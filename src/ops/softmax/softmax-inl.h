// The statistics of one contiguous softmax row, shared by every kernel that must agree with
// Softmax bit for bit (Softmax/LogSoftmax, SoftmaxCrossEntropyWithLogits): the exact max and the
// Kahan fp32 sum of exp(x - max) in core/reduce.h's order.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_OPS_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_OPS_SOFTMAX_INL_H_
#undef MANTISSA_OPS_SOFTMAX_INL_H_
#else
#define MANTISSA_OPS_SOFTMAX_INL_H_
#endif

#include <cstdint>
#include <limits>

#include "core/math-inl.h"
#include "core/reduce-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The sum's method: part of the operators' normative order.
constexpr auto kSoftmaxSumMethod = detail::ReduceMethod::kKahan;

// exp(x - max) of the elements [i, i + Lanes(d)) of one contiguous row.
template <class Format>
struct ExpShiftedTerm {
  const typename Format::Storage* x;
  float max;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    return Exp(d, hn::Sub(LoadF32<Format>(d, x + i), hn::Set(d, max)));
  }
};

struct SoftmaxRowStats {
  float max, sum;  // max(x) (NaN if any element is), sum of exp(x - max)
};

template <class Format>
HWY_INLINE SoftmaxRowStats RowStats(const typename Format::Storage* x, int64_t n) {
  const float max = MaxRow(MaxTerm<Format, false>{x}, n, -std::numeric_limits<float>::infinity());
  return {max, ReduceRow<kSoftmaxSumMethod, float>(ExpShiftedTerm<Format>{x, max}, n)};
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_SOFTMAX_INL_H_
