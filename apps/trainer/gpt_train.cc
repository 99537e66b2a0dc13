// One GPT training run (gpt_train.h).
#include "trainer/gpt_train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>

#include "mantissa/optim.h"
#include "trainer/gpt_checkpoint.h"
#include "trainer/rng.h"

namespace mantissa::trainer {

Precision precision_of(train::Mode mode) {
  constexpr DType kF16 = DType::kFloat16, kBf16 = DType::kBFloat16;
  Precision p;
  switch (mode) {
    case train::Mode::kFp32: break;
    case train::Mode::kFp16Amp: p.compute = kF16, p.master = true, p.loss_scaling = true; break;
    case train::Mode::kBf16Amp: p.compute = kBf16, p.master = true; break;
    case train::Mode::kBf16Pure: p.compute = kBf16; break;
    case train::Mode::kBf16Kahan: p.compute = kBf16, p.rounding = WeightRounding::kKahan; break;
    case train::Mode::kBf16Sr: p.compute = kBf16, p.rounding = WeightRounding::kStochastic; break;
    case train::Mode::kFp16NoScale: p.compute = kF16, p.master = true; break;
  }
  return p;
}

GptPrecision gpt_precision_of(train::Mode mode, const GptConfig& config) {
  return GptPrecision::uniform(precision_of(mode), config.layers);
}

namespace {
constexpr GemmFormat kGemmModes[] = {GemmFormat::kFp8Delayed, GemmFormat::kFp8Current,
                                     GemmFormat::kMxfp8, GemmFormat::kMxfp4, GemmFormat::kNvfp4};
}  // namespace

std::vector<std::string> gpt_mode_names() {
  std::vector<std::string> names;
  for (train::Mode m : train::all_modes()) names.emplace_back(train::mode_name(m));
  for (GemmFormat f : kGemmModes) names.emplace_back(gemm_format_name(f));
  return names;
}

bool gpt_precision_of(const std::string& name, const GptConfig& config, const GemmRecipe& gemm,
                      GptPrecision* out) {
  if (const auto m = train::mode_from_name(name)) {
    *out = gpt_precision_of(*m, config);
    return true;
  }
  for (GemmFormat f : kGemmModes) {
    if (name != gemm_format_name(f)) continue;
    *out = gpt_precision_of(train::Mode::kBf16Amp, config);
    out->gemm = gemm;
    out->gemm.format = f;
    return true;
  }
  return false;
}

Status gpt_precision_from_policy(const train::PrecisionPolicy& policy, const GptConfig& config,
                                 GptPrecision* out) {
  const std::vector<std::string> units = unit_names(config);
  std::string expected;
  for (const std::string& u : units) expected += (expected.empty() ? "" : ", ") + u;
  if (policy.layers.size() != units.size()) {
    return invalid("policy " + policy.name + ": " + std::to_string(policy.layers.size()) +
                   " layers, the GPT has " + std::to_string(units.size()) + " units (" + expected +
                   ")");
  }
  GptPrecision g;
  for (std::size_t i = 0; i < units.size(); ++i) {
    const train::LayerPolicy& lp = policy.layers[i];
    if (lp.layer != units[i]) {
      return invalid("policy " + policy.name + ": layer " + std::to_string(i) + " is '" + lp.layer +
                     "', the GPT's is '" + units[i] + "' (units: " + expected + ")");
    }
    if (lp.stored != lp.compute) {
      return invalid("policy " + policy.name + ": layers." + lp.layer +
                     ".stored: the GPT keeps a " + "unit's activations in its compute dtype ('" +
                     train::policy_dtype_name(lp.compute) + "'), got '" +
                     train::policy_dtype_name(lp.stored) + "'");
    }
    Precision p;
    p.compute = lp.compute;
    if (lp.compute != DType::kFloat32) {
      switch (lp.update) {
        case train::UpdateForm::kMaster: p.master = true; break;
        case train::UpdateForm::kPlain: p.rounding = WeightRounding::kNearest; break;
        case train::UpdateForm::kKahan: p.rounding = WeightRounding::kKahan; break;
        case train::UpdateForm::kStochastic: p.rounding = WeightRounding::kStochastic; break;
      }
    }
    g.units.push_back(p);
  }
  switch (policy.loss_scaling) {
    case train::LossScaling::kAuto: g.loss_scaling = g.any_compute(DType::kFloat16); break;
    case train::LossScaling::kNone: g.loss_scaling = false; break;
    case train::LossScaling::kDynamic: g.loss_scaling = true; break;
  }
  for (Precision& p : g.units) p.loss_scaling = g.loss_scaling;
  *out = std::move(g);
  return {};
}

Status GptTrainOptions::validate() const {
  TRAINER_TRY(model.validate());
  auto bad = [](const std::string& what) { return invalid("train --model gpt: " + what); };
  if (steps < 0 || steps > 100'000'000) {
    return bad("--steps must be in [0, 1e8], got " + std::to_string(steps));
  }
  if (batch_size < 1 || batch_size > 65536) {
    return bad("--batch-size must be in [1, 65536], got " + std::to_string(batch_size));
  }
  if (eval_every < 1) return bad("--eval-every must be >= 1, got " + std::to_string(eval_every));
  if (eval_windows < 1) return bad("eval windows must be >= 1");
  if (!(lr > 0.0f) || !std::isfinite(lr)) return bad("--lr must be finite and > 0");
  if (!(weight_decay >= 0.0f) || !std::isfinite(weight_decay)) {
    return bad("--weight-decay must be finite and >= 0");
  }
  if (!(clip >= 0.0) || !std::isfinite(clip)) return bad("--clip must be finite and >= 0");
  if (warmup < -1) return bad("--warmup must be >= 0");
  const int64_t m = micro_batch_count();
  if (m < 1 || (m & (m - 1)) != 0 || batch_size % m != 0) {
    return bad("--micro-batches must be a power of two dividing --batch-size (" +
               std::to_string(batch_size) + "), got " + std::to_string(m));
  }
  if (scale_growth_interval < 1 || scale_growth_interval > 2147483647) {
    return bad("the scaler's growth interval must be in [1, 2^31 - 1]");
  }
  if (stop_after < 0 || stop_after > steps) {
    return bad("--stop-after must be in [0, --steps (" + std::to_string(steps) + ")], got " +
               std::to_string(stop_after));
  }
  return {};
}

int64_t GptTrainOptions::micro_batch_count() const {
  if (micro_batches != 0) return micro_batches;
  int64_t m = 4;
  while (batch_size % m != 0) m /= 2;
  return m;
}

float GptTrainOptions::lr_at(int64_t t) const {
  const int64_t w = warmup >= 0 ? warmup : std::max<int64_t>(1, steps / 20);
  const double peak = lr;
  if (t < w) return static_cast<float>(peak * static_cast<double>(t + 1) / static_cast<double>(w));
  const double span = static_cast<double>(std::max<int64_t>(1, steps - w));
  const double progress = std::min(1.0, static_cast<double>(t - w) / span);
  const double low = peak * min_lr_ratio;
  return static_cast<float>(low +
                            0.5 * (peak - low) * (1.0 + std::cos(std::numbers::pi * progress)));
}

namespace {

// Between the backward pass and the optimizer: the anomaly detector on the gradients as they
// are (scaled under fp16-amp, so its norm thresholds follow the scale) and the clip coefficient.
class Guard {
 public:
  explicit Guard(const GptPrecision& p, std::vector<std::string> names) : names_(std::move(names)) {
    thresholds_.working_dtype = p.any_compute(DType::kFloat16) ? DType::kFloat16 : DType::kBFloat16;
    base_explosion_ = thresholds_.explosion_norm;
    base_vanishing_ = thresholds_.vanishing_norm;
  }
  Status inspect(const std::vector<TensorView>& grads, double loss,
                 const amp::DynamicLossScaler& scaler, double clip, int64_t step,
                 const GptCallbacks& cb, GptResult* r, std::optional<float>* clip_coef) {
    if (scaler.scale() != detector_scale_) {
      detector_scale_ = scaler.scale();
      thresholds_.explosion_norm = base_explosion_ * detector_scale_;
      thresholds_.vanishing_norm = base_vanishing_ * detector_scale_;
      TRAINER_TRY(amp::AnomalyDetector::create(thresholds_, &detector_));
    }
    amp::AnomalyReport report;
    amp::InspectContext ctx;
    ctx.loss = loss;
    ctx.scaler = &scaler;
    TRAINER_TRY(detector_.inspect(grads, names_, ctx, &report));
    if (report.found_inf) ++r->overflow_steps;
    if (!report.healthy()) {
      r->findings += static_cast<int64_t>(report.findings.size());
      if (cb.on_anomaly) cb.on_anomaly(step, report);
    }
    clip_coef->reset();
    if (clip > 0.0 && !report.found_inf) {
      double norm = 0.0;
      GradNormOptions no;
      float scale_value = scaler.scale();
      if (scaler.enabled()) no.grad_scale = TensorView(&scale_value, DType::kFloat32, {1});
      TRAINER_TRY(grad_norm(grads, &norm, no));
      *clip_coef = clip_coefficient(norm, clip);
    }
    return {};
  }

 private:
  amp::AnomalyThresholds thresholds_;
  double base_explosion_ = 0.0, base_vanishing_ = 0.0;
  amp::AnomalyDetector detector_;
  float detector_scale_ = -1.0f;
  std::vector<std::string> names_;
};

// Sums fp32 vectors of one length, pushed in order, by a fixed binary tree: leaves 0 and 1 are
// added, 2 and 3, then those two sums, and so on (left + right). With a power-of-two count of
// leaves the tree is balanced, so the sum of leaves [k 2^j, (k+1) 2^j) is one of its nodes: a rank
// that sums its own leaves computes exactly the node a single process computes, and pushing the
// ranks' nodes at their level continues the same tree.
class PairwiseSum {
 public:
  void reset(std::size_t n) {
    n_ = n;
    for (Node& node : stack_) spare_.push_back(std::move(node.values));
    stack_.clear();
  }
  void push(const float* v, int level = 0) {
    std::vector<float> b = take();
    std::copy(v, v + n_, b.begin());
    while (!stack_.empty() && stack_.back().level == level) {
      std::vector<float>& left = stack_.back().values;
      add(left.data(), b.data(), left.data(), static_cast<int64_t>(n_));
      spare_.push_back(std::move(b));
      b = std::move(left);
      stack_.pop_back();
      ++level;
    }
    stack_.push_back({level, std::move(b)});
  }
  // The sum (after a power-of-two count of leaves: one node).
  const std::vector<float>& result() const { return stack_.back().values; }
  int level() const { return stack_.back().level; }

 private:
  struct Node {
    int level;
    std::vector<float> values;
  };
  std::vector<float> take() {
    if (spare_.empty()) return std::vector<float>(n_);
    std::vector<float> b = std::move(spare_.back());
    spare_.pop_back();
    b.resize(n_);
    return b;
  }
  std::size_t n_ = 0;
  std::vector<Node> stack_;
  std::vector<std::vector<float>> spare_;
};

// --optimizer-state: every parameter's moments made anew (zero: fresh state) in the format, but
// the quantized formats' small parameters and the parameters whose var already has the
// format's dtype (the plain step keeps their moments so, with the same bits).
void use_moment_format(Gpt& model, MomentFormat f) {
  for (auto& p : model.params()) {
    const int64_t n = p->var.numel(), block = moment_block(f);
    if (block > 0 && n < GptTrainOptions::kMinQuantElements) continue;
    if ((f == MomentFormat::kFp32 && p->var.dtype() == DType::kFloat32) ||
        (f == MomentFormat::kBf16 && p->var.dtype() == DType::kBFloat16)) {
      continue;
    }
    p->moments = f;
    const DType d = f == MomentFormat::kFp32   ? DType::kFloat32
                    : f == MomentFormat::kBf16 ? DType::kBFloat16
                                               : DType::kUInt8;
    const std::vector<int64_t> shape =
        f == MomentFormat::kInt4 ? std::vector<int64_t>{moment_elements(f, n)} : p->var.shape();
    p->m.reset(d, shape);
    p->v.reset(d, shape);
    if (block > 0) {
      p->scale_m.reset(DType::kFloat32, {(n + block - 1) / block});
      p->scale_v.reset(DType::kFloat32, {(n + block - 1) / block});
    }
  }
}

// AdamW over the parameters: one fused call per (rounding, decay, storage) group, each with its
// own stochastic-rounding stream. The storage (var's dtype, the working copy's, the moments'
// format) is one per (rounding, decay) pair in a precision mode; a policy may mix them.
Status adamw_step(Gpt& model, const GptTrainOptions& o, const amp::StepScaling& s,
                  std::optional<float> clip_coef, float lr, int64_t steps_taken) {
  int group = 0;
  auto storage = [](const Parameter& p) {
    return (p.moments ? 1 + static_cast<int>(*p.moments) : 0) * 4096 +
           static_cast<int>(p.var.dtype()) * 64 +
           (p.working.empty() ? 63 : static_cast<int>(p.working.dtype()));
  };
  for (WeightRounding rounding :
       {WeightRounding::kNearest, WeightRounding::kKahan, WeightRounding::kStochastic}) {
    for (bool decay : {true, false}) {
      ++group;
      auto member = [&](const Parameter& p) {
        const WeightRounding r =
            p.var.dtype() == DType::kFloat32 ? WeightRounding::kNearest : p.rounding;
        return r == rounding && p.decay == decay;
      };
      // The storages of this group in the order their first parameter appears.
      std::vector<int> kinds;
      for (auto& p : model.params()) {
        if (member(*p) && std::find(kinds.begin(), kinds.end(), storage(*p)) == kinds.end())
          kinds.push_back(storage(*p));
      }
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        std::vector<AdamWParamTensors> list;
        std::vector<CompactAdamWParamTensors> compact;
        std::optional<MomentFormat> format;
        auto optional_view = [](const Tensor& t) {
          return t.empty() ? std::optional<TensorView>() : t.view();
        };
        for (auto& p : model.params()) {
          if (!member(*p) || storage(*p) != kinds[k]) continue;
          format = p->moments;  // one per storage kind
          if (p->moments) {
            compact.push_back({.var = p->var.view(),
                               .m = p->m.view(),
                               .v = p->v.view(),
                               .grad = p->grad.view(),
                               .scale_m = optional_view(p->scale_m),
                               .scale_v = optional_view(p->scale_v),
                               .working = optional_view(p->working),
                               .compensation = optional_view(p->compensation)});
          } else {
            list.push_back({.var = p->var.view(),
                            .m = p->m.view(),
                            .v = p->v.view(),
                            .max_grad_norm = std::nullopt,
                            .grad = p->grad.view(),
                            .working = optional_view(p->working),
                            .compensation = optional_view(p->compensation)});
          }
        }
        FusedStepOptions fo;
        fo.grad_scale = s.grad_scale;
        fo.found_inf = s.found_inf;
        fo.clip_coef = clip_coef;
        fo.rounding = rounding;
        fo.seed = stream_seed(o.seed, 50 + static_cast<uint64_t>(group) + 1000 * k);
        fo.rng_step = static_cast<uint64_t>(steps_taken);
        MultiAdamWParams hp;
        hp.hyper.lr = lr;
        hp.hyper.beta1 = o.beta1;
        hp.hyper.beta2 = o.beta2;
        hp.hyper.eps = o.eps;
        hp.hyper.weight_decay = decay ? o.weight_decay : 0.0f;
        hp.step = steps_taken;
        if (format) {
          TRAINER_TRY(multi_tensor_adam_w_compact(compact, hp, *format, fo));
        } else {
          TRAINER_TRY(multi_tensor_adam_w(list, hp, fo));
        }
      }
    }
  }
  return {};
}

// fp8-delayed: the step's amaxes reduced over the ranks (the max, in rank order: every rank
// holds the same histories), then every scaling's update(). The max is what one process
// recording every micro-batch computes, so the scales do not depend on the number of ranks.
Status end_scaling_step(Gpt& model, train::Communicator* comm) {
  const std::vector<LowpGemm*>& gemms = model.gemms();
  if (gemms.empty() || gemms[0]->recipe().format != GemmFormat::kFp8Delayed) return {};
  if (comm != nullptr && comm->size() > 1) {
    std::vector<float> mine, all(3 * gemms.size() * static_cast<std::size_t>(comm->size()));
    for (LowpGemm* g : gemms) {
      const auto a = g->pending_amax();
      mine.insert(mine.end(), a.begin(), a.end());
    }
    TRAINER_TRY(comm->all_gather(mine.data(), static_cast<int64_t>(mine.size() * sizeof(float)),
                                 all.data()));
    for (int q = 0; q < comm->size(); ++q) {
      for (std::size_t i = 0; i < gemms.size(); ++i) {
        const float* a = all.data() + (static_cast<std::size_t>(q) * gemms.size() + i) * 3;
        gemms[i]->record({a[0], a[1], a[2]});
      }
    }
  }
  for (LowpGemm* g : gemms) g->end_step();
  return {};
}

// What a checkpoint must match to be resumed: everything that shapes the trajectory (the model,
// the precision of every unit and the products' recipe, the options, the corpus), hashed.
uint64_t config_hash(const TextCorpus& corpus, const GptPrecision& precision,
                     const std::string& name, const GptTrainOptions& o) {
  std::string s = name;
  auto add = [&](double v) { s += "|" + std::to_string(v); };
  const GptConfig& m = o.model;
  for (int64_t v :
       {m.vocab, m.context, m.d_model, m.layers, m.heads, o.steps, o.batch_size,
        o.micro_batch_count(), o.eval_every, o.eval_windows, o.warmup, o.scale_growth_interval}) {
    s += "|" + std::to_string(v);
  }
  s += "|" + std::to_string(static_cast<int>(m.mlp)) + std::to_string(static_cast<int>(m.norm)) +
       (m.tied ? "t" : "u") + "|" + std::to_string(o.seed);
  for (double v : {static_cast<double>(o.lr), o.min_lr_ratio, static_cast<double>(o.weight_decay),
                   static_cast<double>(o.beta1), static_cast<double>(o.beta2),
                   static_cast<double>(o.eps), o.clip}) {
    add(v);
  }
  s += "|state" + std::to_string(o.optimizer_state ? static_cast<int>(*o.optimizer_state) : -1);
  for (const Precision& p : precision.units) {
    s += "|u" + std::to_string(static_cast<int>(p.compute)) + (p.master ? "m" : "") +
         std::to_string(static_cast<int>(p.rounding));
  }
  const GemmRecipe& g = precision.gemm;
  s += "|gemm" + std::to_string(static_cast<int>(g.format)) + "," +
       std::to_string(static_cast<int>(g.mx_rule)) + "," +
       std::to_string(g.delayed.amax_history_len) + "," + std::to_string(g.delayed.margin) + "," +
       std::to_string(static_cast<int>(g.delayed.amax_compute_algo)) + "," +
       std::to_string(static_cast<int>(g.delayed.fp8_format)) + "," +
       (g.stochastic_gradients ? "sr" : "rne") + "," + std::to_string(g.seed);
  s += precision.loss_scaling ? "|scaled" : "|unscaled";
  uint64_t h = fnv1a(s.data(), s.size());
  h = fnv1a(corpus.train.data(), corpus.train.size(), h);
  return fnv1a(corpus.validation.data(), corpus.validation.size(), h);
}

}  // namespace

Status evaluate_gpt(Gpt& model, const TextCorpus& corpus, const GptTrainOptions& o, double* loss) {
  const int64_t T = o.model.context;
  model.set_pass(false, 0);
  const int64_t count = validation_windows(corpus, T, o.eval_windows);
  std::vector<int32_t> tokens, targets;
  double sum = 0.0;
  for (int64_t first = 0; first < count; first += o.batch_size) {
    const int64_t n = std::min(o.batch_size, count - first);
    validation_batch(corpus, T, count, first, n, &tokens, &targets);
    double l = 0.0;
    TRAINER_TRY(model.forward(tokens.data(), targets.data(), n, &l));
    sum += l * static_cast<double>(n);
  }
  *loss = sum / static_cast<double>(count);
  return {};
}

Status train_gpt(const TextCorpus& corpus, train::Mode mode, const GptTrainOptions& o,
                 const GptCallbacks& cb, GptResult* result, train::Communicator* comm) {
  return train_gpt(corpus, gpt_precision_of(mode, o.model), train::mode_name(mode), o, cb, result,
                   comm);
}

Status train_gpt(const TextCorpus& corpus, const GptPrecision& precision, const std::string& name,
                 const GptTrainOptions& o, const GptCallbacks& cb, GptResult* result,
                 train::Communicator* comm) {
  TRAINER_TRY(o.validate());
  if (precision.units.size() != static_cast<std::size_t>(o.model.layers + 1)) {
    return invalid("train --model gpt: " + std::to_string(precision.units.size()) +
                   " unit precisions for " + std::to_string(o.model.layers + 1) + " units");
  }
  const int ranks = comm != nullptr ? comm->size() : 1;
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int64_t micro = o.micro_batch_count();
  if (ranks < 1 || micro % ranks != 0 || (ranks & (ranks - 1)) != 0) {
    return invalid("train --model gpt --distributed: the ranks (" + std::to_string(ranks) +
                   ") must be a power of two dividing the micro-batches (" + std::to_string(micro) +
                   "; --micro-batches)");
  }
  const int64_t per = o.batch_size / micro, local = micro / ranks;
  const int64_t T = o.model.context;
  // The block formats quantize along every product's reduction dim: the model width, the MLP's
  // hidden width and the tokens of a micro-batch (dW).
  const GemmFormat gemm = precision.gemm.format;
  if (gemm == GemmFormat::kNvfp4 || gemm == GemmFormat::kMxfp4) {
    const int64_t unit = gemm == GemmFormat::kNvfp4 ? 16 : 2;
    const int64_t hidden = o.model.mlp_hidden(), tokens = per * T;
    if (o.model.d_model % unit != 0 || hidden % unit != 0 || tokens % unit != 0) {
      return invalid(std::string("train --model gpt: ") + gemm_format_name(gemm) +
                     (unit == 16 ? " quantizes in blocks of 16" : " packs two FP4 codes a byte") +
                     " along every product's reduction dim: --d-model (" +
                     std::to_string(o.model.d_model) + "), the MLP's hidden width (" +
                     std::to_string(hidden) + ") and the tokens of a micro-batch (" +
                     std::to_string(tokens) + ") must be multiples of " + std::to_string(unit));
    }
  }
  if (static_cast<int64_t>(corpus.train.size()) < T + 1 ||
      static_cast<int64_t>(corpus.validation.size()) < T + 1) {
    return invalid("train --model gpt: " + corpus.source + ": the splits (" +
                   std::to_string(corpus.train.size()) + " and " +
                   std::to_string(corpus.validation.size()) +
                   " bytes) must each hold context + 1 = " + std::to_string(T + 1) + " bytes");
  }
  Gpt model(o.model, precision, o.seed);
  if (o.optimizer_state) use_moment_format(model, *o.optimizer_state);

  amp::LossScalerOptions so;
  so.enabled = precision.loss_scaling;
  so.growth_interval = o.scale_growth_interval;
  amp::DynamicLossScaler scaler;
  TRAINER_TRY(amp::DynamicLossScaler::create(so, &scaler));
  Guard guard(precision, model.param_names());

  const uint64_t config = config_hash(corpus, precision, name, o);
  GptCheckpointHeader resumed;
  if (!o.resume.empty())
    TRAINER_TRY(load_gpt_checkpoint(o.resume, config, &scaler, &model, &resumed));
  if (cb.on_start) TRAINER_TRY(cb.on_start(model));
  GptResult r;
  r.mode = name;
  r.params = model.param_count();
  std::vector<int32_t> tokens, targets;
  std::vector<double> step_seconds;
  PairwiseSum tree;
  std::vector<float> gathered;
  const std::size_t grad_count = static_cast<std::size_t>(model.param_count());
  std::vector<unsigned char> snapshot;
  int64_t stalled = resumed.stalled, weights_seen = resumed.weights_seen, taken = resumed.taken;
  r.overflow_steps = resumed.overflow_steps;
  r.findings = resumed.findings;
  double loss_since = 0.0;
  int64_t steps_since = 0;
  const int64_t last = o.stop_after > 0 ? o.stop_after : o.steps;
  for (int64_t step = resumed.step; step < last; ++step) {
    training_batch(corpus, T, o.batch_size, o.seed, step, &tokens, &targets);
    const auto t0 = std::chrono::steady_clock::now();
    // This rank's micro-batches, their fp32 gradients summed by the pairwise tree, then the
    // ranks' sums (nodes of the same tree) gathered and summed on, identically on every rank.
    tree.reset(grad_count);
    std::vector<double> losses(static_cast<std::size_t>(micro));
    const bool eval_step = (step + 1) % o.eval_every == 0 || step + 1 == last;
    const bool stats_step = eval_step && cb.on_quant_stats && !model.gemms().empty();
    for (int64_t k = 0; k < local; ++k) {
      model.set_collect_stats(stats_step && k == 0);
      const int64_t at = (rank * local + k) * per * T;
      model.set_pass(true, static_cast<uint64_t>(step * micro + rank * local + k));
      TRAINER_TRY(
          model.forward(tokens.data() + at, targets.data() + at, per, &losses[rank * local + k]));
      TRAINER_TRY(model.backward(scaler.scale(), o.batch_size * T));
      tree.push(model.grad32().data());
    }
    model.set_collect_stats(false);
    if (stats_step) cb.on_quant_stats(step + 1, model.gemms());
    const float* grad_sum = tree.result().data();
    if (ranks > 1) {
      const int level = tree.level();
      gathered.resize(grad_count * static_cast<std::size_t>(ranks));
      TRAINER_TRY(comm->all_gather(grad_sum, static_cast<int64_t>(grad_count * sizeof(float)),
                                   gathered.data()));
      std::vector<double> mine(losses.begin() + rank * local, losses.begin() + (rank + 1) * local);
      TRAINER_TRY(comm->all_gather(mine.data(), static_cast<int64_t>(mine.size() * sizeof(double)),
                                   losses.data()));
      tree.reset(grad_count);
      for (int q = 0; q < ranks; ++q) tree.push(gathered.data() + q * grad_count, level);
      grad_sum = tree.result().data();
    }
    model.set_grads(grad_sum);
    TRAINER_TRY(end_scaling_step(model, comm));
    double loss = 0.0;
    for (double l : losses) loss += l;  // micro-batch order; all of one size
    loss /= static_cast<double>(micro);
    const std::vector<TensorView> grads = model.grad_views();
    std::optional<float> clip_coef;
    TRAINER_TRY(guard.inspect(grads, loss, scaler, o.clip, step + 1, cb, &r, &clip_coef));
    // The weights before the step, to count the ones it leaves unchanged.
    std::size_t at = 0;
    for (const auto& p : model.params()) {
      snapshot.resize(at + static_cast<std::size_t>(p->var.bytes()));
      std::memcpy(snapshot.data() + at, p->var.data(), static_cast<std::size_t>(p->var.bytes()));
      at += static_cast<std::size_t>(p->var.bytes());
    }
    const float lr = o.lr_at(step);
    const int64_t taken_before = taken;
    TRAINER_TRY(scaler.step_fused(grads, [&](const amp::StepScaling& s) {
      Status st = adamw_step(model, o, s, clip_coef, lr, taken);
      if (st.ok()) ++taken;
      return st;
    }));
    TRAINER_TRY(scaler.update());
    step_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (taken != taken_before) {
      at = 0;
      for (const auto& p : model.params()) {
        stalled += count_equal(p->var.data(), snapshot.data() + at, p->var.numel(),
                               dtype_size(p->var.dtype()));
        at += static_cast<std::size_t>(p->var.bytes());
        weights_seen += p->var.numel();
      }
    }
    loss_since += loss;
    ++steps_since;
    if (cb.on_step) {
      cb.on_step({.step = step + 1,
                  .steps = o.steps,
                  .loss = loss,
                  .lr = lr,
                  .loss_scale = scaler.scale(),
                  .skipped_steps = scaler.stats().skipped_steps});
    }
    if (eval_step) {
      GptEval e;
      e.step = step + 1;
      TRAINER_TRY(evaluate_gpt(model, corpus, o, &e.val_loss));
      e.val_bpb = e.val_loss / std::numbers::ln2;
      e.train_loss = loss_since / static_cast<double>(steps_since);
      e.loss_scale = scaler.scale();
      e.skipped_steps = scaler.stats().skipped_steps;
      loss_since = 0.0;
      steps_since = 0;
      r.evals.push_back(e);
      if (cb.on_eval) cb.on_eval(e);
      if (!o.save_checkpoint.empty() && rank == 0) {
        GptCheckpointHeader h{.config = config,
                              .step = step + 1,
                              .taken = taken,
                              .overflow_steps = r.overflow_steps,
                              .findings = r.findings,
                              .stalled = stalled,
                              .weights_seen = weights_seen};
        TRAINER_TRY(save_gpt_checkpoint(o.save_checkpoint, h, scaler, model));
      }
    }
  }
  r.steps = last;
  if (r.evals.empty()) {
    GptEval e;
    TRAINER_TRY(evaluate_gpt(model, corpus, o, &e.val_loss));
    e.val_bpb = e.val_loss / std::numbers::ln2;
    e.loss_scale = scaler.scale();
    r.evals.push_back(e);
  }
  r.val_loss = r.evals.back().val_loss;
  r.val_bpb = r.evals.back().val_bpb;
  r.train_loss = r.evals.back().train_loss;
  r.skipped_steps = scaler.stats().skipped_steps;
  if (!step_seconds.empty()) {
    std::vector<double> s = step_seconds;
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
    r.step_time_s = s[s.size() / 2];
  }
  const UnderflowCount& u = model.underflow();
  r.grad_underflow =
      u.values > 0 ? static_cast<double>(u.underflows) / static_cast<double>(u.values) : 0.0;
  r.stalled_updates =
      weights_seen > 0 ? static_cast<double>(stalled) / static_cast<double>(weights_seen) : 0.0;
  r.state_bytes = model.state_bytes();
  r.scale_changes.assign(scaler.stats().history.begin(), scaler.stats().history.end());
  r.final_scale = scaler.scale();
  r.digest = model.digest();
  if (cb.on_finish) TRAINER_TRY(cb.on_finish(model, scaler.scale()));
  *result = std::move(r);
  return {};
}

}  // namespace mantissa::trainer
