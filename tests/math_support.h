// Test support for core/math: ulp error of an fp32 result against an fp64 reference, and the
// inputs of the cross-target comparison (a strided sample of all 2^32 bit patterns plus every
// special range).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace mantissa::testing {

// The error of y in units of the fp32 spacing at the reference value (2^-149 for subnormal
// results). An infinite y is exact for a reference that rounds to it, else counts as 2^128. 0 when
// both are NaN or the same infinity; +inf for a NaN/non-NaN mismatch.
inline double ulp_error(float y, double ref) {
  if (std::isnan(ref) || std::isnan(y)) {
    return std::isnan(ref) && std::isnan(y) ? 0.0 : std::numeric_limits<double>::infinity();
  }
  if (std::isinf(ref)) return static_cast<double>(y) == ref ? 0.0 : HUGE_VAL;
  double yd = y;
  if (std::isinf(yd)) {
    // inf is the correctly rounded fp32 result of anything from FLT_MAX + half an ulp up.
    if (std::abs(ref) >= std::ldexp(1.0, 128) - std::ldexp(1.0, 103) &&
        std::signbit(ref) == std::signbit(yd)) {
      return 0.0;
    }
    yd = std::copysign(std::ldexp(1.0, 128), yd);
  }
  const int e = ref == 0.0 ? -126 : std::max(std::ilogb(ref), -126);
  return std::abs(yd - ref) / std::ldexp(1.0, e - 23);
}

// Every `stride`-th bit pattern, plus: all subnormals and small normals near 0 (sampled), the
// exp boundaries around +-88 .. 104, log's inputs around 1, +-0, +-inf, several NaNs.
inline std::vector<float> math_sample_inputs(uint32_t stride) {
  std::vector<float> v;
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += stride)
    v.push_back(std::bit_cast<float>(uint32_t(b)));
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t b = 0; b < 0x01000000u; b += 97) v.push_back(std::bit_cast<float>(sign | b));
    for (uint32_t b = 0x42A00000u; b < 0x42E00000u; b += 13) {  // [80, 112)
      v.push_back(std::bit_cast<float>(sign | b));
    }
    for (uint32_t b = 0x3F700000u; b < 0x3F880000u; b += 3) {  // around 1
      v.push_back(std::bit_cast<float>(sign | b));
    }
    for (uint32_t b : {0u, 1u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u,
                       0x7FC00000u, 0x7FFFFFFFu, 0x7FA00000u}) {
      v.push_back(std::bit_cast<float>(sign | b));
    }
  }
  return v;
}

}  // namespace mantissa::testing
