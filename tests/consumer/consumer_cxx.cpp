// A C++ program on the installed C++ API: one ApplyAdamD step in place on fp32, checked against
// the formula written out here in the same grouping, and a rejected call with its status.
#include <cmath>
#include <cstdio>
#include <vector>

#include "mantissa/mantissa.h"

int main() {
  std::vector<float> var{0.5f, -1.0f, 2.0f}, m{0.1f, 0.0f, -0.2f}, v{0.01f, 0.04f, 0.09f};
  const std::vector<float> grad{0.3f, -0.1f, 0.2f};
  float beta1_power = 0.9f, beta2_power = 0.999f, lr = 0.001f, beta1 = 0.9f, beta2 = 0.999f,
        epsilon = 1e-7f;
  const std::vector<float> var0 = var, m0 = m, v0 = v;

  using mantissa::DType;
  using mantissa::TensorView;
  auto vec = [](const std::vector<float>& x) {
    return TensorView(const_cast<float*>(x.data()), DType::kFloat32,
                      {static_cast<int64_t>(x.size())});
  };
  auto one = [](float& x) { return TensorView(&x, DType::kFloat32, {1}); };
  mantissa::ApplyAdamDTensors t;
  t.var = vec(var);
  t.m = vec(m);
  t.v = vec(v);
  t.grad = vec(grad);
  t.beta1_power = one(beta1_power);
  t.beta2_power = one(beta2_power);
  t.lr = one(lr);
  t.beta1 = one(beta1);
  t.beta2 = one(beta2);
  t.epsilon = one(epsilon);
  const mantissa::Status status = mantissa::apply_adam_d(t, {});
  if (!status.ok()) {
    std::printf("apply_adam_d failed: %s\n", status.message().c_str());
    return 1;
  }
  const float lr_t = (lr * std::sqrt(1.0f - beta2_power)) / (1.0f - beta1_power);
  for (size_t i = 0; i < var.size(); ++i) {
    const float m_new = m0[i] + ((1.0f - beta1) * (grad[i] - m0[i]));
    const float v_new = v0[i] + ((1.0f - beta2) * ((grad[i] * grad[i]) - v0[i]));
    const float var_new = var0[i] - ((lr_t * m_new) / (epsilon + std::sqrt(v_new)));
    if (m[i] != m_new || v[i] != v_new || var[i] != var_new) {
      std::printf("element %zu differs\n", i);
      return 1;
    }
  }
  // A shape mismatch is reported, not thrown.
  t.grad = TensorView(const_cast<float*>(grad.data()), DType::kFloat32, {2});
  const mantissa::Status bad = mantissa::apply_adam_d(t, {});
  if (bad.ok() || bad.raw_code() != 161002) return 1;
  std::printf("consumer_cxx: %s, var[0] %.9g, rejected: %s\n", mantissa::version(), var[0],
              bad.message().c_str());
  return 0;
}
