// Per-target SIMD conversions between fp32 lanes and the low-precision formats of lowp.h (FP8,
// FP6, FP4 codes and the E8M0 scale), with the same bits as the scalar conversions there.
//
// Glossary: D is a descriptor of fp32 lanes; codes live in int32 lanes of the same count (one
// code per lane, sign included) and are narrowed to bytes at the store. Narrowing uses integer
// lane operations for normal results and one exactly-rounded fp32 addition for subnormal ones
// (|x| + C with ulp(C) equal to the format's subnormal spacing rounds |x| to nearest even in
// hardware); widening uses integer operations and, for subnormals, one exact multiplication by a
// power of two. IEEE addition and multiplication round the same way on every target.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_CORE_LOWP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_CORE_LOWP_INL_H_
#undef MANTISSA_CORE_LOWP_INL_H_
#else
#define MANTISSA_CORE_LOWP_INL_H_
#endif

#include <bit>
#include <cstdint>

#include "hwy/highway.h"
#include "mantissa/lowp.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
using U8For = hn::Rebind<uint8_t, D>;

// fp32 lanes -> codes of kFmt in int32 lanes (see float_to_minifloat).
template <MiniFloat kFmt, bool kSaturate, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> F32ToMiniFloat(D d, hn::Vec<D> f) {
  const hn::RebindToSigned<D> di;
  constexpr int m = kFmt.mbits;
  constexpr int shift = 23 - m;
  constexpr int32_t sign_bit = static_cast<int32_t>(kFmt.sign_bit());
  constexpr int32_t exp_ones = ((1 << kFmt.ebits) - 1) << m;
  const auto bits = hn::BitCast(di, f);
  const auto sign = hn::IfThenElseZero(hn::Lt(bits, hn::Zero(di)), hn::Set(di, sign_bit));
  const auto magnitude = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  // Normal result: rebias, then drop `shift` bits rounding to nearest even (a carry into the
  // exponent is correct; the range check follows).
  const auto rebased = hn::Sub(magnitude, hn::Set(di, (127 - kFmt.bias) << 23));
  const auto lsb = hn::And(hn::ShiftRight<shift>(rebased), hn::Set(di, 1));
  const auto normal =
      hn::ShiftRight<shift>(hn::Add(rebased, hn::Add(hn::Set(di, (1 << (shift - 1)) - 1), lsb)));
  // Subnormal result: C = 2^(1 - bias - m + 23) has ulp 2^(1 - bias - m), the subnormal spacing.
  constexpr uint32_t c_bits = static_cast<uint32_t>(127 + 1 - kFmt.bias - m + 23) << 23;
  const auto c = hn::Set(d, std::bit_cast<float>(c_bits));
  const auto sub = hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(d, magnitude), c)),
                           hn::Set(di, static_cast<int32_t>(c_bits)));
  const auto is_sub = hn::Lt(magnitude, hn::Set(di, (127 + 1 - kFmt.bias) << 23));
  auto code = hn::IfThenElse(is_sub, sub, normal);
  constexpr int32_t overflow_code =
      (kSaturate || kFmt.special == MiniFloat::Special::kNone)
          ? static_cast<int32_t>(kFmt.max_code)
          : (kFmt.special == MiniFloat::Special::kNanOnly ? sign_bit - 1 : exp_ones);
  code = hn::IfThenElse(hn::Gt(code, hn::Set(di, static_cast<int32_t>(kFmt.max_code))),
                        hn::Set(di, overflow_code), code);
  const auto is_nan = hn::Gt(magnitude, hn::Set(di, 0x7F800000));
  if constexpr (kFmt.special == MiniFloat::Special::kIeee) {
    const auto payload = hn::And(hn::ShiftRight<shift>(magnitude), hn::Set(di, (1 << m) - 1));
    code = hn::IfThenElse(is_nan, hn::Or(payload, hn::Set(di, exp_ones | (1 << (m - 1)))), code);
  } else if constexpr (kFmt.special == MiniFloat::Special::kNanOnly) {
    code = hn::IfThenElse(is_nan, hn::Set(di, sign_bit - 1), code);
  } else {
    code = hn::IfThenElse(is_nan, hn::Set(di, static_cast<int32_t>(kFmt.max_code)), code);
  }
  return hn::Or(code, sign);
}

// Codes of kFmt in int32 lanes -> fp32 lanes, exact (see minifloat_to_float).
template <MiniFloat kFmt, class D>
HWY_INLINE hn::Vec<D> MiniFloatToF32(D d, hn::Vec<hn::RebindToSigned<D>> c) {
  const hn::RebindToSigned<D> di;
  constexpr int m = kFmt.mbits;
  constexpr int sign_pos = kFmt.ebits + m;
  constexpr int32_t mag_mask = (1 << sign_pos) - 1;
  const auto sign = hn::ShiftLeft<31 - sign_pos>(hn::And(c, hn::Set(di, 1 << sign_pos)));
  const auto magnitude = hn::And(c, hn::Set(di, mag_mask));
  const auto mantissa = hn::And(magnitude, hn::Set(di, (1 << m) - 1));
  const auto exponent = hn::ShiftRight<m>(magnitude);
  const auto normal =
      hn::Add(hn::ShiftLeft<23 - m>(magnitude), hn::Set(di, (127 - kFmt.bias) << 23));
  // Subnormal: mantissa * 2^(1 - bias - m), an exact product.
  constexpr uint32_t unit_bits = static_cast<uint32_t>(127 + 1 - kFmt.bias - m) << 23;
  const auto sub = hn::BitCast(
      di, hn::Mul(hn::ConvertTo(d, mantissa), hn::Set(d, std::bit_cast<float>(unit_bits))));
  auto value = hn::IfThenElse(hn::Eq(exponent, hn::Zero(di)), sub, normal);
  if constexpr (kFmt.special == MiniFloat::Special::kIeee) {
    const auto nan_bits =
        hn::IfThenElseZero(hn::Ne(mantissa, hn::Zero(di)),
                           hn::Or(hn::Set(di, 0x00400000), hn::ShiftLeft<23 - m>(mantissa)));
    value = hn::IfThenElse(hn::Eq(exponent, hn::Set(di, (1 << kFmt.ebits) - 1)),
                           hn::Or(hn::Set(di, 0x7F800000), nan_bits), value);
  } else if constexpr (kFmt.special == MiniFloat::Special::kNanOnly) {
    value = hn::IfThenElse(hn::Eq(magnitude, hn::Set(di, mag_mask)),
                           hn::Or(hn::Set(di, 0x7FC00000), hn::ShiftLeft<23 - m>(mantissa)), value);
  }
  return hn::BitCast(d, hn::Or(value, sign));
}

// fp32 lanes -> E8M0 codes in int32 lanes (see float_to_e8m0).
template <bool kSaturate, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> F32ToE8M0(D d, hn::Vec<D> f) {
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(di, f);
  const auto magnitude = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  const auto rounded = hn::ShiftRight<23>(hn::Add(
      magnitude,
      hn::Add(hn::Set(di, 0x3FFFFF), hn::And(hn::ShiftRight<23>(magnitude), hn::Set(di, 1)))));
  const auto tiny = hn::IfThenElseZero(hn::Gt(magnitude, hn::Set(di, 0x00600000)), hn::Set(di, 1));
  auto code = hn::IfThenElse(hn::Lt(magnitude, hn::Set(di, 0x00800000)), tiny, rounded);
  code =
      hn::IfThenElse(hn::Gt(code, hn::Set(di, 0xFE)), hn::Set(di, kSaturate ? 0xFE : 0xFF), code);
  const auto negative = hn::And(hn::Lt(bits, hn::Zero(di)), hn::Ne(magnitude, hn::Zero(di)));
  const auto invalid = hn::Or(negative, hn::Gt(magnitude, hn::Set(di, 0x7F800000)));
  (void)d;
  return hn::IfThenElse(invalid, hn::Set(di, 0xFF), code);
}

// E8M0 codes in int32 lanes -> fp32 lanes (see e8m0_to_float).
template <class D>
HWY_INLINE hn::Vec<D> E8M0ToF32(D d, hn::Vec<hn::RebindToSigned<D>> c) {
  const hn::RebindToSigned<D> di;
  auto value = hn::ShiftLeft<23>(c);
  value = hn::IfThenElse(hn::Eq(c, hn::Zero(di)), hn::Set(di, 0x00400000), value);
  value = hn::IfThenElse(hn::Eq(c, hn::Set(di, 0xFF)), hn::Set(di, 0x7FC00000), value);
  return hn::BitCast(d, value);
}

// Codes in int32 lanes (0..255) <-> bytes.
template <class D>
HWY_INLINE void StoreCodes(D /*d*/, hn::Vec<hn::RebindToSigned<D>> codes, uint8_t* HWY_RESTRICT p) {
  const U8For<D> d8;
  hn::StoreU(hn::DemoteTo(d8, codes), d8, p);
}
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> LoadCodes(D /*d*/, const uint8_t* HWY_RESTRICT p) {
  const U8For<D> d8;
  return hn::PromoteTo(hn::RebindToSigned<D>(), hn::LoadU(d8, p));
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_LOWP_INL_H_
