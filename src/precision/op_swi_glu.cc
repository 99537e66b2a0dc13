// SwiGlu and SwiGluGrad in the kit: the fp64 goldens, in long double with the C library's expl
// (silu(a) = a / (1 + exp(-a)); silu'(a) as one fraction of exponentials: shares nothing with the
// kernels), and golden32, the kernels' documented fp64 steps (ops/swi_glu/swi_glu.cc) with the
// documented fp64 exp (fp64_exp.h), rounded to fp32 once, then to the dtype, bit for bit.
#include <cmath>
#include <cstdint>
#include <vector>

#include "precision/fp64_exp.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kDim };

// x split along dim: rows, and half = elements of A (and of B) per row. False where dim is out of
// range or x's size along it is odd (the call reports it; the goldens then compute nothing).
bool split(const HostTensor& x, int64_t dim, int64_t& rows, int64_t& half) {
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0 || dim < -rank || dim >= rank) return false;
  const int64_t d = dim < 0 ? dim + rank : dim;
  if (x.shape[d] % 2 != 0) return false;
  rows = 1;
  half = x.shape[d] / 2;
  for (int64_t k = 0; k < d; ++k) rows *= x.shape[k];
  for (int64_t k = d + 1; k < rank; ++k) half *= x.shape[k];
  return true;
}

// ---- The fp64 goldens (long double) -----------------------------------------------------------

long double silu_ld(long double a) {
  if (std::isinf(a)) return a > 0 ? a : -0.0L;  // the limits
  return a / (1.0L + std::exp(-a));             // exp(-a) = inf for a < -11356: -0, the limit
}

// silu'(a) = (1 + E + a E) / (1 + E)^2 with E = exp(-a); for a < 0, with F = exp(a) = 1 / E,
// F (1 + F + a) / (1 + F)^2 (no overflow).
long double dsilu_ld(long double a) {
  if (std::isinf(a)) return a > 0 ? 1.0L : -0.0L;  // the limits
  if (a >= 0) {
    const long double e = std::exp(-a);
    return (1.0L + e + a * e) / ((1.0L + e) * (1.0L + e));
  }
  const long double f = std::exp(a);
  return f * (1.0L + f + a) / ((1.0L + f) * (1.0L + f));
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor& x = in.tensors[0];
  int64_t rows = 0, half = 0;
  // Where the split is invalid: zeros of golden32's shape (x's).
  if (!split(x, in.attrs[kDim].i, rows, half)) {
    return {std::vector<double>(static_cast<std::size_t>(x.numel()))};
  }
  std::vector<double> y(static_cast<std::size_t>(rows * half));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < half; ++k) {
      const long double a = in_f64(x, r * 2 * half + k), b = in_f64(x, r * 2 * half + half + k);
      y[static_cast<std::size_t>(r * half + k)] = static_cast<double>(silu_ld(a) * b);
    }
  }
  return {y};
}

std::vector<std::vector<double>> golden_grad(const OpInputs& in) {
  const HostTensor &g = in.tensors[0], &x = in.tensors[1];
  std::vector<double> dx(static_cast<std::size_t>(x.numel()));
  int64_t rows = 0, half = 0;
  if (!split(x, in.attrs[kDim].i, rows, half)) return {dx};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < half; ++k) {
      const int64_t at = r * 2 * half + k;
      const long double gv = in_f64(g, r * half + k), a = in_f64(x, at), b = in_f64(x, at + half);
      dx[static_cast<std::size_t>(at)] = static_cast<double>(gv * b * dsilu_ld(a));
      dx[static_cast<std::size_t>(at + half)] = static_cast<double>(gv * silu_ld(a));
    }
  }
  return {dx};
}

// ---- golden32: the kernels' steps ----------------------------------------------------------

struct Steps {
  double e, s, silu;
};

// It's necessary to keep the order of the operations (ops/swi_glu/swi_glu.cc).
Steps sigmoid_silu(double a) {
  Steps t;
  t.e = exp64_documented(-std::fabs(a));
  t.s = (a < 0.0 ? t.e : 1.0) / (1.0 + t.e);
  t.silu = t.s == 0.0 ? -0.0 : a * t.s;
  return t;
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor& x = in.tensors[0];
  std::vector<int64_t> shape = x.shape;
  int64_t rows = 0, half = 0;
  const bool ok = split(x, in.attrs[kDim].i, rows, half);
  if (ok) {
    const auto rank = static_cast<int64_t>(shape.size());
    const int64_t dim = in.attrs[kDim].i;
    shape[static_cast<std::size_t>(dim < 0 ? dim + rank : dim)] /= 2;
  }
  HostTensor out(x.dtype, shape);
  if (!ok) return {out};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < half; ++k) {
      const double a = in_f32(x, r * 2 * half + k), b = in_f32(x, r * 2 * half + half + k);
      const double y = sigmoid_silu(a).silu * b;
      out.set_bits(r * half + k, narrow_result(static_cast<float>(y), x.dtype));
    }
  }
  return {out};
}

std::vector<HostTensor> golden32_grad(const OpInputs& in) {
  const HostTensor &g = in.tensors[0], &x = in.tensors[1];
  HostTensor out(x.dtype, x.shape);
  int64_t rows = 0, half = 0;
  if (!split(x, in.attrs[kDim].i, rows, half)) return {out};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < half; ++k) {
      const int64_t at = r * 2 * half + k;
      const double gv = in_f32(g, r * half + k), a = in_f32(x, at), b = in_f32(x, at + half);
      const Steps t = sigmoid_silu(a);
      const double kk = 1.0 + a * (1.0 - t.s);
      const double ds = t.e == 0.0 ? (a > 0.0 ? 1.0 : -0.0) : t.s * kk;
      const double da = (gv * b) * ds;
      const double db = gv * t.silu;
      out.set_bits(at, narrow_result(static_cast<float>(da), x.dtype));
      out.set_bits(at + half, narrow_result(static_cast<float>(db), x.dtype));
    }
  }
  return {out};
}

}  // namespace

template <>
Goldens goldens<detail::SwiGluOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

template <>
Goldens goldens<detail::SwiGluGradOp>() {
  return {golden_grad, golden32_grad, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
