// Quantize: contract and validation, then the element-wise kernel written once for every SIMD
// target. Per element, in this order, which is normative:
//   x, scale        widened to fp32 exactly (FLOAT16, BFLOAT16)
//   zero point      converted to fp32 (INT32 beyond 2^24 rounds to nearest even; the others are
//                   exact)
//   v = x / scale   one fp32 division (a true division: never x * (1 / scale))
//   v = v + zp      one fp32 addition (no zero points: none)
//   y = convert(v)  quantize-inl.h: round to nearest even, then saturate (integers; NaN -> 0) or
//                   convert to FP8 with saturation (NaN -> the canonical NaN code)
// Scales and zero points are converted to fp32 once per call (they hold at most x.shape[axis]
// values). Traffic: x read once, y written once.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/quantize/quantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstdint>

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/quantize/quantize-inl.h"
#include "ops/quantize/quantize_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Elements [begin, end): runs of one channel (inner > 1: scale and zero point broadcast) or, for
// the last axis (inner == 1), runs along a row with per-lane scales.
template <class XF, class Q, bool kZp>
void QuantizeRange(const detail::QuantizeKernelArgs& a, int64_t begin, int64_t end) {
  using XS = typename XF::Storage;
  using QS = typename Q::Storage;
  const XS* const x = static_cast<const XS*>(a.x);
  QS* const y = static_cast<QS*>(a.y);
  const float* const s = a.scales;
  const float* const z = a.zero_points;
  int64_t i = begin;
  while (i < end) {
    const int64_t seg = i / a.inner;  // (outer, channel) index
    const int64_t c = a.channels == 1 ? 0 : seg % a.channels;
    if (a.inner == 1 && a.channels > 1) {
      // Along a row of `channels` elements, element i has channel c + (i - start).
      const int64_t stop = std::min(end, i - c + a.channels);
      const int64_t off = c - i;
      ForEachVector(i, stop, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
        auto v = hn::Div(LoadF32<XF>(d, x + j), hn::LoadU(d, s + (j + off)));
        if constexpr (kZp) v = hn::Add(v, hn::LoadU(d, z + (j + off)));
        StoreQuantized<Q>(d, v, y + j);
      });
      i = stop;
    } else {
      const int64_t stop = a.channels == 1 ? end : std::min(end, (seg + 1) * a.inner);
      const float sv = s[c], zv = kZp ? z[c] : 0.0f;
      ForEachVector(i, stop, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
        auto v = hn::Div(LoadF32<XF>(d, x + j), hn::Set(d, sv));
        if constexpr (kZp) v = hn::Add(v, hn::Set(d, zv));
        StoreQuantized<Q>(d, v, y + j);
      });
      i = stop;
    }
  }
}

template <class XF, class Q>
void QuantizeOut(const detail::QuantizeKernelArgs& a) {
  auto body = [&](int64_t b, int64_t e) {
    if (a.zero_points != nullptr) {
      QuantizeRange<XF, Q, true>(a, b, e);
    } else {
      QuantizeRange<XF, Q, false>(a, b, e);
    }
  };
  detail::parallel_for(a.numel, detail::kQuantizeChunk, body);
}

template <class XF>
void QuantizeFormat(const detail::QuantizeKernelArgs& a) {
  switch (a.y_dtype) {
    case DType::kInt8: QuantizeOut<XF, QInt8>(a); return;
    case DType::kUInt8: QuantizeOut<XF, QUInt8>(a); return;
    case DType::kInt32: QuantizeOut<XF, QInt32>(a); return;
    case DType::kFloat8E4M3FN: QuantizeOut<XF, QE4M3>(a); return;
    default: QuantizeOut<XF, QE5M2>(a); return;
  }
}

void QuantizeImpl(const detail::QuantizeKernelArgs& a) {
  // The input format only: bf16 is widened by a shift on every target.
  switch (a.x_dtype) {
    case DType::kFloat16: QuantizeFormat<Fp16>(a); return;
    case DType::kBFloat16: QuantizeFormat<Bf16>(a); return;
    default: QuantizeFormat<Fp32>(a); return;
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <span>
#include <vector>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/quantize.h"
#include "ops/quantize/channel_params.h"
#include "ops/quantize/quantize_desc.h"

namespace mantissa {

HWY_EXPORT(QuantizeImpl);

namespace detail {

Status check_quantize_params(const QuantizeTensors& t, const QuantizeParams& p) {
  constexpr std::string_view op = QuantizeOp::kType;
  if (p.dtype == DType::kHiFloat8) {
    return fail(StatusCode::kParamInvalid, op, "dtype HIFLOAT8 is not supported");
  }
  if (std::find(kQuantizeOutputs.begin(), kQuantizeOutputs.end(), p.dtype) ==
      kQuantizeOutputs.end()) {
    return fail(StatusCode::kParamInvalid, op,
                "dtype {} is not one of INT8, UINT8, INT32, FLOAT8_E4M3FN, FLOAT8_E5M2",
                static_cast<int>(p.dtype));
  }
  if (t.y.dtype != p.dtype) {
    return fail(StatusCode::kParamInvalid, op, "y dtype {} differs from dtype {}",
                dtype_name(t.y.dtype), dtype_name(p.dtype));
  }
  // axis matters only when scales holds more than one element (upstream leaves it unused
  // otherwise, and its default 1 is out of range for a rank-1 x).
  const int64_t n = t.scales.shape[0];
  const std::optional<int> axis = wrap_dim(p.axis, t.x.rank);
  if (n != 1 && !axis) {
    return fail(StatusCode::kParamInvalid, op,
                "axis {} is out of range for x of rank {} (scales holds {} elements)", p.axis,
                t.x.rank, n);
  }
  if (n != 1 && n != t.x.shape[*axis]) {
    return fail(StatusCode::kParamInvalid, op,
                "scales holds {} elements; expected 1 or x.shape[{}] = {}", n, p.axis,
                t.x.shape[*axis]);
  }
  if (t.scales.dtype != DType::kFloat32 && t.scales.dtype != t.x.dtype) {
    return fail(StatusCode::kParamInvalid, op,
                "scales dtype {} does not go with x dtype {} (FLOAT, or x's dtype)",
                dtype_name(t.scales.dtype), dtype_name(t.x.dtype));
  }
  if (t.zero_points) {
    const TensorView& z = *t.zero_points;
    if (z.shape[0] != n) {
      return fail(StatusCode::kParamInvalid, op,
                  "zero_points holds {} elements but scales holds {} (the same count)", z.shape[0],
                  n);
    }
    if (z.dtype == DType::kBFloat16 &&
        (t.x.dtype != DType::kBFloat16 || t.scales.dtype != DType::kBFloat16)) {
      return fail(StatusCode::kParamInvalid, op,
                  "zero_points BFLOAT16 needs x and scales BFLOAT16, got {} and {}",
                  dtype_name(t.x.dtype), dtype_name(t.scales.dtype));
    }
  }
  return {};
}

}  // namespace detail

Status quantize_validate(const QuantizeTensors& t, const QuantizeParams& p) {
  return detail::validate<detail::QuantizeOp>(t, p);
}

Status quantize(const QuantizeTensors& t, const QuantizeParams& p, Workspace /*ws*/) {
  return detail::op_entry<detail::QuantizeOp>(t, p, [&]() -> Status {
    const int64_t numel = *t.x.numel();
    if (numel == 0) return {};
    const detail::QuantChannels q =
        detail::quant_channels(t.x, numel, p.axis, t.scales, t.zero_points);
    detail::QuantizeKernelArgs a;
    a.x_dtype = t.x.dtype;
    a.y_dtype = t.y.dtype;
    a.numel = numel;
    a.channels = q.channels;
    a.inner = q.inner;
    a.x = t.x.data;
    a.y = t.y.data;
    a.scales = q.scale.data();
    a.zero_points = q.offset_or_null();
    HWY_DYNAMIC_DISPATCH(QuantizeImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
