// FP8 scaling recipes: a delayed-scaling trajectory over injected amax sequences (0, NaN, inf,
// subnormal, micro-batches) against a reference written here from the rule (a log of every
// step's amax and a window over it, not a rolled buffer); the first step's scale 1; quantize()
// recording what QuantMax returns; resume from state() to the same bits; state and recipe
// validation; current scaling's rule and its cast.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mantissa/amp/fp8_scaling.h"
#include "mantissa/ops/quant_max.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::amp::AmaxComputeAlgo;
using mantissa::amp::DelayedScaling;
using mantissa::amp::DelayedScalingRecipe;
using mantissa::amp::Fp8Format;
using mantissa::amp::Fp8Role;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The rule, written from its statement: the amax of step t is the max of what was recorded in
// steps t-len+1..t (a step that recorded nothing counts 0; NaN wins), or step t's own for
// most_recent; the scale moves only for a finite amax > 0.
struct Reference {
  DelayedScalingRecipe r;
  float fmax;
  std::vector<float> log;  // each finished step's amax
  float current = 0.0f;
  float scale = 1.0f;

  void record(float a) {
    current = (std::isnan(a) || std::isnan(current)) ? kNaN : std::max(current, a);
  }
  void update() {
    log.push_back(current);
    current = 0.0f;
    float amax = log.back();
    if (r.amax_compute_algo == AmaxComputeAlgo::kMax) {
      const std::size_t n = log.size(), len = static_cast<std::size_t>(r.amax_history_len);
      for (std::size_t k = n > len ? n - len : 0; k < n; ++k) {
        amax = (std::isnan(amax) || std::isnan(log[k])) ? kNaN : std::max(amax, log[k]);
      }
    }
    if (std::isfinite(amax) && amax > 0.0f) {
      const float q = fmax / amax;
      float s = q / static_cast<float>(std::pow(2.0, r.margin));
      scale = std::isinf(s) ? std::numeric_limits<float>::max() : s;
    }
  }
};

TEST(DelayedScaling, TrajectoryMatchesTheReference) {
  // Per step, the amaxes recorded (several: micro-batches).
  const std::vector<std::vector<float>> steps{
      {3.0f},         {0.5f, 7.0f}, {},      {2.0f},      {0.0f},  {1e-40f}, {kInf},
      {4.0f},         {kNaN},       {1.25f}, {9.0f},      {0.25f}, {0.75f},  {1e30f},
      {0.001f, 0.2f}, {5.0f},       {5.0f},  {1e-3f},     {2.5f},  {0.0f},   {3.5f},
      {6.0f},         {0.125f},     {8.0f},  {7.0f, 1.0f}};
  for (int64_t len : {1, 3, 4, 16}) {
    for (AmaxComputeAlgo algo : {AmaxComputeAlgo::kMax, AmaxComputeAlgo::kMostRecent}) {
      for (int32_t margin : {0, 2, -1}) {
        for (Fp8Role role : {Fp8Role::kForward, Fp8Role::kGradient}) {
          SCOPED_TRACE("len " + std::to_string(len) + " algo " +
                       std::to_string(static_cast<int>(algo)) + " margin " +
                       std::to_string(margin) + " role " + std::to_string(static_cast<int>(role)));
          const DelayedScalingRecipe recipe{.fp8_format = Fp8Format::kHybrid,
                                            .amax_history_len = len,
                                            .amax_compute_algo = algo,
                                            .margin = margin};
          DelayedScaling s;
          ASSERT_TRUE(DelayedScaling::create(recipe, role, &s).ok());
          EXPECT_EQ(s.dtype(),
                    role == Fp8Role::kGradient ? DType::kFloat8E5M2 : DType::kFloat8E4M3FN);
          Reference ref{recipe, mantissa::amp::fp8_max(s.dtype()), {}, 0.0f, 1.0f};
          EXPECT_EQ(s.scale(), 1.0f);  // the first step's
          for (std::size_t t = 0; t < steps.size(); ++t) {
            for (float a : steps[t]) s.record(a), ref.record(a);
            s.update();
            ref.update();
            ASSERT_EQ(std::bit_cast<uint32_t>(s.scale()), std::bit_cast<uint32_t>(ref.scale))
                << "step " << t << ": " << s.scale() << " against " << ref.scale;
            ASSERT_EQ(s.steps(), static_cast<int64_t>(t + 1));
            // The history holds the last len steps' amaxes (entry 0: the next step's, zero).
            const auto h = s.amax_history();
            ASSERT_EQ(h.size(), static_cast<std::size_t>(len));
            EXPECT_EQ(h[0], 0.0f);
          }
        }
      }
    }
  }
}

TEST(DelayedScaling, WorkedValues) {
  DelayedScaling s;
  ASSERT_TRUE(DelayedScaling::create({.fp8_format = Fp8Format::kE4M3,
                                      .amax_history_len = 2,
                                      .amax_compute_algo = AmaxComputeAlgo::kMax,
                                      .margin = 1},
                                     Fp8Role::kGradient, &s)
                  .ok());
  EXPECT_EQ(s.dtype(), DType::kFloat8E4M3FN);  // E4M3 for gradients too
  s.record(7.0f);
  s.update();
  EXPECT_EQ(s.scale(), 32.0f);  // 448 / 7 / 2
  EXPECT_EQ(s.scale_inv(), 1.0f / 32.0f);
  s.record(14.0f);
  s.update();
  EXPECT_EQ(s.scale(), 16.0f);  // max(7, 14)
  s.record(1.0f);
  s.update();
  EXPECT_EQ(s.scale(), 16.0f);  // the window: 14 and 1
  s.record(1.0f);
  s.update();
  EXPECT_EQ(s.scale(), 224.0f);  // 1 and 1
  s.record(kNaN);
  s.update();
  EXPECT_EQ(s.scale(), 224.0f);  // NaN: kept
  s.record(2.0f);
  s.update();
  EXPECT_EQ(s.scale(), 224.0f);  // NaN still in the window
  s.record(2.0f);
  s.update();
  EXPECT_EQ(s.scale(), 112.0f);
}

// quantize() casts with the scale of the steps before (1 at first) and records max |x|.
TEST(DelayedScaling, QuantizeCastsWithTheScaleAndRecordsTheAmax) {
  DelayedScaling s;
  ASSERT_TRUE(DelayedScaling::create({.amax_history_len = 4}, Fp8Role::kForward, &s).ok());
  for (int step = 0; step < 4; ++step) {
    HostTensor x = filled(DType::kBFloat16, {5, 33}, 0.0, 3.0 + step, 10 + step);
    HostTensor y = sentinel(DType::kFloat8E4M3FN, {5, 33});
    HostTensor yref = sentinel(DType::kFloat8E4M3FN, {5, 33}),
               aref = sentinel(DType::kBFloat16, {1});
    float scale = s.scale();
    HostTensor sc(DType::kFloat32, {1});
    sc.set_bits(0, std::bit_cast<uint32_t>(scale));
    ASSERT_TRUE(
        mantissa::quant_max({.x = view(x), .scale = view(sc), .y = view(yref), .amax = view(aref)},
                            {.dst_type = DType::kFloat8E4M3FN})
            .ok());
    ASSERT_TRUE(s.quantize(view(x), view(y)).ok());
    mt::expect_same_bits(y, yref, "y");
    EXPECT_EQ(s.amax_history()[0], static_cast<float>(aref.value(0)));
    s.update();
    if (step == 0) {
      EXPECT_EQ(scale, 1.0f);
    }
  }
  // A y of the other FP8 dtype is refused, nothing written or recorded.
  HostTensor x = filled(DType::kFloat32, {8}, 0.0, 1.0, 3);
  HostTensor y5 = sentinel(DType::kFloat8E5M2, {8});
  const Status st = s.quantize(view(x), view(y5));
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(y5));
  EXPECT_EQ(s.amax_history()[0], 0.0f);
}

// A run checkpointed at step k and resumed from state() casts and scales exactly as the
// uninterrupted run.
TEST(DelayedScaling, ResumeFromStateGivesTheSameBits) {
  const DelayedScalingRecipe recipe{.amax_history_len = 5, .margin = 1};
  auto run = [&](int stop_at, std::string* saved, const std::string* resume_from) {
    DelayedScaling s;
    EXPECT_TRUE(DelayedScaling::create(recipe, Fp8Role::kGradient, &s).ok());
    std::vector<uint8_t> ys;
    for (int step = 0; step < 12; ++step) {
      if (resume_from != nullptr && step == stop_at) {
        DelayedScaling fresh;
        EXPECT_TRUE(fresh.load_state(*resume_from).ok());
        s = fresh;
      }
      HostTensor x = filled(DType::kFloat16, {64}, 0.0, 1.0 + 3 * (step % 4), 100 + step);
      if (step == 6) x.set_bits(3, 0x7E00);  // a NaN amax in the history
      HostTensor y = sentinel(DType::kFloat8E5M2, {64});
      EXPECT_TRUE(s.quantize(view(x), view(y)).ok());
      ys.insert(ys.end(), y.bytes.begin(), y.bytes.end());
      s.update();
      if (saved != nullptr && step + 1 == stop_at) *saved = s.state();
    }
    ys.push_back(0);
    const float sc = s.scale();
    const auto* p = reinterpret_cast<const uint8_t*>(&sc);
    ys.insert(ys.end(), p, p + 4);
    return ys;
  };
  const std::vector<uint8_t> whole = run(-1, nullptr, nullptr);
  for (int k : {1, 7, 9}) {
    std::string state;
    run(k, &state, nullptr);
    EXPECT_EQ(run(k, nullptr, &state), whole) << "resumed at step " << k;
  }
}

TEST(DelayedScaling, StateAndRecipeValidation) {
  DelayedScaling s;
  for (const DelayedScalingRecipe& bad :
       {DelayedScalingRecipe{.amax_history_len = 0}, DelayedScalingRecipe{.margin = 128},
        DelayedScalingRecipe{.fp8_format = static_cast<Fp8Format>(2)},
        DelayedScalingRecipe{.amax_compute_algo = static_cast<AmaxComputeAlgo>(5)}}) {
    EXPECT_EQ(DelayedScaling::create(bad, Fp8Role::kForward, &s).code(), StatusCode::kParamInvalid);
  }
  ASSERT_TRUE(DelayedScaling::create({.amax_history_len = 2}, Fp8Role::kForward, &s).ok());
  s.record(3.0f);
  s.update();
  const std::string good = s.state();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::string> bad{
      "not json",
      "[]",
      replaced("mantissa.fp8_delayed_scaling", "mantissa.other"),
      replaced("\"version\": 1", "\"version\": 2"),
      replaced("\"margin\": 0", "\"margin\": 300"),
      replaced("\"amax_history_len\": 2", "\"amax_history_len\": 3"),
      replaced("\"scale_bits\": " + std::to_string(std::bit_cast<uint32_t>(s.scale())),
               "\"scale_bits\": 0"),
      replaced("\"scale_bits\": " + std::to_string(std::bit_cast<uint32_t>(s.scale())),
               "\"scale_bits\": 2139095040"),  // +inf
      replaced("\"steps\": 1", "\"steps\": -1"),
  };
  for (const std::string& text : bad) {
    DelayedScaling t = s;
    const Status st = t.load_state(text);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid) << text;
    EXPECT_EQ(t.state(), good) << "a refused state changed the scaling";
  }
  DelayedScaling u;
  ASSERT_TRUE(u.load_state(good).ok());
  EXPECT_EQ(u.state(), good);
}

TEST(CurrentScaling, TheRule) {
  using mantissa::amp::current_scale;
  const DType e4 = DType::kFloat8E4M3FN, e5 = DType::kFloat8E5M2;
  EXPECT_EQ(current_scale(1.0f, e4), 448.0f);
  EXPECT_EQ(current_scale(1.0f, e5), 57344.0f);
  EXPECT_EQ(current_scale(7.0f, e4), 64.0f);
  EXPECT_EQ(current_scale(3.0f, e4), 448.0f / 3.0f);
  EXPECT_EQ(current_scale(3.0f, e4, {.power_of_two_scales = true}), 128.0f);  // 149.33 down
  EXPECT_EQ(current_scale(0.0f, e4), 1.0f);
  EXPECT_EQ(current_scale(kInf, e4), 1.0f);
  EXPECT_EQ(current_scale(kNaN, e4), 1.0f);
  EXPECT_EQ(current_scale(1e-45f, e4), std::numeric_limits<float>::max());  // overflows
  EXPECT_EQ(current_scale(1e-45f, e4, {.power_of_two_scales = true}), 0x1p127f);
  EXPECT_EQ(current_scale(1e-10f, e4, {.amax_epsilon = 1e-3f}), 448.0f / 1e-3f);
  EXPECT_EQ(current_scale(0.0f, e4, {.amax_epsilon = 0.5f}), 896.0f);
  EXPECT_EQ(mantissa::amp::fp8_max(DType::kFloat32), 0.0f);
}

TEST(CurrentScaling, QuantizeCastsWithItsOwnAmax) {
  for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType yd : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
      HostTensor x = filled(xd, {3, 50}, 0.0, 5.0, 21);
      HostTensor y = sentinel(yd, {3, 50}), yref = sentinel(yd, {3, 50});
      float scale = 0.0f, amax = 0.0f;
      ASSERT_TRUE(mantissa::amp::current_scaling_quantize(
                      view(x), view(y), {.power_of_two_scales = true}, &scale, &amax)
                      .ok());
      double m = 0.0;
      ASSERT_TRUE(mantissa::max_abs(view(x), &m).ok());
      EXPECT_EQ(amax, static_cast<float>(m));
      EXPECT_EQ(scale, mantissa::amp::current_scale(amax, yd, {.power_of_two_scales = true}));
      HostTensor sc(DType::kFloat32, {1}), aref = sentinel(xd, {1});
      sc.set_bits(0, std::bit_cast<uint32_t>(scale));
      ASSERT_TRUE(mantissa::quant_max(
                      {.x = view(x), .scale = view(sc), .y = view(yref), .amax = view(aref)},
                      {.dst_type = yd})
                      .ok());
      mt::expect_same_bits(y, yref, "y");
    }
  }
  // Refused before anything is written: y of another shape; a negative epsilon.
  HostTensor x = filled(DType::kFloat32, {8}, 0.0, 1.0, 3);
  HostTensor y = sentinel(DType::kFloat8E4M3FN, {4});
  float scale = -1.0f, amax = -1.0f;
  EXPECT_EQ(mantissa::amp::current_scaling_quantize(view(x), view(y), {}, &scale, &amax).code(),
            StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(y));
  EXPECT_EQ(scale, -1.0f);
  HostTensor y8 = sentinel(DType::kFloat8E4M3FN, {8});
  EXPECT_EQ(mantissa::amp::current_scaling_quantize(view(x), view(y8), {.amax_epsilon = -1.0f},
                                                    &scale, &amax)
                .code(),
            StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(y8));
}

}  // namespace
}  // namespace mantissa::testing
