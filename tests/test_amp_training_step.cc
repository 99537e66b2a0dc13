// The loss scaler, gradient clipping and a fused optimizer together, as a training step uses
// them: the fused path (a read-only check, the norm of the unscaled gradients, one optimizer
// pass that divides by the scale and multiplies by the clip coefficient) gives the bits of the
// separate path (unscale in place, clip in place, plain step) wherever the two groupings agree,
// skips the step on overflow, and leaves the gradients untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mantissa/amp/loss_scaler.h"
#include "mantissa/optim.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::TensorView;

struct Model {
  std::vector<std::vector<float>> var, m, v, g;
  std::vector<TensorView> grads;
  std::vector<mantissa::AdamWParamTensors> params;
  explicit Model(uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int64_t n : {1000, 1, 37, 5000}) {
      var.emplace_back(static_cast<std::size_t>(n));
      m.emplace_back(static_cast<std::size_t>(n), 0.0f);
      v.emplace_back(static_cast<std::size_t>(n), 0.0f);
      g.emplace_back(static_cast<std::size_t>(n));
      for (auto& x : var.back()) x = nd(rng);
      for (auto& x : g.back()) x = nd(rng) * 1024.0f;  // scaled by the loss scale 1024
    }
    for (std::size_t i = 0; i < var.size(); ++i) {
      const int64_t n = static_cast<int64_t>(var[i].size());
      grads.emplace_back(g[i].data(), DType::kFloat32, std::vector<int64_t>{n});
      params.push_back({TensorView(var[i].data(), DType::kFloat32, {n}),
                        TensorView(m[i].data(), DType::kFloat32, {n}),
                        TensorView(v[i].data(), DType::kFloat32, {n}), std::nullopt, grads.back(),
                        std::nullopt, std::nullopt});
    }
  }
  Model(const Model&) = delete;
};

TEST(AmpTrainingStep, FusedScalerClipAndStepEqualTheSeparatePasses) {
  mantissa::amp::LossScalerOptions so;
  so.init_scale = 1024.0f;  // a power of two: dividing by it and multiplying by 1/1024 agree
  const mantissa::MultiAdamWParams hp{.hyper = {.lr = 1e-2f}, .step = 3};
  const double max_norm = 5.0;

  // Separate: unscale in place, clip in place, plain fused step.
  Model a(7);
  mantissa::amp::DynamicLossScaler sa;
  ASSERT_TRUE(mantissa::amp::DynamicLossScaler::create(so, &sa).ok());
  double norm_a = 0.0;
  ASSERT_TRUE(sa.step(a.grads, [&](const mantissa::amp::StepScaling&) {
                  EXPECT_TRUE(mantissa::clip_grad_norm(a.grads, max_norm, &norm_a).ok());
                  return mantissa::multi_tensor_adam_w(a.params, hp);
                }).ok());
  ASSERT_TRUE(sa.update().ok());

  // Fused: the read-only check, the norm of the unscaled grads, one pass with scale and clip.
  Model b(7);
  const std::vector<std::vector<float>> grads_before = b.g;
  mantissa::amp::DynamicLossScaler sb;
  ASSERT_TRUE(mantissa::amp::DynamicLossScaler::create(so, &sb).ok());
  double norm_b = 0.0;
  ASSERT_TRUE(sb.step_fused(b.grads, [&](const mantissa::amp::StepScaling& s) {
                  mantissa::GradNormOptions no;
                  no.grad_scale = s.grad_scale;
                  EXPECT_TRUE(mantissa::grad_norm(b.grads, &norm_b, no).ok());
                  mantissa::FusedStepOptions fo;
                  fo.grad_scale = s.grad_scale;
                  fo.found_inf = s.found_inf;
                  fo.clip_coef = mantissa::clip_coefficient(norm_b, max_norm);
                  EXPECT_TRUE(fo.clip_coef.has_value()) << "the test should clip";
                  return mantissa::multi_tensor_adam_w(b.params, hp, fo);
                }).ok());
  ASSERT_TRUE(sb.update().ok());

  EXPECT_EQ(b.g, grads_before) << "the fused path must not write the gradients";
  // The norms agree to rounding (the fused one is computed from the scaled values).
  EXPECT_NEAR(norm_a, norm_b, 1e-12 * norm_a);
  // The clip coefficient is the same fp32 value, and the grad grouping (g / 1024) * c equals the
  // separate path's fp32 round trips (g * 2^-10 exact, then * c rounded once): same bits.
  ASSERT_EQ(mantissa::clip_coefficient(norm_a, max_norm),
            mantissa::clip_coefficient(norm_b, max_norm));
  EXPECT_EQ(a.var, b.var);
  EXPECT_EQ(a.m, b.m);
  EXPECT_EQ(a.v, b.v);
  EXPECT_EQ(sa.scale(), sb.scale());
}

TEST(AmpTrainingStep, OverflowSkipsTheFusedStepAndBacksOff) {
  Model b(8);
  b.g[2][5] = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> var_before = b.var;
  mantissa::amp::DynamicLossScaler s;
  bool called = false;
  ASSERT_TRUE(s.step_fused(b.grads, [&](const mantissa::amp::StepScaling&) {
                 called = true;
                 return mantissa::Status{};
               }).ok());
  ASSERT_TRUE(s.update().ok());
  EXPECT_FALSE(called);
  EXPECT_EQ(b.var, var_before);
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.stats().skipped_steps, 1);
}

}  // namespace

}  // namespace mantissa::testing
