// bf16 weights without an fp32 master: Kahan-compensated and stochastically rounded updates keep
// the small updates that round-to-nearest loses (a 10 000-step run against an fp64 reference);
// stochastic rounding gives the same bits on every target and thread count, matches its scalar
// definition bit for bit, and is unbiased (a statistical test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "multi_tensor_support.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

using testing::Algo;
using testing::Form;
using testing::Hyper;
using testing::Param;
using testing::ParamList;

constexpr DType kBF16 = DType::kBFloat16;

// One bf16 parameter of n elements, all var = v0, grad = g, accum = 0, stat = 0.
ParamList constant_param(int64_t n, float v0, float g, bool comp) {
  std::mt19937_64 rng(1);
  ParamList l;
  l.params.push_back(testing::make_param({n}, {kBF16, kBF16, std::nullopt}, Algo::kSgd, rng, comp));
  Param& p = l.params[0];
  for (int64_t i = 0; i < n; ++i) {
    p.var.set(i, v0);
    p.grad.set(i, g);
    p.s0.set(i, 0.0f);
    p.s1.set(i, 0.0f);
    if (comp) p.comp.set(i, 0.0f);
  }
  return l;
}

// SGD with momentum 0: p_out = p - ((accum * 0 + g) * lr), the update -g*lr each step.
// lr = 2^-10 and g = -0.1 (bf16: 0.10009765625) give +9.775e-5 per step: 1/80 of the bf16 ulp
// (2^-7) in [1, 2), far below half an ulp, so round-to-nearest never moves the weight.
constexpr int kSteps = 10000;
constexpr float kLr = 0.0009765625f;  // 2^-10
constexpr float kGrad = -0.1f;
constexpr double kUlp = 0.0078125;  // 2^-7

double reference_after(int steps) {
  const double g = bf16_bits_to_float(float_to_bf16_bits(kGrad));
  double w = 1.0;
  for (int s = 0; s < steps; ++s) w -= g * kLr;
  return w;
}

Hyper sgd_hyper() {
  Hyper h;
  h.sgd = {kLr, 0.0f, 0.0f, 0.0f, false};
  return h;
}

TEST(MultiTensorBf16, NearestRoundingStallsKahanTracks) {
  const double want = reference_after(kSteps);  // about 1.9775
  ASSERT_NEAR(want, 1.9775, 1e-3);
  // Plain bf16: every update is lost.
  {
    ParamList l = constant_param(64, 1.0f, kGrad, false);
    for (int s = 0; s < kSteps; ++s)
      ASSERT_TRUE(testing::multi_step(Algo::kSgd, l, sgd_hyper()).ok());
    for (int64_t i = 0; i < 64; ++i) ASSERT_EQ(l.params[0].var.get(i), 1.0f);
  }
  // Kahan: within half an ulp of the weight's rounding plus the compensation buffer's own
  // rounding (at most 2^-10 ulp per step, |c| <= ulp/2 rounded to 8 bits) plus the fp32 rounding
  // of the update and of p - step (2^-24 relative each, |p| < 2): a worst-case bound.
  {
    ParamList l = constant_param(64, 1.0f, kGrad, true);
    FusedStepOptions o;
    o.rounding = WeightRounding::kKahan;
    for (int s = 0; s < kSteps; ++s) {
      ASSERT_TRUE(testing::multi_step(Algo::kSgd, l, sgd_hyper(), o).ok());
    }
    const double bound = kUlp * (0.5 + kSteps / 1024.0) + kSteps * 4.0 * std::ldexp(1.0, -24);
    double worst = 0.0;
    for (int64_t i = 0; i < 64; ++i) {
      const double w = l.params[0].var.get(i);
      worst = std::max(worst, std::fabs(w - want));
      // The compensated value w + c is closer still.
      const double wc = w + static_cast<double>(l.params[0].comp.get(i));
      ASSERT_LE(std::fabs(wc - want), bound);
    }
    EXPECT_LE(worst, bound);
    RecordProperty("kahan_abs_error", std::to_string(worst));
    std::printf("Kahan bf16 after %d steps: |w - fp64 reference| = %.6g (bound %.6g, plain %.6g)\n",
                kSteps, worst, bound, want - 1.0);
  }
}

// Stochastic rounding of the same run: each element is a random walk around the reference with
// variance sum p(1 - p) ulp^2 (p = 1/80 per step): sigma = ulp * sqrt(kSteps * p * (1 - p))
// = 0.087. Every element within 6 sigma, and the mean of 4096 independent elements within
// 6 sigma / 64.
TEST(MultiTensorBf16, StochasticRoundingTracksAndMatchesItsDefinition) {
  const double want = reference_after(kSteps);
  constexpr int64_t kN = 4096;
  ParamList l = constant_param(kN, 1.0f, kGrad, false);
  FusedStepOptions o;
  o.rounding = WeightRounding::kStochastic;
  o.seed = 0x5EEDF00Du;
  const float g = bf16_bits_to_float(float_to_bf16_bits(kGrad));
  const float lr = bf16_bits_to_float(float_to_bf16_bits(kLr));
  std::vector<uint16_t> scalar(kN, float_to_bf16_bits(1.0f));
  for (int s = 0; s < kSteps; ++s) {
    o.rng_step = static_cast<uint64_t>(s);
    ASSERT_TRUE(testing::multi_step(Algo::kSgd, l, sgd_hyper(), o).ok());
    // The scalar definition: var_new in fp32 as SGD computes it, then the documented rounding.
    for (int64_t i = 0; i < kN; ++i) {
      const float p = bf16_bits_to_float(scalar[i]);
      const float accum_t = (0.0f * 0.0f) + g;
      const float var_new = p - (accum_t * lr);
      scalar[i] = float_to_bf16_stochastic(var_new, sr_bits(o.seed, o.rng_step, 0, i) >> 16);
    }
    if (s % 1000 == 0) {
      ASSERT_EQ(std::memcmp(scalar.data(), l.params[0].var.bytes.data(), 2 * kN), 0)
          << "step " << s;
    }
  }
  ASSERT_EQ(std::memcmp(scalar.data(), l.params[0].var.bytes.data(), 2 * kN), 0);
  const double p = (-static_cast<double>(g) * lr) / kUlp;
  const double sigma = kUlp * std::sqrt(kSteps * p * (1 - p));
  double sum = 0.0, worst = 0.0;
  for (int64_t i = 0; i < kN; ++i) {
    const double w = l.params[0].var.get(i);
    sum += w;
    worst = std::max(worst, std::fabs(w - want));
  }
  const double mean = sum / kN;
  std::printf(
      "SR bf16 after %d steps: mean error %.3g (6 sigma/64 = %.3g), worst element %.3g "
      "(6 sigma = %.3g); plain rounding stalls %.3g away\n",
      kSteps, mean - want, 6 * sigma / 64, worst, 6 * sigma, want - 1.0);
  EXPECT_LE(worst, 6 * sigma);
  EXPECT_LE(std::fabs(mean - want), 6 * sigma / 64);
  EXPECT_LT(6 * sigma / 64, (want - 1.0) / 100);  // the mean bound is tight: plain is 1.0 off
}

// E[SR(x)] = x: one step of SGD writes x = p - g*lr (not a bf16 value) into 2^20 elements whose
// random bits differ; the sample mean is within 6 standard errors of x (sigma of one rounding is
// ulp * sqrt(q (1 - q)), q the discarded fraction). Both signs, several fractions.
TEST(MultiTensorBf16, StochasticRoundingIsUnbiased) {
  constexpr int64_t kN = 1 << 20;
  for (float v0 : {1.0f, -1.0f, 3.0f}) {
    for (float g : {-0.0009765625f, 0.0029296875f, -0.005859375f}) {  // q = 1/8, 3/8, 3/4 ulp(1)
      ParamList l = constant_param(kN, v0, g, false);
      Hyper h;
      h.sgd = {1.0f, 0.0f, 0.0f, 0.0f, false};
      FusedStepOptions o;
      o.rounding = WeightRounding::kStochastic;
      o.seed = 42;
      ASSERT_TRUE(testing::multi_step(Algo::kSgd, l, h, o).ok());
      const double x = static_cast<double>(v0 - (g * 1.0f));
      const double ulp = std::ldexp(1.0, std::ilogb(x) - 7);
      const double lo = std::floor(x / ulp) * ulp;
      const double q = (x - lo) / ulp;
      double sum = 0.0;
      for (int64_t i = 0; i < kN; ++i) sum += l.params[0].var.get(i);
      const double se = ulp * std::sqrt(q * (1 - q) / kN);
      EXPECT_NEAR(sum / kN, x, 6 * se) << "v0 " << v0 << " g " << g;
      EXPECT_GT(q, 0.0);
    }
  }
}

// SR and Kahan bits do not depend on the thread count or target: 300-parameter lists, each
// optimizer; the state is written as the single operator writes it.
TEST(MultiTensorBf16, SameBitsOnEveryTargetAndThreadCount) {
  const std::vector<Form> forms{{kBF16, kBF16, std::nullopt}};
  for (Algo algo : {Algo::kSgd, Algo::kAdamD, Algo::kAdamW}) {
    for (WeightRounding r : {WeightRounding::kStochastic, WeightRounding::kKahan}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(algo)) + " rounding " +
                   std::to_string(static_cast<int>(r)));
      ParamList start = testing::make_list(300, forms, algo, 11);
      if (r == WeightRounding::kKahan) {
        for (auto& p : start.params) {
          p.has_comp = true;
          p.comp.resize(kBF16, p.n);
          for (int64_t i = 0; i < p.n; ++i) p.comp.set(i, 1e-3f * static_cast<float>(i % 7));
        }
      }
      Hyper h;
      h.sgd = {0.01f, 0.9f, 0.0f, 0.0f, false};
      // bf16 scalars: 0.999 would round to 1 (lr_t = 0, nothing to round); 0.99 does not.
      h.adam_d = {0.9f, 0.99f, 0.01f, 0.9f, 0.99f, 1e-7f, false};
      h.adam_w.step = 3;
      FusedStepOptions o;
      o.rounding = r;
      o.seed = 7;
      o.rng_step = 3;
      ParamList first = start;
      ASSERT_TRUE(testing::multi_step(algo, first, h, o).ok());
      // Not the plain rounding, and the state as the single operator writes it.
      ParamList plain = start;
      testing::reference_step(algo, plain, h);
      int differ = 0;
      for (std::size_t k = 0; k < plain.params.size(); ++k) {
        differ += first.params[k].var.bytes != plain.params[k].var.bytes;
        ASSERT_EQ(first.params[k].s0.bytes, plain.params[k].s0.bytes);
        ASSERT_EQ(first.params[k].s1.bytes, plain.params[k].s1.bytes);
      }
      EXPECT_GT(differ, 50);
      testing::for_each_target_and_thread_count([&](const std::string&, int) {
        ParamList got = start;
        ASSERT_TRUE(testing::multi_step(algo, got, h, o).ok());
        ASSERT_EQ(testing::first_difference(got, first), "");
      });
    }
  }
}

// The key includes the tensor's position in the list: every parameter of a list matches the
// scalar definition with its own index (SGD with momentum 0: var_new = p - ((a * 0 + g) * lr)).
TEST(MultiTensorBf16, StochasticBitsUseTheTensorIndex) {
  ParamList l = testing::make_list(40, {{kBF16, kBF16, std::nullopt}}, Algo::kSgd, 12);
  for (auto& p : l.params) {
    for (int64_t i = 0; i < p.n; ++i) p.s0.set(i, 0.0f);
  }
  const ParamList start = l;
  Hyper h;
  h.sgd = {0.01f, 0.0f, 0.0f, 0.0f, false};
  FusedStepOptions o;
  o.rounding = WeightRounding::kStochastic;
  o.seed = 0x123456789ABCDEFull;
  o.rng_step = 0xFEDCBA987654321ull;
  ASSERT_TRUE(testing::multi_step(Algo::kSgd, l, h, o).ok());
  const float lr = bf16_bits_to_float(float_to_bf16_bits(0.01f));
  for (std::size_t k = 0; k < l.params.size(); ++k) {
    const Param& p = start.params[k];
    for (int64_t i = 0; i < p.n; ++i) {
      const float var_new = p.var.get(i) - (((p.s0.get(i) * 0.0f) + p.grad.get(i)) * lr);
      const uint16_t want = float_to_bf16_stochastic(
          var_new, sr_bits(o.seed, o.rng_step, static_cast<uint32_t>(k), i) >> 16);
      uint16_t got;
      std::memcpy(&got, l.params[k].var.bytes.data() + 2 * i, 2);
      ASSERT_EQ(got, want) << "params[" << k << "] element " << i;
    }
  }
}

// The mixing function is lowbias32; the first values pin the definition.
TEST(MultiTensorBf16, StochasticBitsDefinition) {
  EXPECT_EQ(sr_mix32(0u), 0u);
  // lowbias32(1) computed by hand from the constants 0x7FEB352D, 0x846CA68B.
  uint32_t x = 1;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  EXPECT_EQ(sr_mix32(1u), x);
  // Rounding: NaN canonical, inf kept, r = 0 truncates, r = 0xFFFF rounds any discarded bit up.
  EXPECT_EQ(float_to_bf16_stochastic(std::numeric_limits<float>::quiet_NaN(), 0x1234), 0x7FC0);
  EXPECT_EQ(float_to_bf16_stochastic(-std::numeric_limits<float>::infinity(), 0xFFFF), 0xFF80);
  EXPECT_EQ(float_to_bf16_stochastic(1.00390625f, 0), 0x3F80);
  EXPECT_EQ(float_to_bf16_stochastic(1.00390625f, 0xFFFF), 0x3F81);
  EXPECT_EQ(float_to_bf16_stochastic(1.0f, 0xFFFF), 0x3F80);  // exact values never move
  EXPECT_EQ(float_to_bf16_stochastic(-1.00390625f, 0xFFFF), 0xBF81);
}

}  // namespace

}  // namespace mantissa::testing
