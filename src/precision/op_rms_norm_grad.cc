// RmsNormGrad in the kit: the fp64 golden (the formula in long double) and golden32 (the
// documented computation and summation orders, bit for bit).
#include <cmath>

#include "precision/op_schema.h"
#include "precision/ops_common.h"
#include "precision/row_sums.h"

namespace mantissa::precision {
namespace {

enum { kDy, kX, kRstd, kGamma };

void geometry(const OpInputs& in, int64_t& rows, int64_t& n) {
  n = in.tensors[kGamma].numel();
  rows = in.tensors[kRstd].numel();
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &dy = in.tensors[kDy], &x = in.tensors[kX], &rstd = in.tensors[kRstd],
                   &gamma = in.tensors[kGamma];
  int64_t rows = 0, n = 0;
  geometry(in, rows, n);
  std::vector<double> dx(static_cast<std::size_t>(rows * n));
  std::vector<long double> dgamma(static_cast<std::size_t>(n), 0.0L);
  for (int64_t r = 0; r < rows; ++r) {
    const double rs = in_f64(rstd, r);
    long double s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const long double dyg = static_cast<long double>(in_f64(dy, r * n + i)) * in_f64(gamma, i);
      s += dyg * in_f64(x, r * n + i) * rs;
      dgamma[i] += static_cast<long double>(in_f64(x, r * n + i)) * rs * in_f64(dy, r * n + i);
    }
    const long double mean = s / n;
    for (int64_t i = 0; i < n; ++i) {
      const long double dyg = static_cast<long double>(in_f64(dy, r * n + i)) * in_f64(gamma, i);
      dx[r * n + i] = static_cast<double>(
          (dyg - static_cast<long double>(in_f64(x, r * n + i)) * rs * mean) * rs);
    }
  }
  return {dx, std::vector<double>(dgamma.begin(), dgamma.end())};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &dy = in.tensors[kDy], &x = in.tensors[kX], &rstd = in.tensors[kRstd],
                   &gamma = in.tensors[kGamma];
  int64_t rows = 0, n = 0;
  geometry(in, rows, n);
  HostTensor dx(x.dtype, x.shape), dgamma(DType::kFloat32, gamma.shape);
  for (int64_t r = 0; r < rows; ++r) {
    const float rs = in_f32(rstd, r);
    const double s = documented_row_sum(n, [&](int64_t i) {
      const double dyg = static_cast<double>(in_f32(dy, r * n + i)) * in_f32(gamma, i);
      return (dyg * in_f32(x, r * n + i)) * static_cast<double>(rs);
    });
    const double m = s / static_cast<double>(n);
    // It's necessary to keep the order of the operations: the documented fp64 grouping, one
    // rounding to fp32, then to dx's dtype.
    for (int64_t i = 0; i < n; ++i) {
      const double dyg = static_cast<double>(in_f32(dy, r * n + i)) * in_f32(gamma, i);
      const double xr = static_cast<double>(in_f32(x, r * n + i)) * static_cast<double>(rs);
      const double v = (dyg - xr * m) * static_cast<double>(rs);
      dx.set_bits(r * n + i, narrow_result(static_cast<float>(v), x.dtype));
    }
  }
  const std::vector<double> sums = documented_column_sums(rows, n, [&](int64_t r, int64_t j) {
    const double xr = static_cast<double>(in_f32(x, r * n + j)) * in_f32(rstd, r);
    return xr * in_f32(dy, r * n + j);
  });
  for (int64_t j = 0; j < n; ++j) {
    dgamma.set_bits(j, narrow_result(static_cast<float>(sums[j]), DType::kFloat32));
  }
  return {dx, dgamma};
}

}  // namespace

template <>
Goldens goldens<detail::RmsNormGradOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
