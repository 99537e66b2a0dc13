// The precision analysis of `mantissa train --analyze`: the fp64 shadow against an independent
// fp64 forward written here (and its gradients against central differences of that forward's
// loss), a constructed network whose one catastrophically cancelling Linear the analysis must
// point at, and errors at the rounding level of each mode's dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "mantissa/dtype.h"
#include "trainer/mlp/analyze.h"
#include "trainer/mlp/model.h"
#include "trainer/train.h"

namespace mantissa::train {
namespace {

using detail::Mlp;
using detail::Parameter;

void set_param(Parameter& p, const std::vector<float>& values) {
  ASSERT_EQ(static_cast<int64_t>(values.size()), p.var.numel());
  for (std::size_t i = 0; i < values.size(); ++i) {
    store_from_float(p.var.dtype(), p.var.data(), i, values[i]);
    if (!p.working.empty()) store_from_float(p.working.dtype(), p.working.data(), i, values[i]);
  }
}

std::vector<double> weights64(const Parameter& p) {
  const auto& w = p.weights();
  std::vector<double> v(static_cast<std::size_t>(w.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = load_as_float(w.dtype(), w.data(), i);
  return v;
}

const TensorError& find(const AnalysisReport& r, const std::string& layer,
                        const std::string& tensor) {
  for (const auto& t : r.tensors) {
    if (t.layer == layer && t.tensor == tensor) return t;
  }
  ADD_FAILURE() << "no " << layer << " " << tensor;
  static TensorError none;
  return none;
}

// Linear -> LayerNorm -> ReLU -> Linear and the mean cross-entropy, straight from the
// definitions, with the weights as flat vectors (w0 [in, h], b0, g, beta, w1 [h, c], b1).
struct Net {
  int64_t in, h, c;
  std::vector<double> w0, b0, g, beta, w1, b1;
  double loss(const std::vector<float>& x, const std::vector<int32_t>& y, int64_t rows,
              std::vector<std::vector<double>>* acts = nullptr) const {
    double total = 0.0;
    if (acts) acts->assign(4, {});
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> a(h), n(h), z(h), o(c);
      for (int64_t j = 0; j < h; ++j) {
        a[j] = b0[j];
        for (int64_t k = 0; k < in; ++k) a[j] += double(x[r * in + k]) * w0[k * h + j];
      }
      double mean = 0.0, var = 0.0;
      for (double v : a) mean += v;
      mean /= double(h);
      for (double v : a) var += (v - mean) * (v - mean);
      var /= double(h);
      for (int64_t j = 0; j < h; ++j) {
        n[j] = (a[j] - mean) / std::sqrt(var + 1e-5) * g[j] + beta[j];
        z[j] = std::max(n[j], 0.0);
      }
      for (int64_t j = 0; j < c; ++j) {
        o[j] = b1[j];
        for (int64_t k = 0; k < h; ++k) o[j] += z[k] * w1[k * c + j];
      }
      double mx = *std::max_element(o.begin(), o.end()), s = 0.0;
      for (double v : o) s += std::exp(v - mx);
      total += std::log(s) + mx - o[y[r]];
      if (acts) {
        for (auto [i, v] : {std::pair{0, &a}, {1, &n}, {2, &z}, {3, &o}}) {
          (*acts)[i].insert((*acts)[i].end(), v->begin(), v->end());
        }
      }
    }
    return total / double(rows);
  }
};

Net net_of(const Mlp& m) {
  const auto& p = m.params();
  const auto& L = m.layers();
  return {L[0].in,         L[0].out,        L[3].out,        weights64(p[0]), weights64(p[1]),
          weights64(p[2]), weights64(p[3]), weights64(p[4]), weights64(p[5])};
}

TEST(Analyze, ShadowMatchesAnIndependentFp64Computation) {
  const int64_t in = 5, h = 6, c = 3, rows = 7;
  const std::vector<int64_t> widths{in, h, c};
  Mlp model(widths, Activation::kRelu, detail::precision_of(Mode::kBf16Amp), Optimizer::kAdamW, 3);
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(in * rows);
  for (float& v : x) v = normal(gen);
  // LayerNorm's affine parameters away from 1 and 0, so that their gradients are tested too.
  set_param(model.params()[2], {1.5f, 0.75f, -1.25f, 1.0f, 0.5f, 2.0f});
  set_param(model.params()[3], {0.25f, -0.5f, 0.125f, 0.0f, 1.0f, -0.75f});
  const std::vector<int32_t> y{0, 1, 2, 1, 0, 2, 2};
  const float scale = 1024.0f;
  AnalysisReport report;
  detail::ShadowTrace trace;
  ASSERT_TRUE(detail::analyze_model(model, x.data(), y.data(), rows, scale, &report, &trace).ok());

  Net net = net_of(model);
  std::vector<std::vector<double>> acts;
  const double loss = net.loss(x, y, rows, &acts);
  EXPECT_NEAR(trace.loss, loss, 1e-13);
  EXPECT_DOUBLE_EQ(report.shadow_loss, trace.loss);
  ASSERT_EQ(trace.activations.size(), 4u);
  for (int l = 0; l < 4; ++l) {
    ASSERT_EQ(trace.activations[l].size(), acts[l].size()) << l;
    for (std::size_t i = 0; i < acts[l].size(); ++i) {
      EXPECT_NEAR(trace.activations[l][i], acts[l][i], 1e-12) << l << " " << i;
    }
  }
  // Weight gradients (of loss * scale) against central differences of the loss above.
  struct Case {
    int layer;
    std::vector<double>* w;
  };
  for (Case cs : {Case{0, &net.w0}, Case{1, &net.g}, Case{3, &net.w1}}) {
    const std::vector<double>& grad = trace.grad_weights[cs.layer];
    ASSERT_EQ(grad.size(), cs.w->size()) << cs.layer;
    for (std::size_t i = 0; i < grad.size(); ++i) {
      const double keep = (*cs.w)[i], step = 1e-6;
      (*cs.w)[i] = keep + step;
      const double up = net.loss(x, y, rows);
      (*cs.w)[i] = keep - step;
      const double down = net.loss(x, y, rows);
      (*cs.w)[i] = keep;
      const double numeric = (up - down) / (2 * step) * scale;
      EXPECT_NEAR(grad[i], numeric, 1e-6 * scale) << cs.layer << " " << i;
    }
  }
  // The fp64 shadow is bf16's independent reference: every tensor differs from it, at bf16's
  // rounding level where nothing amplifies.
  const TensorError& a0 = find(report, "linear0", "activation");
  EXPECT_GT(a0.rel_error_norm, 0.0);
  EXPECT_LT(a0.rel_error_norm, 1e-2);
}

// x = [0, 3, 4] through an identity Linear, LayerNorm (h = [-7, 2, 5] / 3 * rstd) and ReLU gives
// [0, h1, h2] with h1 / h2 = 0.4 exactly; the classifier's column [0, 1, -w] with w the 16-bit
// rounding of 0.4 leaves h1 - w h2 = (0.4 - w) h2, about 1e-3 of the terms: the rounding errors
// of h1 and h2 (independent, 2^-9 relative in bf16) become an O(1) error of the logits.
std::unique_ptr<Mlp> cancelling_model(Mode mode) {
  const std::vector<int64_t> widths{3, 3, 2};
  auto m = std::make_unique<Mlp>(widths, Activation::kRelu, detail::precision_of(mode),
                                 Optimizer::kAdamW, 0);
  set_param(m->params()[0], {1, 0, 0, 0, 1, 0, 0, 0, 1});
  set_param(m->params()[1], {0, 0, 0});
  set_param(m->params()[4], {0, 0, 1, -1, -0.4f, 0.4f});
  set_param(m->params()[5], {0, 0});
  return m;
}

AnalysisReport cancelling(Mode mode, std::unique_ptr<Mlp>* keep = nullptr) {
  std::unique_ptr<Mlp> owned = cancelling_model(mode);
  Mlp& m = *owned;
  const std::vector<float> x{0.0f, 3.0f, 4.0f};
  const std::vector<int32_t> y{0};
  AnalysisReport r;
  EXPECT_TRUE(detail::analyze_model(m, x.data(), y.data(), 1, 1.0f, &r).ok());
  if (keep) *keep = std::move(owned);
  return r;
}

TEST(Analyze, PointsAtTheCancellingLayer) {
  std::unique_ptr<Mlp> m;
  const AnalysisReport r = cancelling(Mode::kBf16Amp, &m);
  // The exact logits, from the known values: rstd = 1 / sqrt(78/27 + 1e-5).
  const double rstd = 1.0 / std::sqrt(78.0 / 27.0 + 1e-5);
  const double h1 = 2.0 / 3.0 * rstd, h2 = 5.0 / 3.0 * rstd;
  const double w = load_as_float(DType::kBFloat16, m->params()[4].working.data(), 4);
  ASSERT_NE(w, -0.4);
  const double exact = h1 + w * h2;  // w is the rounding of -0.4
  // The mode's logits from its own (bf16) ReLU outputs: what the analysis measures as error.
  const auto& z = m->output(2);
  const double zm1 = load_as_float(z.dtype(), z.data(), 1),
               zm2 = load_as_float(z.dtype(), z.data(), 2);
  const double expected_error = std::fabs((zm1 + w * zm2) - exact) / std::fabs(exact);
  const TensorError& lin1 = find(r, "linear1", "activation");
  EXPECT_GT(expected_error, 0.05);
  EXPECT_NEAR(lin1.rel_error_norm, expected_error, 0.02 * expected_error + 4e-3);
  // Its amplification and condition dwarf every other forward tensor's.
  EXPECT_GT(lin1.condition, 500.0);
  EXPECT_GT(lin1.amplification, 20.0);
  for (const auto& t : r.tensors) {
    if (t.tensor != "activation" || t.layer == "linear1") continue;
    EXPECT_FALSE(t.amplification * 10 >= lin1.amplification) << t.layer;  // NaN: exact input
    EXPECT_LT(t.condition * 100, lin1.condition) << t.layer;
    EXPECT_LT(t.rel_error_norm, 4e-3) << t.layer;
  }
  // Exact where the mode is exact; one RNE rounding (at most half an ulp) where the mode rounds
  // exact inputs once: the first Linear of (0, 3, 4) by the identity, and LayerNorm's output.
  const TensorError& l0 = find(r, "linear0", "activation");
  EXPECT_EQ(l0.rel_error_max, 0.0);
  EXPECT_EQ(l0.ulp_max, 0.0);
  const TensorError& n0 = find(r, "layernorm0", "activation");
  EXPECT_GT(n0.ulp_max, 0.0);
  EXPECT_LE(n0.ulp_max, 0.5 + 1e-6);
  EXPECT_LE(n0.rel_error_max, std::ldexp(1.0, -8));
  // Sign flips of the logits: the mode's stored values against the exact ones.
  const auto& logits = m->output(3);
  int64_t flips = 0;
  for (int j = 0; j < 2; ++j) {
    const double mj = load_as_float(logits.dtype(), logits.data(), j);
    flips += (mj > 0) != ((j == 0 ? exact : -exact) > 0) ? 1 : 0;
  }
  EXPECT_EQ(lin1.sign_flips, flips);
  // The layer's own arithmetic adds only its output's rounding: the error is inherited.
  EXPECT_LT(lin1.local, 4e-3);
  EXPECT_GT(lin1.propagated, 0.05);

  // fp32: its weight is the fp32 rounding of -0.4, 1e-8 relative off, so the cancellation is
  // deeper still: the condition estimate follows.
  const AnalysisReport r32 = cancelling(Mode::kFp32);
  const TensorError& lin32 = find(r32, "linear1", "activation");
  EXPECT_GT(lin32.condition, 1e6);
  for (const auto& t : r32.tensors) {
    if (t.tensor != "activation" || t.layer == "linear1") continue;
    EXPECT_LT(t.condition * 1000, lin32.condition) << t.layer;
    EXPECT_LT(t.rel_error_norm, 1e-6) << t.layer;
  }
}

// Sensitivity on the cancelling network: h1 and h2 alone in bf16 (LayerNorm's output, and
// ReLU's, which passes them on) wreck the logits; the cancelling Linear's own output in bf16
// costs one rounding; the first Linear's output (0, 3, 4) is exact in bf16 and costs nothing.
TEST(Analyze, SensitivityRanksTheLayersFeedingTheCancellation) {
  std::unique_ptr<Mlp> m = cancelling_model(Mode::kFp32);
  const std::vector<float> x{0.0f, 3.0f, 4.0f};
  const std::vector<int32_t> y{0};
  const auto s = detail::sensitivity(*m, x.data(), y.data(), 1, 1.0f, DType::kBFloat16);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].layer, "linear0");
  EXPECT_EQ(s[4].layer, "loss");
  EXPECT_EQ(s[0].logits_error, 0.0);
  EXPECT_GT(s[1].logits_error, 0.05);  // layernorm0
  EXPECT_GT(s[2].logits_error, 0.05);  // relu0
  EXPECT_GT(s[3].logits_error, 0.0);   // linear1: its own rounding
  EXPECT_LT(s[3].logits_error, std::ldexp(1.0, -8));
  EXPECT_EQ(s[4].logits_error, 0.0);  // the loss gradient comes after the logits
  EXPECT_GT(s[4].grad_error, 0.0);
  EXPECT_LT(s[4].grad_error, std::ldexp(1.0, -8));
  // The same rounding on layernorm0 through the mode's own passes: the analysis of bf16-amp
  // measures the same logits error as the shadow with layernorm0 alone rounded.
  const AnalysisReport r = cancelling(Mode::kBf16Amp);
  EXPECT_NEAR(find(r, "linear1", "activation").rel_error_norm, r.sensitivity[1].logits_error,
              0.05 * r.sensitivity[1].logits_error);
}

// A random model on random data: each mode's errors sit at its dtype's rounding level.
AnalysisReport random_model(Mode mode) {
  const int64_t in = 12, rows = 32;
  const std::vector<int64_t> widths{in, 24, 24, 5};
  Mlp m(widths, Activation::kGelu, detail::precision_of(mode), Optimizer::kAdamW, 7);
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(in * rows);
  for (float& v : x) v = normal(gen);
  std::vector<int32_t> y(rows);
  for (int64_t r = 0; r < rows; ++r) y[r] = static_cast<int32_t>(r % 5);
  AnalysisReport rep;
  EXPECT_TRUE(detail::analyze_model(m, x.data(), y.data(), rows,
                                    mode == Mode::kFp16Amp ? 1024.0f : 1.0f, &rep)
                  .ok());
  return rep;
}

TEST(Analyze, ErrorsAtTheDtypesRoundingLevel) {
  struct Level {
    Mode mode;
    double unit;  // 2^-p, half the spacing at 1
  };
  for (Level lv :
       {Level{Mode::kFp32, std::ldexp(1.0, -24)}, Level{Mode::kFp16Amp, std::ldexp(1.0, -11)},
        Level{Mode::kBf16Amp, std::ldexp(1.0, -8)}}) {
    const AnalysisReport r = random_model(lv.mode);
    ASSERT_EQ(r.tensors.size(), 7u + 1u + 11u);  // forward, loss, backward
    for (const auto& t : r.tensors) {
      // Each stored result is one rounding of the fp64 value of its inputs, give or take the
      // fp32 accumulation: local error of order u, no more than a few u.
      EXPECT_LT(t.local, 2.0 * lv.unit) << mode_name(lv.mode) << " " << t.layer << " " << t.tensor;
      if (t.tensor == "activation" && t.layer.rfind("linear", 0) == 0) {
        EXPECT_GT(t.local, 0.05 * lv.unit) << mode_name(lv.mode) << " " << t.layer;
        EXPECT_LT(t.rel_error_norm, 10.0 * lv.unit) << mode_name(lv.mode) << " " << t.layer;
        EXPECT_GT(t.ulp_mean, 0.05) << mode_name(lv.mode) << " " << t.layer;
        EXPECT_LT(t.ulp_mean, 20.0) << mode_name(lv.mode) << " " << t.layer;
      }
    }
  }
}

TEST(Analyze, PublicEntryTrainsThenAnalyses) {
  Dataset data;
  ASSERT_TRUE(load_dataset({.spec = "synthetic:200", .test_fraction = 0.2, .seed = 1}, &data).ok());
  TrainOptions o;
  o.hidden = {16};
  o.epochs = 1;
  o.batch_size = 32;
  AnalysisReport r;
  ASSERT_TRUE(analyze_precision(data, Mode::kFp16Amp, o, &r).ok());
  EXPECT_EQ(r.mode, Mode::kFp16Amp);
  EXPECT_EQ(r.epochs, 1);
  EXPECT_EQ(r.rows, 32);
  EXPECT_GT(r.loss_scale, 1.0f);  // fp16-amp's scaler
  EXPECT_NEAR(r.loss, r.shadow_loss, 1e-2 * r.shadow_loss);
  ASSERT_EQ(r.tensors.size(), 4u + 1u + 6u);
  EXPECT_EQ(r.tensors[4].layer, "loss");
  EXPECT_EQ(r.tensors.back().layer, "linear0");
  EXPECT_EQ(r.tensors.back().tensor, "grad_weight");
}

}  // namespace
}  // namespace mantissa::train
