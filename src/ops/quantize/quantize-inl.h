// The conversions the quantize operators share, from fp32 lanes to a quantized output dtype:
//   INT8, UINT8, INT32, INT4   round to nearest, ties to even, then saturate to the type's range;
//                              NaN gives 0
//   FLOAT8_E4M3FN, _E5M2       round to nearest even and saturate to +-max (infinity included);
//                              NaN gives the canonical NaN code (E4M3FN 0x7F, E5M2 0x7E)
// Written once for every SIMD target; the same lane operations serve the one-lane tails.
// Include guard: per target (foreach_target re-includes this file once per target).
#if defined(MANTISSA_OPS_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_OPS_QUANTIZE_INL_H_
#undef MANTISSA_OPS_QUANTIZE_INL_H_
#else
#define MANTISSA_OPS_QUANTIZE_INL_H_
#endif

#include <cstdint>

#include "core/lowp-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "mantissa/lowp.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The output kinds, one kernel instantiation each.
struct QInt8 {
  using Storage = int8_t;
  static constexpr float kLo = -128.0f, kHi = 127.0f;
};
struct QUInt8 {
  using Storage = uint8_t;
  static constexpr float kLo = 0.0f, kHi = 255.0f;
};
struct QInt32 {
  using Storage = int32_t;
};
struct QInt4 {  // codes -8..7 in int32 lanes (the caller packs two per byte)
  using Storage = int32_t;
  static constexpr float kLo = -8.0f, kHi = 7.0f;
};
struct QE4M3 {
  using Storage = uint8_t;
};
struct QE5M2 {
  using Storage = uint8_t;
};

// Round to nearest even, saturate to [lo, hi] (both integers exact in fp32), NaN -> 0, as int32.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> RoundSaturate(D d, hn::Vec<D> v, float lo, float hi) {
  const hn::RebindToSigned<D> di;
  auto r = hn::Min(hn::Max(hn::Round(v), hn::Set(d, lo)), hn::Set(d, hi));
  r = hn::IfThenZeroElse(hn::IsNaN(v), r);
  return hn::ConvertTo(di, r);
}

// Round to nearest even, saturate to int32's range, NaN -> 0. 2^31 is the first fp32 value
// above INT32_MAX; every fp32 integer below it converts exactly.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> RoundSaturateInt32(D d, hn::Vec<D> v) {
  const hn::RebindToSigned<D> di;
  const auto r = hn::Round(v);
  const auto big = hn::Ge(r, hn::Set(d, 2147483648.0f));
  auto clamped = hn::Min(hn::Max(r, hn::Set(d, -2147483648.0f)), hn::Set(d, 2147483520.0f));
  clamped = hn::IfThenZeroElse(hn::IsNaN(v), clamped);
  return hn::IfThenElse(hn::RebindMask(di, big), hn::Set(di, 2147483647),
                        hn::ConvertTo(di, clamped));
}

// The codes (or integers) of fp32 lanes in output kind Q, in int32 lanes.
template <class Q, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> QuantizeLanes(D d, hn::Vec<D> v) {
  if constexpr (std::is_same_v<Q, QInt32>) {
    return RoundSaturateInt32(d, v);
  } else if constexpr (std::is_same_v<Q, QE4M3>) {
    return F32ToMiniFloat<kE4M3, true>(d, CanonicalNaN(d, v));
  } else if constexpr (std::is_same_v<Q, QE5M2>) {
    return F32ToMiniFloat<kE5M2, true>(d, CanonicalNaN(d, v));
  } else {
    return RoundSaturate(d, v, Q::kLo, Q::kHi);
  }
}

// Stores fp32 lanes quantized to Q at p (one element per lane; not for QInt4).
template <class Q, class D>
HWY_INLINE void StoreQuantized(D d, hn::Vec<D> v, typename Q::Storage* HWY_RESTRICT p) {
  const auto q = QuantizeLanes<Q>(d, v);
  if constexpr (std::is_same_v<Q, QInt32>) {
    hn::StoreU(q, hn::RebindToSigned<D>(), p);
  } else if constexpr (std::is_same_v<Q, QInt8>) {
    const hn::Rebind<int8_t, D> d8;
    hn::StoreU(hn::DemoteTo(d8, q), d8, p);
  } else {
    const hn::Rebind<uint8_t, D> d8;
    hn::StoreU(hn::DemoteTo(d8, q), d8, p);
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_QUANTIZE_INL_H_
