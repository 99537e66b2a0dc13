// One training run of the MLP in one precision mode: batches, the loss scaler and anomaly
// detector around each step, the fused multi-tensor optimizer, evaluation per epoch.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/parallel.h"
#include "core/validate.h"
#include "mantissa/amp/anomaly.h"
#include "mantissa/amp/loss_scaler.h"
#include "mantissa/optim.h"
#include "mantissa/train.h"
#include "train/analyze.h"
#include "train/model.h"
#include "train/rng.h"

namespace mantissa::train {

namespace {

constexpr Mode kModes[] = {Mode::kFp32,      Mode::kFp16Amp, Mode::kBf16Amp,    Mode::kBf16Pure,
                           Mode::kBf16Kahan, Mode::kBf16Sr,  Mode::kFp16NoScale};

Status invalid(std::string message) { return {StatusCode::kParamInvalid, std::move(message)}; }

// The optimizer over every parameter, with the loss scaler's grad_scale/found_inf, the clip
// coefficient and the precision's rounding.
class OptimizerStep {
 public:
  OptimizerStep(const TrainOptions& o, detail::Mlp* model) : o_(o), model_(model) {
    lr_ = o.lr.value_or(o.optimizer == Optimizer::kSgd ? 0.05f : 1e-3f);
  }
  int64_t steps_taken() const { return steps_; }

  Status run(const amp::StepScaling& s, std::optional<float> clip_coef) {
    FusedStepOptions fo;
    fo.grad_scale = s.grad_scale;
    fo.found_inf = s.found_inf;
    fo.clip_coef = clip_coef;
    fo.rounding =
        model_->precision().master ? WeightRounding::kNearest : model_->precision().rounding;
    fo.seed = detail::stream_seed(o_.seed, 5);
    fo.rng_step = static_cast<uint64_t>(steps_);
    auto working = [](detail::Parameter& p) {
      return p.working.empty() ? std::optional<TensorView>() : p.working.view();
    };
    auto compensation = [](detail::Parameter& p) {
      return p.compensation.empty() ? std::optional<TensorView>() : p.compensation.view();
    };
    Status st;
    switch (o_.optimizer) {
      case Optimizer::kAdamW: {
        std::vector<AdamWParamTensors> list;
        for (detail::Parameter& p : model_->params()) {
          list.push_back({.var = p.var.view(),
                          .m = p.m.view(),
                          .v = p.v.view(),
                          .max_grad_norm = std::nullopt,
                          .grad = p.grad.view(),
                          .working = working(p),
                          .compensation = compensation(p)});
        }
        MultiAdamWParams hp;
        hp.hyper.lr = lr_;
        hp.hyper.weight_decay = o_.weight_decay;
        hp.step = steps_;
        st = multi_tensor_adam_w(list, hp, fo);
        break;
      }
      case Optimizer::kAdam: {
        std::vector<AdamDParamTensors> list;
        for (detail::Parameter& p : model_->params()) {
          list.push_back({.var = p.var.view(),
                          .m = p.m.view(),
                          .v = p.v.view(),
                          .grad = p.grad.view(),
                          .working = working(p),
                          .compensation = compensation(p)});
        }
        // TensorFlow's form: beta^t for the step being taken, in fp64, rounded to fp32.
        const double t = static_cast<double>(steps_ + 1);
        MultiAdamDParams hp{.beta1_power = static_cast<float>(std::pow(0.9, t)),
                            .beta2_power = static_cast<float>(std::pow(0.999, t)),
                            .lr = lr_,
                            .beta1 = 0.9f,
                            .beta2 = 0.999f,
                            .epsilon = 1e-8f,
                            .use_nesterov = false};
        st = multi_tensor_apply_adam_d(list, hp, fo);
        break;
      }
      case Optimizer::kSgd: {
        std::vector<SgdParamTensors> list;
        for (detail::Parameter& p : model_->params()) {
          list.push_back({.parameters = p.var.view(),
                          .gradient = p.grad.view(),
                          .accum = p.m.view(),
                          .stat = p.v.view(),
                          .working = working(p),
                          .compensation = compensation(p)});
        }
        const MultiSgdParams hp{.learning_rate = lr_,
                                .momentum = o_.momentum,
                                .dampening = 0.0f,
                                .weight_decay = o_.weight_decay,
                                .nesterov = false};
        st = multi_tensor_sgd(list, hp, fo);
        break;
      }
    }
    if (st.ok()) ++steps_;
    return st;
  }

 private:
  const TrainOptions& o_;
  detail::Mlp* model_;
  float lr_ = 1e-3f;
  int64_t steps_ = 0;
};

// How many of n elements of two buffers have the same bits.
// Counts are integers, so the per-chunk partials may be added in any order.
template <class T>
int64_t count_equal(const void* a, const unsigned char* b, int64_t n) {
  const T* now = static_cast<const T*>(a);
  std::atomic<int64_t> total{0};
  auto chunk = [&](int64_t begin, int64_t end) {
    int64_t same = 0;
    for (int64_t i = begin; i < end; ++i) {
      T before;
      std::memcpy(&before, b + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
      same += static_cast<int64_t>(now[i] == before);
    }
    total += same;
  };
  mantissa::detail::parallel_for(n, 16384, chunk);
  return total.load();
}

void parallel_copy(const void* src, unsigned char* dst, int64_t bytes) {
  auto chunk = [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, static_cast<const unsigned char*>(src) + begin,
                static_cast<std::size_t>(end - begin));
  };
  mantissa::detail::parallel_for(bytes, 65536, chunk);
}

// Loss and accuracy over a whole split, in batches of the training batch size.
Status evaluate(detail::Mlp& model, const std::vector<float>& x, const std::vector<int32_t>& y,
                int64_t features, int64_t batch, double* loss, double* accuracy) {
  const int64_t rows = static_cast<int64_t>(y.size());
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t b = 0; b < rows; b += batch) {
    const int64_t n = std::min(batch, rows - b);
    MANTISSA_RETURN_IF_ERROR(model.forward(x.data() + b * features, n));
    double l = 0.0;
    int64_t c = 0;
    MANTISSA_RETURN_IF_ERROR(model.loss(y.data() + b, n, 1.0f, false, &l, &c));
    loss_sum += l * static_cast<double>(n);
    correct += c;
  }
  *loss = loss_sum / static_cast<double>(rows);
  *accuracy = static_cast<double>(correct) / static_cast<double>(rows);
  return {};
}

}  // namespace

const char* mode_name(Mode mode) noexcept {
  switch (mode) {
    case Mode::kFp32: return "fp32";
    case Mode::kFp16Amp: return "fp16-amp";
    case Mode::kBf16Amp: return "bf16-amp";
    case Mode::kBf16Pure: return "bf16-pure";
    case Mode::kBf16Kahan: return "bf16-kahan";
    case Mode::kBf16Sr: return "bf16-sr";
    case Mode::kFp16NoScale: return "fp16-noscale";
  }
  return "?";
}

std::optional<Mode> mode_from_name(std::string_view name) noexcept {
  for (Mode m : kModes) {
    if (name == mode_name(m)) return m;
  }
  return std::nullopt;
}

std::span<const Mode> all_modes() noexcept { return kModes; }

const char* optimizer_name(Optimizer o) noexcept {
  switch (o) {
    case Optimizer::kAdamW: return "adamw";
    case Optimizer::kAdam: return "adam";
    case Optimizer::kSgd: return "sgd";
  }
  return "?";
}

const char* activation_name(Activation a) noexcept {
  return a == Activation::kGelu ? "gelu" : "relu";
}

Status train_model(const Dataset& data, Mode mode, const TrainOptions& o, const TrainCallbacks& cb,
                   ModeResult* result) {
  return detail::train_model_then(data, mode, o, cb, result, {});
}

Status detail::train_model_then(const Dataset& data, Mode mode, const TrainOptions& o,
                                const TrainCallbacks& cb, ModeResult* result,
                                const AfterTraining& after) {
  if (data.train_rows() == 0 || data.test_rows() == 0 || data.features <= 0 || data.classes < 2) {
    return invalid("train: the data set needs train and test rows, features and 2 classes");
  }
  if (o.epochs < 0 || o.batch_size <= 0) {
    return invalid("train: epochs must be >= 0 and batch_size > 0, got " +
                   std::to_string(o.epochs) + " and " + std::to_string(o.batch_size));
  }
  for (int64_t w : o.hidden) {
    if (w <= 0 || w > 65536) return invalid("train: hidden width " + std::to_string(w));
  }
  if (!(o.clip >= 0.0)) return invalid("train: clip must be >= 0");

  std::vector<int64_t> widths{data.features};
  widths.insert(widths.end(), o.hidden.begin(), o.hidden.end());
  widths.push_back(data.classes);
  const detail::Precision precision = detail::precision_of(mode);
  detail::Mlp model(widths, o.activation, precision, o.optimizer, o.seed);
  OptimizerStep optimizer(o, &model);

  amp::LossScalerOptions so;
  so.enabled = precision.loss_scaling;
  amp::DynamicLossScaler scaler;
  MANTISSA_RETURN_IF_ERROR(amp::DynamicLossScaler::create(so, &scaler));
  // The detector sees the gradients as they are (scaled by the loss scale under fp16-amp, whose
  // optimizer divides inside its own pass), so its norm thresholds are scaled along.
  amp::AnomalyThresholds thresholds;
  thresholds.working_dtype =
      precision.compute == DType::kFloat16 ? DType::kFloat16 : DType::kBFloat16;
  const double base_explosion = thresholds.explosion_norm;
  const double base_vanishing = thresholds.vanishing_norm;
  amp::AnomalyDetector detector;
  float detector_scale = -1.0f;
  const std::vector<std::string> names = model.param_names();

  ModeResult r;
  r.mode = mode;
  const int64_t rows = data.train_rows();
  const int64_t steps_per_epoch = (rows + o.batch_size - 1) / o.batch_size;
  std::vector<int64_t> order(rows);
  std::vector<float> bx(o.batch_size * data.features);
  std::vector<int32_t> by(o.batch_size);
  double total_seconds = 0.0;
  int64_t total_stalled = 0, total_weights = 0;
  std::vector<unsigned char> snapshot;
  int64_t var_bytes = 0;
  for (const detail::Parameter& p : model.params()) var_bytes += p.var.bytes();
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    std::iota(order.begin(), order.end(), 0);
    detail::Rng rng(detail::stream_seed(o.seed, 1000 + static_cast<uint64_t>(epoch)));
    for (int64_t i = rows - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    double loss_sum = 0.0;
    int64_t correct_sum = 0, seen = 0;
    int64_t epoch_stalled = 0, epoch_weights = 0;
    const int64_t values_before = model.grad_values(), underflows_before = model.grad_underflows();
    for (int64_t step = 0; step < steps_per_epoch; ++step) {
      const int64_t b0 = step * o.batch_size;
      const int64_t n = std::min(o.batch_size, rows - b0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t src = order[b0 + i];
        std::copy_n(data.x_train.data() + src * data.features, data.features,
                    bx.data() + i * data.features);
        by[i] = data.y_train[src];
      }
      MANTISSA_RETURN_IF_ERROR(model.forward(bx.data(), n));
      double loss = 0.0;
      int64_t correct = 0;
      MANTISSA_RETURN_IF_ERROR(model.loss(by.data(), n, scaler.scale(), true, &loss, &correct));
      MANTISSA_RETURN_IF_ERROR(model.backward());
      loss_sum += loss * static_cast<double>(n);
      correct_sum += correct;
      seen += n;

      const std::vector<TensorView> grads = model.grad_views();
      if (scaler.scale() != detector_scale) {
        detector_scale = scaler.scale();
        thresholds.explosion_norm = base_explosion * detector_scale;
        thresholds.vanishing_norm = base_vanishing * detector_scale;
        MANTISSA_RETURN_IF_ERROR(amp::AnomalyDetector::create(thresholds, &detector));
      }
      amp::AnomalyReport report;
      amp::InspectContext ctx;
      ctx.loss = loss;
      ctx.scaler = &scaler;
      MANTISSA_RETURN_IF_ERROR(detector.inspect(grads, names, ctx, &report));
      if (report.found_inf) ++r.overflow_steps;
      if (!report.healthy()) {
        r.findings += static_cast<int64_t>(report.findings.size());
        if (cb.on_anomaly) cb.on_anomaly(epoch, step + 1, report);
      }

      std::optional<float> clip_coef;
      if (o.clip > 0.0 && !report.found_inf) {
        double norm = 0.0;
        GradNormOptions no;
        float scale_value = scaler.scale();
        if (scaler.enabled()) no.grad_scale = TensorView(&scale_value, DType::kFloat32, {1});
        MANTISSA_RETURN_IF_ERROR(grad_norm(grads, &norm, no));
        clip_coef = clip_coefficient(norm, o.clip);
      }
      // Snapshot of the weights the step updates, to count the ones it leaves unchanged.
      snapshot.resize(static_cast<std::size_t>(var_bytes));
      {
        std::size_t at = 0;
        for (const detail::Parameter& p : model.params()) {
          parallel_copy(p.var.data(), snapshot.data() + at, p.var.bytes());
          at += static_cast<std::size_t>(p.var.bytes());
        }
      }
      const int64_t taken_before = optimizer.steps_taken();
      MANTISSA_RETURN_IF_ERROR(scaler.step_fused(
          grads, [&](const amp::StepScaling& s) { return optimizer.run(s, clip_coef); }));
      if (optimizer.steps_taken() != taken_before) {
        std::size_t at = 0;
        for (const detail::Parameter& p : model.params()) {
          epoch_stalled +=
              p.var.dtype() == DType::kFloat32
                  ? count_equal<uint32_t>(p.var.data(), snapshot.data() + at, p.var.numel())
                  : count_equal<uint16_t>(p.var.data(), snapshot.data() + at, p.var.numel());
          at += static_cast<std::size_t>(p.var.bytes());
          epoch_weights += p.var.numel();
        }
      }
      MANTISSA_RETURN_IF_ERROR(scaler.update());
      if (cb.on_step) {
        cb.on_step(
            {.epoch = epoch,
             .step = step + 1,
             .steps_per_epoch = steps_per_epoch,
             .loss = loss,
             .running_accuracy = static_cast<double>(correct_sum) / static_cast<double>(seen),
             .loss_scale = scaler.scale(),
             .skipped_steps = scaler.stats().skipped_steps});
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_seconds += seconds;
    EpochRecord e;
    e.epoch = epoch;
    e.train_loss = loss_sum / static_cast<double>(seen);
    e.train_accuracy = static_cast<double>(correct_sum) / static_cast<double>(seen);
    MANTISSA_RETURN_IF_ERROR(evaluate(model, data.x_test, data.y_test, data.features, o.batch_size,
                                      &e.test_loss, &e.test_accuracy));
    e.loss_scale = scaler.scale();
    e.skipped_steps = scaler.stats().skipped_steps;
    e.overflow_steps = r.overflow_steps;
    e.findings = r.findings;
    e.seconds = seconds;
    const int64_t values = model.grad_values() - values_before;
    e.grad_underflow = values > 0
                           ? static_cast<double>(model.grad_underflows() - underflows_before) /
                                 static_cast<double>(values)
                           : 0.0;
    e.stalled_updates =
        epoch_weights > 0 ? static_cast<double>(epoch_stalled) / static_cast<double>(epoch_weights)
                          : 0.0;
    total_stalled += epoch_stalled;
    total_weights += epoch_weights;
    r.epochs.push_back(e);
    if (cb.on_epoch) cb.on_epoch(e);
  }
  if (o.epochs == 0) {
    MANTISSA_RETURN_IF_ERROR(evaluate(model, data.x_test, data.y_test, data.features, o.batch_size,
                                      &r.test_loss, &r.test_accuracy));
  } else {
    r.test_loss = r.epochs.back().test_loss;
    r.test_accuracy = r.epochs.back().test_accuracy;
  }
  r.skipped_steps = scaler.stats().skipped_steps;
  r.grad_underflow = model.grad_values() > 0 ? static_cast<double>(model.grad_underflows()) /
                                                   static_cast<double>(model.grad_values())
                                             : 0.0;
  r.stalled_updates = total_weights > 0
                          ? static_cast<double>(total_stalled) / static_cast<double>(total_weights)
                          : 0.0;
  r.seconds_per_epoch = o.epochs > 0 ? total_seconds / o.epochs : 0.0;
  r.state_bytes = model.state_bytes();
  r.digest = detail::weights_digest(model);
  if (after) MANTISSA_RETURN_IF_ERROR(after(model, scaler.scale()));
  *result = std::move(r);
  return {};
}

}  // namespace mantissa::train
