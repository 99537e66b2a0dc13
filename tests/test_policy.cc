// Per-layer precision policies: the presets give the modes' digests bit for bit and the seed's
// preset equals its explicit file; a policy changes only what it names (one layer's compute
// dtype leaves every earlier layer's output bitwise as in fp32; one layer's stored dtype changes
// only that layer's weight gradient); strict parsing; and the sensitivity runs point at the
// layers of a constructed case (fp16 overflow behind huge weights, INT8 behind an outlier input).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mantissa/convert.h"
#include "trainer/mlp/model.h"
#include "trainer/mlp/policy.h"
#include "trainer/train.h"
#include "trainer/train_policy.h"

namespace mantissa::train {
namespace {

TrainOptions small_options(int epochs) {
  TrainOptions o;
  o.hidden = {32, 32};
  o.epochs = epochs;
  o.batch_size = 32;
  o.seed = 3;
  return o;
}

Dataset synthetic(int rows) {
  Dataset d;
  EXPECT_TRUE(load_dataset({.spec = "synthetic:" + std::to_string(rows), .seed = 5}, &d).ok());
  return d;
}

bool same_bits(const detail::Buffer& a, const detail::Buffer& b) {
  return a.dtype() == b.dtype() && a.bytes() == b.bytes() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.bytes())) == 0;
}

std::vector<float> widened(const detail::Buffer& b) {
  std::vector<float> v(static_cast<std::size_t>(b.numel()));
  for (int64_t i = 0; i < b.numel(); ++i) v[i] = load_as_float(b.dtype(), b.data(), i);
  return v;
}

TEST(Policy, PresetsGiveTheModesDigests) {
  const Dataset data = synthetic(240);
  const TrainOptions o = small_options(2);
  for (Mode mode : {Mode::kFp32, Mode::kBf16Amp, Mode::kFp16Amp}) {
    ModeResult m;
    ASSERT_TRUE(train_model(data, mode, o, {}, &m).ok());
    PrecisionPolicy p;
    ASSERT_TRUE(preset_policy(mode_name(mode), layer_names(o), &p).ok());
    PolicyResult r;
    ASSERT_TRUE(train_policy(data, p, o, {}, &r).ok());
    EXPECT_EQ(r.run.digest, m.digest) << mode_name(mode);
    EXPECT_EQ(r.run.state_bytes, m.state_bytes) << mode_name(mode);
  }
}

TEST(Policy, SeedPresetEqualsItsExplicitFile) {
  const Dataset data = synthetic(240);
  const TrainOptions o = small_options(2);
  const std::vector<std::string> names = layer_names(o);
  ASSERT_EQ(names, (std::vector<std::string>{"linear0", "layernorm0", "relu0", "linear1",
                                             "layernorm1", "relu1", "linear2"}));
  PrecisionPolicy preset, file, round_trip;
  ASSERT_TRUE(preset_policy("seed", names, &preset).ok());
  const std::string text = R"({
    "name": "seed-explicit",
    "default": {"compute": "bf16", "stored": "bf16", "update": "master"},
    "layers": {
      "linear0": {"compute": "fp32", "stored": "bf16"},
      "layernorm0": {"compute": "fp32", "stored": "bf16"},
      "layernorm1": {"compute": "fp32", "stored": "bf16"},
      "linear2": {"compute": "fp32", "stored": "bf16"}
    }
  })";
  ASSERT_TRUE(parse_policy(text, names, &file).ok());
  ASSERT_TRUE(parse_policy(policy_json(preset), names, &round_trip).ok());
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const PrecisionPolicy* p : {&file, &round_trip}) {
      EXPECT_EQ(p->layers[i].compute, preset.layers[i].compute) << names[i];
      EXPECT_EQ(p->layers[i].stored, preset.layers[i].stored) << names[i];
      EXPECT_EQ(p->layers[i].update, preset.layers[i].update) << names[i];
    }
  }
  PolicyResult a, b, fp32;
  ASSERT_TRUE(train_policy(data, preset, o, {}, &a).ok());
  ASSERT_TRUE(train_policy(data, file, o, {}, &b).ok());
  ASSERT_TRUE(train_policy(data,
                           uniform_policy("fp32", names, DType::kFloat32, DType::kFloat32,
                                          UpdateForm::kMaster),
                           o, {}, &fp32)
                  .ok());
  EXPECT_EQ(a.run.digest, b.run.digest);
  EXPECT_NE(a.run.digest, fp32.run.digest);  // the preset does change the run
  // Every stored input in bf16: half of fp32's bytes, LayerNorm's fp32 statistics aside.
  const int64_t stats = 2 * 2 * o.batch_size * 4;
  EXPECT_EQ(a.activation_bytes - stats, (fp32.activation_bytes - stats) / 2);
}

// The model of `policy` and the fp32 model, one forward, loss and backward on the same batch.
struct Pair {
  detail::Mlp fp32, policy;
};
Pair first_step(const Dataset& data, const TrainOptions& o, const PrecisionPolicy& policy) {
  std::vector<int64_t> widths{data.features};
  widths.insert(widths.end(), o.hidden.begin(), o.hidden.end());
  widths.push_back(data.classes);
  const PrecisionPolicy all32 =
      uniform_policy("fp32", layer_names(o), DType::kFloat32, DType::kFloat32, UpdateForm::kMaster);
  Pair p{detail::Mlp(widths, o.activation, detail::resolve_policy(all32), o.optimizer, o.seed),
         detail::Mlp(widths, o.activation, detail::resolve_policy(policy), o.optimizer, o.seed)};
  const int64_t rows = 32;
  for (detail::Mlp* m : {&p.fp32, &p.policy}) {
    double loss = 0;
    int64_t correct = 0;
    EXPECT_TRUE(m->forward(data.x_train.data(), rows).ok());
    EXPECT_TRUE(m->loss(data.y_train.data(), rows, 1.0f, &loss, &correct).ok());
    EXPECT_TRUE(m->backward().ok());
  }
  return p;
}

TEST(Policy, OneLayerIn16BitsLeavesEarlierLayersBitwiseEqual) {
  const Dataset data = synthetic(240);
  const TrainOptions o = small_options(1);
  const std::vector<std::string> names = layer_names(o);
  for (std::size_t k : {std::size_t{1}, std::size_t{3}, std::size_t{6}}) {
    PrecisionPolicy p =
        uniform_policy("one", names, DType::kFloat32, DType::kFloat32, UpdateForm::kMaster);
    p.layers[k].compute = p.layers[k].stored = DType::kBFloat16;
    Pair m = first_step(data, o, p);
    for (std::size_t i = 0; i < k; ++i) {
      EXPECT_TRUE(same_bits(m.fp32.output(i), m.policy.output(i))) << names[i];
    }
    const detail::Buffer& out = m.policy.output(k);
    EXPECT_EQ(out.dtype(), DType::kBFloat16) << names[k];
    EXPECT_NE(widened(out), widened(m.fp32.output(k))) << names[k];
    // Every master weight starts equal; the layer's gradients come in its dtype.
    for (std::size_t q = 0; q < m.fp32.params().size(); ++q) {
      EXPECT_TRUE(same_bits(m.fp32.params()[q].var, m.policy.params()[q].var));
    }
  }
}

TEST(Policy, StoredDtypeChangesOnlyThatLayersBackward) {
  const Dataset data = synthetic(240);
  const TrainOptions o = small_options(1);
  const std::vector<std::string> names = layer_names(o);
  PrecisionPolicy p =
      uniform_policy("stored", names, DType::kFloat32, DType::kFloat32, UpdateForm::kMaster);
  p.layers[3].stored = DType::kBFloat16;  // linear1 keeps its input in bf16
  Pair m = first_step(data, o, p);
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_TRUE(same_bits(m.fp32.output(i), m.policy.output(i))) << names[i];
  }
  EXPECT_LT(m.policy.stored_activation_bytes(32), m.fp32.stored_activation_bytes(32));
  // The Linear's input feeds only its weight gradient: every other gradient is bitwise equal.
  const std::vector<std::string> params = m.fp32.param_names();
  for (std::size_t q = 0; q < params.size(); ++q) {
    const bool touched = params[q] == "linear1.weight";
    EXPECT_EQ(same_bits(m.fp32.params()[q].grad, m.policy.params()[q].grad), !touched) << params[q];
  }
}

TEST(Policy, MixedUpdateFormsTrain) {
  const Dataset data = synthetic(240);
  const TrainOptions o = small_options(2);
  PrecisionPolicy p;
  const std::string text = R"({"name": "mixed", "default": {"compute": "bf16"},
    "layers": {"linear0": {"update": "kahan"}, "linear1": {"update": "sr"},
               "linear2": {"update": "plain"}, "layernorm0": {"compute": "fp32"}}})";
  ASSERT_TRUE(parse_policy(text, layer_names(o), &p).ok());
  PolicyResult r, again;
  ASSERT_TRUE(train_policy(data, p, o, {}, &r).ok());
  ASSERT_TRUE(train_policy(data, p, o, {}, &again).ok());
  EXPECT_EQ(r.run.digest, again.run.digest);
  EXPECT_GT(r.run.test_accuracy, 0.5);
}

TEST(Policy, InvalidFilesRefusedNamingTheKey) {
  const std::vector<std::string> names = layer_names(small_options(1));
  const std::string nested =
      R"({"name": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::pair<const char*, const char*> cases[] = {
      {"[1]", "must hold a JSON object"},
      // Nested 100k deep: refused before parsing, never echoed.
      {nested.c_str(), "nested 100001 levels deep (at most 64)"},
      {"{", "not JSON"},
      {R"({"nmae": "x"})", "unknown key 'nmae'"},
      {R"({"layers": {"linear9": {"compute": "bf16"}}})", "layers.linear9: no such layer"},
      {R"({"layers": {"linear0": {"compute": "fp8"}}})",
       "layers.linear0.compute: unknown dtype 'fp8'"},
      {R"({"layers": {"linear0": {"precision": "bf16"}}})",
       "unknown key 'layers.linear0.precision'"},
      {R"({"layers": {"linear0": {"compute": 16}}})", "layers.linear0.compute must be a string"},
      {R"({"layers": {"relu0": {"update": "kahan"}}})", "layers.relu0.update: the layer has no"},
      {R"({"layers": {"linear1": {"compute": "fp16", "update": "sr"}}})",
       "update 'sr' keeps bf16 weights and needs compute 'bf16', got 'fp16'"},
      {R"({"default": {"update": "kahan"}})", "needs compute 'bf16', got 'fp32'"},
      {R"({"layers": {"linear1": {"compute": "bf16", "stored": "fp32"}}})",
       "stored 'fp32' is wider than compute 'bf16'"},
      {R"({"loss_scaling": "static"})", "loss_scaling: unknown value 'static'"},
      {R"({"default": {"update": "adam"}})", "default.update: unknown update form 'adam'"},
  };
  for (const auto& [text, expected] : cases) {
    PrecisionPolicy out;
    out.name = "unchanged";
    const Status st = parse_policy(text, names, &out);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid) << text;
    EXPECT_NE(st.message().find(expected), std::string::npos) << text << " -> " << st.message();
    EXPECT_EQ(out.name, "unchanged");
  }
  PrecisionPolicy out;
  EXPECT_EQ(preset_policy("bf16-pure", names, &out).code(), StatusCode::kParamInvalid);
  // A GELU model names its activations gelu0, gelu1: relu0 is not one of its layers.
  TrainOptions gelu = small_options(1);
  gelu.activation = Activation::kGelu;
  const std::vector<std::string> gelu_names = layer_names(gelu);
  EXPECT_EQ(gelu_names[2], "gelu0");
  EXPECT_TRUE(parse_policy(R"({"layers": {"gelu0": {"compute": "bf16"}}})", gelu_names, &out).ok());
  EXPECT_EQ(parse_policy(R"({"layers": {"relu0": {"compute": "bf16"}}})", gelu_names, &out).code(),
            StatusCode::kParamInvalid);
  // A policy for another model is refused before training.
  PrecisionPolicy seven;
  ASSERT_TRUE(preset_policy("seed", names, &seven).ok());
  TrainOptions deeper = small_options(1);
  deeper.hidden = {32, 32, 32};
  PolicyResult r;
  EXPECT_EQ(train_policy(synthetic(120), seven, deeper, {}, &r).code(), StatusCode::kParamInvalid);
}

// Two Gaussian clusters in 4 columns; column 3 is noise whose first training row is 1000 (an
// outlier that sets linear0's per-tensor INT8 scale).
Dataset outlier_data() {
  Dataset d;
  d.source = "constructed";
  d.features = 4;
  d.classes = 2;
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  auto fill = [&](std::vector<float>* x, std::vector<int32_t>* y, int rows) {
    for (int r = 0; r < rows; ++r) {
      const int c = r % 2;
      for (int f = 0; f < 3; ++f) x->push_back((c ? 1.0f : -1.0f) + noise(rng));
      x->push_back(noise(rng));
      y->push_back(c);
    }
  };
  fill(&d.x_train, &d.y_train, 160);
  fill(&d.x_test, &d.y_test, 80);
  d.x_train[3] = 1000.0f;
  return d;
}

TEST(Policy, SensitivityPointsAtTheConstructedLayers) {
  const Dataset data = outlier_data();
  TrainOptions o = small_options(3);
  o.hidden = {16, 16};
  o.lr = 0.01f;
  // linear1's weights times 1e5: its output overflows fp16 (and so does layernorm1's input when
  // layernorm1 computes in fp16); bf16 and fp32 have the range.
  auto prepare = [](detail::Mlp& m) {
    detail::Parameter& w = m.params()[static_cast<std::size_t>(m.layers()[3].weight)];
    for (int64_t i = 0; i < w.var.numel(); ++i) w.var.f32()[i] *= 1e5f;
    if (!w.working.empty()) {
      for (int64_t i = 0; i < w.var.numel(); ++i)
        store_from_float(w.working.dtype(), w.working.data(), i, w.var.f32()[i]);
    }
  };
  SensitivityReport rep;
  int calls = 0;
  ASSERT_TRUE(detail::sensitivity_runs(
                  data, o, prepare, [&](int, int, const std::string&) { ++calls; }, &rep)
                  .ok());
  EXPECT_EQ(calls, 1 + 4 * 7 + 1);
  EXPECT_GT(rep.baseline_accuracy, 0.9);
  ASSERT_EQ(rep.training.size(), 14u);
  for (const SensitivityRow& r : rep.training) {
    const bool overflows = r.format == "fp16" && (r.layer == "linear1" || r.layer == "layernorm1");
    if (overflows) {
      EXPECT_FALSE(r.loss_change < 0.5) << r.layer << " " << r.format << " " << r.loss_change;
      EXPECT_GT(r.skipped_steps, 0) << r.layer;
    } else {
      EXPECT_LT(std::fabs(r.loss_change), 0.1) << r.layer << " " << r.format;
    }
  }
  const PrecisionPolicy fp16 = suggest_policy(rep, layer_names(o), "fp16", 0.02);
  for (const LayerPolicy& l : fp16.layers) {
    const bool kept = l.layer == "linear1" || l.layer == "layernorm1";
    EXPECT_EQ(l.compute, kept ? DType::kFloat32 : DType::kFloat16) << l.layer;
  }
  // Inference: the outlier sets the per-tensor INT8 scale of linear0's input and of
  // layernorm0's (linear0's output carries it); the clusters drown in one step of that scale.
  // FP8 keeps relative precision, and the layers behind LayerNorm never see the outlier.
  ASSERT_EQ(rep.inference.size(), 14u);
  for (const SensitivityRow& r : rep.inference) {
    const bool drowned = r.format == "int8" && (r.layer == "linear0" || r.layer == "layernorm0");
    if (drowned) {
      EXPECT_GT(r.loss_change, 0.3) << r.layer;
      EXPECT_LT(r.accuracy_change, -0.2) << r.layer;
    } else {
      EXPECT_LT(std::fabs(r.loss_change), 0.05) << r.layer << " " << r.format;
    }
  }
}

}  // namespace
}  // namespace mantissa::train
