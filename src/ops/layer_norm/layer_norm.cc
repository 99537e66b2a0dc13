// LayerNorm: contract and validation, then the row kernel written once for every SIMD target.
// Per row of n elements (the trailing dims normalized_shape names), in this order, which is
// normative:
//   s    = sum of x_i                  widened to fp64, summed in the order of core/reduce.h
//                                      (naive method, fp64 lanes)
//   mean = s / n                       fp64
//   q    = sum of (x_i - mean)^2       fp64 terms, the same order (centred: two passes)
//   rstd = 1 / sqrt(q / n + eps)       each step one fp64 operation
//   out_i = ((x_i - mean) * rstd) * w_i + b_i   fp64 operations, rounded to fp32, then to out's
//                                      dtype (no weight: no multiplication; no bias: + 0)
//   the stored mean and rstd: rounded to fp32, then to their dtype
// NaN results (from NaN or inf inputs, or n == 0: 0 / 0) are stored as the canonical quiet NaN.
// Traffic: x read three times (the later passes usually from cache for rows up to a few MiB),
// weight and bias read per row (cached), out written once.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/layer_norm/layer_norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cmath>
#include <limits>

#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/layer_norm/layer_norm_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// (x - mean)^2 in the accumulator's lanes (fp64).
template <class XF>
struct CentredSquareTerm {
  const typename XF::Storage* x;
  double mean;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    const auto c = hn::Sub(LoadAcc<XF>(da, x + i), hn::Set(da, mean));
    return hn::Mul(c, c);
  }
};

// A per-row statistic rounded to fp32 (canonical NaN), then to the statistics' dtype.
inline void StoreStat(DType dtype, void* p, int64_t row, double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) f = std::numeric_limits<float>::quiet_NaN();
  store_from_float(dtype, p, static_cast<std::size_t>(row), f);
}

template <class XF, class PF, bool kWeight, bool kBias>
void LayerNormRows(const detail::LayerNormKernelArgs& a) {
  using XS = typename XF::Storage;
  using PS = typename PF::Storage;
  const XS* const x_all = static_cast<const XS*>(a.x);
  const PS* const w = static_cast<const PS*>(a.weight);
  const PS* const b = static_cast<const PS*>(a.bias);
  XS* const out_all = static_cast<XS*>(a.out);
  const int64_t n = a.n;
  // The statistics (each step one fp64 operation, in this order) and the elementwise pass of row
  // r from its two sums.
  auto finish_row = [&](int64_t r, double mean, double q) {
    const XS* x = x_all + r * n;
    XS* out = out_all + r * n;
    const double var = q / static_cast<double>(n);
    const double rstd = 1.0 / std::sqrt(var + a.eps);
    if (a.mean != nullptr) StoreStat(a.stats_dtype, a.mean, r, mean);
    if (a.rstd != nullptr) StoreStat(a.stats_dtype, a.rstd, r, rstd);
    auto lanes = [&](auto dd, int64_t i) MANTISSA_VECTOR_BODY {
      const hn::Rebind<float, decltype(dd)> df;
      auto v = hn::Mul(hn::Sub(LoadAcc<XF>(dd, x + i), hn::Set(dd, mean)), hn::Set(dd, rstd));
      if constexpr (kWeight) v = hn::Mul(v, LoadAcc<PF>(dd, w + i));
      v = hn::Add(v, kBias ? LoadAcc<PF>(dd, b + i) : hn::Zero(dd));
      StoreResult<XF>(df, DemoteF64ToF32(df, dd, v), out + i);
    };
    const hn::ScalableTag<double> dd;
    const int64_t step = static_cast<int64_t>(hn::Lanes(dd));
    int64_t i = 0;
    for (; i + step <= n; i += step) lanes(dd, i);
    for (; i < n; ++i) lanes(hn::CappedTag<double, 1>(), i);
  };
  const detail::Rows rows{a.rows, n, 1};
  detail::for_each_row_block(rows, [&](int64_t begin, int64_t end) {
    int64_t r = begin;
    // Short rows (one reduction block), several at once: the same sums as ReduceRow's.
    constexpr size_t kR = kRowsAtOnce<detail::ReduceMethod::kNaive, double>;
    if (kR > 1 && n >= 1 && n <= detail::kReduceBlock) {
      for (; r + static_cast<int64_t>(kR) <= end; r += kR) {
        const XS* x = x_all + r * n;
        double s[kR], mean[kR], q[kR];
        BlockSums<detail::ReduceMethod::kNaive, double, kR>(
            [&](size_t k, auto da, int64_t i) {
              return LoadAcc<XF>(da, x + static_cast<int64_t>(k) * n + i);
            },
            n, s);
        for (size_t k = 0; k < kR; ++k) mean[k] = s[k] / static_cast<double>(n);
        BlockSums<detail::ReduceMethod::kNaive, double, kR>(
            [&](size_t k, auto da, int64_t i) {
              const auto c = hn::Sub(LoadAcc<XF>(da, x + static_cast<int64_t>(k) * n + i),
                                     hn::Set(da, mean[k]));
              return hn::Mul(c, c);
            },
            n, q);
        for (size_t k = 0; k < kR; ++k) finish_row(r + static_cast<int64_t>(k), mean[k], q[k]);
      }
    }
    for (; r < end; ++r) {
      const XS* x = x_all + r * n;
      // It's necessary to keep the order of the operations (fp64, each step rounded once).
      const double s = ReduceRow<detail::ReduceMethod::kNaive, double>(SumTerm<XF>{x}, n);
      const double mean = s / static_cast<double>(n);
      finish_row(
          r, mean,
          ReduceRow<detail::ReduceMethod::kNaive, double>(CentredSquareTerm<XF>{x, mean}, n));
    }
  });
}

template <class XF, class PF>
void LayerNormAffine(const detail::LayerNormKernelArgs& a) {
  const bool w = a.weight != nullptr, b = a.bias != nullptr;
  if (w && b) {
    LayerNormRows<XF, PF, true, true>(a);
  } else if (w) {
    LayerNormRows<XF, PF, true, false>(a);
  } else if (b) {
    LayerNormRows<XF, PF, false, true>(a);
  } else {
    LayerNormRows<XF, PF, false, false>(a);
  }
}

template <class XF>
void LayerNormFormat(const detail::LayerNormKernelArgs& a) {
  if (a.param_dtype == DType::kFloat32) {
    LayerNormAffine<XF, Fp32>(a);
  } else {
    LayerNormAffine<XF, XF>(a);
  }
}

void LayerNormImpl(const detail::LayerNormKernelArgs& a) {
  VisitFormat(a.x_dtype, [&](auto format) { LayerNormFormat<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>

#include "core/entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/layer_norm.h"
#include "ops/layer_norm/layer_norm_desc.h"

namespace mantissa {

HWY_EXPORT(LayerNormImpl);

namespace detail {

Status check_normalized_shape(std::string_view op, const char* x_name, const TensorView& x,
                              const Dims& shape) {
  if (x.rank < 1 || x.rank > kMaxRank) return {};  // the rank rule reports it
  bool ok = shape.size >= 1 && shape.size <= x.rank;
  for (int i = 0; ok && i < shape.size; ++i) {
    ok = shape.values[i] == x.shape[x.rank - shape.size + i];
  }
  if (!ok) {
    return fail(StatusCode::kParamInvalid, op,
                "normalized_shape {} must be 1 to {} trailing dims of {} shape {}",
                shape.to_string(), x.rank, x_name, x.shape_string());
  }
  return {};
}

Status check_norm_params(std::string_view op, const TensorView& x, const Dims& shape,
                         const TensorView* weight, const TensorView* bias) {
  const std::span<const int64_t> dims = shape.span();
  for (auto [name, t] : {std::pair{"weight", weight}, std::pair{"bias", bias}}) {
    if (t == nullptr) continue;
    if (!std::equal(dims.begin(), dims.end(), t->shape.begin(), t->shape.begin() + t->rank) ||
        t->rank != shape.size) {
      return fail(StatusCode::kParamInvalid, op, "{} shape {} must be normalized_shape {}", name,
                  t->shape_string(), shape.to_string());
    }
    if (t->dtype != x.dtype && t->dtype != DType::kFloat32) {
      return fail(StatusCode::kParamInvalid, op,
                  "{} dtype {} does not go with x dtype {} (x's dtype or FLOAT)", name,
                  dtype_name(t->dtype), dtype_name(x.dtype));
    }
  }
  if (weight != nullptr && bias != nullptr && weight->dtype != bias->dtype) {
    return fail(StatusCode::kParamInvalid, op, "weight dtype {} and bias dtype {} differ",
                dtype_name(weight->dtype), dtype_name(bias->dtype));
  }
  return {};
}

Status check_norm_stats(std::string_view op, const TensorView& x, const TensorView* mean,
                        const TensorView* rstd) {
  for (auto [name, t] : {std::pair{"mean", mean}, std::pair{"rstd", rstd}}) {
    if (t != nullptr && t->dtype != x.dtype && t->dtype != DType::kFloat32) {
      return fail(StatusCode::kParamInvalid, op,
                  "{} dtype {} does not go with x dtype {} (x's dtype or FLOAT)", name,
                  dtype_name(t->dtype), dtype_name(x.dtype));
    }
  }
  if (mean != nullptr && rstd != nullptr && mean->dtype != rstd->dtype) {
    return fail(StatusCode::kParamInvalid, op, "mean dtype {} and rstd dtype {} differ",
                dtype_name(mean->dtype), dtype_name(rstd->dtype));
  }
  return {};
}

}  // namespace detail

// Validation is derived from the declaration (layer_norm_desc.h): out, mean and rstd share no
// byte with any other tensor of the call.
Status layer_norm_validate(const LayerNormTensors& t, const LayerNormParams& p) {
  return detail::validate<detail::LayerNormOp>(t, p);
}

Status layer_norm(const LayerNormTensors& t, const LayerNormParams& p, Workspace /*ws*/) {
  return detail::guarded_entry("layer_norm", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(layer_norm_validate(t, p));
    int64_t n = 1;
    for (int64_t d : p.normalized_shape.span()) n *= d;  // fits: x's size was validated
    const int64_t numel = *t.input.numel();
    // Rows of 0 elements still get their mean and rstd (NaN: the mean of nothing).
    int64_t rows = n == 0 ? 1 : numel / n;
    for (int i = 0; n == 0 && i < t.input.rank - p.normalized_shape.size; ++i) {
      rows *= t.input.shape[i];
    }
    if (rows == 0) return {};
    detail::ensure_runtime_initialized();
    detail::LayerNormKernelArgs a;
    a.x_dtype = t.input.dtype;
    a.param_dtype = t.weight ? t.weight->dtype : (t.bias ? t.bias->dtype : t.input.dtype);
    a.stats_dtype = t.mean ? t.mean->dtype : (t.rstd ? t.rstd->dtype : DType::kFloat32);
    a.rows = rows;
    a.n = n;
    a.x = t.input.data;
    a.weight = t.weight ? t.weight->data : nullptr;
    a.bias = t.bias ? t.bias->data : nullptr;
    a.out = t.out.data;
    a.mean = t.mean ? t.mean->data : nullptr;
    a.rstd = t.rstd ? t.rstd->data : nullptr;
    a.eps = p.eps;
    HWY_DYNAMIC_DISPATCH(LayerNormImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
