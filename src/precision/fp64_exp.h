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

// exp(x) in fp64: clamp to [-746, 710]; n = x / ln 2 rounded to nearest even (by adding and
// subtracting 1.5 * 2^52); r = (x - n * ln2_hi) - n * ln2_lo; the degree-13 Taylor polynomial
// of exp(r) by Horner from 1/13!; times 2^floor(n/2), then times 2^(n - floor(n/2)). NaN gives
// the quiet NaN.
inline double exp64_documented(double x) {
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  const double xc = std::min(std::max(x, -746.0), 710.0);
  const double magic = 6755399441055744.0;
  const double n = (xc * 1.4426950408889634 + magic) - magic;
  const double r = (xc - n * 0x1.62e42feep-1) - n * 0x1.a39ef35793c76p-33;
  const double c[] = {1.0 / 6227020800.0,
                      1.0 / 479001600.0,
                      1.0 / 39916800.0,
                      1.0 / 3628800.0,
                      1.0 / 362880.0,
                      1.0 / 40320.0,
                      1.0 / 5040.0,
                      1.0 / 720.0,
                      1.0 / 120.0,
                      1.0 / 24.0,
                      1.0 / 6.0,
                      0.5,
                      1.0,
                      1.0};
  double y = c[0];
  for (int k = 1; k < 14; ++k) y = y * r + c[k];
  const auto ni = static_cast<int64_t>(n);
  const int64_t n1 = ni >> 1;  // floor (arithmetic shift)
  const int64_t n2 = ni - n1;
  const double s1 = std::bit_cast<double>(static_cast<uint64_t>(n1 + 1023) << 52);
  const double s2 = std::bit_cast<double>(static_cast<uint64_t>(n2 + 1023) << 52);
  return (y * s1) * s2;
}

}  // namespace mantissa::precision
