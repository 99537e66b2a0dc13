// RmsNorm's per-row computation for every SIMD target, shared by the kernels that normalise a row
// as RmsNorm does (RmsNorm itself; AddRmsNorm, on the rounded sum of its inputs), so that they
// give the same bits by construction. The order is normative (ops/rms_norm/rms_norm.cc):
//   ss   = sum of x_i * x_i          the squares exact in fp64, summed in core/reduce.h's order
//                                    (naive method, fp64 lanes)
//   rstd = fp32(1 / sqrt(ss / n + epsilon))   fp64 steps, one rounding to fp32 (NaN canonical)
//   y_i  = (x_i * rstd) * gamma_i    two fp32 multiplications, rounded once to y's dtype
//
// Glossary: a "row term" gives the squares of one row's elements [i, i + Lanes(da)) in fp64 lanes
// (core/reduce-inl.h's terms); "row_term(r)" makes the term of row r.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_OPS_RMS_NORM_RMS_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_OPS_RMS_NORM_RMS_NORM_INL_H_
#undef MANTISSA_OPS_RMS_NORM_RMS_NORM_INL_H_
#else
#define MANTISSA_OPS_RMS_NORM_RMS_NORM_INL_H_
#endif

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/reduce-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// rstd of a row of n elements from its sum of squares: each step one fp64 operation, in this
// order, then one rounding to fp32; a NaN (a NaN or inf element, or n == 0: 0 / 0) is the
// canonical quiet NaN.
HWY_INLINE float RmsNormRstd(double ss, int64_t n, double epsilon) {
  const double mean = ss / static_cast<double>(n);
  const float rstd = static_cast<float>(1.0 / std::sqrt(mean + epsilon));
  return std::isnan(rstd) ? std::numeric_limits<float>::quiet_NaN() : rstd;
}

// y_i = (x_i * rstd) * gamma_i over a row of n elements, rounded once to XF: x(d, i) gives the
// row's x_i as fp32 lanes. Each vector of y is stored after its x and gamma are read, so y may be
// the very buffer x(d, i) reads. fetch(i) is called once per vector, before it (a prefetch of
// the next row's inputs).
template <class XF, class GF, class X, class Fetch = NoFetch>
HWY_INLINE void RmsNormScaleRow(const X& x, const typename GF::Storage* gamma,
                                typename XF::Storage* y, int64_t n, float rstd,
                                const Fetch& fetch = {}) {
  ForEachVector(0, n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
    fetch(i);
    const auto xr = hn::Mul(x(d, i), hn::Set(d, rstd));
    StoreResult<XF>(d, hn::Mul(xr, LoadF32<GF>(d, gamma + i)), y + i);
  });
}

// The row terms of rows r, r + 1, ... as one term of rows (core/reduce-inl.h: row k's terms are
// term(k, da, i)), with the rows' pairs where their terms give them.
template <class RowTerm>
struct RowsOfTerm {
  const RowTerm& row_term;
  int64_t first;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(size_t k, DA da, int64_t i) const {
    return row_term(first + static_cast<int64_t>(k))(da, i);
  }
  template <class DA>
  requires RowPairedTerm<decltype(std::declval<const RowTerm&>()(int64_t{0})), DA> HWY_INLINE void
  Pair(size_t k, DA da, int64_t i, hn::Vec<DA>& lo, hn::Vec<DA>& hi) const {
    row_term(first + static_cast<int64_t>(k)).Pair(da, i, lo, hi);
  }
};

// Rows [begin, end) of n elements: each row's sum of squares in core/reduce.h's order (short rows,
// of one reduction block, several at once: the same sums as ReduceRow's), then
// finish(r, ss, ahead) for each row in increasing order, where row r + ahead is a row the block
// reads next (for a prefetch; it may be past end). Every element's term is asked for exactly
// once (the naive method never recomputes a block), so a term may also store what it computes
// (AddRmsNorm's x). kSeveralRows = false sums one row at a time (the same sums).
template <bool kSeveralRows = true, class RowTerm, class Finish>
HWY_INLINE void RmsNormRowBlock(int64_t begin, int64_t end, int64_t n, const RowTerm& row_term,
                                const Finish& finish) {
  constexpr detail::ReduceMethod kNaive = detail::ReduceMethod::kNaive;
  int64_t r = begin;
  constexpr size_t kR = kSeveralRows ? kRowsAtOnce<kNaive, double> : 1;
  if (kR > 1 && n >= 1 && n <= detail::kReduceBlock) {
    for (; r + static_cast<int64_t>(kR) <= end; r += static_cast<int64_t>(kR)) {
      double ss[kR];
      BlockSums<kNaive, double, kR>(RowsOfTerm<RowTerm>{row_term, r}, n, ss);
      for (size_t k = 0; k < kR; ++k) {
        finish(r + static_cast<int64_t>(k), ss[k], static_cast<int64_t>(kR));
      }
    }
  }
  for (; r < end; ++r) finish(r, ReduceRow<kNaive, double>(row_term(r), n), int64_t{1});
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_RMS_NORM_RMS_NORM_INL_H_
