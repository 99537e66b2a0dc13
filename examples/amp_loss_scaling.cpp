// Dynamic loss scaling on a toy fp16 model, step by step: the loss scaler finds a scale the
// fp16 gradients fit under, skips the steps that overflow, grows the scale again, and the
// anomaly detector explains the steps that go wrong (an overflow, then a NaN from a bad batch).
//
// Model: fp32 master weights w (4096), fp16 gradients of the loss 0.5 * ||w - target||^2
// computed on the scaled loss; AdamW (ApplyAdamWV2, master-weight form) updates w.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "mantissa/mantissa.h"

int main() {
  using namespace mantissa;
  constexpr int64_t n = 4096;
  std::vector<float> w(n, 0.0f), m(n, 0.0f), v(n, 0.0f), target(n);
  std::vector<uint16_t> grad(n);  // fp16
  for (int64_t i = 0; i < n; ++i) target[i] = 2.0f * std::sin(0.01f * static_cast<float>(i));
  int64_t adam_steps = 0;

  amp::DynamicLossScaler scaler;
  amp::LossScalerOptions options;
  options.init_scale = 65536.0f;
  options.growth_interval = 4;  // short, to show growth in a short run
  if (Status st = amp::DynamicLossScaler::create(options, &scaler); !st.ok()) {
    std::printf("%s\n", st.message().c_str());
    return 1;
  }
  amp::AnomalyDetector detector;
  const std::vector<TensorView> grads{TensorView(grad.data(), DType::kFloat16, {n})};
  const std::vector<std::string> names{"w.grad"};

  std::printf("step  scale   loss      overflow  optimizer  next scale\n");
  for (int step = 0; step < 14; ++step) {
    // Forward and backward on the scaled loss: fp32 values rounded to fp16 once.
    double loss = 0.0;
    const float scale = scaler.scale();
    const float spike = step == 9 ? 100.0f : 1.0f;  // an unusually steep batch
    for (int64_t i = 0; i < n; ++i) {
      const float r = (w[i] - target[i]) * spike;
      loss += 0.5 * static_cast<double>(r) * r;
      grad[i] = float_to_fp16_bits(r * scale);
    }
    if (step == 6) {  // a bad batch: one NaN in the gradient
      grad[123] = float_to_fp16_bits(std::numeric_limits<float>::quiet_NaN());
      loss = std::numeric_limits<double>::quiet_NaN();
    }
    amp::AnomalyReport report;
    if (Status st = scaler.unscale_and_inspect(grads, detector, names, &report, loss); !st.ok()) {
      std::printf("%s\n", st.message().c_str());
      return 1;
    }
    bool ran = false;
    const Status st = scaler.step(grads, [&](const amp::StepScaling&) {
      ran = true;
      int64_t step_count = adam_steps++;
      ApplyAdamWV2Tensors t;
      t.var = TensorView(w.data(), DType::kFloat32, {n});
      t.m = TensorView(m.data(), DType::kFloat32, {n});
      t.v = TensorView(v.data(), DType::kFloat32, {n});
      t.grad = grads[0];
      t.step = TensorView(&step_count, DType::kInt64, {1});
      ApplyAdamWV2Params p;
      p.lr = 0.05f;
      p.weight_decay = 0.0f;
      return apply_adam_w_v2(t, p);
    });
    if (!st.ok() || !scaler.update().ok()) {
      std::printf("%s\n", st.message().c_str());
      return 1;
    }
    std::printf("%4d  %-7g %-9.4g %-9s %-10s %g\n", step, scale, loss,
                report.found_inf ? "yes" : "no", ran ? "ran" : "skipped", scaler.scale());
    if (step == 0 || step == 6) std::printf("\n%s\n", report.text().c_str());
  }
  const amp::LossScalerStats& s = scaler.stats();
  std::printf("steps %lld, skipped %lld, best scale %g, scale changes %zu\n",
              static_cast<long long>(s.steps), static_cast<long long>(s.skipped_steps),
              s.best_scale, s.history.size());
  std::printf("state:\n%s\n", scaler.state().c_str());
  return 0;
}
