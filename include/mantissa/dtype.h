// Element types and the exact, round-to-nearest-even conversions between fp32 and fp16/bf16.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "mantissa/export.h"

namespace mantissa {

// Values match CANN's aclDataType so the C layer maps them one to one.
enum class DType : int32_t {
  kUndefined = -1,
  kFloat32 = 0,
  kFloat16 = 1,
  kInt8 = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt16 = 6,
  kUInt16 = 7,
  kUInt32 = 8,
  kInt64 = 9,
  kUInt64 = 10,
  kFloat64 = 11,
  kBool = 12,
  kBFloat16 = 27,
  // Low-precision formats (see lowp.h). INT4 and the FLOAT4 types are packed two elements per
  // byte.
  kInt4 = 29,
  kHiFloat8 = 34,  // declared for completeness; no operator accepts it
  kFloat8E5M2 = 35,
  kFloat8E4M3FN = 36,
  kFloat8E8M0 = 37,
  kFloat6E3M2 = 38,  // one element per byte, in the low six bits
  kFloat6E2M3 = 39,
  kFloat4E2M1 = 40,
  kFloat4E1M2 = 41,  // magnitudes code / 4 (0 .. 1.75); DynamicMxQuant's destination only
};

// Bytes per element; 0 for kUndefined, a value outside the enum, or a packed sub-byte type (INT4,
// FLOAT4_E2M1, FLOAT4_E1M2), whose elements have no byte size of their own.
MANTISSA_API std::size_t dtype_size(DType dtype) noexcept;
// Bits per element in memory: 8 * dtype_size, or 4 for the packed types (two elements per byte,
// element 2i in the low nibble); 0 when unknown. A tensor of n elements takes
// (n * bits + 7) / 8 bytes (TensorView::nbytes).
MANTISSA_API std::size_t dtype_bits(DType dtype) noexcept;
// CANN spelling, as used in error messages: "FLOAT", "FLOAT16", "BFLOAT16", "INT32", ...
MANTISSA_API const char* dtype_name(DType dtype) noexcept;
// Short spelling used by case files: "fp32", "fp16", "bf16", "int32", "bool", ...
MANTISSA_API const char* dtype_short_name(DType dtype) noexcept;
// Parses a short or CANN spelling; kUndefined when unknown.
MANTISSA_API DType dtype_from_name(const char* name) noexcept;
// True for the floating types the training operators accept (fp32, fp16, bf16).
constexpr bool is_training_float(DType d) noexcept {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
}

// ---------------------------------------------------------------------------------------------
// Scalar conversions. Widening is exact. Narrowing rounds to nearest, ties to even; overflow
// gives +-inf; subnormals are produced exactly; NaN stays NaN with its sign and the top payload
// bits, and is made quiet. These are the reference the SIMD conversions are tested against
// bit for bit; they use integer arithmetic only, so the floating-point environment (FTZ/DAZ,
// rounding mode) does not affect them.

constexpr float bf16_bits_to_float(uint16_t h) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

constexpr uint16_t float_to_bf16_bits(float f) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: keep sign and top payload, set quiet bit
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even; a carry out of the
  // mantissa correctly bumps the exponent (up to inf).
  const uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

constexpr float fp16_bits_to_float(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) {  // inf or NaN; NaN keeps its payload and is made quiet
    const uint32_t quiet = mantissa != 0 ? 0x00400000u : 0u;
    return std::bit_cast<float>(sign | 0x7F800000u | quiet | (mantissa << 13));
  }
  if (exponent != 0) {  // normal: rebias the exponent from 15 to 127
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal: value = mantissa * 2^-24. Normalise by hand so no float arithmetic is used.
  uint32_t e = 113;  // exponent field the value would have if mantissa had its top bit at 10
  uint32_t m = mantissa;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((m & 0x3FFu) << 13));
}

constexpr uint16_t float_to_fp16_bits(float f) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: inf
  if (magnitude >= 0x38800000u) {  // result is a normal fp16 (or rounds up within normals)
    const uint32_t rebased = magnitude - 0x38000000u;  // exponent 127 -> 15 bias
    const uint32_t rounded = (rebased + 0xFFFu + ((rebased >> 13) & 1u)) >> 13;
    return static_cast<uint16_t>(sign | rounded);
  }
  if (magnitude < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
  // Subnormal result: shift the full 24-bit significand right and round to nearest even.
  const uint32_t exponent = magnitude >> 23;  // 102..112
  const uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24: places the 2^-24 unit at bit 0
  const uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  const uint32_t round_up = (rest > half || (rest == half && (kept & 1u))) ? 1u : 0u;
  return static_cast<uint16_t>(sign | (kept + round_up));
}

// Round an fp32 value to `dtype` (fp32, fp16 or bf16) and widen it back.
constexpr float round_to(DType dtype, float f) noexcept {
  switch (dtype) {
    case DType::kFloat16: return fp16_bits_to_float(float_to_fp16_bits(f));
    case DType::kBFloat16: return bf16_bits_to_float(float_to_bf16_bits(f));
    default: return f;
  }
}

// Reads element `i` of a fp32/fp16/bf16 buffer, widened exactly to fp32.
inline float load_as_float(DType dtype, const void* data, std::size_t i) noexcept {
  switch (dtype) {
    case DType::kFloat16: return fp16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::kBFloat16: return bf16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
    default: return static_cast<const float*>(data)[i];
  }
}

// Writes fp32 `f` to element `i`, rounded once to the buffer's dtype.
inline void store_from_float(DType dtype, void* data, std::size_t i, float f) noexcept {
  switch (dtype) {
    case DType::kFloat16: static_cast<uint16_t*>(data)[i] = float_to_fp16_bits(f); break;
    case DType::kBFloat16: static_cast<uint16_t*>(data)[i] = float_to_bf16_bits(f); break;
    default: static_cast<float*>(data)[i] = f; break;
  }
}

}  // namespace mantissa
