// AddRmsNorm in the kit: the fp64 golden (the contract in long double: the sum x1 + x2 rounded
// once to x1's dtype, as upstream states, then the norm of that x without any intermediate
// rounding) and golden32 (the documented fp32 computation and summation order, bit for bit).
// Outputs in the kit's order: y, rstd, x.
#include <cmath>
#include <vector>

#include "precision/op_schema.h"
#include "precision/ops_common.h"
#include "precision/row_sums.h"

namespace mantissa::precision {
namespace {

enum { kX1, kX2, kGamma };
enum { kEpsilon };

// Rows and row length: a row spans gamma's elements, the trailing dims of x1 (or, for gamma
// [1, D] that is not x1's trailing dims, x1's last dim D). rstd's shape: x1's with those dims
// set to 1.
struct Geometry {
  int64_t rows = 1, n = 0;
  std::vector<int64_t> rstd_shape;
};

Geometry geometry(const OpInputs& in) {
  const HostTensor &x1 = in.tensors[kX1], &gamma = in.tensors[kGamma];
  const std::size_t xr = x1.shape.size(), gr = gamma.shape.size();
  bool trailing = gr >= 1 && gr <= xr;
  for (std::size_t i = 0; trailing && i < gr; ++i) {
    trailing = gamma.shape[i] == x1.shape[xr - gr + i];
  }
  const std::size_t dims = trailing ? gr : 1;
  Geometry g;
  g.n = gamma.numel();
  g.rstd_shape = x1.shape;
  for (std::size_t i = 0; i < xr; ++i) {
    if (i + dims < xr) {
      g.rows *= x1.shape[i];
    } else {
      g.rstd_shape[i] = 1;
    }
  }
  return g;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x1 = in.tensors[kX1], &x2 = in.tensors[kX2], &gamma = in.tensors[kGamma];
  const double eps = in.attrs[kEpsilon].f;
  const Geometry g = geometry(in);
  const int64_t n = g.n;
  std::vector<double> y(static_cast<std::size_t>(g.rows * n)),
      rstd(static_cast<std::size_t>(g.rows));
  std::vector<double> x(y.size());
  // The sum in double is exact to within half an fp64 ulp, and 53 >= 2 * 24 + 2 bits: rounding
  // it once more to x1's dtype gives the exactly rounded sum.
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    x[i] = round_to_dtype(in_f64(x1, k) + in_f64(x2, k), x1.dtype);
  }
  for (int64_t r = 0; r < g.rows; ++r) {
    long double ss = 0;
    for (int64_t i = 0; i < n; ++i) {
      const long double v = x[static_cast<std::size_t>(r * n + i)];
      ss += v * v;
    }
    const long double inv = 1.0L / std::sqrt(ss / n + eps);
    rstd[static_cast<std::size_t>(r)] = static_cast<double>(inv);
    for (int64_t i = 0; i < n; ++i) {
      const auto at = static_cast<std::size_t>(r * n + i);
      y[at] = static_cast<double>(x[at] * inv * in_f64(gamma, i));
    }
  }
  return {y, rstd, x};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x1 = in.tensors[kX1], &x2 = in.tensors[kX2], &gamma = in.tensors[kGamma];
  const double eps = in.attrs[kEpsilon].f;
  const Geometry g = geometry(in);
  const int64_t n = g.n;
  HostTensor y(x1.dtype, x1.shape), x(x1.dtype, x1.shape), rstd(DType::kFloat32, g.rstd_shape);
  // x: one fp32 addition, rounded once to x1's dtype (a NaN canonical).
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.set_bits(i, narrow_result(in_f32(x1, i) + in_f32(x2, i), x1.dtype));
  }
  // Then RmsNorm's documented order on that x.
  for (int64_t r = 0; r < g.rows; ++r) {
    const double ss = documented_row_sum(n, [&](int64_t i) {
      const double v = in_f32(x, r * n + i);
      return v * v;
    });
    // It's necessary to keep the order of the operations: fp64 steps, one rounding to fp32.
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    rstd.set_bits(r, narrow_result(inv, DType::kFloat32));
    for (int64_t i = 0; i < n; ++i) {
      const float v = (in_f32(x, r * n + i) * inv) * in_f32(gamma, i);
      y.set_bits(r * n + i, narrow_result(v, x1.dtype));
    }
  }
  return {y, rstd, x};
}

}  // namespace

template <>
Goldens goldens<detail::AddRmsNormOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
