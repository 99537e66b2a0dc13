// Decoding and nearest-even rounding for fp32/fp16/bf16, written with integer arithmetic for any
// (exponent bits, mantissa bits) layout.
#include "precision/fp.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>

namespace mantissa::precision {

FloatLayout layout_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat16: return {5, 10, 16};
    case DType::kBFloat16: return {8, 7, 16};
    default: return {8, 23, 32};
  }
}

double decode_bits(uint32_t bits, DType dtype) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint32_t exp_max = (1u << f.exponent_bits) - 1u;
  const uint32_t sign = (bits >> (f.width - 1)) & 1u;
  const uint32_t exponent = (bits >> f.mantissa_bits) & exp_max;
  const uint64_t mantissa = bits & ((1u << f.mantissa_bits) - 1u);
  const uint64_t dsign = static_cast<uint64_t>(sign) << 63;
  if (exponent == exp_max) {
    if (mantissa == 0) return std::bit_cast<double>(dsign | 0x7FF0000000000000ull);
    const uint64_t payload = mantissa << (52 - f.mantissa_bits);
    return std::bit_cast<double>(dsign | 0x7FF8000000000000ull | payload);
  }
  // Every finite value of these formats is a normal double: a normal one takes the double's
  // exponent and its mantissa bits shifted up; a subnormal one is mantissa * 2^(1-bias-mbits),
  // an exact product with a power of two built from its bits. (std::ldexp did the same and was
  // the kit's hottest call.)
  const int bias = static_cast<int>(exp_max >> 1);
  if (exponent == 0) {
    const auto scale = static_cast<uint64_t>(1 - bias - f.mantissa_bits + 1023) << 52;
    const double magnitude = static_cast<double>(mantissa) * std::bit_cast<double>(scale);
    return std::bit_cast<double>(dsign | std::bit_cast<uint64_t>(magnitude));
  }
  const auto dexp = static_cast<uint64_t>(static_cast<int>(exponent) - bias + 1023);
  return std::bit_cast<double>(dsign | dexp << 52 | mantissa << (52 - f.mantissa_bits));
}

uint32_t round_to_bits(double x, DType dtype) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const uint32_t sign = static_cast<uint32_t>(bits >> 63) << (f.width - 1);
  const int dexp = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t dman = bits & ((1ull << 52) - 1);
  const uint32_t exp_max = (1u << f.exponent_bits) - 1u;
  const uint32_t inf = exp_max << f.mantissa_bits;
  if (dexp == 0x7FF) {
    if (dman == 0) return sign | inf;
    const uint32_t quiet = 1u << (f.mantissa_bits - 1);
    return sign | inf | quiet | static_cast<uint32_t>(dman >> (52 - f.mantissa_bits));
  }
  if (dexp == 0) return sign;  // zero or a double subnormal: far below every target's range
  const int bias = static_cast<int>(exp_max >> 1);
  const uint64_t significand = dman | (1ull << 52);  // value = significand * 2^(dexp-1075)
  const int target_exp = dexp - 1023 + bias;         // biased exponent the value would take
  if (target_exp >= static_cast<int>(exp_max)) return sign | inf;
  // Keep mantissa_bits fraction bits for a normal result; shift further right for a subnormal.
  int shift = 52 - f.mantissa_bits;
  if (target_exp <= 0) shift += 1 - target_exp;
  if (shift > 63) return sign;
  const uint64_t kept = significand >> shift;
  const uint64_t rest = significand & ((1ull << shift) - 1);
  const uint64_t half = 1ull << (shift - 1);
  const uint64_t round_up = (rest > half || (rest == half && (kept & 1))) ? 1 : 0;
  // For a normal result `kept` holds the implicit bit at position mantissa_bits, so adding
  // (target_exp - 1) << mantissa_bits yields the biased exponent; a rounding carry moves into
  // the exponent (up to infinity), and a subnormal that rounds up becomes the smallest normal.
  uint64_t out = kept + round_up;
  if (target_exp > 0) out += static_cast<uint64_t>(target_exp - 1) << f.mantissa_bits;
  if (out >= inf) return sign | inf;
  return sign | static_cast<uint32_t>(out);
}

bool bits_is_nan(uint32_t bits, DType dtype) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint32_t magnitude = bits & ((f.width == 32 ? 0xFFFFFFFFu : (1u << f.width) - 1u) >> 1);
  return magnitude > (((1u << f.exponent_bits) - 1u) << f.mantissa_bits);
}

bool bits_is_inf(uint32_t bits, DType dtype) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint32_t magnitude = bits & ((f.width == 32 ? 0xFFFFFFFFu : (1u << f.width) - 1u) >> 1);
  return magnitude == (((1u << f.exponent_bits) - 1u) << f.mantissa_bits);
}

uint64_t ulp_distance(uint32_t a, uint32_t b, DType dtype) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint32_t sign_bit = 1u << (f.width - 1);
  // Map sign-magnitude to a monotonic integer line: -x -> -|x|.
  auto ordered = [sign_bit](uint32_t v) -> int64_t {
    const int64_t magnitude = v & (sign_bit - 1u);
    return (v & sign_bit) ? -magnitude : magnitude;
  };
  return static_cast<uint64_t>(std::llabs(ordered(a) - ordered(b)));
}

uint32_t quiet_nan_bits(DType dtype, bool negative) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint32_t bits =
      (((1u << f.exponent_bits) - 1u) << f.mantissa_bits) | (1u << (f.mantissa_bits - 1));
  return negative ? bits | (1u << (f.width - 1)) : bits;
}

uint32_t inf_bits(DType dtype, bool negative) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint32_t bits = ((1u << f.exponent_bits) - 1u) << f.mantissa_bits;
  return negative ? bits | (1u << (f.width - 1)) : bits;
}

uint32_t max_finite_bits(DType dtype, bool negative) noexcept {
  return inf_bits(dtype, negative) - 1u;
}

uint32_t min_subnormal_bits(DType dtype, bool negative) noexcept {
  const FloatLayout f = layout_of(dtype);
  return negative ? (1u << (f.width - 1)) | 1u : 1u;
}

uint32_t min_normal_bits(DType dtype, bool negative) noexcept {
  const FloatLayout f = layout_of(dtype);
  const uint32_t bits = 1u << f.mantissa_bits;
  return negative ? bits | (1u << (f.width - 1)) : bits;
}

bool is_fp8(DType dtype) noexcept {
  return dtype == DType::kFloat8E4M3FN || dtype == DType::kFloat8E5M2;
}

namespace {

double decode_fp8_by_formula(uint32_t code, DType dtype) noexcept {
  const bool e4m3 = dtype == DType::kFloat8E4M3FN;
  const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const uint32_t emax = e4m3 ? 15u : 31u;
  const uint32_t e = (code >> mbits) & emax, m = code & ((1u << mbits) - 1u);
  const double sign = (code & 0x80u) ? -1.0 : 1.0;
  if (e4m3 && e == 15 && m == 7) return std::nan("");
  if (!e4m3 && e == 31) return m == 0 ? sign * HUGE_VAL : std::nan("");
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias - mbits);
  return sign *
         std::ldexp(static_cast<double>(m + (1u << mbits)), static_cast<int>(e) - bias - mbits);
}

// The 256 values of each format, decoded once by the formula (round_to_fp8_saturating compares
// against every code).
struct Fp8Values {
  std::array<double, 256> e4m3, e5m2;
  Fp8Values() noexcept {
    for (uint32_t c = 0; c < 256; ++c) {
      e4m3[c] = decode_fp8_by_formula(c, DType::kFloat8E4M3FN);
      e5m2[c] = decode_fp8_by_formula(c, DType::kFloat8E5M2);
    }
  }
};

}  // namespace

double decode_fp8(uint32_t code, DType dtype) noexcept {
  static const Fp8Values values;
  const auto& table = dtype == DType::kFloat8E4M3FN ? values.e4m3 : values.e5m2;
  return table[code & 0xFFu];
}

uint32_t round_to_fp8_saturating(double x, DType dtype) noexcept {
  const bool e4m3 = dtype == DType::kFloat8E4M3FN;
  if (std::isnan(x)) return e4m3 ? 0x7Fu : 0x7Eu;
  const uint32_t max_code = e4m3 ? 0x7Eu : 0x7Bu;
  const double a = std::fabs(x);
  if (a >= decode_fp8(max_code, dtype)) return (x < 0 ? 0x80u : 0u) | max_code;  // saturates
  uint32_t best = 0;
  double best_err = HUGE_VAL;
  for (uint32_t c = 0; c <= max_code; ++c) {
    const double err = std::fabs(decode_fp8(c, dtype) - a);
    if (err < best_err || (err == best_err && (c & 1u) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return (std::signbit(x) ? 0x80u : 0u) | best;
}

bool is_fp4(DType dtype) noexcept {
  return dtype == DType::kFloat4E2M1 || dtype == DType::kFloat4E1M2;
}

namespace {

// Magnitude k of the format for k = 0..8 (8: the next binade's first value).
double fp4_magnitude(int k, DType dtype) noexcept {
  static constexpr double kE2M1[9] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0};
  return dtype == DType::kFloat4E2M1 ? kE2M1[k] : k / 4.0;
}

}  // namespace

double decode_fp4(uint32_t code, DType dtype) noexcept {
  const double m = fp4_magnitude(static_cast<int>(code & 7u), dtype);
  return (code & 8u) ? -m : m;
}

uint32_t round_to_fp4(double x, DType dtype, int64_t mode) noexcept {
  if (std::isnan(x)) return 0;
  const double a = std::fabs(x);
  const bool negative = std::signbit(x);
  int pick = 0;
  if (mode == 1) {  // floor: toward -inf
    if (!negative) {
      for (int k = 0; k < 9; ++k) {
        if (fp4_magnitude(k, dtype) <= a) pick = k;
      }
    } else {
      pick = 8;
      for (int k = 8; k >= 0; --k) {
        if (fp4_magnitude(k, dtype) >= a) pick = k;
      }
    }
  } else {
    double best = HUGE_VAL;
    for (int k = 0; k < 9; ++k) {
      const double d = std::fabs(fp4_magnitude(k, dtype) - a);
      const bool better_tie = mode == 2 ? k > pick : k % 2 == 0;
      if (d < best || (d == best && better_tie)) {
        best = d;
        pick = k;
      }
    }
  }
  return (negative ? 8u : 0u) | static_cast<uint32_t>(std::min(pick, 7));
}

}  // namespace mantissa::precision
