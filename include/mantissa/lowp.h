// Low-precision formats (FP8 E4M3FN/E5M2, FP6 E3M2/E2M3, FP4 E2M1, the E8M0 scale, INT4): their
// parameters, and exact scalar conversions to and from fp32 written with integer arithmetic only.
//
// Glossary: a format's "code" is its bit pattern in the low bits of a byte (FP6: bits 0..5 with
// the sign in bit 5; FP4/INT4: bits 0..3). "Magnitude code" is the code without its sign bit.
// Narrowing rounds to nearest, ties to even, first; the rounded value is then checked against the
// format's range ("overflow"): saturating conversions clamp to +-max, non-saturating ones give
// NaN (E4M3FN, which has no infinity) or +-inf (E5M2); FP6 and FP4 have neither, so they always
// saturate. Subnormal results are exact. NaN stays NaN where the format has one (E4M3FN:
// S.1111.111; E5M2: quiet, sign and top payload bit kept); FP6/FP4 have none and take +-max with
// the NaN's sign. Infinity is an overflow like any other. See docs/quantization.md.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "mantissa/dtype.h"
#include "mantissa/export.h"

namespace mantissa {

// A small binary floating-point format: sign, `ebits` exponent bits (bias `bias`), `mbits`
// mantissa bits, largest finite magnitude code `max_code`.
struct MiniFloat {
  int ebits, mbits, bias;
  uint32_t max_code;
  enum class Special : uint8_t {
    kNone,     // every code is finite (FP6, FP4)
    kNanOnly,  // S.1...1.1...1 is NaN, no infinity (E4M3FN)
    kIeee,     // all-ones exponent: infinity (mantissa 0) or NaN (E5M2)
  } special;
  constexpr uint32_t sign_bit() const { return 1u << (ebits + mbits); }
};

inline constexpr MiniFloat kE4M3{4, 3, 7, 0x7E, MiniFloat::Special::kNanOnly};  // max 448
inline constexpr MiniFloat kE5M2{5, 2, 15, 0x7B, MiniFloat::Special::kIeee};    // max 57344
inline constexpr MiniFloat kE3M2{3, 2, 3, 0x1F, MiniFloat::Special::kNone};     // max 28
inline constexpr MiniFloat kE2M3{2, 3, 1, 0x1F, MiniFloat::Special::kNone};     // max 7.5
inline constexpr MiniFloat kE2M1{2, 1, 1, 0x07, MiniFloat::Special::kNone};     // max 6

// The MiniFloat of a dtype, or nullptr for a dtype that is not one (E8M0 and INT4 are not).
constexpr const MiniFloat* minifloat_of(DType d) noexcept {
  switch (d) {
    case DType::kFloat8E4M3FN: return &kE4M3;
    case DType::kFloat8E5M2: return &kE5M2;
    case DType::kFloat6E3M2: return &kE3M2;
    case DType::kFloat6E2M3: return &kE2M3;
    case DType::kFloat4E2M1: return &kE2M1;
    default: return nullptr;
  }
}

// fp32 -> code (sign included). Round to nearest even, then overflow handling as above.
constexpr uint32_t float_to_minifloat(const MiniFloat& fmt, float f, bool saturate) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 31) ? fmt.sign_bit() : 0u;
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  const int m = fmt.mbits;
  if (magnitude > 0x7F800000u) {  // NaN
    switch (fmt.special) {
      case MiniFloat::Special::kNanOnly: return sign | (fmt.sign_bit() - 1u);
      case MiniFloat::Special::kIeee: {
        // Quiet NaN: all-ones exponent, top mantissa bit set, the fp32 payload's next bits kept.
        const uint32_t exp_ones = ((1u << fmt.ebits) - 1u) << m;
        const uint32_t payload = (magnitude >> (23 - m)) & ((1u << m) - 1u);
        return sign | exp_ones | (1u << (m - 1)) | payload;
      }
      case MiniFloat::Special::kNone: return sign | fmt.max_code;
    }
  }
  uint32_t code = 0;
  // fp32 exponent field of the format's smallest normal, 2^(1 - bias).
  const uint32_t min_normal_field = static_cast<uint32_t>(127 + 1 - fmt.bias);
  if (magnitude >= (min_normal_field << 23)) {
    // Normal: rebias the exponent, then drop 23 - m mantissa bits rounding to nearest even. A
    // carry into the exponent is the correct result; overflow is checked below.
    const uint32_t shift = static_cast<uint32_t>(23 - m);
    const uint32_t rebased = magnitude - (static_cast<uint32_t>(127 - fmt.bias) << 23);
    code = (rebased + ((1u << (shift - 1)) - 1u) + ((rebased >> shift) & 1u)) >> shift;
  } else {
    // Subnormal (or zero): |f| in units of 2^(1 - bias - m), rounded to nearest even. The result
    // may be 2^m, the encoding of the smallest normal.
    const uint32_t field = magnitude >> 23;
    const uint32_t significand = (magnitude & 0x7FFFFFu) | (field != 0 ? 0x800000u : 0u);
    const int exponent = field != 0 ? static_cast<int>(field) : 1;  // |f| = sig * 2^(e - 150)
    const int r = 151 - fmt.bias - m - exponent;                    // > 0 in this branch
    if (r >= 32) return sign;
    const uint32_t kept = significand >> r;
    const uint32_t rest = significand & ((1u << r) - 1u);
    const uint32_t half = 1u << (r - 1);
    code = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  }
  if (code > fmt.max_code) {  // overflow (infinity included)
    if (saturate || fmt.special == MiniFloat::Special::kNone) return sign | fmt.max_code;
    if (fmt.special == MiniFloat::Special::kNanOnly) return sign | (fmt.sign_bit() - 1u);
    return sign | (((1u << fmt.ebits) - 1u) << m);  // infinity
  }
  return sign | code;
}

// The E2M1 magnitude code (0..7) of a finite a >= 0, rounded to nearest even and saturated at 6:
// float_to_minifloat(kE2M1, a, true) for every such a, by comparisons with the grid's midpoints
// (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5; a tie goes to the even code), without branches.
constexpr uint32_t e2m1_magnitude_rne(float a) noexcept {
  return static_cast<uint32_t>(a > 0.25f) + static_cast<uint32_t>(a >= 0.75f) +
         static_cast<uint32_t>(a > 1.25f) + static_cast<uint32_t>(a >= 1.75f) +
         static_cast<uint32_t>(a > 2.5f) + static_cast<uint32_t>(a >= 3.5f) +
         static_cast<uint32_t>(a > 5.0f);
}

// code -> fp32, exact. NaN codes give a quiet fp32 NaN with sign and payload kept.
constexpr float minifloat_to_float(const MiniFloat& fmt, uint32_t code) noexcept {
  const int m = fmt.mbits;
  const uint32_t sign = (code & fmt.sign_bit()) ? 0x80000000u : 0u;
  const uint32_t magnitude = code & (fmt.sign_bit() - 1u);
  const uint32_t exponent = magnitude >> m;
  const uint32_t mantissa = magnitude & ((1u << m) - 1u);
  const uint32_t exp_ones = (1u << fmt.ebits) - 1u;
  const bool is_nan =
      (fmt.special == MiniFloat::Special::kNanOnly && magnitude == fmt.sign_bit() - 1u) ||
      (fmt.special == MiniFloat::Special::kIeee && exponent == exp_ones && mantissa != 0);
  if (is_nan) return std::bit_cast<float>(sign | 0x7FC00000u | (mantissa << (23 - m)));
  if (fmt.special == MiniFloat::Special::kIeee && exponent == exp_ones) {
    return std::bit_cast<float>(sign | 0x7F800000u);
  }
  if (exponent != 0) {
    const uint32_t field = exponent + static_cast<uint32_t>(127 - fmt.bias);
    return std::bit_cast<float>(sign | (field << 23) | (mantissa << (23 - m)));
  }
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal: mantissa * 2^(1 - bias - m); normalise by hand (no float arithmetic).
  uint32_t field = static_cast<uint32_t>(127 + 1 - fmt.bias);
  uint32_t mm = mantissa;
  while ((mm & (1u << m)) == 0) {
    mm <<= 1;
    --field;
  }
  return std::bit_cast<float>(sign | (field << 23) | ((mm & ((1u << m) - 1u)) << (23 - m)));
}

// ---- E8M0: the MX shared scale, 2^(code - 127); 0xFF is NaN; no sign, no zero. ---------------
//
// fp32 -> E8M0 rounds the value to the nearest power of two, ties (1.5 * 2^e) to the even
// exponent code; positive values at or below 2^-127, and +-0, give code 0 (2^-127: E8M0 has no
// zero); a negative value or NaN gives NaN; overflow (2^128 and up, infinity included) gives
// 0xFE (2^127) when saturating, NaN otherwise.
constexpr uint8_t float_to_e8m0(float f, bool saturate) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u || ((bits >> 31) && magnitude != 0)) return 0xFF;
  if (magnitude < 0x00800000u) return magnitude > 0x00600000u ? 1 : 0;  // 1.5 * 2^-127 ties to 0
  const uint32_t code = (magnitude + 0x3FFFFFu + ((magnitude >> 23) & 1u)) >> 23;
  if (code >= 0xFF) return saturate ? 0xFE : 0xFF;
  return static_cast<uint8_t>(code);
}

constexpr float e8m0_to_float(uint8_t code) noexcept {
  if (code == 0xFF) return std::bit_cast<float>(0x7FC00000u);
  if (code == 0) return std::bit_cast<float>(0x00400000u);  // 2^-127, an fp32 subnormal
  return std::bit_cast<float>(static_cast<uint32_t>(code) << 23);
}

// ---- INT4: two's complement in a nibble; packed two per byte, element 2i in the low nibble. ---

constexpr int int4_from_nibble(uint32_t nibble) noexcept {
  return static_cast<int>(nibble & 0xFu) - ((nibble & 0x8u) ? 16 : 0);
}

// Nibble i of a packed INT4/FP4 buffer, and setting it (the other nibble of the byte kept).
constexpr uint32_t packed_nibble(const uint8_t* data, std::size_t i) noexcept {
  return (data[i / 2] >> ((i % 2) * 4)) & 0xFu;
}
constexpr void set_packed_nibble(uint8_t* data, std::size_t i, uint32_t nibble) noexcept {
  const unsigned shift = (i % 2) * 4;
  data[i / 2] = static_cast<uint8_t>((data[i / 2] & ~(0xFu << shift)) | ((nibble & 0xFu) << shift));
}

// ---- Bulk conversions (SIMD, multithreaded; the same bits as the scalar ones on every target) --
//
// `dtype` is one of FLOAT8_E4M3FN, FLOAT8_E5M2, FLOAT6_E3M2, FLOAT6_E2M3 (one code per byte,
// FP6 in the low six bits), FLOAT4_E2M1 (packed: n elements in (n + 1) / 2 bytes, element 2i in
// the low nibble; an odd n leaves the last high nibble zero) or FLOAT8_E8M0. Returns false, and
// writes nothing, for any other dtype.
MANTISSA_API bool convert_fp32_to_lowp(DType dtype, const float* src, uint8_t* dst, std::size_t n,
                                       bool saturate);
MANTISSA_API bool convert_lowp_to_fp32(DType dtype, const uint8_t* src, float* dst, std::size_t n);

}  // namespace mantissa
