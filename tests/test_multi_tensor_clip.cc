// The list gradient norm and clipping: the norm against an fp64 (long double) reference for the
// 2, 1 and inf norms over mixed dtypes, the same bits on every target and thread count, the
// grad_scale rule, torch's coefficient rule, the clipping pass's bits, non-finite reporting, and
// the coefficient inside a fused step.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "multi_tensor_support.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

struct Grads {
  std::vector<testing::Buf> bufs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<TensorView> views() {
    std::vector<TensorView> v;
    for (std::size_t k = 0; k < bufs.size(); ++k) {
      v.emplace_back(bufs[k].data(), bufs[k].dtype, std::span<const int64_t>(shapes[k]));
    }
    return v;
  }
};

Grads make_grads(std::size_t count, uint64_t seed, float spread) {
  static const DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  static const int64_t kSizes[] = {0, 1, 5, 33, 4096, 4097, 40000, 100, 70000};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  Grads g;
  for (std::size_t k = 0; k < count; ++k) {
    const int64_t n = count == 1 ? 300000 : kSizes[k % std::size(kSizes)];
    g.shapes.push_back({n});
    testing::Buf b;
    b.resize(kDtypes[k % 3], n);
    for (int64_t i = 0; i < n; ++i) b.set(i, normal(rng));
    g.bufs.push_back(std::move(b));
  }
  return g;
}

long double reference_norm(Grads& g, NormType type) {
  long double acc = 0.0L;
  for (auto& b : g.bufs) {
    const int64_t n = static_cast<int64_t>(b.bytes.size() / dtype_size(b.dtype));
    for (int64_t i = 0; i < n; ++i) {
      const long double x = std::fabs(static_cast<long double>(b.get(i)));
      if (type == NormType::kL2) acc += x * x;
      if (type == NormType::kL1) acc += x;
      if (type == NormType::kInf) acc = std::max(acc, x);
    }
  }
  return type == NormType::kL2 ? std::sqrt(acc) : acc;
}

TEST(MultiTensorClip, NormMatchesReferenceAndIsDeterministic) {
  for (std::size_t count : {1u, 3u, 300u}) {
    Grads g = make_grads(count, count, 0.3f);
    const std::vector<TensorView> v = g.views();
    for (NormType type : {NormType::kL2, NormType::kL1, NormType::kInf}) {
      double first = 0.0;
      ASSERT_TRUE(grad_norm(v, &first, {type, std::nullopt}).ok());
      const long double want = reference_norm(g, type);
      // fp64 accumulation of exact squares: a few fp64 roundings relative.
      EXPECT_LE(std::fabs(static_cast<long double>(first) - want), 1e-14L * want)
          << "count " << count << " type " << static_cast<int>(type);
      if (type == NormType::kInf) {
        EXPECT_EQ(static_cast<long double>(first), want);
      }
      testing::for_each_target_and_thread_count([&](const std::string&, int) {
        double again = -1.0;
        ASSERT_TRUE(grad_norm(v, &again, {type, std::nullopt}).ok());
        ASSERT_EQ(std::memcmp(&again, &first, sizeof again), 0);
      });
    }
  }
}

// With grad_scale the norm is that of the unscaled grads: norm(grads) / |grad_scale|.
TEST(MultiTensorClip, GradScaleGivesTheUnscaledNorm) {
  Grads g = make_grads(30, 4, 1000.0f);
  const std::vector<TensorView> v = g.views();
  float scale = 1024.0f;
  for (NormType type : {NormType::kL2, NormType::kL1, NormType::kInf}) {
    double scaled = 0.0, unscaled = 0.0;
    ASSERT_TRUE(grad_norm(v, &scaled, {type, std::nullopt}).ok());
    ASSERT_TRUE(grad_norm(v, &unscaled, {type, TensorView(&scale, DType::kFloat32, {1})}).ok());
    EXPECT_EQ(unscaled, scaled / 1024.0);
    EXPECT_NEAR(unscaled, static_cast<double>(reference_norm(g, type) / 1024.0L), 1e-13 * unscaled);
  }
}

TEST(MultiTensorClip, CoefficientRule) {
  // torch: coef = max_norm / (norm + 1e-6), applied only when < 1.
  EXPECT_FALSE(clip_coefficient(0.5, 1.0).has_value());
  EXPECT_TRUE(clip_coefficient(1.0, 1.0).has_value());          // 1 / (1 + 1e-6) < 1: applied
  EXPECT_FALSE(clip_coefficient(1.0 - 1e-6, 1.0).has_value());  // exactly 1 or above: not
  ASSERT_TRUE(clip_coefficient(4.0, 1.0).has_value());
  EXPECT_EQ(*clip_coefficient(4.0, 1.0), static_cast<float>(1.0 / (4.0 + 1e-6)));
  EXPECT_FALSE(clip_coefficient(std::numeric_limits<double>::quiet_NaN(), 1.0).has_value());
  ASSERT_TRUE(clip_coefficient(std::numeric_limits<double>::infinity(), 1.0).has_value());
  EXPECT_EQ(*clip_coefficient(std::numeric_limits<double>::infinity(), 1.0), 0.0f);
}

TEST(MultiTensorClip, ClipPassScalesByTheCoefficient) {
  Grads g = make_grads(300, 8, 1.0f);
  Grads start = g;
  const std::vector<TensorView> v = g.views();
  double norm = 0.0;
  ASSERT_TRUE(clip_grad_norm(v, 2.0, &norm, {}).ok());
  const auto coef = clip_coefficient(norm, 2.0);
  ASSERT_TRUE(coef.has_value());
  for (std::size_t k = 0; k < g.bufs.size(); ++k) {
    const int64_t n = g.shapes[k][0];
    for (int64_t i = 0; i < n; ++i) {
      testing::Buf want;
      want.resize(g.bufs[k].dtype, 1);
      want.set(0, start.bufs[k].get(i) * *coef);
      ASSERT_EQ(std::memcmp(want.bytes.data(), g.bufs[k].bytes.data() + i * dtype_size(want.dtype),
                            dtype_size(want.dtype)),
                0);
    }
  }
  // After clipping, the norm is max_norm (to rounding of the 16-bit grads).
  double after = 0.0;
  ASSERT_TRUE(grad_norm(v, &after, {}).ok());
  EXPECT_NEAR(after, 2.0, 2.0 * 1e-2);
  // A norm below max_norm: nothing written.
  Grads small = make_grads(30, 9, 1e-3f);
  Grads small_start = small;
  const std::vector<TensorView> sv = small.views();
  ASSERT_TRUE(clip_grad_norm(sv, 10.0, nullptr, {}).ok());
  for (std::size_t k = 0; k < small.bufs.size(); ++k) {
    ASSERT_EQ(small.bufs[k].bytes, small_start.bufs[k].bytes);
  }
}

TEST(MultiTensorClip, NonFiniteNormIsReported) {
  for (float bad :
       {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    Grads g = make_grads(30, 10, 1.0f);
    g.bufs[13].set(2, bad);
    Grads start = g;
    const std::vector<TensorView> v = g.views();
    double norm = 0.0;
    ClipGradNormOptions o;
    o.error_if_nonfinite = true;
    const Status s = clip_grad_norm(v, 1.0, &norm, o);
    EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
    EXPECT_FALSE(std::isfinite(norm));
    if (std::isnan(bad)) {
      EXPECT_TRUE(std::isnan(norm));
    }
    for (std::size_t k = 0; k < g.bufs.size(); ++k) ASSERT_EQ(g.bufs[k].bytes, start.bufs[k].bytes);
    for (NormType type : {NormType::kL1, NormType::kInf}) {
      double n2 = 0.0;
      ASSERT_TRUE(grad_norm(v, &n2, {type, std::nullopt}).ok());
      EXPECT_FALSE(std::isfinite(n2));
    }
  }
}

// Clipping inside the fused step: the coefficient passed as clip_coef gives the same bits as
// the single-tensor operator on fp32 g = fp32(grad) * coef (no grad_scale: the division is by 1).
TEST(MultiTensorClip, CoefficientInsideTheFusedStep) {
  const std::vector<testing::Form> forms{{DType::kFloat32, DType::kFloat32, std::nullopt},
                                         {DType::kFloat32, DType::kBFloat16, DType::kBFloat16}};
  testing::ParamList start = testing::make_list(300, forms, testing::Algo::kAdamW, 21);
  std::vector<TensorView> grads;
  for (auto& p : start.params) grads.push_back(p.view(p.grad));
  double norm = 0.0;
  ASSERT_TRUE(grad_norm(grads, &norm, {}).ok());
  const auto coef = clip_coefficient(norm, 1.0);
  ASSERT_TRUE(coef.has_value());
  testing::Hyper h;
  testing::ParamList want = start, got = start;
  testing::reference_step(testing::Algo::kAdamW, want, h, std::nullopt, *coef);
  FusedStepOptions o;
  o.clip_coef = coef;
  ASSERT_TRUE(testing::multi_step(testing::Algo::kAdamW, got, h, o).ok());
  ASSERT_EQ(testing::first_difference(got, want), "");
}

}  // namespace

}  // namespace mantissa::testing
