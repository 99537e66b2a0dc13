// ApplyAdamWV2 in the kit: fp64 golden (PyTorch's AdamW formula in double) and golden32 (the
// spec's fp32 grouping), written from the spec, sharing no code with the kernel.
#include <cmath>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kVar, kM, kV, kMaxGradNorm, kGrad, kStep };
enum { kLr, kBeta1, kBeta2, kWeightDecay, kEps, kAmsgrad, kMaximize };

// The attributes as the operator receives them: fp32 values.
struct Hyper {
  float lr, beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize;
  double t;  // the step computed: step + 1
};

Hyper hyper(const OpInputs& in) {
  auto f = [&](int k) { return static_cast<float>(in.attrs[k].f); };
  return {f(kLr),
          f(kBeta1),
          f(kBeta2),
          f(kWeightDecay),
          f(kEps),
          in.attrs[kAmsgrad].b,
          in.attrs[kMaximize].b,
          in.tensors[kStep].value(0) + 1.0};
}

// max with NaN from either side, as torch.maximum.
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::fmax(a, b);
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &var = in.tensors[kVar], &m = in.tensors[kM], &v = in.tensors[kV],
                   &mx = in.tensors[kMaxGradNorm], &grad = in.tensors[kGrad];
  const Hyper h = hyper(in);
  const double lr = h.lr, b1 = h.beta1, b2 = h.beta2, wd = h.weight_decay, eps = h.eps;
  const bool amsgrad = h.amsgrad && !absent(mx);
  const double bias1 = 1 - std::pow(b1, h.t), bias2 = 1 - std::pow(b2, h.t);
  const int64_t n = var.numel();
  std::vector<double> var_out(n), m_out(n), v_out(n), mx_out(absent(mx) ? 0 : n);
  for (int64_t i = 0; i < n; ++i) {
    const double g = h.maximize ? -in_f64(grad, i) : in_f64(grad, i);
    m_out[i] = b1 * in_f64(m, i) + (1 - b1) * g;
    v_out[i] = b2 * in_f64(v, i) + (1 - b2) * g * g;
    const double vmax = amsgrad ? nan_max(in_f64(mx, i), v_out[i]) : v_out[i];
    if (!absent(mx)) mx_out[i] = amsgrad ? vmax : in_f64(mx, i);
    const double denom = std::sqrt(vmax) / std::sqrt(bias2) + eps;
    var_out[i] = in_f64(var, i) * (1 - lr * wd) - (lr / bias1) * (m_out[i] / denom);
  }
  return {var_out, m_out, v_out, mx_out};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &var = in.tensors[kVar], &m = in.tensors[kM], &v = in.tensors[kV],
                   &mx = in.tensors[kMaxGradNorm], &grad = in.tensors[kGrad];
  const DType dtype = var.dtype;
  const Hyper h = hyper(in);
  const bool amsgrad = h.amsgrad && !absent(mx);
  // The per-call constants: in double from the fp32 attributes, each rounded once to fp32.
  const double lr = h.lr, b1 = h.beta1, b2 = h.beta2, wd = h.weight_decay;
  const auto step_size = static_cast<float>(lr / (1 - std::pow(b1, h.t)));
  const auto inv_bc2_sqrt = static_cast<float>(1 / std::sqrt(1 - std::pow(b2, h.t)));
  const auto decay = static_cast<float>(1 - lr * wd);
  const auto one_m_b1 = static_cast<float>(1 - b1), one_m_b2 = static_cast<float>(1 - b2);
  HostTensor var_out(dtype, var.shape), m_out(dtype, var.shape), v_out(dtype, var.shape);
  HostTensor mx_out = absent(mx) ? absent_tensor() : mx;
  for (int64_t i = 0; i < var.numel(); ++i) {
    // It's necessary to keep the order of the operations: this is the normative grouping.
    const float g = h.maximize ? -in_f32(grad, i) : in_f32(grad, i);
    const float mi = in_f32(m, i), vi = in_f32(v, i);
    const float var1 = in_f32(var, i) * decay;
    const float m_new = mi + ((g - mi) * one_m_b1);
    const float v_new = (vi * h.beta2) + ((g * g) * one_m_b2);
    float vmax = v_new;
    if (amsgrad) {
      const float old = in_f32(mx, i);
      vmax = (v_new > old || std::isnan(v_new)) ? v_new : old;
    }
    const float denom = (std::sqrt(vmax) * inv_bc2_sqrt) + h.eps;
    const float var_new = var1 - ((m_new / denom) * step_size);
    var_out.set_bits(i, narrow_result(var_new, dtype));
    m_out.set_bits(i, narrow_result(m_new, dtype));
    v_out.set_bits(i, narrow_result(v_new, dtype));
    if (amsgrad) mx_out.set_bits(i, narrow_result(vmax, dtype));
  }
  return {var_out, m_out, v_out, mx_out};
}

}  // namespace

template <>
Goldens goldens<detail::ApplyAdamWV2Op>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
