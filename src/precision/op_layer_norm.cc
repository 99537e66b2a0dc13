// LayerNorm and LayerNormGrad in the kit: the fp64 goldens (the formulas in long double, mean
// and variance from the exact values) and golden32 (the documented computation and summation
// orders, bit for bit).
#include <cmath>

#include "precision/op_schema.h"
#include "precision/ops_common.h"
#include "precision/row_sums.h"

namespace mantissa::precision {
namespace {

// Rows and row length: a row spans normalized_shape's elements.
void geometry(const HostTensor& x, const AttrValue& normalized_shape, int64_t& rows, int64_t& n) {
  n = 1;
  for (int64_t d : normalized_shape.list) n *= d;
  rows = 1;
  for (std::size_t i = 0; i + normalized_shape.list.size() < x.shape.size(); ++i) {
    rows *= x.shape[i];
  }
}

std::vector<int64_t> stats_shape(const HostTensor& x, std::size_t dims) {
  std::vector<int64_t> s = x.shape;
  for (std::size_t i = s.size() - std::min(dims, s.size()); i < s.size(); ++i) s[i] = 1;
  return s;
}

namespace fwd {

enum { kX, kWeight, kBias };
enum { kShape, kEps };

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &w = in.tensors[kWeight], &b = in.tensors[kBias];
  const long double eps = in.attrs[kEps].f;
  int64_t rows = 0, n = 0;
  geometry(x, in.attrs[kShape], rows, n);
  std::vector<double> out(static_cast<std::size_t>(rows * n)), mean(rows), rstd(rows);
  for (int64_t r = 0; r < rows; ++r) {
    long double s = 0;
    for (int64_t i = 0; i < n; ++i) s += in_f64(x, r * n + i);
    const long double m = s / n;
    long double q = 0;
    for (int64_t i = 0; i < n; ++i) {
      const long double c = in_f64(x, r * n + i) - m;
      q += c * c;
    }
    const long double inv = 1.0L / std::sqrt(q / n + eps);
    mean[r] = static_cast<double>(m);
    rstd[r] = static_cast<double>(inv);
    for (int64_t i = 0; i < n; ++i) {
      long double v = (in_f64(x, r * n + i) - m) * inv;
      if (!absent(w)) v *= in_f64(w, i);
      if (!absent(b)) v += in_f64(b, i);
      out[r * n + i] = static_cast<double>(v);
    }
  }
  return {out, mean, rstd};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &w = in.tensors[kWeight], &b = in.tensors[kBias];
  const double eps = in.attrs[kEps].f;
  int64_t rows = 0, n = 0;
  geometry(x, in.attrs[kShape], rows, n);
  const std::vector<int64_t> ss = stats_shape(x, in.attrs[kShape].list.size());
  HostTensor out(x.dtype, x.shape), mean(DType::kFloat32, ss), rstd(DType::kFloat32, ss);
  for (int64_t r = 0; r < rows; ++r) {
    // It's necessary to keep the order of the operations: the documented fp64 steps, each
    // output rounded to fp32, then to its dtype.
    const double s = documented_row_sum(n, [&](int64_t i) { return double{in_f32(x, r * n + i)}; });
    const double m = s / static_cast<double>(n);
    const double q = documented_row_sum(n, [&](int64_t i) {
      const double c = static_cast<double>(in_f32(x, r * n + i)) - m;
      return c * c;
    });
    const double inv = 1.0 / std::sqrt(q / static_cast<double>(n) + eps);
    mean.set_bits(r, narrow_result(static_cast<float>(m), mean.dtype));
    rstd.set_bits(r, narrow_result(static_cast<float>(inv), rstd.dtype));
    for (int64_t i = 0; i < n; ++i) {
      double v = (static_cast<double>(in_f32(x, r * n + i)) - m) * inv;
      if (!absent(w)) v = v * static_cast<double>(in_f32(w, i));
      v = v + (absent(b) ? 0.0 : static_cast<double>(in_f32(b, i)));
      out.set_bits(r * n + i, narrow_result(static_cast<float>(v), x.dtype));
    }
  }
  return {out, mean, rstd};
}

}  // namespace fwd

namespace bwd {

enum { kDy, kX, kMean, kRstd, kWeight, kBias };
enum { kShape, kMask };

bool wanted(const OpInputs& in, std::size_t k) {
  const std::vector<int64_t>& mask = in.attrs[kMask].list;
  return k >= mask.size() || mask[k] != 0;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &dy = in.tensors[kDy], &x = in.tensors[kX], &mean = in.tensors[kMean],
                   &rstd = in.tensors[kRstd], &w = in.tensors[kWeight];
  int64_t rows = 0, n = 0;
  geometry(x, in.attrs[kShape], rows, n);
  std::vector<double> dx(static_cast<std::size_t>(rows * n));
  std::vector<long double> dw(static_cast<std::size_t>(n), 0.0L), db(dw);
  for (int64_t r = 0; r < rows; ++r) {
    const long double m = in_f64(mean, r), rs = in_f64(rstd, r);
    auto g = [&](int64_t i) {
      return static_cast<long double>(in_f64(dy, r * n + i)) * (absent(w) ? 1.0 : in_f64(w, i));
    };
    auto xhat = [&](int64_t i) { return (in_f64(x, r * n + i) - m) * rs; };
    long double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      s1 += g(i);
      s2 += g(i) * xhat(i);
      dw[i] += in_f64(dy, r * n + i) * xhat(i);
      db[i] += in_f64(dy, r * n + i);
    }
    for (int64_t i = 0; i < n; ++i) {
      dx[r * n + i] = static_cast<double>((g(i) - (s1 / n + xhat(i) * (s2 / n))) * rs);
    }
  }
  std::vector<double> dwd(dw.begin(), dw.end()), dbd(db.begin(), db.end());
  if (!wanted(in, 0)) std::fill(dx.begin(), dx.end(), 0.0);
  if (!wanted(in, 1)) std::fill(dwd.begin(), dwd.end(), 0.0);
  if (!wanted(in, 2)) std::fill(dbd.begin(), dbd.end(), 0.0);
  return {dx, dwd, dbd};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &dy = in.tensors[kDy], &x = in.tensors[kX], &mean = in.tensors[kMean],
                   &rstd = in.tensors[kRstd], &w = in.tensors[kWeight];
  int64_t rows = 0, n = 0;
  geometry(x, in.attrs[kShape], rows, n);
  const DType param = absent(w) ? dy.dtype : w.dtype;
  const std::vector<int64_t> shape = in.attrs[kShape].list;
  HostTensor dx(x.dtype, x.shape), dw(param, shape), db(param, shape);
  auto stats = [&](int64_t r) {
    return std::pair{static_cast<double>(in_f32(mean, r)), static_cast<double>(in_f32(rstd, r))};
  };
  auto xhat = [&](int64_t r, int64_t i, std::pair<double, double> st) {
    return (static_cast<double>(in_f32(x, r * n + i)) - st.first) * st.second;
  };
  for (int64_t r = 0; wanted(in, 0) && r < rows; ++r) {
    const auto st = stats(r);
    auto g = [&](int64_t i) {
      const double v = in_f32(dy, r * n + i);
      return absent(w) ? v : v * static_cast<double>(in_f32(w, i));
    };
    const double s1 = documented_row_sum(n, g);
    const double s2 = documented_row_sum(n, [&](int64_t i) { return g(i) * xhat(r, i, st); });
    const double m1 = s1 / static_cast<double>(n), m2 = s2 / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = (g(i) - (m1 + xhat(r, i, st) * m2)) * st.second;
      dx.set_bits(r * n + i, narrow_result(static_cast<float>(v), x.dtype));
    }
  }
  if (wanted(in, 1)) {
    const std::vector<double> sums = documented_column_sums(rows, n, [&](int64_t r, int64_t j) {
      return static_cast<double>(in_f32(dy, r * n + j)) * xhat(r, j, stats(r));
    });
    for (int64_t j = 0; j < n; ++j) {
      dw.set_bits(j, narrow_result(static_cast<float>(sums[j]), param));
    }
  }
  if (wanted(in, 2)) {
    const std::vector<double> sums = documented_column_sums(
        rows, n, [&](int64_t r, int64_t j) { return double{in_f32(dy, r * n + j)}; });
    for (int64_t j = 0; j < n; ++j) {
      db.set_bits(j, narrow_result(static_cast<float>(sums[j]), param));
    }
  }
  return {dx, dw, db};
}

}  // namespace bwd

}  // namespace

template <>
Goldens goldens<detail::LayerNormOp>() {
  return {fwd::golden, fwd::golden32, StandardKind::kBitwise};
}

template <>
Goldens goldens<detail::LayerNormGradOp>() {
  return {bwd::golden, bwd::golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
