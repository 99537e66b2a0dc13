// Test-only reference conversions written independently of the library: double arithmetic and
// nearbyint (round to nearest even) instead of the library's integer bias tricks.
#pragma once

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>

namespace mantissa::testing {

// Rounds |x| (finite, non-negative) to a binary format with `mantissa_bits` stored bits, minimum
// normal exponent `emin` and maximum finite exponent `emax`; returns the encoding without sign,
// or the infinity encoding on overflow.
inline uint32_t reference_round(double a, int mantissa_bits, int emin, int emax, int bias) {
  const uint32_t inf = static_cast<uint32_t>(emax + bias + 1) << mantissa_bits;
  if (a == 0.0) return 0;
  int k = 0;
  std::frexp(a, &k);  // a = f * 2^k, f in [0.5, 1)
  int e = k - 1;      // a in [2^e, 2^(e+1))
  if (e < emin) {     // subnormal: units of 2^(emin - mantissa_bits)
    const double q = std::ldexp(a, mantissa_bits - emin);
    return static_cast<uint32_t>(std::nearbyint(q));  // 2^mantissa_bits encodes the min normal
  }
  double r = std::nearbyint(std::ldexp(a, mantissa_bits - e));  // in [2^m, 2^(m+1)]
  if (r == std::ldexp(1.0, mantissa_bits + 1)) {
    r = std::ldexp(1.0, mantissa_bits);
    ++e;
  }
  if (e > emax) return inf;
  return (static_cast<uint32_t>(e + bias) << mantissa_bits) |
         (static_cast<uint32_t>(r) - (1u << mantissa_bits));
}

// double -> fp16 / bf16 bits, rounded once (RNE); NaN -> quiet NaN with the sign of x.
inline uint16_t reference_double_to_fp16(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7E00;
  if (std::isinf(x)) return sign | 0x7C00;
  return static_cast<uint16_t>(sign | reference_round(std::fabs(x), 10, -14, 15, 15));
}

inline uint16_t reference_double_to_bf16(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7FC0;
  if (std::isinf(x)) return sign | 0x7F80;
  return static_cast<uint16_t>(sign | reference_round(std::fabs(x), 7, -126, 127, 127));
}

inline uint16_t reference_fp32_to_fp16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const auto sign = static_cast<uint16_t>((bits >> 31) << 15);
  if (std::isnan(x)) return static_cast<uint16_t>(sign | 0x7E00u | ((bits >> 13) & 0x3FFu));
  if (std::isinf(x)) return static_cast<uint16_t>(sign | 0x7C00u);
  return static_cast<uint16_t>(sign |
                               reference_round(std::fabs(static_cast<double>(x)), 10, -14, 15, 15));
}

inline uint16_t reference_fp32_to_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const auto sign = static_cast<uint16_t>((bits >> 31) << 15);
  if (std::isnan(x)) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  if (std::isinf(x)) return static_cast<uint16_t>(sign | 0x7F80u);
  return static_cast<uint16_t>(
      sign | reference_round(std::fabs(static_cast<double>(x)), 7, -126, 127, 127));
}

// Widening: value = (-1)^s * 2^(e - bias) * 1.m, or subnormal, computed with ldexp in double.
inline uint32_t reference_fp16_to_fp32_bits(uint16_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  if (e == 0x1F) {
    if (m == 0) return negative ? 0xFF800000u : 0x7F800000u;
    return (negative ? 0x80000000u : 0u) | 0x7FC00000u | (static_cast<uint32_t>(m) << 13);
  }
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  const float f = static_cast<float>(negative ? -v : v);  // exact: fp16 values fit in fp32
  return std::bit_cast<uint32_t>(f);
}

inline uint32_t reference_bf16_to_fp32_bits(uint16_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const int e = (h >> 7) & 0xFF;
  const int m = h & 0x7F;
  if (e == 0xFF) {
    if (m == 0) return negative ? 0xFF800000u : 0x7F800000u;
    return static_cast<uint32_t>(h) << 16;  // a bf16 NaN widens to the same payload
  }
  const double v = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  const float f = static_cast<float>(negative ? -v : v);
  return std::bit_cast<uint32_t>(f);
}

}  // namespace mantissa::testing
