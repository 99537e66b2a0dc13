// The GELU family in the kit.
//
// Gelu (and GeluV2 tanh): the fp64 golden, 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)) in long
// double with the C library's expl (the tanh form itself cancels in long double once tanh(u) is
// within 2^-64 of -1, below x = -4.5 or so, where GELU is still far from zero), and golden32 (the
// kernel's documented fp64 steps with the library's fp64 exp, rounded to fp32 once, bit for bit).
//
// GeluV2 none: the golden 0.5 x erfc(-x / sqrt 2) with the C library's erfcl; golden32 the
// kernel's steps with the library's erfc_f64.
//
// GeluBackward / GeluBackwardV2: the golden dy * g(x) in long double, g the tanh form's
// derivative as 0.5 (1 + tanh(u)) + 0.5 x sech^2(u) u' (1 / (1 + expl(-2u)) and 1 / coshl(u)^2)
// or the erf form's Phi(x) + x phi(x) (erfcl, expl), over torch's broadcast of dy and x;
// golden32 the kernels' steps (ops/gelu/gelu_backward.cc) rounded to fp32, then to the promoted
// dtype of dy and x, then to grad_input's.
#include <cmath>
#include <cstdint>
#include <vector>

#include "mantissa/math.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

constexpr long double kPiL = 3.14159265358979323846264338327950288L;

enum { kSelf };

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor& self = in.tensors[kSelf];
  const int64_t n = self.numel();
  std::vector<double> out(static_cast<std::size_t>(n));
  const long double k = std::sqrt(2.0L / kPiL);
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

// The kernel's tanh form in fp64 (ops/gelu/gelu.cc); it's necessary to keep the order of the
// operations.
double gelu_tanh32(double x) {
  const double x3 = (x * x) * x;
  const double s = 0x1.9884533d43651p+0 * (x + 0.044715 * x3);
  double e = -std::fabs(s);
  exp_f64(&e, &e, 1);
  const double scaled = e == 0.0 ? -0.0 : x * e;
  return (s < 0.0 ? scaled : x) / (1.0 + e);
}

// The erf form's Phi(x) as the kernels compute it.
double phi_big32(double x) {
  double c = std::fabs(x * 0x1.6a09e667f3bcdp-1);
  erfc_f64(&c, &c, 1);  // of a non-negative value: the kernels' ErfcNonNegative64
  const double h = 0.5 * c;
  return x < 0.0 ? h : 1.0 - h;
}

double gelu_erf32(double x) {
  const double phi = phi_big32(x);
  return phi == 0.0 ? -0.0 : x * phi;
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor& self = in.tensors[kSelf];
  const int64_t n = self.numel();
  HostTensor out(self.dtype, self.shape);
  for (int64_t i = 0; i < n; ++i) {
    const double y = gelu_tanh32(in_f32(self, i));
    out.set_bits(i, narrow_result(static_cast<float>(y), self.dtype));
  }
  return {out};
}

// ---- GeluV2 ---------------------------------------------------------------------------------

bool tanh_form(const OpInputs& in) {
  return in.attrs[0].i == static_cast<int64_t>(GeluApproximate::kTanh);
}

long double gelu_erf_golden(long double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
}

std::vector<std::vector<double>> golden_v2(const OpInputs& in) {
  if (tanh_form(in)) return golden(in);
  const HostTensor& x = in.tensors[0];
  std::vector<double> out(static_cast<std::size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<double>(gelu_erf_golden(in_f64(x, i)));
  }
  return {out};
}

std::vector<HostTensor> golden32_v2(const OpInputs& in) {
  if (tanh_form(in)) return golden32(in);
  const HostTensor& x = in.tensors[0];
  HostTensor out(x.dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    out.set_bits(i, narrow_result(static_cast<float>(gelu_erf32(in_f32(x, i))), x.dtype));
  }
  return {out};
}

// ---- GeluBackward, GeluBackwardV2 -------------------------------------------------------------

enum { kGradOutput, kX };

std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> shape(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    shape[i] = da == 1 ? db : da;
  }
  return shape;
}

// The index into `in` (shape in_shape) of element i of the broadcast shape.
int64_t source_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& in_shape,
                     int64_t i) {
  int64_t index = 0, stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    const int64_t at = i % shape[d];
    i /= shape[d];
    const std::size_t back = shape.size() - 1 - d;
    if (back < in_shape.size()) {
      const int64_t dim = in_shape[in_shape.size() - 1 - back];
      if (dim != 1) index += at * stride;
      stride *= dim;
    }
  }
  return index;
}

long double gelu_grad_golden(long double x, bool erf) {
  if (std::isinf(x)) return x > 0 ? 1.0L : 0.0L;
  if (erf) {
    const long double phi_big = 0.5L * std::erfc(-x / std::sqrt(2.0L));
    const long double density = std::exp(-0.5L * x * x) / std::sqrt(2.0L * kPiL);
    return phi_big + x * density;
  }
  const long double k = std::sqrt(2.0L / kPiL);
  const long double u = k * (x + 0.044715L * x * x * x);
  const long double du = k * (1.0L + 3.0L * 0.044715L * x * x);
  const long double c = std::cosh(u);
  return 1.0L / (1.0L + std::exp(-2.0L * u)) + 0.5L * x * du / (c * c);
}

// The kernels' g(x) (ops/gelu/gelu_backward.cc); it's necessary to keep the order.
double gelu_grad32(double x, bool erf) {
  if (erf) {
    const double phi_big = phi_big32(x);
    double p = -(0.5 * (x * x));
    exp_f64(&p, &p, 1);
    const double density = p * 0x1.9884533d43651p-2;
    return density == 0.0 ? phi_big : phi_big + x * density;
  }
  const double x3 = (x * x) * x;
  const double k = 0x1.9884533d43651p+0;
  const double s = k * (x + 0.044715 * x3);
  const double ds = k * (1.0 + 0.134145 * (x * x));
  double e = -std::fabs(s);
  exp_f64(&e, &e, 1);
  const double q = 1.0 + e;
  const double sig = (s < 0.0 ? e : 1.0) / q;
  const double r = ((x * ds) * e) / (q * q);
  return e == 0.0 ? sig : sig + r;
}

DType promoted(DType a, DType b) { return a == b ? a : DType::kFloat32; }

std::vector<std::vector<double>> golden_backward(const OpInputs& in, bool erf) {
  const HostTensor& dy = in.tensors[kGradOutput];
  const HostTensor& x = in.tensors[kX];
  const std::vector<int64_t> shape = broadcast_shape(dy.shape, x.shape);
  const HostTensor out_shape(DType::kFloat32, shape);
  std::vector<double> out(static_cast<std::size_t>(out_shape.numel()));
  for (int64_t i = 0; i < out_shape.numel(); ++i) {
    const long double g = gelu_grad_golden(in_f64(x, source_index(shape, x.shape, i)), erf);
    const long double d = in_f64(dy, source_index(shape, dy.shape, i));
    out[static_cast<std::size_t>(i)] = static_cast<double>(d * g);
  }
  return {out};
}

std::vector<HostTensor> golden32_backward(const OpInputs& in, bool erf, DType out_dtype) {
  const HostTensor& dy = in.tensors[kGradOutput];
  const HostTensor& x = in.tensors[kX];
  const std::vector<int64_t> shape = broadcast_shape(dy.shape, x.shape);
  const DType mid = promoted(dy.dtype, x.dtype);
  HostTensor out(out_dtype, shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double g = gelu_grad32(in_f32(x, source_index(shape, x.shape, i)), erf);
    const double d = in_f32(dy, source_index(shape, dy.shape, i));
    const uint32_t mid_bits = narrow_result(static_cast<float>(d * g), mid);
    out.set_bits(
        i, mid == out_dtype ? mid_bits : narrow_result(widen_to_float(mid_bits, mid), out_dtype));
  }
  return {out};
}

}  // namespace

template <>
Goldens goldens<detail::GeluOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

template <>
Goldens goldens<detail::GeluV2Op>() {
  return {golden_v2, golden32_v2, StandardKind::kBitwise};
}

// grad_input's dtype: the promoted one where the case does not choose another (the kit makes
// new outputs with the declaration's infer_output, which gives the promoted dtype).
template <>
Goldens goldens<detail::GeluBackwardOp>() {
  return {[](const OpInputs& in) { return golden_backward(in, false); },
          [](const OpInputs& in) {
            return golden32_backward(in, false,
                                     promoted(in.tensors[kGradOutput].dtype, in.tensors[kX].dtype));
          },
          StandardKind::kBitwise};
}

template <>
Goldens goldens<detail::GeluBackwardV2Op>() {
  return {[](const OpInputs& in) { return golden_backward(in, !tanh_form(in)); },
          [](const OpInputs& in) {
            return golden32_backward(in, !tanh_form(in),
                                     promoted(in.tensors[kGradOutput].dtype, in.tensors[kX].dtype));
          },
          StandardKind::kBitwise};
}

}  // namespace mantissa::precision
