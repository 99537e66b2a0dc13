// RmsNorm in the kit: the fp64 golden (the formula in double) and golden32 (the documented fp32
// computation and summation order, bit for bit).
#include <cmath>
#include <limits>

#include "precision/op_schema.h"
#include "precision/ops_common.h"
#include "precision/row_sums.h"

namespace mantissa::precision {
namespace {

enum { kX, kGamma };
enum { kEpsilon };

// Rows and row length: a row spans gamma's elements.
void geometry(const OpInputs& in, int64_t& rows, int64_t& n) {
  n = in.tensors[kGamma].numel();
  rows = 1;
  const HostTensor& x = in.tensors[kX];
  for (std::size_t i = 0; i + in.tensors[kGamma].shape.size() < x.shape.size(); ++i) {
    rows *= x.shape[i];
  }
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &gamma = in.tensors[kGamma];
  const double eps = in.attrs[kEpsilon].f;
  int64_t rows = 0, n = 0;
  geometry(in, rows, n);
  std::vector<double> y(static_cast<std::size_t>(rows * n)), rstd(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    long double ss = 0;
    for (int64_t i = 0; i < n; ++i) {
      const long double v = in_f64(x, r * n + i);
      ss += v * v;
    }
    const double inv = static_cast<double>(1.0L / std::sqrt(ss / n + eps));
    rstd[r] = inv;
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = in_f64(x, r * n + i) * inv * in_f64(gamma, i);
  }
  return {y, rstd};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &gamma = in.tensors[kGamma];
  const double eps = in.attrs[kEpsilon].f;
  int64_t rows = 0, n = 0;
  geometry(in, rows, n);
  HostTensor y(x.dtype, x.shape);
  std::vector<int64_t> rstd_shape = x.shape;
  for (std::size_t i = x.shape.size() - gamma.shape.size(); i < x.shape.size(); ++i) {
    rstd_shape[i] = 1;
  }
  HostTensor rstd(DType::kFloat32, rstd_shape);
  for (int64_t r = 0; r < rows; ++r) {
    const double ss = documented_row_sum(n, [&](int64_t i) {
      const double v = in_f32(x, r * n + i);
      return v * v;
    });
    // It's necessary to keep the order of the operations: fp64 steps, one rounding to fp32.
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    rstd.set_bits(r, narrow_result(inv, DType::kFloat32));
    for (int64_t i = 0; i < n; ++i) {
      const float v = (in_f32(x, r * n + i) * inv) * in_f32(gamma, i);
      y.set_bits(r * n + i, narrow_result(v, x.dtype));
    }
  }
  return {y, rstd};
}

}  // namespace

template <>
Goldens goldens<detail::RmsNormOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
