// AscendQuantV3: contract and validation, then the element-wise kernel written once for every
// SIMD target. Per element, in this order, which is normative:
//   x, scale, offset    widened to fp32 exactly
//   v = x * scale       one fp32 multiplication (sqrt_mode: (x * scale) * scale, two)
//   v = v + offset      one fp32 addition (no offset: none)
//   y = convert(v)      integers (INT8; INT4 and INT32's int4 codes): round_mode (round: to
//                       nearest, ties to even; floor; ceil; trunc), then saturate; NaN -> 0.
//                       FP8: round to nearest even with saturation (quantize-inl.h)
// INT4 packs two codes per byte (element 2i in the low nibble); INT32 holds eight, element 8j+k
// in bits 4k..4k+3 of word j: on a little-endian machine the same bytes as INT4.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/ascend_quant_v3/ascend_quant_v3.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstdint>

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/ascend_quant_v3/ascend_quant_v3_kernel.h"
#include "ops/quantize/quantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The integer rounding of round_mode before RoundSaturate (whose own rounding is then exact).
template <QuantRoundMode kMode, class D>
HWY_INLINE hn::Vec<D> ApplyRoundMode(D /*d*/, hn::Vec<D> v) {
  if constexpr (kMode == QuantRoundMode::kFloor) {
    return hn::Floor(v);
  } else if constexpr (kMode == QuantRoundMode::kCeil) {
    return hn::Ceil(v);
  } else if constexpr (kMode == QuantRoundMode::kTrunc) {
    return hn::Trunc(v);
  } else {
    return v;
  }
}

template <class XF, bool kOffset, bool kSqrt>
struct Affine {
  const typename XF::Storage* x;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t j, hn::Vec<D> s, hn::Vec<D> o) const {
    auto v = hn::Mul(LoadF32<XF>(d, x + j), s);
    if constexpr (kSqrt) v = hn::Mul(v, s);
    if constexpr (kOffset) v = hn::Add(v, o);
    return v;
  }
};

// Calls body(d, j, scale lanes, offset lanes) over [begin, end): runs of one channel (scale
// broadcast), or along a row with per-lane scales when the channel axis is the last (inner 1).
template <bool kOffset, class Body>
HWY_INLINE void ForEachChannelRun(const detail::AscendQuantV3KernelArgs& a, int64_t begin,
                                  int64_t end, Body&& body) {
  const float* const s = a.scale;
  const float* const o = a.offset;
  int64_t i = begin;
  while (i < end) {
    const int64_t seg = i / a.inner;
    const int64_t c = a.channels == 1 ? 0 : seg % a.channels;
    if (a.inner == 1 && a.channels > 1) {
      const int64_t stop = std::min(end, i - c + a.channels);
      const int64_t off = c - i;
      ForEachVector(i, stop, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
        body(d, j, hn::LoadU(d, s + (j + off)),
             kOffset ? hn::LoadU(d, o + (j + off)) : hn::Zero(d));
      });
      i = stop;
    } else {
      const int64_t stop = a.channels == 1 ? end : std::min(end, (seg + 1) * a.inner);
      const float sv = s[c], ov = kOffset ? o[c] : 0.0f;
      ForEachVector(i, stop, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
        body(d, j, hn::Set(d, sv), hn::Set(d, ov));
      });
      i = stop;
    }
  }
}

// Elements per INT4 staging block (codes are packed from a small buffer; blocks and parallel
// pieces start at even elements).
constexpr int64_t kInt4Block = 256;

template <class XF, class Q, QuantRoundMode kMode, bool kOffset, bool kSqrt>
void QuantRange(const detail::AscendQuantV3KernelArgs& a, int64_t begin, int64_t end) {
  const Affine<XF, kOffset, kSqrt> f{static_cast<const typename XF::Storage*>(a.x)};
  if constexpr (std::is_same_v<Q, QInt4>) {
    uint8_t* const y = static_cast<uint8_t*>(a.y);
    alignas(64) int8_t codes[kInt4Block];
    for (int64_t b = begin; b < end; b += kInt4Block) {
      const int64_t e = std::min(end, b + kInt4Block);
      ForEachChannelRun<kOffset>(a, b, e, [&](auto d, int64_t j, auto s, auto o) {
        const auto v = ApplyRoundMode<kMode>(d, f(d, j, s, o));
        const hn::Rebind<int8_t, decltype(d)> d8;
        hn::StoreU(hn::DemoteTo(d8, QuantizeLanes<Q>(d, v)), d8, codes + (j - b));
      });
      for (int64_t j = b; j < e; j += 2) {
        y[j / 2] = static_cast<uint8_t>((codes[j - b] & 0x0F) | ((codes[j - b + 1] & 0x0F) << 4));
      }
    }
  } else {
    typename Q::Storage* const y = static_cast<typename Q::Storage*>(a.y);
    ForEachChannelRun<kOffset>(a, begin, end, [&](auto d, int64_t j, auto s, auto o) {
      StoreQuantized<Q>(d, ApplyRoundMode<kMode>(d, f(d, j, s, o)), y + j);
    });
  }
}

template <class XF, class Q, QuantRoundMode kMode>
void QuantMode(const detail::AscendQuantV3KernelArgs& a) {
  auto body = [&](int64_t b, int64_t e) {
    const bool off = a.offset != nullptr;
    if (off && a.sqrt_mode) {
      QuantRange<XF, Q, kMode, true, true>(a, b, e);
    } else if (off) {
      QuantRange<XF, Q, kMode, true, false>(a, b, e);
    } else if (a.sqrt_mode) {
      QuantRange<XF, Q, kMode, false, true>(a, b, e);
    } else {
      QuantRange<XF, Q, kMode, false, false>(a, b, e);
    }
  };
  detail::parallel_for(a.numel, detail::kAscendQuantChunk, body);
}

template <class XF, class Q>
void QuantOut(const detail::AscendQuantV3KernelArgs& a) {
  switch (a.round_mode) {
    case QuantRoundMode::kFloor: QuantMode<XF, Q, QuantRoundMode::kFloor>(a); return;
    case QuantRoundMode::kCeil: QuantMode<XF, Q, QuantRoundMode::kCeil>(a); return;
    case QuantRoundMode::kTrunc: QuantMode<XF, Q, QuantRoundMode::kTrunc>(a); return;
    default: QuantMode<XF, Q, QuantRoundMode::kRound>(a); return;
  }
}

template <class XF>
void QuantFormat(const detail::AscendQuantV3KernelArgs& a) {
  switch (a.y_dtype) {
    case DType::kInt8: QuantOut<XF, QInt8>(a); return;
    // FP8 takes "round" only (validated).
    case DType::kFloat8E4M3FN: QuantMode<XF, QE4M3, QuantRoundMode::kRound>(a); return;
    case DType::kFloat8E5M2: QuantMode<XF, QE5M2, QuantRoundMode::kRound>(a); return;
    default: QuantOut<XF, QInt4>(a); return;  // INT4 and packed INT32
  }
}

void AscendQuantV3Impl(const detail::AscendQuantV3KernelArgs& a) {
  switch (a.x_dtype) {
    case DType::kFloat16: QuantFormat<Fp16>(a); return;
    case DType::kBFloat16: QuantFormat<Bf16>(a); return;
    default: QuantFormat<Fp32>(a); return;
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstring>
#include <span>
#include <vector>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/ascend_quant_v3.h"
#include "ops/ascend_quant_v3/ascend_quant_v3_desc.h"
#include "ops/quantize/channel_params.h"

namespace mantissa {

HWY_EXPORT(AscendQuantV3Impl);

namespace {

constexpr const char* kModeNames[] = {"round", "floor", "ceil", "trunc"};

}  // namespace

bool quant_round_mode_from_name(const char* name, QuantRoundMode& mode) noexcept {
  if (name == nullptr) return false;
  for (int32_t m = 0; m < 4; ++m) {
    if (std::strcmp(name, kModeNames[m]) == 0) {
      mode = static_cast<QuantRoundMode>(m);
      return true;
    }
  }
  return false;
}

const char* quant_round_mode_name(QuantRoundMode mode) noexcept {
  const auto m = static_cast<int32_t>(mode);
  return m >= 0 && m < 4 ? kModeNames[m] : "(unknown)";
}

namespace detail {

Status check_ascend_quant_v3_params(const AscendQuantV3Tensors& t, const AscendQuantV3Params& p) {
  constexpr std::string_view op = AscendQuantV3Op::kType;
  const auto mode = static_cast<int32_t>(p.round_mode);
  if (mode < 0 || mode > 3) {
    return fail(StatusCode::kParamInvalid, op,
                "round_mode {} is not one of 0 round, 1 floor, 2 ceil, 3 trunc", mode);
  }
  if (p.dst_type != t.y.dtype) {
    return fail(StatusCode::kParamInvalid, op, "y dtype {} differs from dst_type {}",
                dtype_name(t.y.dtype), static_cast<int>(p.dst_type));
  }
  const bool fp8 = p.dst_type == DType::kFloat8E4M3FN || p.dst_type == DType::kFloat8E5M2;
  if (fp8 && p.round_mode != QuantRoundMode::kRound) {
    return fail(StatusCode::kParamInvalid, op, "round_mode {} with dst_type {}: FP8 takes round",
                quant_round_mode_name(p.round_mode), dtype_name(p.dst_type));
  }
  // axis: one of x's last two dims.
  const int r = t.x.rank;
  const std::optional<int> axis = wrap_dim(p.axis, r);
  if (!axis || *axis < r - 2) {
    return fail(StatusCode::kParamInvalid, op,
                "axis {} must name one of the last two dims of x (rank {})", p.axis, r);
  }
  const int64_t n = t.scale.shape[0];
  if (n != 1 && n != t.x.shape[*axis]) {
    return fail(StatusCode::kParamInvalid, op,
                "scale holds {} elements; expected 1 or x.shape[{}] = {}", n, p.axis,
                t.x.shape[*axis]);
  }
  if (t.scale.dtype != DType::kFloat32 && t.scale.dtype != t.x.dtype) {
    return fail(StatusCode::kParamInvalid, op,
                "scale dtype {} does not go with x dtype {} (FLOAT, or x's dtype)",
                dtype_name(t.scale.dtype), dtype_name(t.x.dtype));
  }
  const int64_t last = t.x.shape[r - 1];
  bool same = t.y.rank == r;
  for (int i = 0; same && i < r; ++i) {
    same = t.y.shape[i] == (i == r - 1 && p.dst_type == DType::kInt32 ? last / 8 : t.x.shape[i]);
  }
  if (!same) {
    return fail(StatusCode::kParamInvalid, op, "y shape {} must be x shape {}{}",
                t.y.shape_string(), t.x.shape_string(),
                p.dst_type == DType::kInt32 ? " with the last dim / 8 (INT32)" : "");
  }
  if (p.dst_type == DType::kInt4 && last % 2 != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "y INT4 needs an even last dim (two per byte), x shape {}", t.x.shape_string());
  }
  if (p.dst_type == DType::kInt32 && last % 8 != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "y INT32 needs the last dim divisible by 8 (eight int4 per int32), x shape {}",
                t.x.shape_string());
  }
  return {};
}

}  // namespace detail

Status ascend_quant_v3_validate(const AscendQuantV3Tensors& t, const AscendQuantV3Params& p) {
  return detail::validate<detail::AscendQuantV3Op>(t, p);
}

Status ascend_quant_v3(const AscendQuantV3Tensors& t, const AscendQuantV3Params& p,
                       Workspace /*ws*/) {
  return detail::op_entry<detail::AscendQuantV3Op>(t, p, [&]() -> Status {
    const int64_t numel = *t.x.numel();
    if (numel == 0) return {};
    const detail::QuantChannels q = detail::quant_channels(t.x, numel, p.axis, t.scale, t.offset);
    detail::AscendQuantV3KernelArgs a;
    a.x_dtype = t.x.dtype;
    a.y_dtype = t.y.dtype;
    a.round_mode = p.round_mode;
    a.sqrt_mode = p.sqrt_mode;
    a.numel = numel;
    a.channels = q.channels;
    a.inner = q.inner;
    a.x = t.x.data;
    a.y = t.y.data;
    a.scale = q.scale.data();
    a.offset = q.offset_or_null();
    HWY_DYNAMIC_DISPATCH(AscendQuantV3Impl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
