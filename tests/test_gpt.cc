// The GPT of `mantissa train --model gpt`: its loss against an independent fp64 forward pass,
// its gradients against finite differences (every parameter tensor, both MLPs and both norms),
// the same digest on every SIMD target and thread count in every precision mode, precision per
// unit under a policy (presets equal to their modes, mixed storage, refusals, sensitivity), and
// the corpus checks.
#include <gtest/gtest.h>

#include <barrier>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "mantissa/amp/fp8_scaling.h"
#include "mantissa/lowp.h"
#include "mantissa/runtime.h"
#include "target_support.h"
#include "trainer/analyze.h"
#include "trainer/gpt.h"
#include "trainer/gpt_policy.h"
#include "trainer/gpt_train.h"
#include "trainer/lowp_gemm.h"
#include "trainer/rng.h"
#include "trainer/text.h"

namespace mantissa::testing {

namespace {

using trainer::Gpt;
using trainer::GptConfig;
using trainer::MlpKind;
using trainer::NormKind;
using trainer::Parameter;

GptConfig tiny(MlpKind mlp, NormKind norm, bool tied) {
  GptConfig c;
  c.vocab = 256;
  c.context = 8;
  c.d_model = 16;
  c.layers = 2;
  c.heads = 2;
  c.mlp = mlp;
  c.norm = norm;
  c.tied = tied;
  return c;
}

void random_tokens(int64_t n, uint64_t seed, std::vector<int32_t>* tokens,
                   std::vector<int32_t>* targets) {
  trainer::Rng rng(seed);
  tokens->resize(static_cast<std::size_t>(n));
  targets->resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    (*tokens)[i] = static_cast<int32_t>(rng.below(256));
    (*targets)[i] = static_cast<int32_t>(rng.below(256));
  }
}

// ---- An independent forward pass in fp64 (row-major loops, nothing shared with the trainer) ---

using Mat = std::vector<double>;  // row-major

const Parameter& find(const Gpt& m, const std::string& name) {
  for (const auto& p : m.params()) {
    if (p->name == name) return *p;
  }
  ADD_FAILURE() << "no parameter " << name;
  return *m.params()[0];
}

Mat values(const Parameter& p) {
  Mat v(static_cast<std::size_t>(p.var.numel()));
  for (int64_t i = 0; i < p.var.numel(); ++i) v[i] = load_as_float(p.var.dtype(), p.var.data(), i);
  return v;
}

// a [n, k] @ b [k, m]
Mat mm(const Mat& a, const Mat& b, int64_t n, int64_t k, int64_t m) {
  Mat c(static_cast<std::size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < m; ++j) c[i * m + j] += a[i * k + p] * b[p * m + j];
  return c;
}

Mat norm(const Gpt& m, const std::string& name, const Mat& x, int64_t rows, int64_t d) {
  const bool ln = m.config().norm == NormKind::kLayerNorm;
  const Mat w = values(find(m, name + ".weight"));
  const Mat b = ln ? values(find(m, name + ".bias")) : Mat(d, 0.0);
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &x[r * d];
    double mean = 0.0, sq = 0.0;
    for (int64_t j = 0; j < d; ++j) mean += row[j];
    mean = ln ? mean / d : 0.0;
    for (int64_t j = 0; j < d; ++j) sq += (row[j] - mean) * (row[j] - mean);
    const double rstd = 1.0 / std::sqrt(sq / d + (ln ? 1e-5 : 1e-6));
    for (int64_t j = 0; j < d; ++j) y[r * d + j] = (row[j] - mean) * rstd * w[j] + b[j];
  }
  return y;
}

double reference_loss(const Gpt& m, const std::vector<int32_t>& tokens,
                      const std::vector<int32_t>& targets, int64_t batch) {
  const GptConfig& c = m.config();
  const int64_t T = c.context, d = c.d_model, H = c.heads, dh = d / H, rows = batch * T;
  const Mat wte = values(find(m, "wte")), wpe = values(find(m, "wpe"));
  Mat x(static_cast<std::size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < d; ++j) x[r * d + j] = wte[tokens[r] * d + j] + wpe[(r % T) * d + j];
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string b = "block" + std::to_string(l) + ".";
    const Mat qkv =
        mm(norm(m, b + "norm1", x, rows, d), values(find(m, b + "attn.qkv")), rows, d, 3 * d);
    Mat att(static_cast<std::size_t>(rows * d), 0.0);
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t i = 0; i < T; ++i) {
          std::vector<double> p(static_cast<std::size_t>(i + 1));
          double mx = -1e300, sum = 0.0;
          for (int64_t j = 0; j <= i; ++j) {
            double dot = 0.0;
            for (int64_t e = 0; e < dh; ++e) {
              dot +=
                  qkv[(s * T + i) * 3 * d + h * dh + e] * qkv[(s * T + j) * 3 * d + d + h * dh + e];
            }
            p[j] = dot / std::sqrt(static_cast<double>(dh));
            mx = std::max(mx, p[j]);
          }
          for (double& v : p) sum += (v = std::exp(v - mx));
          for (int64_t j = 0; j <= i; ++j)
            for (int64_t e = 0; e < dh; ++e)
              att[(s * T + i) * d + h * dh + e] +=
                  p[j] / sum * qkv[(s * T + j) * 3 * d + 2 * d + h * dh + e];
        }
      }
    }
    const Mat proj = mm(att, values(find(m, b + "attn.proj")), rows, d, d);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    const int64_t hid = c.mlp_hidden(), up = c.mlp == MlpKind::kSwiGlu ? 2 * hid : hid;
    const Mat u = mm(norm(m, b + "norm2", x, rows, d), values(find(m, b + "mlp.up")), rows, d, up);
    Mat a(static_cast<std::size_t>(rows * hid));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < hid; ++j) {
        if (c.mlp == MlpKind::kGelu) {
          const double v = u[r * hid + j];
          a[r * hid + j] =
              0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
        } else {
          const double g = u[r * up + j], v = u[r * up + hid + j];
          a[r * hid + j] = g / (1.0 + std::exp(-g)) * v;
        }
      }
    }
    const Mat down = mm(a, values(find(m, b + "mlp.down")), rows, hid, d);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  const Mat xf = norm(m, "norm_f", x, rows, d);
  const Mat head = values(find(m, c.tied ? "wte" : "head"));  // [V, d]
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> z(static_cast<std::size_t>(c.vocab));
    double mx = -1e300, sum = 0.0;
    for (int64_t v = 0; v < c.vocab; ++v) {
      double dot = 0.0;
      for (int64_t j = 0; j < d; ++j) dot += xf[r * d + j] * head[v * d + j];
      z[v] = dot;
      mx = std::max(mx, dot);
    }
    for (double v : z) sum += std::exp(v - mx);
    total += mx + std::log(sum) - z[targets[r]];
  }
  return total / static_cast<double>(rows);
}

struct Shape {
  MlpKind mlp;
  NormKind norm;
  bool tied;
};

const Shape kShapes[] = {{MlpKind::kGelu, NormKind::kLayerNorm, true},
                         {MlpKind::kSwiGlu, NormKind::kRmsNorm, true},
                         {MlpKind::kGelu, NormKind::kRmsNorm, false},
                         {MlpKind::kSwiGlu, NormKind::kLayerNorm, false}};

std::string shape_name(const Shape& s) {
  return std::string(trainer::mlp_name(s.mlp)) + "/" + trainer::norm_name(s.norm) +
         (s.tied ? "/tied" : "/untied");
}

// Weights further from their initial values, so that every path carries gradient (the norms'
// weights away from 1, the biases away from 0).
void perturb(Gpt& m, uint64_t seed) {
  trainer::Rng rng(seed);
  for (auto& p : m.params()) {
    float* w = p->var.f32();
    for (int64_t i = 0; i < p->var.numel(); ++i) {
      // The attention's weights larger still, so that its scores are far from uniform.
      const double scale = p->var.shape().size() == 1 ? 0.1 : p->name.ends_with("qkv") ? 0.3 : 0.03;
      w[i] = static_cast<float>(w[i] + scale * rng.normal());
    }
  }
}

}  // namespace

TEST(GptForward, LossMatchesAnIndependentFp64Pass) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(shape_name(s));
    Gpt m(tiny(s.mlp, s.norm, s.tied), trainer::precision_of(train::Mode::kFp32), 7);
    perturb(m, 3);
    std::vector<int32_t> tokens, targets;
    random_tokens(3 * 8, 11, &tokens, &targets);
    double loss = 0.0;
    ASSERT_TRUE(m.forward(tokens.data(), targets.data(), 3, &loss).ok());
    const double ref = reference_loss(m, tokens, targets, 3);
    EXPECT_NEAR(loss, ref, 2e-6 * ref);
    EXPECT_GT(loss, 1.0);
  }
}

TEST(GptBackward, EveryParameterMatchesFiniteDifferences) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(shape_name(s));
    Gpt m(tiny(s.mlp, s.norm, s.tied), trainer::precision_of(train::Mode::kFp32), 5);
    perturb(m, 9);
    std::vector<int32_t> tokens, targets;
    random_tokens(2 * 8, 13, &tokens, &targets);
    double loss = 0.0;
    ASSERT_TRUE(m.forward(tokens.data(), targets.data(), 2, &loss).ok());
    ASSERT_TRUE(m.backward(1.0f).ok());
    trainer::Rng rng(21);
    for (auto& p : m.params()) {
      SCOPED_TRACE(p->name);
      // Single weights picked at random: the analytic change of the loss between w - h and
      // w + h as fp32 holds them, g * (w+ - w-), against the difference of the fp64 reference
      // loss (no fp32 rounding in the difference).
      for (int k = 0; k < 10; ++k) {
        const int64_t i = rng.below(p->var.numel());
        float& w = p->var.f32()[i];
        const float saved = w;
        const double h = 1e-4 * std::max(1.0, std::abs(static_cast<double>(saved)));
        const float plus = static_cast<float>(saved + h), minus = static_cast<float>(saved - h);
        const double analytic = static_cast<double>(p->grad32[i]) *
                                (static_cast<double>(plus) - static_cast<double>(minus));
        w = plus;
        const double up = reference_loss(m, tokens, targets, 2);
        w = minus;
        const double down = reference_loss(m, tokens, targets, 2);
        w = saved;
        const double numeric = up - down;
        EXPECT_NEAR(analytic, numeric, 1e-3 * std::abs(numeric) + 1e-11)
            << "element " << i << ": analytic " << analytic << " numeric " << numeric;
      }
    }
  }
}

TEST(GptAnalysis, ShadowAgreesWithTheReferenceAndErrorsFollowTheStorage) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(shape_name(s));
    std::vector<int32_t> tokens, targets;
    random_tokens(2 * 8, 17, &tokens, &targets);
    // fp32: the shadow's loss is the independent fp64 pass's; every value is within fp32's
    // rounding of the shadow on the mode's own inputs.
    Gpt m32(tiny(s.mlp, s.norm, s.tied), trainer::precision_of(train::Mode::kFp32), 4);
    perturb(m32, 6);
    trainer::GptAnalysis a;
    ASSERT_TRUE(trainer::analyze_gpt(m32, tokens.data(), targets.data(), 2, 1.0f, &a).ok());
    EXPECT_NEAR(a.shadow_loss, reference_loss(m32, tokens, targets, 2), 1e-12 * a.shadow_loss);
    EXPECT_NEAR(a.loss, a.shadow_loss, 1e-6 * a.shadow_loss);
    bool saw_q = false, saw_probs = false;
    for (const auto& e : a.rows) {
      SCOPED_TRACE(e.name);
      EXPECT_EQ(e.dtype, "fp32");
      EXPECT_LT(e.local_norm, 1e-6);
      EXPECT_LT(e.rel_norm, 1e-5);
      saw_q |= e.name == "block0.attn.q";
      saw_probs |= e.name == "block1.attn.probs";
    }
    EXPECT_TRUE(saw_q && saw_probs);
    // The backward shadow: every value's and parameter's fp32 gradient within fp32's rounding of
    // fp64 (a wrong derivative in any shadow would be off by O(1)); every parameter has a row.
    std::size_t weight_rows = 0;
    bool saw_dq = false;
    for (const auto& e : a.grads) {
      SCOPED_TRACE(e.name);
      EXPECT_EQ(e.dtype, "fp32");
      EXPECT_LT(e.local_norm, 1e-5);
      EXPECT_LT(e.rel_norm, 1e-4);
      EXPECT_GT(e.shadow_rms, 0.0);
      weight_rows += e.name.rfind("dW:", 0) == 0 ? 1 : 0;
      saw_dq |= e.name == "d:block0.attn.q";
    }
    EXPECT_EQ(weight_rows, m32.params().size());
    EXPECT_TRUE(saw_dq);
    // The same with the loss scaled by 2^10: the gradients scale with it, the errors do not.
    trainer::GptAnalysis scaled;
    ASSERT_TRUE(trainer::analyze_gpt(m32, tokens.data(), targets.data(), 2, 1024.0f, &scaled).ok());
    ASSERT_EQ(scaled.grads.size(), a.grads.size());
    for (std::size_t i = 0; i < a.grads.size(); ++i) {
      EXPECT_DOUBLE_EQ(scaled.grads[i].shadow_rms, 1024 * a.grads[i].shadow_rms);
      EXPECT_LT(scaled.grads[i].rel_norm, 1e-4);
    }
    // bf16-amp: what is stored in bf16 carries bf16's rounding (about 2^-9 relative), what stays
    // in fp32 (the residual stream, the logits) adds only fp32's.
    Gpt m16(tiny(s.mlp, s.norm, s.tied), trainer::precision_of(train::Mode::kBf16Amp), 4);
    ASSERT_TRUE(trainer::analyze_gpt(m16, tokens.data(), targets.data(), 2, 1.0f, &a).ok());
    for (const auto& e : a.rows) {
      SCOPED_TRACE(e.name);
      if (e.dtype == "bf16") {
        EXPECT_GT(e.local_norm, 1e-4);
        EXPECT_LT(e.local_norm, 4e-3);
      } else if (e.name != "embed") {
        EXPECT_LT(e.local_norm, 1e-5);
        EXPECT_GT(e.rel_norm, 10 * e.local_norm);  // inherited from the bf16 values before
      }
    }
    // Gradients kept in bf16 carry bf16's rounding; the weight gradients are rounded to bf16
    // once (from fp32 sums).
    for (const auto& e : a.grads) {
      SCOPED_TRACE(e.name);
      if (e.dtype == "bf16") {
        EXPECT_GT(e.local_norm, 1e-4);
        EXPECT_LT(e.local_norm, 8e-3);
      } else {
        EXPECT_LT(e.local_norm, 1e-5);
      }
    }
  }
}

namespace {

trainer::TextCorpus synthetic_corpus() {
  // Text with structure to learn: words from a small lexicon, drawn from a fixed stream.
  const char* words[] = {"the ", "cat ", "sat ", "on ", "mat. ", "a ", "dog ", "ran\n"};
  trainer::Rng rng(1);
  std::string text;
  while (text.size() < 6000) text += words[rng.below(8)];
  trainer::TextCorpus c;
  c.source = "synthetic";
  c.train.assign(text.begin(), text.begin() + 5400);
  c.validation.assign(text.begin() + 5400, text.end());
  return c;
}

trainer::GptTrainOptions small_run(MlpKind mlp, NormKind norm) {
  trainer::GptTrainOptions o;
  o.model = tiny(mlp, norm, true);
  o.model.context = 16;
  o.steps = 4;
  o.batch_size = 3;
  o.eval_every = 2;
  o.eval_windows = 5;
  o.lr = 1e-2f;
  o.seed = 3;
  return o;
}

}  // namespace

TEST(GptRun, EveryModeGivesTheSameDigestOnEveryTargetAndThreadCount) {
  ThreadCountGuard guard;
  const trainer::TextCorpus corpus = synthetic_corpus();
  for (const Shape& s : {kShapes[0], kShapes[1]}) {
    const trainer::GptTrainOptions o = small_run(s.mlp, s.norm);
    for (train::Mode mode : train::all_modes()) {
      SCOPED_TRACE(shape_name(s) + " " + train::mode_name(mode));
      trainer::GptResult first;
      ASSERT_TRUE(trainer::train_gpt(corpus, mode, o, {}, &first).ok());
      EXPECT_EQ(first.evals.size(), 2u);
      EXPECT_EQ(first.digest.size(), 16u);
      EXPECT_TRUE(std::isfinite(first.val_loss));
      for_each_target([&](const std::string&) {
        for (int threads : {1, 2, 3}) {
          ASSERT_TRUE(set_num_threads(threads).ok());
          trainer::GptResult again;
          ASSERT_TRUE(trainer::train_gpt(corpus, mode, o, {}, &again).ok());
          EXPECT_EQ(again.digest, first.digest) << threads << " threads";
          EXPECT_EQ(again.val_loss, first.val_loss);
        }
      });
    }
  }
}

namespace {

// R ranks as threads of one process: all_gather through a shared buffer between two barriers.
class ThreadRanks {
 public:
  explicit ThreadRanks(int ranks) : ranks_(ranks), sync_(ranks) {}
  class Rank final : public train::Communicator {
   public:
    Rank(ThreadRanks* all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return all_->ranks_; }
    Status all_gather(const void* send, int64_t bytes, void* recv) override {
      if (rank_ == 0) all_->buffer_.resize(static_cast<std::size_t>(bytes * all_->ranks_));
      all_->sync_.arrive_and_wait();
      std::memcpy(all_->buffer_.data() + rank_ * bytes, send, static_cast<std::size_t>(bytes));
      all_->sync_.arrive_and_wait();
      std::memcpy(recv, all_->buffer_.data(), static_cast<std::size_t>(bytes * all_->ranks_));
      all_->sync_.arrive_and_wait();
      return {};
    }

   private:
    ThreadRanks* all_;
    int rank_;
  };

 private:
  int ranks_;
  std::barrier<> sync_;
  std::vector<unsigned char> buffer_;
};

}  // namespace

TEST(GptRun, TheDigestDoesNotDependOnTheNumberOfRanks) {
  const trainer::TextCorpus corpus = synthetic_corpus();
  trainer::GptTrainOptions o = small_run(MlpKind::kSwiGlu, NormKind::kRmsNorm);
  o.batch_size = 8;
  o.micro_batches = 4;
  for (train::Mode mode : {train::Mode::kFp32, train::Mode::kFp16Amp, train::Mode::kBf16Sr}) {
    SCOPED_TRACE(train::mode_name(mode));
    trainer::GptResult one;
    ASSERT_TRUE(trainer::train_gpt(corpus, mode, o, {}, &one).ok());
    for (int ranks : {1, 2, 4}) {
      ThreadRanks all(ranks);
      std::vector<trainer::GptResult> results(static_cast<std::size_t>(ranks));
      std::vector<Status> statuses(static_cast<std::size_t>(ranks));
      std::vector<std::thread> threads;
      for (int r = 0; r < ranks; ++r) {
        threads.emplace_back([&, r] {
          ThreadRanks::Rank comm(&all, r);
          statuses[r] = trainer::train_gpt(corpus, mode, o, {}, &results[r], &comm);
        });
      }
      for (std::thread& t : threads) t.join();
      for (int r = 0; r < ranks; ++r) {
        ASSERT_TRUE(statuses[r].ok()) << statuses[r].message();
        EXPECT_EQ(results[r].digest, one.digest) << ranks << " ranks, rank " << r;
        EXPECT_EQ(results[r].val_loss, one.val_loss);
        EXPECT_EQ(results[r].train_loss, one.train_loss);
      }
    }
  }
  // Ranks must divide the micro-batches.
  ThreadRanks all(1);
  ThreadRanks::Rank comm(&all, 0);
  o.micro_batches = 3;
  trainer::GptResult r;
  EXPECT_NE(trainer::train_gpt(corpus, train::Mode::kFp32, o, {}, &r, &comm)
                .message()
                .find("--micro-batches must be a power of two dividing --batch-size (8), got 3"),
            std::string::npos);
}

TEST(GptRun, LearnsTheCorpus) {
  const trainer::TextCorpus corpus = synthetic_corpus();
  trainer::GptTrainOptions o = small_run(MlpKind::kGelu, NormKind::kLayerNorm);
  o.steps = 60;
  o.eval_every = 60;
  trainer::GptResult r;
  ASSERT_TRUE(trainer::train_gpt(corpus, train::Mode::kBf16Amp, o, {}, &r).ok());
  // log(256) = 5.55 nats at the start; the lexicon's text is far more predictable.
  EXPECT_LT(r.val_loss, 2.5);
  EXPECT_EQ(r.skipped_steps, 0);
}

// --optimizer-state: each format trains, with the state's bytes the format says and the same
// digest for 1 and 3 threads; a format that is var's own dtype changes nothing.
TEST(GptRun, EachOptimizerStateFormatTrains) {
  ThreadCountGuard guard;
  const trainer::TextCorpus corpus = synthetic_corpus();
  trainer::GptTrainOptions o = small_run(MlpKind::kGelu, NormKind::kLayerNorm);
  o.steps = 6;
  o.eval_every = 6;
  for (train::Mode mode : {train::Mode::kFp32, train::Mode::kBf16Pure}) {
    trainer::GptResult plain;
    ASSERT_TRUE(trainer::train_gpt(corpus, mode, o, {}, &plain).ok());
    // The state per parameter: var (and working copy) plus 8 bytes of fp32 moments or 4 of
    // bf16 ones; the tied embedding (256 x 16 = 4096 elements) is the one parameter large
    // enough for the quantized formats.
    const int64_t var_bytes = mode == train::Mode::kFp32 ? 4 : 2;
    const int64_t n = plain.params, embedding = 256 * 16;
    EXPECT_EQ(plain.state_bytes, n * 3 * var_bytes);
    for (MomentFormat f : {MomentFormat::kFp32, MomentFormat::kBf16, MomentFormat::kInt8,
                           MomentFormat::kInt4, MomentFormat::kFp8E4M3}) {
      SCOPED_TRACE(std::string(train::mode_name(mode)) + " format " +
                   std::to_string(static_cast<int>(f)));
      o.optimizer_state = f;
      trainer::GptResult r;
      ASSERT_TRUE(set_num_threads(1).ok());
      ASSERT_TRUE(trainer::train_gpt(corpus, mode, o, {}, &r).ok());
      ASSERT_TRUE(set_num_threads(3).ok());
      trainer::GptResult again;
      ASSERT_TRUE(trainer::train_gpt(corpus, mode, o, {}, &again).ok());
      EXPECT_EQ(again.digest, r.digest);
      EXPECT_LT(r.val_loss, plain.evals.front().val_loss * 1.5);
      EXPECT_TRUE(std::isfinite(r.val_loss));
      int64_t want = n * var_bytes;  // the weights
      if (f == MomentFormat::kFp32 || f == MomentFormat::kBf16) {
        want += n * (f == MomentFormat::kFp32 ? 8 : 4);
      } else {
        const int64_t codes = f == MomentFormat::kInt4 ? embedding : 2 * embedding;
        const int64_t scales = 2 * 4 * embedding / moment_block(f);
        want += (n - embedding) * 2 * var_bytes + codes + scales;
      }
      EXPECT_EQ(r.state_bytes, want);
      const bool own = (f == MomentFormat::kFp32 && mode == train::Mode::kFp32) ||
                       (f == MomentFormat::kBf16 && mode == train::Mode::kBf16Pure);
      if (own) {
        EXPECT_EQ(r.digest, plain.digest);
      } else {
        EXPECT_NE(r.digest, plain.digest);
      }
    }
    o.optimizer_state.reset();
  }
}

// ---- Precision per unit (policies) ---------------------------------------------------------

TEST(GptPolicy, PresetsGiveTheirModesBitForBit) {
  const trainer::TextCorpus corpus = synthetic_corpus();
  const trainer::GptTrainOptions o = small_run(MlpKind::kSwiGlu, NormKind::kRmsNorm);
  const std::vector<std::string> units = trainer::unit_names(o.model);
  ASSERT_EQ(units, (std::vector<std::string>{"embeddings", "block0", "block1"}));
  for (const char* preset : {"fp32", "bf16-amp", "fp16-amp"}) {
    SCOPED_TRACE(preset);
    train::PrecisionPolicy p;
    ASSERT_TRUE(train::preset_policy(preset, units, &p).ok());
    train::PolicyResult pr;
    ASSERT_TRUE(trainer::gpt_train_policy(corpus, p, o, &pr).ok());
    trainer::GptResult mr;
    ASSERT_TRUE(trainer::train_gpt(corpus, *train::mode_from_name(preset), o, {}, &mr).ok());
    EXPECT_EQ(pr.run.digest, mr.digest);
    EXPECT_EQ(pr.run.test_loss, mr.val_loss);
  }
}

TEST(GptPolicy, EachUnitStoresAndUpdatesAsItsPolicySays) {
  const trainer::TextCorpus corpus = synthetic_corpus();
  const trainer::GptTrainOptions o = small_run(MlpKind::kGelu, NormKind::kLayerNorm);
  train::PrecisionPolicy p;
  ASSERT_TRUE(train::parse_policy(R"({"name": "mixed",
      "default": {"compute": "bf16", "update": "master"},
      "layers": {"embeddings": {"compute": "fp32"},
                 "block1": {"compute": "bf16", "update": "kahan"}}})",
                                  trainer::unit_names(o.model), &p)
                  .ok());
  trainer::GptPrecision g;
  ASSERT_TRUE(trainer::gpt_precision_from_policy(p, o.model, &g).ok());
  EXPECT_FALSE(g.loss_scaling);
  Gpt model(o.model, g, 1);
  for (const auto& param : model.params()) {
    SCOPED_TRACE(param->name);
    const std::size_t u = trainer::unit_of(param->name);
    if (u == 0) {  // fp32: no working copy
      EXPECT_EQ(param->var.dtype(), DType::kFloat32);
      EXPECT_TRUE(param->working.empty());
      EXPECT_EQ(param->grad.dtype(), DType::kFloat32);
    } else if (u == 1) {  // bf16 with fp32 master weights
      EXPECT_EQ(param->var.dtype(), DType::kFloat32);
      EXPECT_EQ(param->working.dtype(), DType::kBFloat16);
      EXPECT_EQ(param->grad.dtype(), DType::kBFloat16);
    } else {  // bf16 weights, Kahan-compensated
      EXPECT_EQ(param->var.dtype(), DType::kBFloat16);
      EXPECT_EQ(param->compensation.dtype(), DType::kBFloat16);
      EXPECT_EQ(param->rounding, WeightRounding::kKahan);
    }
  }
  // Values between units are the fp32 residual stream; inside a block its compute dtype.
  trainer::Graph& graph = model.graph();
  std::vector<int32_t> tokens, targets;
  random_tokens(2 * o.model.context, 5, &tokens, &targets);
  double loss = 0.0;
  ASSERT_TRUE(model.forward(tokens.data(), targets.data(), 2, &loss).ok());
  EXPECT_EQ(graph.value(graph.find("block0.attn.qkv")).data.dtype(), DType::kBFloat16);
  EXPECT_EQ(graph.value(graph.find("norm_f.out")).data.dtype(), DType::kFloat32);
  EXPECT_EQ(graph.value(graph.find("block1.attn.proj")).data.dtype(), DType::kFloat32);
  // It trains, and the digest is the same at another thread count.
  train::PolicyResult first, again;
  ASSERT_TRUE(trainer::gpt_train_policy(corpus, p, o, &first).ok());
  EXPECT_TRUE(std::isfinite(first.run.test_loss));
  ThreadCountGuard guard;
  ASSERT_TRUE(set_num_threads(3).ok());
  ASSERT_TRUE(trainer::gpt_train_policy(corpus, p, o, &again).ok());
  EXPECT_EQ(first.run.digest, again.run.digest);
  // fp16 anywhere turns the loss scaler on under "auto".
  ASSERT_TRUE(train::parse_policy(R"({"layers": {"block0": {"compute": "fp16"}}})",
                                  trainer::unit_names(o.model), &p)
                  .ok());
  ASSERT_TRUE(trainer::gpt_precision_from_policy(p, o.model, &g).ok());
  EXPECT_TRUE(g.loss_scaling);
}

TEST(GptPolicy, PoliciesOfAnotherModelOrStorageAreRefused) {
  const GptConfig c = tiny(MlpKind::kGelu, NormKind::kLayerNorm, true);
  const std::vector<std::string> units = trainer::unit_names(c);
  train::PrecisionPolicy p;
  trainer::GptPrecision g;
  // The MLP's layer names.
  EXPECT_FALSE(
      train::parse_policy(R"({"layers": {"linear0": {"compute": "bf16"}}})", units, &p).ok());
  // A stored dtype other than the unit's compute dtype.
  ASSERT_TRUE(train::parse_policy(
                  R"({"layers": {"block0": {"compute": "fp32", "stored": "bf16"}}})", units, &p)
                  .ok());
  const Status st = trainer::gpt_precision_from_policy(p, c, &g);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("layers.block0.stored"), std::string::npos) << st.message();
  // A policy written for a deeper model.
  GptConfig deeper = c;
  deeper.layers = 3;
  ASSERT_TRUE(train::preset_policy("bf16-amp", trainer::unit_names(deeper), &p).ok());
  EXPECT_FALSE(trainer::gpt_precision_from_policy(p, c, &g).ok());
  // The seed preset: first and last unit in fp32, each storing in its compute dtype.
  ASSERT_TRUE(train::preset_policy("seed", units, &p).ok());
  ASSERT_TRUE(trainer::gpt_precision_from_policy(p, c, &g).ok());
  EXPECT_EQ(g.units.front().compute, DType::kFloat32);
  EXPECT_EQ(g.units.back().compute, DType::kFloat32);
}

TEST(GptPolicy, SensitivityTrainsEachUnitAloneInBothFormats) {
  const trainer::TextCorpus corpus = synthetic_corpus();
  const trainer::GptTrainOptions o = small_run(MlpKind::kGelu, NormKind::kLayerNorm);
  train::SensitivityReport rep;
  int calls = 0;
  ASSERT_TRUE(trainer::gpt_sensitivity_runs(
                  corpus, o,
                  [&](int, int total, const std::string&) {
                    ++calls;
                    EXPECT_EQ(total, 7);
                  },
                  &rep)
                  .ok());
  EXPECT_EQ(calls, 8);
  trainer::GptResult fp32;
  ASSERT_TRUE(trainer::train_gpt(corpus, train::Mode::kFp32, o, {}, &fp32).ok());
  EXPECT_EQ(rep.baseline_digest, fp32.digest);
  EXPECT_EQ(rep.baseline_loss, fp32.val_loss);
  ASSERT_EQ(rep.training.size(), 6u);
  EXPECT_TRUE(rep.inference.empty());
  for (const auto& row : rep.training) {
    EXPECT_TRUE(std::isfinite(row.test_loss)) << row.layer << " " << row.format;
    EXPECT_DOUBLE_EQ(row.loss_change, row.test_loss - fp32.val_loss);
  }
  EXPECT_EQ(rep.training[0].layer, "embeddings");
  EXPECT_EQ(rep.training[1].format, "fp16");
  // The suggested policy reads back as a policy of this model.
  const train::PrecisionPolicy s =
      train::suggest_policy(rep, trainer::unit_names(o.model), "bf16", 0.02);
  train::PrecisionPolicy back;
  ASSERT_TRUE(train::parse_policy(train::policy_json(s), trainer::unit_names(o.model), &back).ok());
  trainer::GptPrecision g;
  EXPECT_TRUE(trainer::gpt_precision_from_policy(back, o.model, &g).ok());
}

TEST(GptCorpus, MissingEmptyAndShortFilesAreRefusedNamingTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / "mantissa_test_gpt";
  std::filesystem::create_directories(dir);
  trainer::TextCorpus c;
  Status st = trainer::load_text((dir / "absent.txt").string(), 16, &c);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("absent.txt: no such file"), std::string::npos) << st.message();
  std::ofstream(dir / "empty.txt").close();
  st = trainer::load_text((dir / "empty.txt").string(), 16, &c);
  EXPECT_NE(st.message().find("empty.txt: the file is empty"), std::string::npos) << st.message();
  std::ofstream(dir / "short.txt") << std::string(100, 'x');
  st = trainer::load_text((dir / "short.txt").string(), 16, &c);
  EXPECT_NE(st.message().find("short.txt: 100 bytes"), std::string::npos) << st.message();
  std::ofstream(dir / "ok.txt") << std::string(170, 'y');
  ASSERT_TRUE(trainer::load_text((dir / "ok.txt").string(), 16, &c).ok());
  EXPECT_EQ(c.train.size(), 153u);
  EXPECT_EQ(c.validation.size(), 17u);
  std::filesystem::remove_all(dir);
}

TEST(GptConfig, BadSizesAreRefused) {
  GptConfig c = tiny(MlpKind::kGelu, NormKind::kLayerNorm, true);
  c.heads = 3;
  EXPECT_NE(c.validate().message().find("--heads must divide --d-model (16), got 3"),
            std::string::npos);
  c = tiny(MlpKind::kGelu, NormKind::kLayerNorm, true);
  c.vocab = 100;
  EXPECT_EQ(c.validate().code(), StatusCode::kParamInvalid);
}

// ---- FP8 and MX modes (lowp_gemm.h) --------------------------------------------------------

namespace {

using trainer::GemmFormat;
using trainer::GemmRecipe;
using trainer::LowpGemm;
using trainer::MxScaleRule;
using trainer::Tensor;

struct GemmCase {
  GemmFormat format;
  MxScaleRule rule;
};
constexpr GemmCase kGemmCases[] = {
    {GemmFormat::kFp8Delayed, MxScaleRule::kFloor}, {GemmFormat::kFp8Current, MxScaleRule::kFloor},
    {GemmFormat::kMxfp8, MxScaleRule::kFloor},      {GemmFormat::kMxfp8, MxScaleRule::kRceil},
    {GemmFormat::kMxfp8, MxScaleRule::kEven},       {GemmFormat::kMxfp4, MxScaleRule::kFloor},
    {GemmFormat::kNvfp4, MxScaleRule::kFloor},      {GemmFormat::kMxfp4, MxScaleRule::kRceil}};

std::string gemm_case_name(const GemmCase& c) {
  return std::string(trainer::gemm_format_name(c.format)) + "/" +
         trainer::mx_scale_rule_name(c.rule);
}

trainer::GptPrecision gemm_precision(const GemmCase& c, const trainer::GptConfig& config) {
  GemmRecipe g;
  g.mx_rule = c.rule;
  g.seed = 11;
  trainer::GptPrecision p;
  EXPECT_TRUE(trainer::gpt_precision_of(trainer::gemm_format_name(c.format), config, g, &p));
  return p;
}

// A [rows, cols] fp32 or bf16 tensor of normal(0, sd) values with a few large ones.
Tensor random_tensor(DType dtype, int64_t rows, int64_t cols, double sd, uint64_t seed) {
  trainer::Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (float& x : v) x = static_cast<float>(sd * rng.normal());
  for (std::size_t i = 0; i < v.size(); i += 37) v[i] *= 9.0f;
  Tensor t(dtype, {rows, cols});
  trainer::narrow(v.data(), dtype, t.data(), rows * cols);
  return t;
}

std::vector<float> widened(const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  trainer::widen(t.data(), t.dtype(), v.data(), t.numel());
  return v;
}

uint32_t biased_exponent(float f) { return (std::bit_cast<uint32_t>(f) >> 23) & 0xFFu; }

// Row-wise MX quantization of m [rows, k] along k, written from the rules (not the operator):
// the dequantized values.
std::vector<double> ref_mx(const std::vector<float>& m, int64_t rows, int64_t k, MxScaleRule rule,
                           bool fp4) {
  const MiniFloat& fmt = fp4 ? kE2M1 : kE4M3;
  const uint32_t emax = fp4 ? 2 : 8;
  const float fmax = fp4 ? 6.0f : 448.0f;
  std::vector<double> out(m.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b0 = 0; b0 < k; b0 += 32) {
      const int64_t b1 = std::min(k, b0 + 32);
      float amax = 0.0f;
      for (int64_t j = b0; j < b1; ++j) amax = std::max(amax, std::fabs(m[r * k + j]));
      int code = 0;
      if (rule == MxScaleRule::kFloor) {
        code = std::max(0, static_cast<int>(biased_exponent(amax)) - static_cast<int>(emax));
      } else if (rule == MxScaleRule::kRceil && fp4) {
        // FP4: amax rounded to bf16 (nearest even), 0x3F added to its exponent and significand
        // bits: the exponent goes up when the significand exceeds 1.5.
        const uint32_t bits = std::bit_cast<uint32_t>(amax);
        const uint32_t bf16 = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
        code = std::max(0, static_cast<int>((((bf16 & 0x7FFFu) + 0x3Fu) >> 7) & 0xFFu) - 2);
      } else if (rule == MxScaleRule::kRceil) {
        const float s = amax * (1.0f / fmax);
        const bool pow2 = (std::bit_cast<uint32_t>(s) & 0x7FFFFFu) == 0;
        code = static_cast<int>(biased_exponent(s)) + (pow2 || s == 0.0f ? 0 : 1);
      } else {  // even: amax's mantissa rounded half up to the element's bits, then floor
        const int mbits = fp4 ? 1 : 3;
        const uint32_t bits = (std::bit_cast<uint32_t>(amax) + (1u << (22 - mbits))) & 0x7F800000u;
        code = std::clamp(static_cast<int>(bits >> 23) - static_cast<int>(emax), 0, 254);
      }
      for (int64_t j = b0; j < b1; ++j) {
        const float scaled = m[r * k + j] * std::ldexp(1.0f, 127 - code);
        const float q = minifloat_to_float(fmt, float_to_minifloat(fmt, scaled, true));
        out[r * k + j] = std::ldexp(static_cast<double>(q), code - 127);
      }
    }
  }
  return out;
}

// Tensor-wise FP8 with the scale fp8_max / amax (current scaling): dequantized values.
std::vector<double> ref_tensorwise(const std::vector<float>& m, const MiniFloat& fmt, float fmax) {
  float amax = 0.0f;
  for (float x : m) amax = std::max(amax, std::fabs(x));
  const float scale = fmax / amax, inv = 1.0f / scale;
  std::vector<double> out(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) {
    out[i] =
        static_cast<double>(minifloat_to_float(fmt, float_to_minifloat(fmt, m[i] * scale, true))) *
        inv;
  }
  return out;
}

std::vector<float> transposed(const std::vector<float>& m, int64_t rows, int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
  }
  return t;
}

// out[i][j] = sum_k a[i][k] * b[j][k]: both quantized along k.
void expect_product(const std::vector<double>& a, const std::vector<double>& b, int64_t m,
                    int64_t n, int64_t k, const TensorView& out, const std::string& what) {
  const float* y = static_cast<const float*>(out.data);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, mag = 0.0;
      for (int64_t t = 0; t < k; ++t) {
        sum += a[i * k + t] * b[j * k + t];
        mag += std::fabs(a[i * k + t] * b[j * k + t]);
      }
      // k fp32 additions and the scale factor's one rounding.
      ASSERT_NEAR(y[i * n + j], sum, (k + 2) * 0x1p-24 * mag + 1e-30)
          << what << " [" << i << ", " << j << "]";
    }
  }
}

}  // namespace

// Each product of a Linear in each format equals the product of its operands quantized by the
// format's rules, written here from the rules: the right operands, along the right axis (k for
// y, n for dx, the rows for dW), with the right element formats (HYBRID: dy in E5M2).
TEST(LowpGemm, ProductsAreThoseOfTheOperandsQuantizedByTheRules) {
  const int64_t m = 48, k = 64, n = 32;
  const Tensor x = random_tensor(DType::kBFloat16, m, k, 1.0, 1);
  const Tensor w = random_tensor(DType::kBFloat16, k, n, 0.05, 2);
  const Tensor dy = random_tensor(DType::kFloat32, m, n, 1e-4, 3);
  const std::vector<float> xv = widened(x), wv = widened(w), dyv = widened(dy);
  const std::vector<float> wt = transposed(wv, k, n), xt = transposed(xv, m, k),
                           dyt = transposed(dyv, m, n);
  for (const GemmCase& c : kGemmCases) {
    if (c.format == GemmFormat::kFp8Delayed) continue;  // tensor-wise: the current case below
    SCOPED_TRACE(gemm_case_name(c));
    GemmRecipe r;
    r.format = c.format;
    r.mx_rule = c.rule;
    r.stochastic_gradients = false;
    LowpGemm g("test", r, 1);
    trainer::Context ctx;
    Tensor y(DType::kFloat32, {m, n}), dx(DType::kFloat32, {m, k}), dw(DType::kFloat32, {k, n});
    ASSERT_TRUE(g.forward(ctx, x, w, y.view()).ok());
    ASSERT_TRUE(g.backward(ctx, x, w, dy, dx.view(), dw.view()).ok());
    std::vector<double> qx, qwt, qdy, qw, qxt, qdyt;
    if (c.format == GemmFormat::kFp8Current) {
      qx = ref_tensorwise(xv, kE4M3, 448.0f);
      qw = ref_tensorwise(wv, kE4M3, 448.0f);
      qdy = ref_tensorwise(dyv, kE5M2, 57344.0f);
      // One tensor-wise cast serves every product: transposing commutes with it.
      auto t = [](const std::vector<double>& v, int64_t rows, int64_t cols) {
        std::vector<double> o(v.size());
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) o[j * rows + i] = v[i * cols + j];
        }
        return o;
      };
      qwt = t(qw, k, n);
      qxt = t(qx, m, k);
      qdyt = t(qdy, m, n);
    } else if (c.format == GemmFormat::kNvfp4) {
      auto nv = [](const std::vector<float>& v, int64_t rows, int64_t cols) {
        std::vector<uint8_t> codes(static_cast<std::size_t>(rows * cols / 2));
        std::vector<uint8_t> scales(static_cast<std::size_t>(rows * cols / 16));
        amp::Nvfp4Matrix q{
            .codes = TensorView(codes.data(), DType::kFloat4E2M1, {rows, cols}),
            .scales = TensorView(scales.data(), DType::kFloat8E4M3FN, {rows, cols / 16})};
        EXPECT_TRUE(amp::nvfp4_quantize(
                        TensorView(const_cast<float*>(v.data()), DType::kFloat32, {rows, cols}), q)
                        .ok());
        // q * s exactly (the product applies the tensor scales after the sum).
        std::vector<float> deq(v.size());
        amp::Nvfp4Matrix unit = q;
        unit.tensor_scale_inv = 1.0f;
        EXPECT_TRUE(
            amp::nvfp4_dequantize(unit, TensorView(deq.data(), DType::kFloat32, {rows, cols}))
                .ok());
        std::vector<double> out(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
          out[i] = static_cast<double>(deq[i]) * q.tensor_scale_inv;
        return out;
      };
      qx = nv(xv, m, k);
      qwt = nv(wt, n, k);
      qdy = nv(dyv, m, n);
      qw = nv(wv, k, n);
      qxt = nv(xt, k, m);
      qdyt = nv(dyt, n, m);
    } else {
      const bool fp4 = c.format == GemmFormat::kMxfp4;
      qx = ref_mx(xv, m, k, c.rule, fp4);
      qwt = ref_mx(wt, n, k, c.rule, fp4);
      qdy = ref_mx(dyv, m, n, c.rule, fp4);
      qw = ref_mx(wv, k, n, c.rule, fp4);
      qxt = ref_mx(xt, k, m, c.rule, fp4);
      qdyt = ref_mx(dyt, n, m, c.rule, fp4);
    }
    expect_product(qx, qwt, m, n, k, y.view(), "y = x W");
    expect_product(qdy, qw, m, k, n, dx.view(), "dx = dy W^T");
    expect_product(qxt, qdyt, k, n, m, dw.view(), "dW = x^T dy");
  }
}

// fp8-delayed: a step's casts use the scale of the amaxes recorded in earlier steps (history
// 2, max); a validation pass casts but records nothing; another rank's amaxes merge by max.
TEST(LowpGemm, DelayedScalingCastsWithTheHistory) {
  const int64_t m = 16, k = 32, n = 16;
  GemmRecipe r;
  r.format = GemmFormat::kFp8Delayed;
  r.delayed.amax_history_len = 2;
  LowpGemm g("test", r, 1);
  trainer::Context train, valid;
  valid.training = false;
  train.collect_stats = valid.collect_stats = true;
  const Tensor w = random_tensor(DType::kBFloat16, k, n, 0.05, 2);
  Tensor y(DType::kFloat32, {m, n});
  auto x_of = [&](float top) {
    Tensor x = random_tensor(DType::kFloat32, m, k, 0.01, 5);
    x.f32()[7] = top;  // the largest |value|: the amax
    return x;
  };
  auto x_scale = [&] { return g.stats().front().scale; };
  ASSERT_TRUE(g.forward(train, x_of(4.0f), w, y.view()).ok());
  EXPECT_EQ(x_scale(), 1.0f);  // no history yet
  EXPECT_EQ(g.pending_amax()[0], 4.0f);
  g.record({8.0f, 0.0f, 0.0f});  // another rank saw 8
  g.end_step();
  ASSERT_TRUE(g.forward(valid, x_of(100.0f), w, y.view()).ok());
  EXPECT_EQ(x_scale(), 448.0f / 8.0f);
  EXPECT_EQ(g.pending_amax()[0], 0.0f);  // validation recorded nothing
  g.end_step();
  ASSERT_TRUE(g.forward(train, x_of(2.0f), w, y.view()).ok());
  EXPECT_EQ(x_scale(), 448.0f / 8.0f);  // 8 is still in the two-step history
  g.end_step();
  g.end_step();  // the 8 leaves the window; 2 remains
  ASSERT_TRUE(g.forward(train, x_of(1.0f), w, y.view()).ok());
  EXPECT_EQ(x_scale(), 448.0f / 2.0f);
  // The state round-trips; another format's state is refused.
  LowpGemm copy("copy", r, 1);
  ASSERT_TRUE(copy.load_state(g.state()).ok());
  EXPECT_EQ(copy.state(), g.state());
  EXPECT_FALSE(copy.load_state({"{}"}).ok());
}

// The statistics count what the cast did: with the scale pushed up by a negative margin every
// value beyond fp8_max / scale saturates; pushed down, every value below the smallest
// subnormal's half underflows (counted here from the inputs and the scale alone).
TEST(LowpGemm, StatisticsCountSaturationAndUnderflow) {
  const int64_t m = 32, k = 32, n = 16;
  const Tensor x = random_tensor(DType::kFloat32, m, k, 1.0, 9);
  const Tensor w = random_tensor(DType::kBFloat16, k, n, 0.05, 2);
  Tensor y(DType::kFloat32, {m, n});
  for (int margin : {-6, 14}) {
    SCOPED_TRACE(margin);
    GemmRecipe r;
    r.format = GemmFormat::kFp8Delayed;
    r.delayed.margin = margin;
    LowpGemm g("test", r, 1);
    trainer::Context ctx;
    ctx.collect_stats = true;
    ASSERT_TRUE(g.forward(ctx, x, w, y.view()).ok());
    g.end_step();
    ASSERT_TRUE(g.forward(ctx, x, w, y.view()).ok());
    const trainer::OperandStats& s = g.stats().front();
    ASSERT_EQ(s.operand, "x");
    float amax = 0.0f;
    for (int64_t i = 0; i < x.numel(); ++i) amax = std::max(amax, std::fabs(x.f32()[i]));
    const float scale = std::ldexp(448.0f, -margin) / amax;
    EXPECT_EQ(s.scale, scale);
    EXPECT_EQ(s.amax, amax);
    int64_t saturated = 0, underflow = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float v = std::fabs(x.f32()[i] * scale);
      saturated += v > 448.0f ? 1 : 0;
      underflow += x.f32()[i] != 0.0f && v <= 0x1p-10f ? 1 : 0;
    }
    EXPECT_EQ(s.saturated, saturated);
    EXPECT_EQ(s.underflow, underflow);
    EXPECT_GT(margin < 0 ? saturated : underflow, 100);
    EXPECT_GT(s.error, 0.0);
  }
}

TEST(GptFp8, EveryFormatGivesTheSameDigestOnEveryTargetAndThreadCount) {
  ThreadCountGuard guard;
  const trainer::TextCorpus corpus = synthetic_corpus();
  const trainer::GptTrainOptions o = small_run(MlpKind::kSwiGlu, NormKind::kRmsNorm);
  trainer::GptResult amp_run;
  ASSERT_TRUE(trainer::train_gpt(corpus, train::Mode::kBf16Amp, o, {}, &amp_run).ok());
  for (const GemmCase& c : kGemmCases) {
    SCOPED_TRACE(gemm_case_name(c));
    const trainer::GptPrecision p = gemm_precision(c, o.model);
    trainer::GptResult first;
    ASSERT_TRUE(trainer::train_gpt(corpus, p, "x", o, {}, &first).ok());
    EXPECT_TRUE(std::isfinite(first.val_loss));
    EXPECT_NE(first.digest, amp_run.digest);  // the products are quantized
    EXPECT_LT(std::fabs(first.val_loss - amp_run.val_loss), 0.1 * amp_run.val_loss);
    for_each_target([&](const std::string&) {
      for (int threads : {1, 3}) {
        ASSERT_TRUE(set_num_threads(threads).ok());
        trainer::GptResult again;
        ASSERT_TRUE(trainer::train_gpt(corpus, p, "x", o, {}, &again).ok());
        EXPECT_EQ(again.digest, first.digest) << threads << " threads";
      }
    });
  }
}

namespace {

std::vector<trainer::GptResult> train_on_ranks(const trainer::TextCorpus& corpus,
                                               const trainer::GptPrecision& p,
                                               const trainer::GptTrainOptions& o, int ranks) {
  ThreadRanks all(ranks);
  std::vector<trainer::GptResult> results(static_cast<std::size_t>(ranks));
  std::vector<Status> statuses(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      ThreadRanks::Rank comm(&all, r);
      statuses[r] = trainer::train_gpt(corpus, p, "x", o, {}, &results[r], &comm);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& st : statuses) EXPECT_TRUE(st.ok()) << st.message();
  return results;
}

}  // namespace

// The delayed scalings' amaxes are reduced over the ranks and stochastic rounding is keyed by
// the micro-batch: the digest of 1, 2 and 4 ranks is one process's.
TEST(GptFp8, TheDigestDoesNotDependOnTheNumberOfRanks) {
  const trainer::TextCorpus corpus = synthetic_corpus();
  trainer::GptTrainOptions o = small_run(MlpKind::kGelu, NormKind::kLayerNorm);
  o.batch_size = 8;
  o.micro_batches = 4;
  for (const GemmCase& c : {kGemmCases[0], kGemmCases[2], kGemmCases[6]}) {
    SCOPED_TRACE(gemm_case_name(c));
    const trainer::GptPrecision p = gemm_precision(c, o.model);
    trainer::GptResult one;
    ASSERT_TRUE(trainer::train_gpt(corpus, p, "x", o, {}, &one).ok());
    for (int ranks : {2, 4}) {
      for (const trainer::GptResult& r : train_on_ranks(corpus, p, o, ranks)) {
        EXPECT_EQ(r.digest, one.digest) << ranks << " ranks";
        EXPECT_EQ(r.val_loss, one.val_loss);
      }
    }
  }
}

// A run stopped after step 3 with a checkpoint and resumed (in one process, or on 2 ranks)
// ends with the uninterrupted run's digest: weights, moments, the loss scaler and the FP8
// histories all come back.
TEST(GptCheckpoint, AResumedRunEndsWithTheUninterruptedDigest) {
  const trainer::TextCorpus corpus = synthetic_corpus();
  trainer::GptTrainOptions o = small_run(MlpKind::kGelu, NormKind::kLayerNorm);
  o.steps = 6;
  o.eval_every = 2;
  o.batch_size = 4;
  const std::string path =
      (std::filesystem::temp_directory_path() / "mantissa_test_gpt.ckpt").string();
  struct Run {
    std::string name;
    trainer::GptPrecision precision;
  };
  std::vector<Run> runs{{"fp16-amp", trainer::gpt_precision_of(train::Mode::kFp16Amp, o.model)},
                        {"bf16-sr", trainer::gpt_precision_of(train::Mode::kBf16Sr, o.model)}};
  for (const GemmCase& c : {kGemmCases[0], kGemmCases[6]}) {
    runs.push_back({gemm_case_name(c), gemm_precision(c, o.model)});
  }
  for (const Run& run : runs) {
    SCOPED_TRACE(run.name);
    trainer::GptResult whole, first, second;
    ASSERT_TRUE(trainer::train_gpt(corpus, run.precision, run.name, o, {}, &whole).ok());
    trainer::GptTrainOptions a = o;
    a.stop_after = 3;
    a.save_checkpoint = path;
    ASSERT_TRUE(trainer::train_gpt(corpus, run.precision, run.name, a, {}, &first).ok());
    EXPECT_EQ(first.steps, 3);
    EXPECT_NE(first.digest, whole.digest);
    trainer::GptTrainOptions b = o;
    b.resume = path;
    ASSERT_TRUE(trainer::train_gpt(corpus, run.precision, run.name, b, {}, &second).ok());
    EXPECT_EQ(second.digest, whole.digest);
    EXPECT_EQ(second.val_loss, whole.val_loss);
    b.micro_batches = 2;  // another configuration: refused
    trainer::GptResult refused;
    Status st = trainer::train_gpt(corpus, run.precision, run.name, b, {}, &refused);
    EXPECT_NE(st.message().find("written by another run"), std::string::npos) << st.message();
  }
  // NVFP4's blocks of 16 along every reduction dim: a width that is not a multiple is refused.
  trainer::GptTrainOptions odd = o;
  odd.model.d_model = 24;
  odd.model.heads = 2;
  trainer::GptResult none;
  const Status odd_status =
      trainer::train_gpt(corpus, gemm_precision(kGemmCases[6], odd.model), "x", odd, {}, &none);
  EXPECT_NE(odd_status.message().find("nvfp4 quantizes in blocks of 16 along every product's "
                                      "reduction dim: --d-model (24)"),
            std::string::npos)
      << odd_status.message();
  // Two ranks resume what one process wrote.
  trainer::GptTrainOptions b = o;
  b.micro_batches = 2;
  trainer::GptResult whole;
  ASSERT_TRUE(trainer::train_gpt(corpus, runs[2].precision, "x", b, {}, &whole).ok());
  trainer::GptTrainOptions a = b;
  a.stop_after = 3;
  a.save_checkpoint = path;
  trainer::GptResult first;
  ASSERT_TRUE(trainer::train_gpt(corpus, runs[2].precision, "x", a, {}, &first).ok());
  b.resume = path;
  for (const trainer::GptResult& r : train_on_ranks(corpus, runs[2].precision, b, 2)) {
    EXPECT_EQ(r.digest, whole.digest);
  }
  // A damaged file is refused before anything changes.
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  bytes[bytes.size() / 2] ^= 1;
  {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
  }
  trainer::GptResult refused;
  Status st = trainer::train_gpt(corpus, runs[2].precision, "x", b, {}, &refused);
  EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos) << st.message();
  b.resume = path + ".missing";
  st = trainer::train_gpt(corpus, runs[2].precision, "x", b, {}, &refused);
  EXPECT_NE(st.message().find("cannot read"), std::string::npos) << st.message();
  std::filesystem::remove(path);
}

}  // namespace mantissa::testing
