// AnomalyDetector: each pattern fires on a constructed case and stays silent on healthy
// gradients; counts and norms are exact and the same on every target and thread count; the pass
// fused with the loss scaler's unscale gives the bits of the separate passes; reports parse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "mantissa/amp/anomaly.h"
#include "mantissa/amp/loss_scaler.h"
#include "mantissa/dtype.h"
#include "mantissa/reduce.h"
#include "mantissa/runtime.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::amp::AnomalyDetector;
using mantissa::amp::AnomalyReport;
using mantissa::amp::DynamicLossScaler;
using mantissa::amp::InspectContext;

// A model's gradients: fp32, fp16 and bf16 tensors of mixed sizes (empty and 1 included), values
// N(0, sigma).
struct Model {
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<uint16_t>> f16, b16;
  std::vector<TensorView> views;
  std::vector<std::string> names;
  explicit Model(float sigma, uint32_t seed = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    const int64_t sizes[] = {5000, 1, 0, 70000, 4096, 4097, 33, 12345};
    int k = 0;
    for (int64_t n : sizes) {
      const int kind = k++ % 3;
      if (kind == 0) {
        f32.emplace_back(static_cast<std::size_t>(n));
        for (auto& v : f32.back()) v = normal(rng);
      } else if (kind == 1) {
        f16.emplace_back(static_cast<std::size_t>(n));
        for (auto& v : f16.back()) v = mantissa::float_to_fp16_bits(normal(rng));
      } else {
        b16.emplace_back(static_cast<std::size_t>(n));
        for (auto& v : b16.back()) v = mantissa::float_to_bf16_bits(normal(rng));
      }
    }
    // Views after every vector is in place (no reallocation afterwards).
    std::size_t i32 = 0, i16 = 0, ib = 0;
    k = 0;
    for (int64_t n : sizes) {
      const int kind = k++ % 3;
      if (kind == 0) views.push_back(TensorView(f32[i32++].data(), DType::kFloat32, {n}));
      if (kind == 1) views.push_back(TensorView(f16[i16++].data(), DType::kFloat16, {n}));
      if (kind == 2) views.push_back(TensorView(b16[ib++].data(), DType::kBFloat16, {n}));
      names.push_back("layer" + std::to_string(names.size()) + ".weight");
    }
  }
  Model(const Model&) = delete;
};

AnomalyReport inspect(const Model& m, const InspectContext& ctx = {}) {
  AnomalyDetector d;
  AnomalyReport r;
  EXPECT_TRUE(d.inspect(m.views, m.names, ctx, &r).ok());
  return r;
}

const mantissa::amp::Finding* find(const AnomalyReport& r, const std::string& pattern) {
  for (const auto& f : r.findings) {
    if (f.pattern == pattern) return &f;
  }
  return nullptr;
}

TEST(AnomalyDetector, HealthyGradientsAreSilentAndNormsAreExact) {
  const Model m(0.01f);
  const AnomalyReport r = inspect(m);
  EXPECT_TRUE(r.healthy()) << r.text();
  EXPECT_FALSE(r.found_inf);
  ASSERT_EQ(r.tensors.size(), m.views.size());
  // Each tensor's sum of squares is dot(x, x) with the naive method in fp64 (exact products),
  // bit for bit; the global norm sums those in list order.
  double total = 0.0;
  for (std::size_t i = 0; i < m.views.size(); ++i) {
    double ss = 0.0;
    ASSERT_TRUE(
        mantissa::dot(m.views[i], m.views[i], &ss,
                      {mantissa::ReduceMethod::kNaive, mantissa::ReduceAccumulator::kFloat64})
            .ok());
    EXPECT_EQ(r.tensors[i].norm, std::sqrt(ss)) << m.names[i];
    EXPECT_EQ(r.tensors[i].name, m.names[i]);
    total += ss;
  }
  EXPECT_EQ(r.global_norm, std::sqrt(total));
}

TEST(AnomalyDetector, SameBitsOnEveryTargetAndThreadCount) {
  Model m(1.0f, 5);
  m.f32[1][1234] = std::numeric_limits<float>::quiet_NaN();
  m.f32[0][7] = 1e-9f;  // underflows in fp16
  const std::string reference = inspect(m).json();
  mantissa::testing::ThreadCountGuard guard;
  mantissa::testing::for_each_target([&](const std::string&) {
    for (int threads : {1, 2, 3, 7}) {
      ASSERT_TRUE(mantissa::set_num_threads(threads).ok());
      EXPECT_EQ(inspect(m).json(), reference) << threads << " threads";
    }
  });
}

TEST(AnomalyDetector, NanAndInfAreFoundWithTheirFirstIndex) {
  Model m(0.01f);
  m.f32[1][4100] = std::numeric_limits<float>::infinity();
  m.f32[1][9000] = -std::numeric_limits<float>::infinity();
  m.b16[1][77] = mantissa::float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN());
  const AnomalyReport r = inspect(m, {.loss = 2.5});
  EXPECT_TRUE(r.found_inf);
  const auto* f = find(r, "nan_inf");
  ASSERT_NE(f, nullptr) << r.text();
  EXPECT_EQ(f->severity, 10);  // NaN present, two tensors
  EXPECT_EQ(f->count, 3);
  EXPECT_EQ(f->tensor, "layer3.weight");  // the first tensor (in list order) holding one
  EXPECT_EQ(f->first_index, 4100);
  ASSERT_EQ(f->values.size(), 1u);
  EXPECT_EQ(f->values[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.tensors[3].pos_inf, 1);
  EXPECT_EQ(r.tensors[3].neg_inf, 1);
  EXPECT_EQ(r.tensors[5].nan, 1);
  EXPECT_EQ(r.tensors[5].first_nonfinite, 77);
  EXPECT_NE(f->root_cause.find("backward pass overflowed"), std::string::npos) << f->root_cause;
  EXPECT_EQ(find(r, "explosion"), nullptr);  // no norm finding when the norm is not finite
  EXPECT_FALSE(f->actions.empty());
}

TEST(AnomalyDetector, NonFiniteLossIsTheForwardPasss) {
  const Model m(0.01f);
  const AnomalyReport r = inspect(m, {.loss = std::numeric_limits<double>::quiet_NaN()});
  const auto* f = find(r, "nan_inf");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, 9);
  EXPECT_NE(f->root_cause.find("forward pass"), std::string::npos) << f->root_cause;
}

TEST(AnomalyDetector, ExplosionAndVanishing) {
  const Model big(50.0f);  // norm about 50 * sqrt(96000) = 1.5e4 ... scaled up below
  AnomalyDetector d;
  ASSERT_TRUE(AnomalyDetector::create({.explosion_norm = 100.0, .vanishing_norm = 1e-3}, &d).ok());
  AnomalyReport r;
  ASSERT_TRUE(d.inspect(big.views, big.names, {}, &r).ok());
  const auto* f = find(r, "explosion");
  ASSERT_NE(f, nullptr) << r.text();
  // 6 + floor(log10(norm / 100)); norm is about 1.5e4.
  EXPECT_EQ(f->severity, 6 + static_cast<int>(std::floor(std::log10(r.global_norm / 100.0))));
  EXPECT_EQ(f->tensor, "layer3.weight");  // the largest tensor has the largest norm
  EXPECT_EQ(f->values[0], r.global_norm);

  const Model tiny(1e-9f);
  ASSERT_TRUE(d.inspect(tiny.views, tiny.names, {}, &r).ok());
  f = find(r, "vanishing");
  ASSERT_NE(f, nullptr) << r.text();
  EXPECT_EQ(f->severity,
            std::min(8, 4 + static_cast<int>(std::floor(std::log10(1e-3 / r.global_norm)))));
  EXPECT_EQ(find(r, "explosion"), nullptr);
}

TEST(AnomalyDetector, UnderflowInTheWorkingDtype) {
  Model m(0.01f);
  // 2^-25 and below round to zero in fp16; 2^-24 does not.
  for (int i = 0; i < 30; ++i) m.f32[0][static_cast<std::size_t>(i)] = 0x1p-25f;
  m.f32[0][100] = 0x1p-24f;
  m.f32[0][101] = -0x1p-26f;
  const AnomalyReport r = inspect(m);
  EXPECT_EQ(r.tensors[0].underflow, 31);
  const auto* f = find(r, "underflow");
  ASSERT_NE(f, nullptr) << r.text();
  EXPECT_EQ(f->count, 31);
  EXPECT_EQ(f->tensor, "layer0.weight");
  EXPECT_EQ(f->severity, 3);  // 31 / 10 is under one decade over the threshold
  // bf16 reaches 2^-133: the same values do not underflow there.
  AnomalyDetector d;
  ASSERT_TRUE(AnomalyDetector::create({.working_dtype = DType::kBFloat16}, &d).ok());
  AnomalyReport rb;
  ASSERT_TRUE(d.inspect(m.views, m.names, {}, &rb).ok());
  EXPECT_EQ(rb.tensors[0].underflow, 0);
  EXPECT_EQ(find(rb, "underflow"), nullptr);
}

TEST(AnomalyDetector, AboveTheFp16Maximum) {
  Model m(0.01f);
  m.f32[0][3] = 65504.0f;  // the maximum itself is fine
  m.f32[0][4] = 65505.0f;
  m.f32[0][5] = -1e6f;
  EXPECT_EQ(inspect(m).tensors[0].above_fp16_max, 2);
}

TEST(AnomalyDetector, LossScaleCollapse) {
  DynamicLossScaler s;
  ASSERT_TRUE(DynamicLossScaler::create({.init_scale = 1024.0f, .min_scale = 1.0f}, &s).ok());
  Model m(0.01f);
  m.f32[0][0] = std::numeric_limits<float>::infinity();
  AnomalyReport r;
  for (int step = 0; step < 12; ++step) {
    ASSERT_TRUE(s.check(m.views).ok());
    ASSERT_TRUE(s.update().ok());
  }
  EXPECT_EQ(s.scale(), 1.0f);
  r = inspect(m, {.loss = std::nullopt, .scaler = &s});
  const auto* f = find(r, "scale_collapse");
  ASSERT_NE(f, nullptr) << r.text();
  // 7, +1 at the floor, +1 at the floor with 12 >= 8 overflows in a row (not yet 16: no +1).
  EXPECT_EQ(f->severity, 9);
  EXPECT_EQ(f->count, 12);
  // Healthy gradients with a healthy scaler: silent.
  DynamicLossScaler fresh;
  const Model ok(0.01f);
  EXPECT_TRUE(inspect(ok, {.loss = std::nullopt, .scaler = &fresh}).healthy());
}

TEST(AnomalyDetector, FusedWithUnscaleGivesTheSeparatePassesBits) {
  for (const bool poison : {false, true}) {
    SCOPED_TRACE(poison);
    Model fused(100.0f, 9), separate(100.0f, 9);
    if (poison) {
      fused.f16[1][5] = mantissa::float_to_fp16_bits(std::numeric_limits<float>::infinity());
      separate.f16[1][5] = fused.f16[1][5];
    }
    DynamicLossScaler a, b;
    ASSERT_TRUE(DynamicLossScaler::create({.init_scale = 3.0f}, &a).ok());
    ASSERT_TRUE(DynamicLossScaler::create({.init_scale = 3.0f}, &b).ok());
    AnomalyDetector d;
    AnomalyReport r_fused, r_separate;
    ASSERT_TRUE(a.unscale_and_inspect(fused.views, d, fused.names, &r_fused).ok());
    ASSERT_TRUE(b.unscale(separate.views).ok());
    ASSERT_TRUE(
        d.inspect(separate.views, separate.names, {.loss = std::nullopt, .scaler = &b}, &r_separate)
            .ok());
    EXPECT_EQ(fused.f32, separate.f32);
    EXPECT_EQ(fused.f16, separate.f16);
    EXPECT_EQ(fused.b16, separate.b16);
    EXPECT_EQ(a.found_inf(), poison);
    EXPECT_EQ(b.found_inf(), poison);
    // Counts are judged on the inputs (NaN/Inf) and on the unscaled values (the rest), so they
    // agree with the separate inspection of the unscaled gradients.
    EXPECT_EQ(r_fused.json(), r_separate.json());
  }
}

TEST(AnomalyDetector, ReportsAreTextAndValidJson) {
  Model m(0.01f);
  m.f32[0][0] = std::numeric_limits<float>::quiet_NaN();
  const AnomalyReport r = inspect(m, {.loss = 1.0});
  const std::string text = r.text();
  EXPECT_NE(text.find("[severity 9] nan_inf"), std::string::npos) << text;
  EXPECT_NE(text.find("evidence: tensor layer0.weight"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(r.json());
  EXPECT_EQ(j["found_inf"], true);
  EXPECT_EQ(j["healthy"], false);
  EXPECT_EQ(j["findings"][0]["pattern"], "nan_inf");
  EXPECT_EQ(j["findings"][0]["evidence"]["values"][0], "nan");
  EXPECT_EQ(j["global_norm"], "nan");
  EXPECT_EQ(j["tensors"].size(), m.views.size());
  EXPECT_EQ(j["tensors"][0]["nan"], 1);
  EXPECT_TRUE(nlohmann::json::parse(inspect(Model(0.01f)).json())["healthy"].get<bool>());
}

TEST(AnomalyDetector, InvalidInputsAreRejected) {
  Model m(0.01f);
  AnomalyDetector d;
  AnomalyReport r;
  const std::vector<std::string> two = {"a", "b"};
  EXPECT_EQ(d.inspect(m.views, two, {}, &r).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(d.inspect(m.views, {}, {}, nullptr).code(), StatusCode::kParamNullptr);
  const TensorView bad(m.f32[0].data(), DType::kInt32, {4});
  const mantissa::Status st = d.inspect(std::span<const TensorView>(&bad, 1), {}, {}, &r);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_EQ(st.message().rfind("AnomalyDetector: ", 0), 0u) << st.message();
  EXPECT_EQ(AnomalyDetector::create({.explosion_norm = 0.0}, &d).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(AnomalyDetector::create({.vanishing_norm = 1e7}, &d).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(AnomalyDetector::create({.working_dtype = DType::kFloat32}, &d).code(),
            StatusCode::kParamInvalid);
  EXPECT_EQ(AnomalyDetector::create({.collapse_overflows = 0}, &d).code(),
            StatusCode::kParamInvalid);
}

}  // namespace

}  // namespace mantissa::testing
