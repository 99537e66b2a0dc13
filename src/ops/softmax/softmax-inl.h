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
  // Elements [i, i + 2 Lanes(d)) as two vectors, their exponentials evaluated together (Exp's
  // chains interleaved; the same values): the sum of a row whose exponentials are not kept
  // takes its terms in pairs (core/reduce-inl.h).
  template <class D>
  HWY_INLINE void Pair(D d, int64_t i, hn::Vec<D>& lo, hn::Vec<D>& hi) const {
    const auto m = hn::Set(d, max);
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    hn::Vec<D> v[2] = {hn::Sub(LoadF32<Format>(d, x + i), m),
                       hn::Sub(LoadF32<Format>(d, x + i + lanes), m)};
    Exp(d, v);
    lo = v[0];
    hi = v[1];
  }
};

// exps[0, n) = exp(x - max) of a contiguous row, four vectors at a time (Exp's chains
// interleaved), then one, then one lane: the same values as ExpShiftedTerm's.
template <class Format>
HWY_INLINE void StoreExpShifted(const typename Format::Storage* HWY_RESTRICT x, int64_t n,
                                float max, float* HWY_RESTRICT exps) {
  constexpr size_t kK = 4;
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto m = hn::Set(d, max);
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kK) * lanes <= n; i += static_cast<int64_t>(kK) * lanes) {
    hn::Vec<decltype(d)> v[kK];
#pragma GCC unroll 8
    for (size_t k = 0; k < kK; ++k) {
      v[k] = hn::Sub(LoadF32<Format>(d, x + i + static_cast<int64_t>(k) * lanes), m);
    }
    Exp(d, v);
#pragma GCC unroll 8
    for (size_t k = 0; k < kK; ++k) hn::StoreU(v[k], d, exps + i + static_cast<int64_t>(k) * lanes);
  }
  const ExpShiftedTerm<Format> term{x, max};
  for (; i + lanes <= n; i += lanes) hn::StoreU(term(d, i), d, exps + i);
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) hn::StoreU(term(d1, i), d1, exps + i);
}

struct SoftmaxRowStats {
  float max, sum;  // max(x) (NaN if any element is), sum of exp(x - max)
};

// max(x) of a contiguous row (NaN if any element is).
template <class Format>
HWY_INLINE float RowMax(const typename Format::Storage* x, int64_t n) {
  return MaxRow(MaxTerm<Format, false>{x}, n, -std::numeric_limits<float>::infinity());
}

// exps: null, or room for n floats that receive exp(x - max) (the same values the sum adds).
template <class Format>
HWY_INLINE SoftmaxRowStats RowStats(const typename Format::Storage* x, int64_t n,
                                    float* exps = nullptr) {
  const float max = RowMax<Format>(x, n);
  if (exps != nullptr) {
    StoreExpShifted<Format>(x, n, max, exps);
    const float* const kept = exps;
    return {max, ReduceRow<kSoftmaxSumMethod, float>(
                     [kept](auto d, int64_t i) { return hn::LoadU(d, kept + i); }, n)};
  }
  return {max, ReduceRow<kSoftmaxSumMethod, float>(ExpShiftedTerm<Format>{x, max}, n)};
}

// Rows at once RowsStats takes.
constexpr size_t kSoftmaxRowsAtOnce = kRowsAtOnce<kSoftmaxSumMethod, float>;

// RowStats of R rows of n elements (n in [1, kReduceBlock]) at once, row k at x + k * n: the same
// values, the rows' chains interleaved. exps: null, or room for R * n floats that receive
// exp(x - max) at the rows' offsets.
template <class Format, size_t R>
HWY_INLINE void RowsStats(const typename Format::Storage* x, int64_t n, float* exps,
                          SoftmaxRowStats (&stats)[R]) {
  MaxPartial maxes[R];
  MaxBlocks<R>([&](size_t k, auto d,
                   int64_t i) { return LoadF32<Format>(d, x + static_cast<int64_t>(k) * n + i); },
               0, n, maxes);
  float max[R], sum[R];
  for (size_t k = 0; k < R; ++k) max[k] = MaxValue(maxes[k]);
  auto exp_term = [&](size_t k, auto d, int64_t i) {
    const auto e = Exp(
        d, hn::Sub(LoadF32<Format>(d, x + static_cast<int64_t>(k) * n + i), hn::Set(d, max[k])));
    if (exps != nullptr) hn::StoreU(e, d, exps + static_cast<int64_t>(k) * n + i);
    return e;
  };
  BlockSums<kSoftmaxSumMethod, float, R>(exp_term, n, sum);
  for (size_t k = 0; k < R; ++k) stats[k] = {max[k], sum[k]};
}

// Rows BatchStats takes: one per lane of the accumulators (16 with AVX-512).
constexpr size_t kSoftmaxBatchRows = kRowsAcrossLanes<float>;

// RowStats of kSoftmaxBatchRows rows of n elements (n in [1, kReduceBlock / kSoftmaxBatchRows])
// at once, row k at x + k * n, each step for every row before the next: the maxes, the
// exponentials (into exps, row k at exps + k * n) and their sums. Each row's lanes are combined
// across the rows (MaxLanesOfRows, MergeLanesOfRows) instead of one narrowing chain per row; the
// same values as RowStats, max[k] and sum[k] for row k.
template <class Format>
HWY_INLINE void BatchStats(const typename Format::Storage* HWY_RESTRICT x, int64_t n,
                           float* HWY_RESTRICT exps, float* HWY_RESTRICT max,
                           float* HWY_RESTRICT sum) {
  constexpr size_t kB = kSoftmaxBatchRows;
  using V = hn::Vec<AccTag<float>>;
  const AccTag<float> d;
  V lanes[kB];
  bool nan[kB];
  for (size_t k = 0; k < kB; ++k) {
    const auto* const row = x + static_cast<int64_t>(k) * n;
    V m[1];
    bool row_nan[1];
    MaxLaneVectors<1>([row](size_t, auto dr, int64_t i) { return LoadF32<Format>(dr, row + i); }, 0,
                      n, m, row_nan);
    lanes[k] = m[0];
    nan[k] = row_nan[0];
  }
  MaxLanesOfRows(d, lanes);
  hn::StoreU(lanes[0], d, max);
  for (size_t k = 0; k < kB; ++k) {
    if (HWY_UNLIKELY(nan[k])) max[k] = std::numeric_limits<float>::quiet_NaN();
  }
  for (size_t k = 0; k < kB; ++k) {
    const int64_t at = static_cast<int64_t>(k) * n;
    StoreExpShifted<Format>(x + at, n, max[k], exps + at);
  }
  BlockSumsAcrossLanes<kSoftmaxSumMethod, float>(
      [exps, n](size_t k, auto dr, int64_t i) {
        return hn::LoadU(dr, exps + static_cast<int64_t>(k) * n + i);
      },
      n, sum);
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_SOFTMAX_INL_H_
