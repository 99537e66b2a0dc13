// The anomaly detector's pass: counts, sums of squares and the optional fused unscale, written
// once for every SIMD target. See grad_stats.h.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "amp/grad_stats.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "amp/grad_stats.h"
#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

template <class Format, bool kWrite>
struct StatsTerm {
  typename Format::Storage* g;
  float inv_scale;
  float underflow_bound;
  uint32_t bound_bits;  // the bits of underflow_bound
  detail::GradBlockCounts* counts;

  template <class DF>
  HWY_NOINLINE void Count(DF df, hn::Vec<DF> v, hn::Vec<DF> y, int64_t i) const {
    const auto zero = hn::Zero(df);
    const auto inf = hn::IsInf(v);
    const auto nonfinite = hn::Not(hn::IsFinite(v));
    const auto ay = hn::Abs(y);
    const auto under = hn::And(hn::Ne(y, zero), hn::Le(ay, hn::Set(df, underflow_bound)));
    const auto above = hn::And(hn::Gt(ay, hn::Set(df, 65504.0f)), hn::IsFinite(y));
    counts->nan += static_cast<int64_t>(hn::CountTrue(df, hn::IsNaN(v)));
    counts->pos_inf += static_cast<int64_t>(hn::CountTrue(df, hn::And(inf, hn::Gt(v, zero))));
    counts->neg_inf += static_cast<int64_t>(hn::CountTrue(df, hn::And(inf, hn::Lt(v, zero))));
    counts->underflow += static_cast<int64_t>(hn::CountTrue(df, under));
    counts->above += static_cast<int64_t>(hn::CountTrue(df, above));
    if (counts->first < 0 && !hn::AllFalse(df, nonfinite)) {
      const intptr_t lane = hn::FindFirstTrue(df, nonfinite);
      HWY_ALIGN float lanes[hn::MaxLanes(df)];
      hn::Store(v, df, lanes);
      counts->first = i + lane;
      counts->first_value = lanes[lane];
    }
  }

  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    const hn::Rebind<float, DA> df;
    const auto v = LoadF32<Format>(df, g + i);
    auto y = v;
    auto w = v;
    if constexpr (kWrite) {
      y = hn::Mul(v, hn::Set(df, inv_scale));
      StoreResult<Format>(df, y, g + i);
      w = LoadF32<Format>(df, g + i);  // the value stored (rounded to the tensor's dtype)
    }
    // One test per vector on the magnitude's bits u (unsigned): u > bits(65504) holds the values
    // above the fp16 maximum, Inf and NaN; u - 1 < bits(bound) the nonzero values up to the
    // underflow bound (zero wraps to the largest u - 1). The counting runs only for vectors that
    // hold such a value.
    const hn::RebindToUnsigned<decltype(df)> du;
    const auto u = hn::And(hn::BitCast(du, y), hn::Set(du, 0x7FFFFFFFu));
    const auto odd = hn::Or(hn::Gt(u, hn::Set(du, 0x477FE000u)),
                            hn::Lt(hn::Sub(u, hn::Set(du, 1u)), hn::Set(du, bound_bits)));
    if (HWY_UNLIKELY(!hn::AllFalse(du, odd))) Count(df, v, y, i);
    const auto wd = hn::PromoteTo(da, w);
    return hn::Mul(wd, wd);  // exact in fp64
  }
};

template <class Format, bool kWrite>
detail::Partial<double> StatsBlock(const detail::GradStatsArgs& a, const detail::GradStatsItem& it,
                                   detail::GradBlockCounts* counts) {
  auto* g = static_cast<typename Format::Storage*>(a.grads[it.tensor].data);
  const StatsTerm<Format, kWrite> term{g, a.inv_scale, a.underflow_bound,
                                       std::bit_cast<uint32_t>(a.underflow_bound), counts};
  return ReduceBlock<detail::ReduceMethod::kNaive, double>(term, it.begin, it.len);
}

void GradStatsImpl(const detail::GradStatsArgs& a, const std::vector<detail::GradStatsItem>& items,
                   std::vector<detail::Partial<double>>& sums,
                   std::vector<detail::GradBlockCounts>& counts) {
  auto pieces = [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const auto idx = static_cast<std::size_t>(k);
      const detail::GradStatsItem& it = items[idx];
      detail::GradBlockCounts* c = &counts[idx];
      VisitFormat(a.grads[it.tensor].dtype, [&](auto format) {
        using F = decltype(format);
        sums[idx] = a.write ? StatsBlock<F, true>(a, it, c) : StatsBlock<F, false>(a, it, c);
      });
    }
  };
  detail::parallel_for(static_cast<int64_t>(items.size()), detail::kReduceBlocksPerChunk, pieces);
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/fpenv.h"
#include "core/runtime_internal.h"

namespace mantissa::detail {

HWY_EXPORT(GradStatsImpl);

std::vector<GradTensorStats> grad_stats(const GradStatsArgs& a) {
  const detail::DefaultFpEnv fp_env;  // the default environment, whatever the caller set
  std::vector<GradStatsItem> items;
  for (std::size_t t = 0; t < a.grads.size(); ++t) {
    const int64_t n = a.grads[t].numel().value_or(0);
    for (int64_t b = 0; b < n; b += kReduceBlock) {
      items.push_back({t, b, std::min(kReduceBlock, n - b)});
    }
  }
  std::vector<Partial<double>> sums(items.size());
  std::vector<GradBlockCounts> counts(items.size());
  if (!items.empty()) {
    ensure_runtime_initialized();
    HWY_DYNAMIC_DISPATCH(GradStatsImpl)(a, items, sums, counts);
  }
  // Each tensor's blocks combine in order along the pairwise tree (core/reduce.h).
  std::vector<GradTensorStats> out(a.grads.size());
  std::size_t k = 0;
  for (std::size_t t = 0; t < a.grads.size(); ++t) {
    GradTensorStats& s = out[t];
    PairwiseStack<Partial<double>> stack;
    bool any = false;
    for (; k < items.size() && items[k].tensor == t; ++k) {
      const auto& c = counts[k];
      s.nan += c.nan;
      s.pos_inf += c.pos_inf;
      s.neg_inf += c.neg_inf;
      s.underflow += c.underflow;
      s.above_fp16_max += c.above;
      if (s.first_nonfinite < 0 && c.first >= 0) {
        s.first_nonfinite = c.first;
        s.first_nonfinite_value = c.first_value;
      }
      stack.push(sums[k], merge_plain<double>);
      any = true;
    }
    s.sum_squares = any ? finish<ReduceMethod::kNaive>(stack.collapse(merge_plain<double>)) : 0.0;
  }
  return out;
}

}  // namespace mantissa::detail
#endif  // HWY_ONCE
