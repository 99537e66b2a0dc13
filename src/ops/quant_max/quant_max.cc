// QuantMax: contract and validation, then the kernel, one pass over x written once for every
// SIMD target. Per element, in this order, which is normative:
//   v = fp32(x) * scale    x widened exactly; one fp32 product (upstream's Mul)
//   y = convert(v)         quantize-inl.h: round to nearest even, saturate to +-max of y's FP8
//                          format (infinities included); NaN -> the canonical NaN code
//   amax = max |x|         over the widened inputs; exact, so the order of the pieces and of the
//                          lanes plays no part; NaN when any element is NaN; +0 for an empty x
// amax is stored in x's dtype (exact: it is one of x's magnitudes), a NaN as the canonical NaN.
// Traffic: x read once, y written once.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/quant_max/quant_max.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstdint>

#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/quant_max/quant_max_kernel.h"
#include "ops/quantize/quantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Elements [begin, end): y written, their max |x| returned. Full vectors, then one lane at a
// time, each with its own running max and NaN mask.
template <class XF, class Q>
detail::AmaxPartial QuantMaxRange(const detail::QuantMaxKernelArgs& a, int64_t begin, int64_t end) {
  using XS = typename XF::Storage;
  const XS* HWY_RESTRICT const x = static_cast<const XS*>(a.x);
  uint8_t* HWY_RESTRICT const y = a.y;
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  auto m = hn::Zero(d);     // |x| >= +0: +0 is the max of nothing
  auto nan = hn::Lt(m, m);  // all false
  auto m1 = hn::Zero(d1);
  auto nan1 = hn::Lt(m1, m1);
  const auto s = hn::Set(d, a.scale);
  const auto s1 = hn::Set(d1, a.scale);
  int64_t i = begin;
  for (; i + lanes <= end; i += lanes) {
    const auto v = LoadF32<XF>(d, x + i);
    AccumulateMax(d, m, nan, hn::Abs(v));
    StoreQuantized<Q>(d, hn::Mul(v, s), y + i);
  }
  for (; i < end; ++i) {
    const auto v = LoadF32<XF>(d1, x + i);
    AccumulateMax(d1, m1, nan1, hn::Abs(v));
    StoreQuantized<Q>(d1, hn::Mul(v, s1), y + i);
  }
  detail::AmaxPartial p;
  p.value = std::max(MaxLanesByHalving(d, m), hn::GetLane(m1));
  p.nan = !hn::AllFalse(d, nan) || !hn::AllFalse(d1, nan1);
  return p;
}

template <class XF, class Q>
void QuantMaxOut(const detail::QuantMaxKernelArgs& a) {
  auto body = [&](int64_t b, int64_t e) {
    a.partials[b / detail::kQuantMaxChunk] = QuantMaxRange<XF, Q>(a, b, e);
  };
  detail::parallel_for(a.numel, detail::kQuantMaxChunk, body);
}

template <class XF>
void QuantMaxFormat(const detail::QuantMaxKernelArgs& a) {
  if (a.y_dtype == DType::kFloat8E4M3FN) {
    QuantMaxOut<XF, QE4M3>(a);
  } else {
    QuantMaxOut<XF, QE5M2>(a);
  }
}

void QuantMaxImpl(const detail::QuantMaxKernelArgs& a) {
  switch (a.x_dtype) {
    case DType::kFloat16: QuantMaxFormat<Fp16>(a); return;
    case DType::kBFloat16: QuantMaxFormat<Bf16>(a); return;
    default: QuantMaxFormat<Fp32>(a); return;
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#include "core/op_entry.h"
#include "mantissa/convert.h"
#include "mantissa/ops/quant_max.h"
#include "ops/quant_max/quant_max_desc.h"

namespace mantissa {

HWY_EXPORT(QuantMaxImpl);

const char* quant_max_round_mode_name(QuantMaxRoundMode mode) noexcept {
  switch (mode) {
    case QuantMaxRoundMode::kRint: return "rint";
    case QuantMaxRoundMode::kRound: return "round";
    case QuantMaxRoundMode::kHybrid: return "hybrid";
  }
  return "";
}

bool quant_max_round_mode_from_name(const char* name, QuantMaxRoundMode& mode) noexcept {
  if (name == nullptr) return false;
  for (const QuantMaxRoundMode m :
       {QuantMaxRoundMode::kRint, QuantMaxRoundMode::kRound, QuantMaxRoundMode::kHybrid}) {
    if (std::strcmp(name, quant_max_round_mode_name(m)) == 0) {
      mode = m;
      return true;
    }
  }
  return false;
}

namespace detail {

Status check_quant_max_params(const QuantMaxTensors& t, const QuantMaxParams& p) {
  constexpr std::string_view op = QuantMaxOp::kType;
  if (p.dst_type == DType::kHiFloat8) {
    return fail(StatusCode::kParamInvalid, op,
                "dst_type 34 (HIFLOAT8) is not supported; FLOAT8_E5M2 (35) and FLOAT8_E4M3FN (36) "
                "are");
  }
  if (p.dst_type != DType::kFloat8E5M2 && p.dst_type != DType::kFloat8E4M3FN) {
    return fail(StatusCode::kParamInvalid, op,
                "dst_type {} is not one of 35 (FLOAT8_E5M2), 36 (FLOAT8_E4M3FN)",
                static_cast<int>(p.dst_type));
  }
  if (t.y.dtype != p.dst_type) {
    return fail(StatusCode::kParamInvalid, op, "y dtype {} differs from dst_type {}",
                dtype_name(t.y.dtype), dtype_name(p.dst_type));
  }
  if (p.round_mode != QuantMaxRoundMode::kRint) {
    return fail(StatusCode::kParamInvalid, op,
                "round_mode {} (\"{}\") is HIFLOAT8's; FLOAT8 outputs take \"rint\"",
                static_cast<int>(p.round_mode), quant_max_round_mode_name(p.round_mode));
  }
  return {};
}

namespace {

// amax in x's dtype: NaN as the canonical NaN, any other value exactly.
void store_amax(const TensorView& amax, const AmaxPartial& r) {
  if (amax.dtype == DType::kFloat32) {
    const float v = r.nan ? std::numeric_limits<float>::quiet_NaN() : r.value;
    const uint32_t bits = r.nan ? 0x7FC00000u : std::bit_cast<uint32_t>(v);
    std::memcpy(amax.data, &bits, sizeof bits);
    return;
  }
  uint16_t bits = 0;
  if (r.nan) {
    bits = amax.dtype == DType::kFloat16 ? 0x7E00 : 0x7FC0;
  } else if (amax.dtype == DType::kFloat16) {
    convert_fp32_to_fp16(&r.value, &bits, 1);
  } else {
    convert_fp32_to_bf16(&r.value, &bits, 1);
  }
  std::memcpy(amax.data, &bits, sizeof bits);
}

}  // namespace
}  // namespace detail

Status quant_max_validate(const QuantMaxTensors& t, const QuantMaxParams& p) {
  return detail::validate<detail::QuantMaxOp>(t, p);
}

Status quant_max(const QuantMaxTensors& t, const QuantMaxParams& p, Workspace /*ws*/) {
  return detail::op_entry<detail::QuantMaxOp>(t, p, [&]() -> Status {
    const int64_t numel = *t.x.numel();
    detail::AmaxPartial total;
    if (numel > 0) {
      std::vector<detail::AmaxPartial> partials(
          static_cast<std::size_t>(detail::chunk_count(numel, detail::kQuantMaxChunk)));
      detail::QuantMaxKernelArgs a;
      a.x_dtype = t.x.dtype;
      a.y_dtype = t.y.dtype;
      a.numel = numel;
      a.x = t.x.data;
      a.y = static_cast<uint8_t*>(t.y.data);
      std::memcpy(&a.scale, t.scale.data, sizeof a.scale);
      a.partials = partials.data();
      HWY_DYNAMIC_DISPATCH(QuantMaxImpl)(a);
      for (const detail::AmaxPartial& q : partials) {
        total.value = std::max(total.value, q.value);
        total.nan = total.nan || q.nan;
      }
    }
    detail::store_amax(t.amax, total);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
