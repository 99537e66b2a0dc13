// SoftmaxCrossEntropyWithLogits: contract and validation, then one kernel written once for every
// SIMD target. Per row of C classes (the order is normative, see the public header):
//   m = max(x)                              exact; a NaN makes it NaN
//   s = sum of exp(x - m)                   fp32, Kahan, core/reduce.h's order (Softmax's sum)
//   l = log(s)                              core/math-inl.h's Log
//   backprop_i = (exp(x_i - m) / s) - y_i   fp32 operations, rounded once to the dtype
//   loss = sum of y_i * (l - (x_i - m))     products exact in fp64, summed in fp64 in
//                                           core/reduce.h's order (naive), rounded once to fp32,
//                                           then to the dtype
// The row is read three times (max, sum, the output pass) and backprop written once; the loss
// accumulates during the output pass. So backprop_i + y_i is Softmax's fp32 value bit for bit,
// and loss is -(log-softmax . labels) with only the final rounding.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE \
  "ops/softmax_cross_entropy_with_logits/softmax_cross_entropy_with_logits.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cstdint>
#include <limits>

#include "core/math-inl.h"
#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/softmax/softmax-inl.h"
#include "ops/softmax_cross_entropy_with_logits/softmax_cross_entropy_with_logits_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The output pass as the terms of the loss sum: stores backprop_i, returns y_i * (l - (x_i - m))
// in fp64. The naive fp64 sum calls it once per element. exps holds the row's exp(x_i - m) as
// the statistics computed them (the same values Exp gives), or is null (rows longer than a
// reduction block: Exp here).
template <class Format>
struct OutputTerm {
  using S = typename Format::Storage;
  const S* x;
  const S* y;
  S* backprop;
  const float* exps;
  float max, sum, log_sum;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    const hn::Rebind<float, DA> df;
    const auto shifted = hn::Sub(LoadF32<Format>(df, x + i), hn::Set(df, max));
    const auto label = LoadF32<Format>(df, y + i);
    const auto e = exps != nullptr ? hn::LoadU(df, exps + i) : Exp(df, shifted);
    const auto softmax = hn::Div(e, hn::Set(df, sum));
    StoreResult<Format>(df, hn::Sub(softmax, label), backprop + i);
    const auto neg_log_softmax = hn::Sub(hn::Set(df, log_sum), shifted);
    return hn::Mul(hn::PromoteTo(da, label), hn::PromoteTo(da, neg_log_softmax));
  }
};

template <class Format>
void CrossEntropyRows(const detail::CrossEntropyKernelArgs& a, int64_t begin, int64_t end) {
  using S = typename Format::Storage;
  const int64_t n = a.classes;
  const S* const x_all = static_cast<const S*>(a.features);
  const hn::CappedTag<float, 1> d1;
  // Row r's outputs from Softmax's statistics, log(sum) and the row's exponentials.
  auto finish_row = [&](int64_t r, float max, float sum, float log_sum, const float* exps) {
    const S* x = x_all + r * n;
    const S* y = static_cast<const S*>(a.labels) + r * n;
    S* backprop = static_cast<S*>(a.backprop) + r * n;
    const double loss = ReduceRow<detail::ReduceMethod::kNaive, double>(
        OutputTerm<Format>{x, y, backprop, exps, max, sum, log_sum}, n);
    StoreResult<Format>(d1, hn::Set(d1, static_cast<float>(loss)), static_cast<S*>(a.loss) + r);
  };
  HWY_ALIGN float exps[detail::kReduceBlock];
  int64_t r = begin;
  // Few classes: Softmax's batches of short rows (the same statistics), their logs in one vector.
  constexpr int64_t kB = static_cast<int64_t>(kSoftmaxBatchRows);
  if (kB > 1 && n * kB <= detail::kReduceBlock) {
    const AccTag<float> d;
    for (; r + kB <= end; r += kB) {
      HWY_ALIGN float max[kB], sum[kB], log_sum[kB];
      BatchStats<Format>(x_all + r * n, n, exps, max, sum);
      hn::Store(Log(d, hn::Load(d, sum)), d, log_sum);
      for (int64_t k = 0; k < kB; ++k) {
        finish_row(r + k, max[k], sum[k], log_sum[k], exps + k * n);
      }
    }
  }
  float* const kept = n <= detail::kReduceBlock ? exps : nullptr;
  for (; r < end; ++r) {
    const SoftmaxRowStats stats = RowStats<Format>(x_all + r * n, n, kept);  // Softmax's
    finish_row(r, stats.max, stats.sum, hn::GetLane(Log(d1, hn::Set(d1, stats.sum))), kept);
  }
}

void CrossEntropyImpl(const detail::CrossEntropyKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) {
    detail::for_each_row_block(detail::Rows{a.rows, a.classes, 1}, [&](int64_t begin, int64_t end) {
      CrossEntropyRows<decltype(format)>(a, begin, end);
    });
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "ops/softmax_cross_entropy_with_logits/softmax_cross_entropy_with_logits_desc.h"

namespace mantissa {

HWY_EXPORT(CrossEntropyImpl);

// Validation is derived from the declaration: loss and backprop share no byte with any other
// tensor of the call.
Status softmax_cross_entropy_with_logits_validate(const SoftmaxCrossEntropyWithLogitsTensors& t,
                                                  const SoftmaxCrossEntropyWithLogitsParams& p) {
  return detail::validate<detail::SoftmaxCrossEntropyWithLogitsOp>(t, p);
}

Status softmax_cross_entropy_with_logits(const SoftmaxCrossEntropyWithLogitsTensors& t,
                                         const SoftmaxCrossEntropyWithLogitsParams& p) {
  return detail::op_entry<detail::SoftmaxCrossEntropyWithLogitsOp>(t, p, [&]() -> Status {
    const int64_t rows = t.features.shape[0], classes = t.features.shape[1];
    if (rows == 0) return {};
    if (classes == 0) {
      // No classes: every row's loss is the empty sum, +0; backprop is empty.
      for (int64_t r = 0; r < rows; ++r)
        store_from_float(t.loss.dtype, t.loss.data, static_cast<std::size_t>(r), 0.0f);
      return {};
    }
    detail::CrossEntropyKernelArgs a;
    a.dtype = t.features.dtype;
    a.rows = rows;
    a.classes = classes;
    a.features = t.features.data;
    a.labels = t.labels.data;
    a.loss = t.loss.data;
    a.backprop = t.backprop.data;
    HWY_DYNAMIC_DISPATCH(CrossEntropyImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
