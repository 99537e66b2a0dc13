// DynamicQuant: contract and validation, then the row kernel written once for every SIMD
// target. Per row of H elements, in this order, which is normative:
//   in_i  = x_i * s_i           one fp32 multiplication (x and the smooth scales widened
//                               exactly); no smooth scales: x_i
//   amax  = max_i |in_i|        exact (the order does not matter); NaN when any in_i is NaN
//   scale = amax / dtype_max    one fp32 division, stored as is
//   y_i   = convert(in_i / scale)   one fp32 division, then quantize-inl.h (round to nearest
//                               even and saturate; FP8 with saturation)
// A row whose amax is 0 (all zeros) has scale 0 and y all zero (code 0). A NaN in a row makes
// its scale NaN and its y 0 (integers) or the canonical NaN code (FP8); an infinity makes the
// scale infinite: finite elements give 0, infinite ones NaN (then 0 or the NaN code).
// INT4 packs two codes per byte (element 2i in the low nibble); INT32 holds eight, element 8j+k
// in bits 4k..4k+3 of word j: on a little-endian machine the same bytes as INT4.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/dynamic_quant/dynamic_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/dynamic_quant/dynamic_quant_kernel.h"
#include "ops/quantize/quantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// fp32 lanes of in = x * s (or x).
template <class XF, bool kSmooth, class D>
HWY_INLINE hn::Vec<D> LoadInput(D d, const typename XF::Storage* x, const typename XF::Storage* s,
                                int64_t i) {
  auto v = LoadF32<XF>(d, x + i);
  if constexpr (kSmooth) v = hn::Mul(v, LoadF32<XF>(d, s + i));
  return v;
}

// Elements per INT4 staging block (codes are packed from a small buffer).
constexpr int64_t kInt4Block = 256;

template <class XF, class Q, bool kSmooth>
void DynamicQuantRows(const detail::DynamicQuantKernelArgs& a) {
  using XS = typename XF::Storage;
  const detail::Rows rows{a.rows, a.n, 1};
  detail::for_each_row_block(rows, [&a](int64_t begin, int64_t end) {
    // Locals of the block, not captures or reads through `a`: a store of the quantized codes may
    // alias any memory the closure reaches, so those would be read again after every store (see
    // ops/sgd/sgd.cc).
    const XS* const x_all = static_cast<const XS*>(a.x);
    const XS* const s = static_cast<const XS*>(a.smooth);
    float* const scale_all = a.scale;
    void* const y_all = a.y;
    const int64_t n = a.n;
    const float dtype_max = a.dtype_max;
    for (int64_t r = begin; r < end; ++r) {
      const XS* x = x_all + r * n;
      // amax: NaN lanes are counted apart and left out of the maximum.
      const hn::ScalableTag<float> d;
      auto vmax = hn::Zero(d);
      auto vnan = hn::Zero(d);  // 1 in a lane that saw a NaN
      const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
      int64_t i = 0;
      for (; i + lanes <= n; i += lanes) {
        const auto v = hn::Abs(LoadInput<XF, kSmooth>(d, x, s, i));
        const auto nan = hn::IsNaN(v);
        vnan = hn::IfThenElse(nan, hn::Set(d, 1.0f), vnan);
        vmax = hn::Max(vmax, hn::IfThenZeroElse(nan, v));
      }
      float amax = hn::GetLane(hn::MaxOfLanes(d, vmax));
      bool any_nan = hn::GetLane(hn::MaxOfLanes(d, vnan)) != 0.0f;
      const hn::CappedTag<float, 1> d1;
      for (; i < n; ++i) {
        const float v = hn::GetLane(hn::Abs(LoadInput<XF, kSmooth>(d1, x, s, i)));
        if (std::isnan(v)) {
          any_nan = true;
        } else {
          amax = v > amax ? v : amax;
        }
      }
      if (any_nan) amax = std::numeric_limits<float>::quiet_NaN();
      const float scale = amax / dtype_max;
      scale_all[r] = scale;
      if constexpr (std::is_same_v<Q, QInt4>) {
        uint8_t* y = static_cast<uint8_t*>(y_all) + r * (n / 2);
        alignas(64) int8_t codes[kInt4Block];
        for (int64_t b = 0; b < n; b += kInt4Block) {
          const int64_t m = std::min(kInt4Block, n - b);
          if (scale == 0.0f) {
            std::fill(codes, codes + m, int8_t{0});
          } else {
            ForEachVector(0, m, [&](auto dd, int64_t j) MANTISSA_VECTOR_BODY {
              const auto v = hn::Div(LoadInput<XF, kSmooth>(dd, x, s, b + j), hn::Set(dd, scale));
              const hn::Rebind<int8_t, decltype(dd)> d8;
              hn::StoreU(hn::DemoteTo(d8, QuantizeLanes<Q>(dd, v)), d8, codes + j);
            });
          }
          for (int64_t j = 0; j < m; j += 2) {
            y[(b + j) / 2] = static_cast<uint8_t>((codes[j] & 0x0F) | ((codes[j + 1] & 0x0F) << 4));
          }
        }
      } else {
        typename Q::Storage* y = static_cast<typename Q::Storage*>(y_all) + r * n;
        if (scale == 0.0f) {
          std::fill(y, y + n, typename Q::Storage{0});
          continue;
        }
        ForEachVector(0, n, [&](auto dd, int64_t j) MANTISSA_VECTOR_BODY {
          const auto v = hn::Div(LoadInput<XF, kSmooth>(dd, x, s, j), hn::Set(dd, scale));
          StoreQuantized<Q>(dd, v, y + j);
        });
      }
    }
  });
}

template <class XF, class Q>
void DynamicQuantSmooth(const detail::DynamicQuantKernelArgs& a) {
  if (a.smooth != nullptr) {
    DynamicQuantRows<XF, Q, true>(a);
  } else {
    DynamicQuantRows<XF, Q, false>(a);
  }
}

template <class XF>
void DynamicQuantFormat(const detail::DynamicQuantKernelArgs& a) {
  switch (a.y_dtype) {
    case DType::kInt8: DynamicQuantSmooth<XF, QInt8>(a); return;
    case DType::kFloat8E4M3FN: DynamicQuantSmooth<XF, QE4M3>(a); return;
    case DType::kFloat8E5M2: DynamicQuantSmooth<XF, QE5M2>(a); return;
    default: DynamicQuantSmooth<XF, QInt4>(a); return;  // INT4 and packed INT32
  }
}

void DynamicQuantImpl(const detail::DynamicQuantKernelArgs& a) {
  if (a.x_dtype == DType::kFloat16) {
    DynamicQuantFormat<Fp16>(a);
  } else {
    DynamicQuantFormat<Bf16>(a);
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/dynamic_quant.h"
#include "ops/dynamic_quant/dynamic_quant_desc.h"

namespace mantissa {

HWY_EXPORT(DynamicQuantImpl);

namespace detail {

float dynamic_quant_dtype_max(DType d) {
  switch (d) {
    case DType::kInt8: return 127.0f;
    case DType::kFloat8E4M3FN: return 448.0f;
    case DType::kFloat8E5M2: return 57344.0f;
    default: return 7.0f;  // INT4, packed INT32
  }
}

Status check_dynamic_quant_params(const DynamicQuantTensors& t, const DynamicQuantParams& p) {
  constexpr std::string_view op = DynamicQuantOp::kType;
  if (p.dst_type != t.y.dtype) {
    return fail(StatusCode::kParamInvalid, op, "y dtype {} differs from dst_type {}",
                dtype_name(t.y.dtype), static_cast<int>(p.dst_type));
  }
  const int64_t h = t.x.shape[t.x.rank - 1];
  bool same = t.y.rank == t.x.rank;
  for (int i = 0; same && i < t.x.rank; ++i) {
    const int64_t want = i == t.x.rank - 1 && p.dst_type == DType::kInt32 ? h / 8 : t.x.shape[i];
    same = t.y.shape[i] == want;
  }
  if (!same) {
    return fail(StatusCode::kParamInvalid, op, "y shape {} must be x shape {}{}",
                t.y.shape_string(), t.x.shape_string(),
                p.dst_type == DType::kInt32 ? " with the last dim / 8 (INT32)" : "");
  }
  if (p.dst_type == DType::kInt4 && h % 2 != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "y INT4 needs an even last dim (two per byte), x shape {}", t.x.shape_string());
  }
  if (p.dst_type == DType::kInt32 && h % 8 != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "y INT32 needs the last dim divisible by 8 (eight int4 per int32), x shape {}",
                t.x.shape_string());
  }
  return {};
}

}  // namespace detail

Status dynamic_quant_validate(const DynamicQuantTensors& t, const DynamicQuantParams& p) {
  return detail::validate<detail::DynamicQuantOp>(t, p);
}

Status dynamic_quant(const DynamicQuantTensors& t, const DynamicQuantParams& p, Workspace /*ws*/) {
  return detail::op_entry<detail::DynamicQuantOp>(t, p, [&]() -> Status {
    const int64_t n = t.x.shape[t.x.rank - 1];
    int64_t rows = 1;
    for (int i = 0; i + 1 < t.x.rank; ++i) rows *= t.x.shape[i];
    if (rows == 0) return {};
    detail::DynamicQuantKernelArgs a;
    a.x_dtype = t.x.dtype;
    a.y_dtype = t.y.dtype;
    a.rows = rows;
    a.n = n;
    a.dtype_max = detail::dynamic_quant_dtype_max(t.y.dtype);
    a.x = t.x.data;
    a.smooth = t.smooth_scales ? t.smooth_scales->data : nullptr;
    a.y = t.y.data;
    a.scale = static_cast<float*>(t.scale.data);
    HWY_DYNAMIC_DISPATCH(DynamicQuantImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
