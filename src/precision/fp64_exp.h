// The kit's scalar statement of the library's fp64 exponential (docs/math.md, "Exp64"), written
// from the documentation for the golden32 of operators that use it (LogSoftmaxGrad). It shares
// no code with the kernels; tests/test_softmax_grad.cc measures it against expl.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mantissa::precision {

// 2^(j/32) rounded to fp64, from the long double exp2 (64-bit significand; none of the 32 values
// lies near enough to a midpoint of fp64 for the second rounding to matter:
// tests/test_softmax_grad.cc compares every result bit for bit with the kernels').
inline double exp2_32nds(int64_t j) {
  return static_cast<double>(std::exp2(static_cast<long double>(j) / 32.0L));
}

// exp(x) in fp64: clamp to [-746, 710]; k = 32 x / ln 2 rounded to nearest even (by adding and
// subtracting 1.5 * 2^52, the product with 32 * fp64(1 / ln 2)); r = (x - k * ln2_hi / 32) -
// k * ln2_lo / 32; e = r + r^2 * p(r), p the degree-4 Horner polynomial from 1/6! to 1/2!;
// y = t + t * e with t = 2^((k mod 32) / 32) rounded to fp64; times 2^floor(n/2), then times
// 2^(n - floor(n/2)), n = floor(k / 32). NaN gives the quiet NaN.
inline double exp64_documented(double x) {
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  const double xc = std::min(std::max(x, -746.0), 710.0);
  const double magic = 6755399441055744.0;
  const double k = (xc * (32.0 * 1.4426950408889634) + magic) - magic;
  const double r = (xc - k * (0x1.62e42feep-1 / 32.0)) - k * (0x1.a39ef35793c76p-33 / 32.0);
  const double c[] = {1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5};
  double p = c[0];
  for (int i = 1; i < 5; ++i) p = p * r + c[i];
  const double e = p * (r * r) + r;
  const auto ki = static_cast<int64_t>(k);
  const int64_t j = ki & 31, n = ki >> 5;  // k = 32 n + j, 0 <= j < 32 (arithmetic shift)
  const double t = exp2_32nds(j);
  const double y = t + t * e;
  const int64_t n1 = n >> 1;  // floor
  const int64_t n2 = n - n1;
  const double s1 = std::bit_cast<double>(static_cast<uint64_t>(n1 + 1023) << 52);
  const double s2 = std::bit_cast<double>(static_cast<uint64_t>(n2 + 1023) << 52);
  return (y * s1) * s2;
}

}  // namespace mantissa::precision
