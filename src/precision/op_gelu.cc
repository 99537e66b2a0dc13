// Gelu in the kit: the fp64 golden, 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)) in long double with
// the C library's expl (the tanh form itself cancels in long double once tanh(u) is within 2^-64
// of -1, below x = -4.5 or so, where GELU is still far from zero), and golden32 (the kernel's
// documented fp64 steps with the library's fp64 exp, rounded to fp32 once, bit for bit).
#include <cmath>
#include <vector>

#include "mantissa/math.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kSelf };

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor& self = in.tensors[kSelf];
  const int64_t n = self.numel();
  std::vector<double> out(static_cast<std::size_t>(n));
  const long double k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  for (int64_t i = 0; i < n; ++i) {
    const long double x = in_f64(self, i);
    long double y;
    if (std::isinf(x)) {
      y = x > 0 ? x : -0.0L;  // the limits
    } else {
      const long double u = k * (x + 0.044715L * x * x * x);
      y = x / (1.0L + std::exp(-2.0L * u));
    }
    out[static_cast<std::size_t>(i)] = static_cast<double>(y);
  }
  return {out};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor& self = in.tensors[kSelf];
  const int64_t n = self.numel();
  HostTensor out(self.dtype, self.shape);
  for (int64_t i = 0; i < n; ++i) {
    // It's necessary to keep the order of the operations (ops/gelu/gelu.cc).
    const double x = in_f32(self, i);
    const double x3 = (x * x) * x;
    const double s = 0x1.9884533d43651p+0 * (x + 0.044715 * x3);
    double e = -std::fabs(s);
    exp_f64(&e, &e, 1);
    const double scaled = e == 0.0 ? -0.0 : x * e;
    const double y = (s < 0.0 ? scaled : x) / (1.0 + e);
    out.set_bits(i, narrow_result(static_cast<float>(y), self.dtype));
  }
  return {out};
}

}  // namespace

template <>
Goldens goldens<detail::GeluOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
