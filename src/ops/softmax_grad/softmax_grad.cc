// SoftmaxGrad and LogSoftmaxGrad over one dimension: contract and validation, then one kernel
// written once for every SIMD target. Each row is read twice (the row sum, then the outputs)
// and written once.
//
// Per row of n elements (dy = grad_output, y = output, both widened exactly to fp64), in this
// order, which is normative (docs/ops/softmax_grad.md):
//   softmax:     s    = sum of dy_i * y_i     terms exact in fp64, summed in fp64 in the order
//                                             of core/reduce.h (naive method, fp64 lanes)
//                out_i = y_i * (dy_i - s)     two fp64 operations
//   log-softmax: s    = sum of dy_i           in fp64, the same order
//                e_i  = Exp64(y_i)            core/math-inl.h's fp64 exp (fp16/bf16 y: looked
//                                             up in a table of Exp64 over every bit pattern)
//                out_i = dy_i - e_i * s       two fp64 operations
// then out_i is rounded to fp32 (RNE), then to out's dtype (RNE); a NaN is stored as the
// canonical quiet NaN. The order is fixed by the row alone, so a row gives the same bits on
// every target, for any thread count, and whether the axis is the last one (rows vectorised
// along the row) or not (inner-contiguous tiles vectorised across rows, never gathering a
// strided row). Softmax with bf16 tensors along the last axis computes most of its output pass
// in fp32, where that provably gives these bits (kFp32Pass below).
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/softmax_grad/softmax_grad.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/math-inl.h"
#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/softmax_grad/softmax_grad_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

constexpr auto kSumMethod = detail::ReduceMethod::kNaive;

// Formats whose product dy * y the softmax sum forms in fp32 and widens (one widening per
// product instead of one per factor): fp16 always (22 significant bits, |dy * y| in [2^-48,
// 2^32] or 0: every product is exact in fp32); bf16 where vfpclassps tests a vector of products
// at once (16 significant bits: exact unless it under- or overflows, which leaves a subnormal,
// zero or infinite lane; such a vector, or one with a zero or infinite factor, is multiplied in
// fp64). A NaN product is NaN either way, and a NaN sum makes every output the canonical NaN.
template <class Format>
inline constexpr bool kFp32Product = std::is_same_v<Format, Fp16> ||
                                     (kIsBf16<Format> && MANTISSA_HAVE_BF16_HW);

// Whether fp32 products p (of a kFp32Product format) are all exact: a bf16 vector with a zero,
// infinite or subnormal lane is multiplied in fp64 instead.
template <class Format, class DF>
HWY_INLINE bool Fp32ProductsExact(DF df, hn::Vec<DF> p) {
#if MANTISSA_HAVE_BF16_HW
  if constexpr (kIsBf16<Format>) {
    return !AnyLaneOfClass<kClassZero | kClassInfinity | kClassSubnormal>(df, p);
  }
#endif
  (void)df;
  (void)p;
  return true;
}

// The row-sum term of element i (in fp64 lanes): dy * y (exact) or dy.
template <class Format, bool kLog>
struct GradSumTerm {
  const typename Format::Storage* dy;
  const typename Format::Storage* y;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    if constexpr (kLog) {
      return LoadAcc<Format>(da, dy + i);
    } else if constexpr (kFp32Product<Format>) {
      const hn::Rebind<float, DA> df;
      const auto p = hn::Mul(LoadF32<Format>(df, dy + i), LoadF32<Format>(df, y + i));
      if (HWY_LIKELY(Fp32ProductsExact<Format>(df, p))) return hn::PromoteTo(da, p);
      return hn::Mul(LoadAcc<Format>(da, dy + i), LoadAcc<Format>(da, y + i));
    } else {
      return hn::Mul(LoadAcc<Format>(da, dy + i), LoadAcc<Format>(da, y + i));
    }
  }

#if HWY_TARGET != HWY_SCALAR  // one lane: no pairs
  // The terms of elements [i, i + 2 Lanes(da)): lo and hi as operator() gives them, from one fp32
  // vector of products of twice the lanes (one multiplication and one class test per pair).
  template <class DA>
  requires(!kLog && kFp32Product<Format>) HWY_INLINE
      void Pair(DA da, int64_t i, hn::Vec<DA>& lo, hn::Vec<DA>& hi) const {
    const hn::Repartition<float, DA> df;  // twice da's lanes
    const hn::Half<decltype(df)> dh;
    const auto p = hn::Mul(LoadF32<Format>(df, dy + i), LoadF32<Format>(df, y + i));
    if (HWY_UNLIKELY(!Fp32ProductsExact<Format>(df, p))) {
      lo = (*this)(da, i);
      hi = (*this)(da, i + static_cast<int64_t>(hn::Lanes(da)));
      return;
    }
    lo = hn::PromoteTo(da, hn::LowerHalf(dh, p));
    hi = hn::PromoteTo(da, hn::UpperHalf(dh, p));
  }
#endif
};

// GradSumTerm of rows of n elements from row r on: row k's terms are those of row r + k.
template <class Format, bool kLog>
struct RowsGradSumTerm {
  const typename Format::Storage* dy;  // row r's first element
  const typename Format::Storage* y;
  int64_t n;
  HWY_INLINE GradSumTerm<Format, kLog> Row(size_t k) const {
    const int64_t at = static_cast<int64_t>(k) * n;
    return {dy + at, y + at};
  }
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(size_t k, DA da, int64_t i) const {
    return Row(k)(da, i);
  }
  template <class DA>
  requires RowPairedTerm<GradSumTerm<Format, kLog>, DA> HWY_INLINE void Pair(
      size_t k, DA da, int64_t i, hn::Vec<DA>& lo, hn::Vec<DA>& hi) const {
    Row(k).Pair(da, i, lo, hi);
  }
};

// Exp64 of every value a 16-bit format holds, indexed by its bits (65536 fp64 values, 512 KiB),
// computed on first use by this target's own Exp64 and kept for the process: a 16-bit y has at
// most 65536 values, so one gather replaces Exp64's 30-odd fp64 operations with the same bits
// (the bitwise tests run every bit pattern through every target). Outputs of a real log-softmax
// cover a few thousand entries, which stay in L1/L2.
template <class Format>
const double* Exp64Table() {
  static const std::vector<double> table = [] {
    constexpr std::size_t kSize = 1 << 16;
    std::vector<uint16_t> bits(kSize);
    std::iota(bits.begin(), bits.end(), uint16_t{0});
    std::vector<double> t(kSize);
    const hn::ScalableTag<double> dd;
    for (std::size_t i = 0; i < kSize; i += hn::Lanes(dd)) {
      hn::StoreU(Exp64(dd, LoadAcc<Format>(dd, bits.data() + i)), dd, t.data() + i);
    }
    return t;
  }();
  return table.data();
}

// exp(y) for K consecutive vectors of y (fp64 lanes): Exp64 for fp32, the table for fp16 and
// bf16 (one table per format: both bf16 narrowings widen alike). Returns true where every
// exponential is known to be finite and positive (Exp64's |y| < 700; never for the table).
template <class Format, bool kLog>
struct ExpOfOutput {
  static constexpr bool kTable = kLog && !std::is_same_v<Format, Fp32>;
  using Key = std::conditional_t<kIsBf16<Format>, Bf16, Format>;
  const double* table = [] {
    if constexpr (kTable) return Exp64Table<Key>();
    return static_cast<const double*>(nullptr);
  }();

  template <size_t K, class DD>
  HWY_INLINE bool operator()(DD dd, const typename Format::Storage* y, hn::Vec<DD> (&v)[K]) const {
    const size_t lanes = hn::Lanes(dd);
    if constexpr (kTable) {
      const hn::Rebind<uint16_t, DD> d16;
      const hn::Rebind<uint32_t, DD> d32;
      const hn::Rebind<uint64_t, DD> d64;
      const hn::RebindToSigned<DD> di;
#pragma GCC unroll 8
      for (size_t k = 0; k < K; ++k) {
        const auto index = hn::PromoteTo(d64, hn::PromoteTo(d32, hn::LoadU(d16, y + k * lanes)));
        v[k] = hn::GatherIndex(dd, table, hn::BitCast(di, index));
      }
      return false;
    } else {
#pragma GCC unroll 8
      for (size_t k = 0; k < K; ++k) v[k] = LoadAcc<Format>(dd, y + k * lanes);
      return Exp64(dd, v);
    }
  }
};

// Vectors per StoreGrad: the log-softmax pass takes four at once so that their exponentials
// overlap (Exp64); the softmax pass has two operations per element and takes two, stored with
// one narrowing (StoreResults).
inline constexpr size_t kGradGroup(bool log) { return log ? 4 : 2; }

// out for the K consecutive vectors of elements at dy, y (lanes of dd): y * (dy - s), or
// dy - Exp64(y) * s, with s of vector k from sum_of(k); rounded and stored (StoreResults).
//
// kFiniteSum: the caller knows every s here is finite. No result can be NaN then, for softmax
// always, for log-softmax where every exp(y) is finite and positive, so the NaN step is skipped
// (the same bits). Why: the terms of a finite fp64 sum are finite (|dy * y| < 2^256, the sum of
// fewer than 2^63 of them cannot overflow; an infinite or NaN term makes the sum so), and a
// finite product of exact factors (dy * y exact in fp64, or in fp32 when no lane over- or
// underflowed) has finite factors, as does a finite dy. So y * (dy - s) is finite, and
// dy - e * s with e finite and positive is finite or +-inf.
template <class Format, bool kLog, size_t K, bool kFiniteSum = false, class DD, class SumOf>
HWY_INLINE void StoreGrad(DD dd, const typename Format::Storage* dy,
                          const typename Format::Storage* y, const SumOf& sum_of,
                          const ExpOfOutput<Format, kLog>& exp_of, typename Format::Storage* out) {
  const size_t lanes = hn::Lanes(dd);
  hn::Vec<DD> v[K];
  bool no_nan = kFiniteSum;
  if constexpr (kLog) {
    const bool finite_exp = exp_of(dd, y, v);
    no_nan = no_nan && finite_exp;
#pragma GCC unroll 8
    for (size_t k = 0; k < K; ++k) {
      v[k] = hn::Sub(LoadAcc<Format>(dd, dy + k * lanes), hn::Mul(v[k], sum_of(k)));
    }
  } else {
#pragma GCC unroll 8
    for (size_t k = 0; k < K; ++k) {
      v[k] = hn::Mul(LoadAcc<Format>(dd, y + k * lanes),
                     hn::Sub(LoadAcc<Format>(dd, dy + k * lanes), sum_of(k)));
    }
  }
  if (no_nan) {
    StoreResults<Format, kNoNaN>(dd, v, out);
  } else {
    StoreResults<Format, NaNLanes::kPossible>(dd, v, out);
  }
}

// Softmax, bf16, last axis: the elementwise pass in fp32 where it gives the fp64 pass's bits.
//
// With the row sum s (fp64) split as hi = fp32(s), r = s - hi (exact), lo = fp32(r), a block of
// elements takes
//   t = fp32(fp32(dy - hi) - lo),   o = fp32(y * t)
// on two fp32 vectors of even and odd elements (VectorSet<Format, 2>), then o's one rounding to
// bf16. Why that gives the fp64 pass's bits, with T = dy - s exact and s = 0 or
// 2^-60 <= |s| <= 2^60 (checked per row: hi and lo are then normal or zero, and no step before
// the product overflows):
// - dy within a factor of 2 of hi: D = dy - hi is exact, and a multiple of hi's fp32 step (a
//   bf16 dy there lies on a coarser grid), which is at least 2 |r|. D = 0 gives T = -r, else
//   |T| >= |r|; lo errs by 2^-24 |r|, the subtraction by 2^-24 |t|: |t - T| <= 2^-23 |T|.
// - otherwise |D| >= |hi| / 2 >= 2^23 |r|, and the two roundings and lo's error add up to at
//   most 1.01 * 2^-23 |T|.
// So o is within 1.5 * 2^-23 |y T| of y T (a subnormal or overflowing o within half an fp32
// step beyond that): at most 3 fp32 steps. The fp64 pass's fp32 value is within half a step
// (and 2^-52 |y T|). Both have y T's sign, so as fp32 bit patterns they are at most 4 apart, 8
// across a power of two, and fp32 -> bf16 rounding is monotonic in the pattern: they round to
// the same bf16 unless a rounding midpoint (low 16 bits 0x8000) lies within 8 patterns of o.
// A block with a lane within kBf16MidpointWindow (16) patterns of a midpoint (NearBf16Midpoint;
// about 1 block in 60) is computed by the fp64 pass instead. (Measured over 10^8 random and
// adversarial lanes, including dy equal to s rounded to bf16 with s carrying 53 bits: at most 2
// patterns apart.) NaN cannot arise here (a finite s means every dy * y is finite); infinities and
// subnormal results are stored by VectorSet's rounding, as the fp64 pass stores them.
template <class Format, bool kLog>
inline constexpr bool kFp32Pass = !kLog && kIsBf16<Format> && HWY_TARGET != HWY_SCALAR;

struct SplitSum {
  float hi, lo;
};

// The split of a row sum, or nothing where the row takes the fp64 pass.
inline std::optional<SplitSum> SplitRowSum(double s) {
  const double a = std::fabs(s);
  if (!(s == 0.0 || (a >= 0x1p-60 && a <= 0x1p60))) return std::nullopt;
  const float hi = static_cast<float>(s);
  return SplitSum{hi, static_cast<float>(s - static_cast<double>(hi))};
}

// One block of 2 * Lanes(df) elements: stores it and returns true, or returns false (nothing
// stored) when a result lies near a bf16 rounding midpoint.
template <class Format, class DF>
HWY_INLINE bool Fp32PassBlock(DF df, const uint16_t* dy, const uint16_t* y, const SplitSum& s,
                              uint16_t* out) {
  using Set = VectorSet<Format, 2>;
  const auto dyv = Set::Load(df, dy);
  const auto yv = Set::Load(df, y);
  const auto hi = hn::Set(df, s.hi), lo = hn::Set(df, s.lo);
  typename Set::template Vecs<DF> o;
  o[0] = hn::Mul(yv[0], hn::Sub(hn::Sub(dyv[0], hi), lo));
  o[1] = hn::Mul(yv[1], hn::Sub(hn::Sub(dyv[1], hi), lo));
  const auto near = hn::Or(NearBf16Midpoint(df, o[0]), NearBf16Midpoint(df, o[1]));
  if (HWY_UNLIKELY(!hn::AllFalse(hn::RebindToSigned<DF>(), near))) return false;
  Set::StoreResult(df, o, out);
  return true;
}

// Last axis: each row contiguous. While a row's elementwise pass runs (from cache: its sum has
// just read it), the next row to be summed is fetched (rows up to kPrefetchedRowBytes), so that
// memory is not idle in one pass and awaited in the other.
template <class Format, bool kLog>
void LastAxisRows(const detail::SoftmaxGradKernelArgs& a, const ExpOfOutput<Format, kLog>& exp_of,
                  int64_t begin, int64_t end) {
  using S = typename Format::Storage;
  const int64_t n = a.rows.axis;
  const S* const dy_all = static_cast<const S*>(a.dy);
  const S* const y_all = static_cast<const S*>(a.y);
  S* const out_all = static_cast<S*>(a.out);
  // Short rows (one reduction block), several at once: the same sums as ReduceRow's. Softmax's
  // elementwise pass is a few operations per element and waits on the cache it reads its rows
  // back from: it groups rows only while a group's dy and y fit in kGroupedRowBytes (L1, beside
  // the outputs). Log-softmax's pass, an exponential per element, was no faster either way.
  constexpr int64_t kR = static_cast<int64_t>(kRowsAtOnce<kSumMethod, double>);
  constexpr int64_t kGroupedRowBytes = 32 * 1024;
  const bool grouped = kR > 1 && n <= detail::kReduceBlock &&
                       (kLog || kR * n * 2 * int64_t{sizeof(S)} <= kGroupedRowBytes);
  // Row r's elementwise pass with row sum s, fetching row `next` (if in [begin, end)).
  // In place (out is dy) is safe: element i is read before it is written, and never again.
  // Inlined into both loops below: a call per row cost a tenth of the time on rows of 64.
  auto finish_row = [&](int64_t r, double s, int64_t next) MANTISSA_VECTOR_BODY {
    // Locals, not captures: a 16-bit store may alias the closure, which would reload them.
    const int64_t len = n;
    const S* const dy = dy_all + r * len;
    const S* const y = y_all + r * len;
    S* const out = out_all + r * len;
    const S* const dy_next = detail::row_to_fetch(dy_all, len, next, end);
    const S* const y_next = detail::row_to_fetch(y_all, len, next, end);
    const S* const out_next = detail::row_to_fetch<const S>(out_all, len, next, end);
    const auto fetch = [&](int64_t i) MANTISSA_VECTOR_BODY {
      if (dy_next != nullptr) {
        hwy::Prefetch(dy_next + i);
        hwy::Prefetch(y_next + i);
        // Softmax's rows taken one at a time also have their stores' lines fetched (grouped
        // rows and log-softmax's were no faster so).
        if constexpr (!kLog) {
          if (!grouped) hwy::Prefetch(out_next + i);
        }
      }
    };
    // The fp64 pass over [from, to); a finite row sum lets StoreGrad skip the NaN step.
    const auto fp64_pass = [&](int64_t from, int64_t to) MANTISSA_VECTOR_BODY {
      const auto pass = [&](auto finite_sum) MANTISSA_VECTOR_BODY {
        ForEachDoubleVectorGroup<kGradGroup(kLog)>(
            from, to, [&](auto dd, int64_t i, auto count) MANTISSA_VECTOR_BODY {
              if (decltype(count)::value == kGradGroup(kLog)) fetch(i);
              const auto row_sum = hn::Set(dd, s);
              StoreGrad<Format, kLog, decltype(count)::value, decltype(finite_sum)::value>(
                  dd, dy + i, y + i, [&](size_t) { return row_sum; }, exp_of, out + i);
            });
      };
      if (std::isfinite(s)) {
        pass(std::true_type{});
      } else {
        pass(std::false_type{});
      }
    };
    int64_t i = 0;
    if constexpr (kFp32Pass<Format, kLog>) {
      if (const std::optional<SplitSum> split = SplitRowSum(s)) {
        const hn::ScalableTag<float> df;
        const int64_t step = 2 * static_cast<int64_t>(hn::Lanes(df));
        for (; i + step <= len; i += step) {
          fetch(i);
          if (!Fp32PassBlock<Format>(df, dy + i, y + i, *split, out + i)) fp64_pass(i, i + step);
        }
      }
    }
    fp64_pass(i, len);
  };
  int64_t r = begin;
  if (grouped) {
    for (; r + kR <= end; r += kR) {
      double s[kR];
      BlockSums<kSumMethod, double, kR>(
          RowsGradSumTerm<Format, kLog>{dy_all + r * n, y_all + r * n, n}, n, s);
      for (int64_t k = 0; k < kR; ++k) finish_row(r + k, s[k], r + kR + k);
    }
  }
  for (; r < end; ++r) {
    finish_row(
        r,
        ReduceRow<kSumMethod, double>(GradSumTerm<Format, kLog>{dy_all + r * n, y_all + r * n}, n),
        r + 1);
  }
}

// A non-last axis: one tile of up to kTileWidth rows, element (k, j) at offset + k * stride + j.
// The sum replays core/reduce.h's order per row: axis element k of block b goes to lane
// (k - b) % 32 of that row's lane sums; blocks combine along the pairwise tree.
template <class Format, bool kLog>
void Tile(const detail::SoftmaxGradKernelArgs& a, const ExpOfOutput<Format, kLog>& exp_of,
          const detail::Tile& t) {
  using S = typename Format::Storage;
  constexpr int kW = static_cast<int>(detail::kTileWidth);
  constexpr int kL = detail::kReduceLanes;
  const S* dy = static_cast<const S*>(a.dy) + t.offset;
  const S* y = static_cast<const S*>(a.y) + t.offset;
  S* out = static_cast<S*>(a.out) + t.offset;
  const int64_t n = a.rows.axis, stride = t.stride;
  const int64_t w = t.i1 - t.i0;
  const GradSumTerm<Format, kLog> term{dy, y};

  HWY_ALIGN double lanes[kL][kW];
  HWY_ALIGN double sum[kW];
  using P = detail::Partial<double>;
  const auto merge = [](const P& p, const P& q) { return detail::merge<kSumMethod>(p, q); };
  // Several blocks per row: their partials combine along the pairwise tree, kept on this stack
  // (constructed only then: it is kMaxBlockLevels x kW partials).
  std::optional<detail::LockstepPairwiseStacks<P, kW, detail::kMaxBlockLevels>> stacks;
  if (n > detail::kReduceBlock) stacks.emplace();
  P partial[kW];  // a block's partial per row; each row's total after the collapse
  for (int64_t b = 0; b < n; b += detail::kReduceBlock) {
    const int64_t len = std::min(detail::kReduceBlock, n - b);
    for (int l = 0; l < kL; ++l) std::fill(lanes[l], lanes[l] + kW, -0.0);
    for (int64_t k = 0; k < len; ++k) {
      double* lane = lanes[k % kL];
      const int64_t at = (b + k) * stride;
      ForEachDoubleVector(0, w, [&](auto dd, int64_t j) MANTISSA_VECTOR_BODY {
        hn::StoreU(hn::Add(hn::LoadU(dd, lane + j), term(dd, at + j)), dd, lane + j);
      });
    }
    for (int64_t j = 0; j < w; ++j) {
      double sums[kL], comps[kL];
      for (int l = 0; l < kL; ++l) sums[l] = lanes[l][j], comps[l] = -0.0;
      partial[j] = CombineLanes<kSumMethod>(sums, comps);
    }
    if (stacks) stacks->push(partial, static_cast<int>(w), merge);
  }
  if (stacks) stacks->collapse(partial, static_cast<int>(w), merge);
  for (int64_t j = 0; j < w; ++j) sum[j] = detail::finish<kSumMethod>(partial[j]);

  for (int64_t k = 0; k < n; ++k) {
    const int64_t at = k * stride;
    ForEachDoubleVectorGroup<kGradGroup(kLog)>(
        0, w, [&](auto dd, int64_t j, auto count) MANTISSA_VECTOR_BODY {
          const size_t n_lanes = hn::Lanes(dd);
          StoreGrad<Format, kLog, decltype(count)::value>(
              dd, dy + at + j, y + at + j,
              [&](size_t v) { return hn::LoadU(dd, sum + j + v * n_lanes); }, exp_of, out + at + j);
        });
  }
}

template <class Format, bool kLog>
void SoftmaxGradFormat(const detail::SoftmaxGradKernelArgs& a) {
  // On the calling thread, before the parallel region: the first call in a format fills its exp
  // table here, where a failed allocation reaches the entry's exception barrier (a status, no
  // output written) instead of a pool worker.
  const ExpOfOutput<Format, kLog> exp_of;
  if (a.rows.last_axis()) {
    detail::for_each_row_block(a.rows, [&](int64_t begin, int64_t end) {
      LastAxisRows<Format, kLog>(a, exp_of, begin, end);
    });
  } else {
    detail::for_each_tile(a.rows, [&](const detail::Tile& t) { Tile<Format, kLog>(a, exp_of, t); });
  }
}

void SoftmaxGradImpl(const detail::SoftmaxGradKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) {
    if (a.log) {
      SoftmaxGradFormat<decltype(format), true>(a);
    } else {
      SoftmaxGradFormat<decltype(format), false>(a);
    }
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "ops/softmax_grad/softmax_grad_desc.h"

namespace mantissa {

HWY_EXPORT(SoftmaxGradImpl);

namespace {

Status run_softmax_grad(const SoftmaxGradTensors& t, int64_t dim, bool log) {
  const int64_t n = *t.grad_output.numel();
  if (n == 0) return {};  // nothing to read or write
  detail::SoftmaxGradKernelArgs a;
  a.dtype = t.grad_output.dtype;
  a.rows = detail::rows_over_dim(
      std::span<const int64_t>(t.grad_output.shape.data(), t.grad_output.rank), dim);
  a.dy = t.grad_output.data;
  a.y = t.output.data;
  a.out = t.out.data;
  a.log = log;
  HWY_DYNAMIC_DISPATCH(SoftmaxGradImpl)(a);
  return {};
}

}  // namespace

// Validation is derived from the declaration (softmax_grad_desc.h): output and out have
// grad_output's dtype and shape; out is grad_output itself (in place) or shares no byte with
// either input.
Status softmax_grad_validate(const SoftmaxGradTensors& t, const SoftmaxGradParams& p) {
  return detail::validate<detail::SoftmaxGradOp>(t, p);
}

Status softmax_grad(const SoftmaxGradTensors& t, const SoftmaxGradParams& p) {
  return detail::op_entry<detail::SoftmaxGradOp>(
      t, p, [&]() -> Status { return run_softmax_grad(t, p.dim, false); });
}

Status log_softmax_grad_validate(const SoftmaxGradTensors& t, const SoftmaxGradParams& p) {
  return detail::validate<detail::LogSoftmaxGradOp>(t, p);
}

Status log_softmax_grad(const SoftmaxGradTensors& t, const SoftmaxGradParams& p) {
  return detail::op_entry<detail::LogSoftmaxGradOp>(
      t, p, [&]() -> Status { return run_softmax_grad(t, p.dim, true); });
}

}  // namespace mantissa
#endif  // HWY_ONCE
