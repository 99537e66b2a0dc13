// Test-only references for the low-precision formats, written independently of the library:
// values from the format's definition in double (ldexp), and narrowing either by brute force
// (the nearest of all codes, ties to the even code) or with nearbyint in double.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "mantissa/dtype.h"

namespace mantissa::testing {

struct LowpFormat {
  DType dtype;
  const char* name;
  int ebits, mbits, bias;
  double max;
  enum Kind { kFinite, kNanOnly, kIeee } kind;
  int code_bits() const { return 1 + ebits + mbits; }
  uint32_t sign_bit() const { return 1u << (ebits + mbits); }
};

inline const LowpFormat kLowpFormats[] = {
    {DType::kFloat8E4M3FN, "e4m3", 4, 3, 7, 448.0, LowpFormat::kNanOnly},
    {DType::kFloat8E5M2, "e5m2", 5, 2, 15, 57344.0, LowpFormat::kIeee},
    {DType::kFloat6E3M2, "e3m2", 3, 2, 3, 28.0, LowpFormat::kFinite},
    {DType::kFloat6E2M3, "e2m3", 2, 3, 1, 7.5, LowpFormat::kFinite},
    {DType::kFloat4E2M1, "e2m1", 2, 1, 1, 6.0, LowpFormat::kFinite},
};

// The value of a code from the definition: subnormal m * 2^(1-bias-M), normal
// (1 + m/2^M) * 2^(e-bias); NaN and infinity per the format.
inline double ref_decode(const LowpFormat& f, uint32_t code) {
  const bool neg = (code & f.sign_bit()) != 0;
  const uint32_t e = (code >> f.mbits) & ((1u << f.ebits) - 1u);
  const uint32_t m = code & ((1u << f.mbits) - 1u);
  const uint32_t e_ones = (1u << f.ebits) - 1u, m_ones = (1u << f.mbits) - 1u;
  double v;
  if (f.kind == LowpFormat::kIeee && e == e_ones) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (f.kind == LowpFormat::kNanOnly && e == e_ones && m == m_ones) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.mbits),
                   static_cast<int>(e) - f.bias);
  }
  return neg ? -v : v;
}

// fp32 bits the library promises for a NaN code: quiet, sign and mantissa kept at the top.
inline uint32_t ref_nan_bits(const LowpFormat& f, uint32_t code) {
  const uint32_t sign = (code & f.sign_bit()) ? 0x80000000u : 0u;
  const uint32_t m = code & ((1u << f.mbits) - 1u);
  return sign | 0x7FC00000u | (m << (23 - f.mbits));
}

// The code an overflow (or infinity) gives.
inline uint32_t ref_overflow_code(const LowpFormat& f, bool negative, bool saturate) {
  const uint32_t sign = negative ? f.sign_bit() : 0u;
  uint32_t max_code = 0;
  for (uint32_t c = 0; c < f.sign_bit(); ++c) {
    if (ref_decode(f, c) == f.max) max_code = c;
  }
  if (saturate || f.kind == LowpFormat::kFinite) return sign | max_code;
  if (f.kind == LowpFormat::kNanOnly) return sign | (f.sign_bit() - 1u);
  return sign | (((1u << f.ebits) - 1u) << f.mbits);
}

inline uint32_t ref_nan_code(const LowpFormat& f, uint32_t fp32_bits) {
  const bool neg = (fp32_bits >> 31) != 0;
  const uint32_t sign = neg ? f.sign_bit() : 0u;
  if (f.kind == LowpFormat::kFinite) return ref_overflow_code(f, neg, true);
  if (f.kind == LowpFormat::kNanOnly) return sign | (f.sign_bit() - 1u);
  // Quiet NaN keeping the top payload bits.
  const uint32_t payload = (fp32_bits >> (23 - f.mbits)) & ((1u << f.mbits) - 1u);
  return sign | (((1u << f.ebits) - 1u) << f.mbits) | (1u << (f.mbits - 1)) | payload;
}

// Brute force: the nearest finite code (ties to the even code); a value that rounds past max (to
// the virtual code after max, one ulp further) is an overflow.
inline uint32_t ref_encode_brute(const LowpFormat& f, float x, bool saturate) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return ref_nan_code(f, bits);
  const bool neg = std::signbit(x);
  const double a = std::fabs(static_cast<double>(x));
  uint32_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  uint32_t max_code = 0;
  double below_max = 0;
  for (uint32_t c = 0; c < f.sign_bit(); ++c) {
    const double v = ref_decode(f, c);
    if (!std::isfinite(v)) continue;
    if (v == f.max) max_code = c;
    if (v < f.max) below_max = std::max(below_max, v);
    const double err = std::fabs(a - v);
    if (err < best_err || (err == best_err && (c & 1u) == 0)) best = c, best_err = err;
  }
  // The virtual code after max (value max + ulp(max)), as an unbounded exponent range has it.
  const uint32_t virtual_code = max_code + 1;
  const double virtual_value = f.max + (f.max - below_max);
  const double err = std::fabs(a - virtual_value);
  if (std::isinf(a) || a > virtual_value || err < best_err ||
      (err == best_err && (virtual_code & 1u) == 0)) {
    return ref_overflow_code(f, neg, saturate);
  }
  return (neg ? f.sign_bit() : 0u) | best;
}

// E8M0 reference: 2^(c-127), 255 NaN; narrowing by brute force over the 255 powers of two.
inline double ref_e8m0_decode(uint32_t c) {
  return c == 255 ? std::numeric_limits<double>::quiet_NaN()
                  : std::ldexp(1.0, static_cast<int>(c) - 127);
}
inline uint32_t ref_e8m0_encode(float x, bool saturate) {
  if (std::isnan(x) || (std::signbit(x) && x != 0.0f)) return 255;
  const double a = static_cast<double>(x);
  if (std::isinf(a)) return saturate ? 254 : 255;
  uint32_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c <= 255; ++c) {  // 255 here: the virtual 2^128
    const double v = std::ldexp(1.0, static_cast<int>(c) - 127);
    const double err = std::fabs(a - v);
    if (err < best_err || (err == best_err && (c & 1u) == 0)) best = c, best_err = err;
  }
  if (best == 255) return saturate ? 254 : 255;
  return best;
}

// nearbyint reference (fast enough for every fp32 input): RNE to M bits at the value's exponent
// (at least the minimum normal one), then the range check.
inline uint32_t ref_encode_nearbyint(const LowpFormat& f, float x, bool saturate) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return ref_nan_code(f, bits);
  const bool neg = std::signbit(x);
  const double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) return ref_overflow_code(f, neg, saturate);
  int e = std::ilogb(a == 0 ? 1.0 : a);
  e = std::max(e, 1 - f.bias);
  const double q = std::ldexp(std::nearbyint(std::ldexp(a, f.mbits - e)), e - f.mbits);
  if (q > f.max) return ref_overflow_code(f, neg, saturate);
  // Encode q exactly.
  uint32_t code;
  if (q < std::ldexp(1.0, 1 - f.bias)) {
    code = static_cast<uint32_t>(std::ldexp(q, f.bias - 1 + f.mbits));
  } else {
    const int qe = std::ilogb(q);
    const auto m = static_cast<uint32_t>(std::ldexp(q, f.mbits - qe)) - (1u << f.mbits);
    code = (static_cast<uint32_t>(qe + f.bias) << f.mbits) | m;
  }
  return (neg ? f.sign_bit() : 0u) | code;
}

}  // namespace mantissa::testing
