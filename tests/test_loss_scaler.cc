// DynamicLossScaler: its scale trajectory against transcriptions of PyTorch's GradScaler update
// rule and of Megatron's hysteresis, over long synthetic overflow patterns; the unscale and skip
// behaviour on real gradients; checkpoints; validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mantissa/amp/loss_scaler.h"
#include "mantissa/dtype.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::amp::DynamicLossScaler;
using mantissa::amp::LossScalerOptions;
using mantissa::amp::StepScaling;

// torch/cuda/amp/grad_scaler.py (1.13) update() with _amp_update_scale_'s kernel: the scale is a
// float32 tensor; factors are Python floats (doubles), each product rounded to float32.
struct GradScalerModel {
  float scale = 65536.0f;
  int32_t tracker = 0;
  double growth = 2.0, backoff = 0.5;
  int32_t interval = 2000;
  void update(bool found_inf) {
    if (found_inf) {
      scale = static_cast<float>(static_cast<double>(scale) * backoff);
      tracker = 0;
      return;
    }
    const int32_t successful = tracker + 1;
    if (successful == interval) {
      const auto grown = static_cast<float>(static_cast<double>(scale) * growth);
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    } else {
      tracker = successful;
    }
  }
};

// Megatron-LM's DynamicGradScaler.update(): hysteresis and a minimum scale.
struct MegatronModel {
  float scale, min_scale;
  double growth, backoff;
  int32_t interval, hysteresis, growth_tracker = 0, hysteresis_tracker;
  MegatronModel(float s, float min, double g, double b, int32_t i, int32_t h)
      : scale(s),
        min_scale(min),
        growth(g),
        backoff(b),
        interval(i),
        hysteresis(h),
        hysteresis_tracker(h) {}
  void update(bool found_inf) {
    if (found_inf) {
      growth_tracker = 0;
      hysteresis_tracker -= 1;
      if (hysteresis_tracker <= 0) {
        scale = std::max(static_cast<float>(static_cast<double>(scale) * backoff), min_scale);
      }
    } else {
      growth_tracker += 1;
      if (growth_tracker == interval) {
        growth_tracker = 0;
        hysteresis_tracker = hysteresis;
        scale = static_cast<float>(static_cast<double>(scale) * growth);
      }
    }
  }
};

// Gradients in three tensors (fp32, fp16, bf16); poison() puts Inf or NaN into one of them.
struct Grads {
  std::vector<float> a = std::vector<float>(33, 1.0f);
  std::vector<uint16_t> b = std::vector<uint16_t>(17), c = std::vector<uint16_t>(5);
  std::vector<TensorView> views;
  Grads() {
    views = {TensorView(a.data(), DType::kFloat32, {33}),
             TensorView(b.data(), DType::kFloat16, {17}),
             TensorView(c.data(), DType::kBFloat16, {5})};
    reset();
  }
  void reset() {
    for (auto& v : a) v = 1024.0f;
    for (auto& v : b) v = mantissa::float_to_fp16_bits(2048.0f);
    for (auto& v : c) v = mantissa::float_to_bf16_bits(4096.0f);
  }
  void poison(std::mt19937& rng) {
    const float bad = rng() % 2 ? std::numeric_limits<float>::infinity()
                                : std::numeric_limits<float>::quiet_NaN();
    switch (rng() % 3) {
      case 0: a[rng() % a.size()] = bad; break;
      case 1: b[rng() % b.size()] = mantissa::float_to_fp16_bits(bad); break;
      default: c[rng() % c.size()] = mantissa::float_to_bf16_bits(bad); break;
    }
  }
};

// Overflow patterns: isolated overflows, bursts, long clean stretches.
std::vector<bool> overflow_pattern(int steps, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<bool> p(static_cast<std::size_t>(steps), false);
  for (int i = 0; i < steps;) {
    const int clean = static_cast<int>(rng() % 40);
    i += clean;
    const int burst = rng() % 4 == 0 ? static_cast<int>(1 + rng() % 6) : 1;
    for (int k = 0; k < burst && i < steps; ++k, ++i) p[static_cast<std::size_t>(i)] = true;
  }
  return p;
}

TEST(LossScaler, DefaultsAreGradScalers) {
  const DynamicLossScaler s;
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.options().growth_factor, 2.0);
  EXPECT_EQ(s.options().backoff_factor, 0.5);
  EXPECT_EQ(s.options().growth_interval, 2000);
  EXPECT_EQ(s.options().hysteresis, 1);
}

TEST(LossScaler, TrajectoryMatchesGradScaler) {
  for (const int32_t interval : {1, 3, 7, 50}) {
    SCOPED_TRACE(interval);
    LossScalerOptions o;
    o.growth_interval = interval;
    o.init_scale = 1024.0f;
    DynamicLossScaler s;
    ASSERT_TRUE(DynamicLossScaler::create(o, &s).ok());
    GradScalerModel model;
    model.scale = o.init_scale;
    model.interval = interval;
    const std::vector<bool> pattern = overflow_pattern(20000, 7u + interval);
    std::mt19937 rng(1);
    Grads g;
    int64_t skipped = 0;
    for (std::size_t step = 0; step < pattern.size(); ++step) {
      g.reset();
      if (pattern[step]) g.poison(rng);
      bool ran = false;
      ASSERT_TRUE(s.step(g.views, [&](const StepScaling& sc) {
                     EXPECT_FALSE(sc.grad_scale.has_value());
                     ran = true;
                     return mantissa::Status{};
                   }).ok());
      EXPECT_EQ(ran, !pattern[step]) << "step " << step;
      skipped += pattern[step];
      ASSERT_TRUE(s.update().ok());
      model.update(pattern[step]);
      ASSERT_EQ(s.scale(), model.scale) << "step " << step;
    }
    EXPECT_EQ(s.stats().steps, 20000);
    EXPECT_EQ(s.stats().skipped_steps, skipped);
  }
}

// Growth stops at the largest finite fp32 power: the grown scale would overflow, so it is kept.
TEST(LossScaler, GrowthStopsBeforeInfinity) {
  LossScalerOptions o;
  o.growth_interval = 1;
  o.init_scale = 0x1p120f;
  DynamicLossScaler s;
  ASSERT_TRUE(DynamicLossScaler::create(o, &s).ok());
  Grads g;
  for (int i = 0; i < 20; ++i) {
    g.reset();
    ASSERT_TRUE(s.check(g.views).ok());
    ASSERT_TRUE(s.update().ok());
  }
  EXPECT_EQ(s.scale(), 0x1p127f);
}

TEST(LossScaler, HysteresisAndFloorMatchMegatron) {
  for (const int32_t hysteresis : {1, 2, 3, 5}) {
    SCOPED_TRACE(hysteresis);
    LossScalerOptions o;
    o.init_scale = 4096.0f;
    o.growth_interval = 5;
    o.hysteresis = hysteresis;
    o.min_scale = 16.0f;
    DynamicLossScaler s;
    ASSERT_TRUE(DynamicLossScaler::create(o, &s).ok());
    MegatronModel model(o.init_scale, o.min_scale, 2.0, 0.5, 5, hysteresis);
    const std::vector<bool> pattern = overflow_pattern(20000, 100u + hysteresis);
    std::mt19937 rng(2);
    Grads g;
    bool reached_floor = false;
    for (std::size_t step = 0; step < pattern.size(); ++step) {
      // Random overflows, and every step once the scale passes 2^20 (as gradients of a fixed
      // size would overflow fp16 there).
      // A run of 100 overflows from step 10000 drives the scale to its floor.
      const bool overflow = pattern[step] || model.scale > 0x1p20f || (step / 100 == 100);
      g.reset();
      if (overflow) g.poison(rng);
      ASSERT_TRUE(s.check(g.views).ok());
      ASSERT_EQ(s.found_inf(), overflow);
      ASSERT_TRUE(s.update().ok());
      model.update(overflow);
      ASSERT_EQ(s.scale(), model.scale) << "step " << step;
      reached_floor |= s.scale() == o.min_scale;
    }
    EXPECT_TRUE(reached_floor) << "the pattern should drive the scale to its floor";
  }
}

TEST(LossScaler, UnscaleMultipliesByTheReciprocalAndStepFusedLeavesGradsAlone) {
  LossScalerOptions o;
  o.init_scale = 3.0f;  // 1/3 is inexact: computed in double, rounded once to fp32
  DynamicLossScaler s;
  ASSERT_TRUE(DynamicLossScaler::create(o, &s).ok());
  Grads g;
  ASSERT_TRUE(s.unscale(g.views).ok());
  EXPECT_EQ(g.a[0], 1024.0f * static_cast<float>(1.0 / 3.0));
  EXPECT_FALSE(s.found_inf());
  ASSERT_TRUE(s.update().ok());

  g.reset();
  const std::vector<float> before = g.a;
  float seen_scale = 0.0f, seen_found = -1.0f;
  ASSERT_TRUE(s.step_fused(g.views, [&](const StepScaling& sc) {
                 EXPECT_TRUE(sc.grad_scale && sc.found_inf);
                 std::memcpy(&seen_scale, sc.grad_scale->data, 4);
                 std::memcpy(&seen_found, sc.found_inf->data, 4);
                 return mantissa::Status{};
               }).ok());
  EXPECT_EQ(seen_scale, s.scale());
  EXPECT_EQ(seen_found, 0.0f);
  EXPECT_EQ(g.a, before) << "the read-only check wrote the gradients";
  ASSERT_TRUE(s.update().ok());
}

TEST(LossScaler, OptimizerStatusIsReturned) {
  DynamicLossScaler s;
  Grads g;
  const mantissa::Status st = s.step(g.views, [](const StepScaling&) {
    return mantissa::Status(StatusCode::kParamInvalid, "optimizer says no");
  });
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_EQ(st.message(), "optimizer says no");
}

TEST(LossScaler, DisabledDoesNothing) {
  LossScalerOptions o;
  o.enabled = false;
  DynamicLossScaler s;
  ASSERT_TRUE(DynamicLossScaler::create(o, &s).ok());
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_EQ(s.scale_loss(2.5f), 2.5f);
  Grads g;
  std::mt19937 rng(3);
  g.poison(rng);
  const std::vector<float> before = g.a;
  int runs = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(s.step(g.views, [&](const StepScaling&) {
                   ++runs;
                   return mantissa::Status{};
                 }).ok());
    ASSERT_TRUE(s.update().ok());
  }
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(std::memcmp(g.a.data(), before.data(), before.size() * 4), 0);
  EXPECT_EQ(s.stats().steps, 0);
}

TEST(LossScaler, CheckpointsContinueIdentically) {
  LossScalerOptions o;
  o.init_scale = 512.0f;
  o.growth_interval = 4;
  o.hysteresis = 2;
  o.min_scale = 1.0f;
  o.history_limit = 50;
  DynamicLossScaler a;
  ASSERT_TRUE(DynamicLossScaler::create(o, &a).ok());
  const std::vector<bool> pattern = overflow_pattern(3000, 42);
  std::mt19937 rng(4);
  Grads g;
  auto run = [&](DynamicLossScaler& s, std::size_t from, std::size_t to) {
    std::mt19937 local(static_cast<uint32_t>(from));
    for (std::size_t step = from; step < to; ++step) {
      g.reset();
      if (pattern[step]) g.poison(local);
      ASSERT_TRUE(s.check(g.views).ok());
      ASSERT_TRUE(s.update().ok());
    }
  };
  for (const std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{777}}) {
    DynamicLossScaler first;
    ASSERT_TRUE(DynamicLossScaler::create(o, &first).ok());
    run(first, 0, cut);
    const std::string saved = first.state();
    DynamicLossScaler second;
    ASSERT_TRUE(second.load_state(saved).ok());
    EXPECT_EQ(second.state(), saved);
    run(first, cut, pattern.size());
    run(second, cut, pattern.size());
    EXPECT_EQ(first.scale(), second.scale());
    EXPECT_EQ(first.state(), second.state()) << "cut at " << cut;
    EXPECT_LE(first.stats().history.size(), 50u);
  }
}

TEST(LossScaler, CorruptOrForeignStatesAreRejectedAndChangeNothing) {
  DynamicLossScaler s;
  Grads g;
  ASSERT_TRUE(s.check(g.views).ok());
  ASSERT_TRUE(s.update().ok());
  const std::string good = s.state();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  const struct {
    std::string text, message;
  } cases[] = {
      {"", "not a JSON object"},
      {"{\"format\": ", "not a JSON object"},
      {"[1, 2]", "not a JSON object"},
      {replaced("mantissa.dynamic_loss_scaler", "torch.cuda.amp.GradScaler"),
       "format is \"torch.cuda.amp.GradScaler\""},
      {replaced("\"version\": 1", "\"version\": 2"), "version 2; this library reads version 1"},
      {replaced("\"growth_tracker\"", "\"growth_trackerx\""), "lacks a valid \"growth_tracker\""},
      {replaced("\"hysteresis_left\": 1", "\"hysteresis_left\": 1.5"),
       "lacks a valid \"hysteresis_left\""},
      {replaced("\"scale\": 65536.0", "\"scale\": -1.0"), "inconsistent"},
      {replaced("\"growth_interval\": 2000", "\"growth_interval\": 0"), "growth_interval is 0"},
      // A value nested 100k deep: refused before parsing (echoing it in a message would
      // recurse once per level and overflow the stack).
      {replaced("\"history\": [", "\"history\": [" + std::string(100000, '[')),
       "levels deep (at most 64)"},
      {std::string(100000, '[') + std::string(100000, ']'), "nested 100000 levels deep"},
      // Values out of their fields' ranges: an int32 that would wrap, an fp32 that would be inf
      // (and be saved back as null), a history longer than history_limit.
      {replaced("\"hysteresis_left\": 1", "\"hysteresis_left\": 4294967297"),
       "\"hysteresis_left\" is 4294967297, out of its field's range"},
      {replaced("\"growth_tracker\": 1", "\"growth_tracker\": -2147483649"),
       "\"growth_tracker\" is -2147483649"},
      {replaced("\"best_scale\": ", "\"best_scale\": 1e300, \"was\": "),
       "\"best_scale\" is 1e+300"},
      {[&] {
         std::string t = replaced("\"history_limit\": 1024", "\"history_limit\": 0");
         return t.replace(t.find("\"history\": ["), 12, "\"history\": [[1, 2.0]");
       }(),
       "history holds 1 entries, more than its history_limit 0"},
      {replaced("\"history\": [", "\"history\": [[1, 1e39]"), "not [step, scale] with a finite"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const mantissa::Status st = s.load_state(c.text);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
    EXPECT_EQ(s.state(), good);
  }
}

TEST(LossScaler, OptionsAreValidated) {
  const struct {
    LossScalerOptions o;
    const char* message;
  } cases[] = {
      {{.init_scale = 0.0f}, "init_scale is 0"},
      {{.init_scale = std::numeric_limits<float>::infinity()}, "init_scale is inf"},
      {{.growth_factor = 1.0}, "growth_factor is 1"},
      {{.backoff_factor = 1.0}, "backoff_factor is 1"},
      {{.backoff_factor = 0.0}, "backoff_factor is 0"},
      {{.growth_interval = 0}, "growth_interval is 0"},
      {{.growth_interval = int64_t{1} << 31}, "growth_interval is 2147483648"},
      {{.hysteresis = 0}, "hysteresis is 0"},
      {{.min_scale = 1e9f}, "min_scale is 1000000000"},
      {{.history_limit = -1}, "history_limit is -1"},
  };
  for (const auto& c : cases) {
    DynamicLossScaler s;
    const mantissa::Status st = DynamicLossScaler::create(c.o, &s);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid) << c.message;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("DynamicLossScaler"), std::string::npos);
  }
  EXPECT_EQ(DynamicLossScaler::create({}, nullptr).code(), StatusCode::kParamNullptr);
}

TEST(LossScaler, CallsOutOfOrderAreRejected) {
  DynamicLossScaler s;
  Grads g;
  auto noop = [](const StepScaling&) { return mantissa::Status{}; };
  EXPECT_EQ(s.update().code(), StatusCode::kParamInvalid);  // nothing checked
  ASSERT_TRUE(s.check(g.views).ok());
  EXPECT_EQ(s.step(g.views, noop).code(), StatusCode::kParamInvalid);  // still scaled
  ASSERT_TRUE(s.step_fused(g.views, noop).ok());
  EXPECT_EQ(s.step_fused(g.views, noop).code(), StatusCode::kParamInvalid);  // twice
  EXPECT_EQ(s.unscale(g.views).code(), StatusCode::kParamInvalid);           // after the step
  ASSERT_TRUE(s.update().ok());
  ASSERT_TRUE(s.unscale(g.views).ok());
  EXPECT_EQ(s.step_fused(g.views, noop).code(), StatusCode::kParamInvalid);  // not scaled
  EXPECT_EQ(s.step(g.views, nullptr).code(), StatusCode::kParamNullptr);
  // A bad gradient list is the operator's error, and the scaler's phase is unchanged.
  const TensorView bad(g.a.data(), DType::kInt32, {4});
  EXPECT_EQ(s.unscale(std::span<const TensorView>(&bad, 1)).code(), StatusCode::kParamInvalid);
  ASSERT_TRUE(s.step(g.views, noop).ok());
  ASSERT_TRUE(s.update().ok());
}

}  // namespace

}  // namespace mantissa::testing
