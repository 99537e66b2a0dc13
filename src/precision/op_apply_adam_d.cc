// ApplyAdamD in the kit: schema, fp64 golden, golden32 (TensorFlow's grouping), and the C++ API
// backend.
#include <cmath>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kVar, kM, kV, kBeta1Power, kBeta2Power, kLr, kBeta1, kBeta2, kEpsilon, kGrad };
enum { kUseLocking, kUseNesterov };

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &var = in.tensors[kVar], &m = in.tensors[kM], &v = in.tensors[kV],
                   &grad = in.tensors[kGrad];
  auto scalar = [&](int k) { return in_f64(in.tensors[k], 0); };
  const double b1p = scalar(kBeta1Power), b2p = scalar(kBeta2Power), lr = scalar(kLr),
               b1 = scalar(kBeta1), b2 = scalar(kBeta2), eps = scalar(kEpsilon);
  const bool nesterov = in.attrs[kUseNesterov].b;
  const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
  const int64_t n = var.numel();
  std::vector<double> var_out(n), m_out(n), v_out(n);
  for (int64_t i = 0; i < n; ++i) {
    const double g = in_f64(grad, i);
    m_out[i] = in_f64(m, i) + (1 - b1) * (g - in_f64(m, i));
    v_out[i] = in_f64(v, i) + (1 - b2) * (g * g - in_f64(v, i));
    const double numerator = nesterov ? m_out[i] * b1 + (1 - b1) * g : m_out[i];
    var_out[i] = in_f64(var, i) - lr_t * numerator / (eps + std::sqrt(v_out[i]));
  }
  return {var_out, m_out, v_out};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &var = in.tensors[kVar], &m = in.tensors[kM], &v = in.tensors[kV],
                   &grad = in.tensors[kGrad];
  const DType dtype = var.dtype;
  auto scalar = [&](int k) { return in_f32(in.tensors[k], 0); };
  const float b1p = scalar(kBeta1Power), b2p = scalar(kBeta2Power), lr = scalar(kLr),
              b1 = scalar(kBeta1), b2 = scalar(kBeta2), eps = scalar(kEpsilon);
  const bool nesterov = in.attrs[kUseNesterov].b;
  // It's necessary to keep the order of the operations: this is the normative grouping.
  const float lr_t = (lr * std::sqrt(1.0f - b2p)) / (1.0f - b1p);
  const float one_minus_b1 = 1.0f - b1, one_minus_b2 = 1.0f - b2;
  HostTensor var_out(dtype, var.shape), m_out(dtype, var.shape), v_out(dtype, var.shape);
  for (int64_t i = 0; i < var.numel(); ++i) {
    const float g = in_f32(grad, i), mi = in_f32(m, i), vi = in_f32(v, i);
    const float m_new = mi + (one_minus_b1 * (g - mi));
    const float v_new = vi + (one_minus_b2 * ((g * g) - vi));
    const float numerator = nesterov ? (m_new * b1) + (one_minus_b1 * g) : m_new;
    const float var_new = in_f32(var, i) - ((lr_t * numerator) / (eps + std::sqrt(v_new)));
    var_out.set_bits(i, narrow_result(var_new, dtype));
    m_out.set_bits(i, narrow_result(m_new, dtype));
    v_out.set_bits(i, narrow_result(v_new, dtype));
  }
  return {var_out, m_out, v_out};
}

}  // namespace

template <>
Goldens goldens<detail::ApplyAdamDOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
