// The precision kit's own floating-point encodings: decoding fp32/fp16/bf16 bit patterns to
// double and rounding double to those formats (nearest, ties to even). Written independently of
// the library's conversions, so that a bug there cannot hide in the goldens.
#pragma once

#include <bit>
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::precision {

// Bit layout of one of the three floating formats.
struct FloatLayout {
  int exponent_bits;
  int mantissa_bits;
  int width;  // total bits
};

// fp32, fp16 or bf16; any other dtype gets fp32's layout (callers check is_training_float).
FloatLayout layout_of(DType dtype) noexcept;

// Exact decoding of a bit pattern (held in the low bits) to double. NaN keeps its sign and
// payload (placed in the top payload bits of the double) and is made quiet.
double decode_bits(uint32_t bits, DType dtype) noexcept;

// Rounds a double to the format once: nearest, ties to even; overflow gives +-inf; subnormals are
// produced exactly; NaN keeps its sign and top payload bits and is made quiet.
uint32_t round_to_bits(double x, DType dtype) noexcept;

// The value of `x` rounded to the format and widened back to double.
inline double round_to_dtype(double x, DType dtype) noexcept {
  return decode_bits(round_to_bits(x, dtype), dtype);
}

// Bit pattern of the value widened exactly to fp32 (fp16/bf16 are subsets of fp32).
inline float widen_to_float(uint32_t bits, DType dtype) noexcept {
  return std::bit_cast<float>(round_to_bits(decode_bits(bits, dtype), DType::kFloat32));
}

// Rounds an fp32 value to the format (nearest even): the single rounding of golden32.
inline uint32_t narrow_float(float f, DType dtype) noexcept {
  return round_to_bits(static_cast<double>(f), dtype);
}

// fp32, fp16 or bf16: the dtypes the kit judges by error rather than by equality.
inline bool is_float(DType d) noexcept {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
}
bool bits_is_nan(uint32_t bits, DType dtype) noexcept;
bool bits_is_inf(uint32_t bits, DType dtype) noexcept;

// Distance in units in the last place of the format between two non-NaN patterns (+0 and -0 are
// 0 apart; the largest finite value and infinity are 1 apart).
uint64_t ulp_distance(uint32_t a, uint32_t b, DType dtype) noexcept;

// Special values of a format, as bit patterns.
uint32_t quiet_nan_bits(DType dtype, bool negative) noexcept;
uint32_t inf_bits(DType dtype, bool negative) noexcept;
uint32_t max_finite_bits(DType dtype, bool negative) noexcept;
uint32_t min_subnormal_bits(DType dtype, bool negative) noexcept;
uint32_t min_normal_bits(DType dtype, bool negative) noexcept;

// ---- Quantized outputs (FLOAT8_E4M3FN, FLOAT8_E5M2) -----------------------------------------
// The kit's own FP8 codes, written from the OCP definitions by enumeration (independent of the
// library's lowp conversions): decoding a code, and the saturating round-to-nearest-even of a
// double (the nearest finite code, ties to the even code; NaN gives the canonical NaN code:
// E4M3FN 0x7F, E5M2 0x7E, with the NaN's sign dropped).
bool is_fp8(DType dtype) noexcept;
double decode_fp8(uint32_t code, DType dtype) noexcept;
uint32_t round_to_fp8_saturating(double x, DType dtype) noexcept;

// FLOAT4_E2M1 (magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) and FLOAT4_E1M2 (code / 4), sign in bit 3:
// decoding a code, and a double's code by enumeration of the format's values and the next
// binade's first (8 or 2, which saturates): mode 0 nearest with ties to the even code, 1 the
// largest value not above x (floor), 2 nearest with ties away from zero; then clamped to the
// largest magnitude. The sign is x's; NaN gives +0 (the formats have no NaN).
bool is_fp4(DType dtype) noexcept;
double decode_fp4(uint32_t code, DType dtype) noexcept;
uint32_t round_to_fp4(double x, DType dtype, int64_t mode) noexcept;

}  // namespace mantissa::precision
