// One training run of the MLP in one precision mode: batches, the loss scaler and anomaly
// detector around each step, the fused multi-tensor optimizer, evaluation per epoch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "mantissa/amp/anomaly.h"
#include "mantissa/amp/loss_scaler.h"
#include "mantissa/optim.h"
#include "trainer/mlp/analyze.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/model.h"
#include "trainer/mlp/optimizer_step.h"
#include "trainer/mlp/policy.h"
#include "trainer/mlp/rng.h"
#include "trainer/tensor.h"
#include "trainer/train.h"

namespace mantissa::train {

namespace {

constexpr Mode kModes[] = {Mode::kFp32,      Mode::kFp16Amp, Mode::kBf16Amp,    Mode::kBf16Pure,
                           Mode::kBf16Kahan, Mode::kBf16Sr,  Mode::kFp16NoScale};

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
  return train_precision_then(data, precision_of(mode), mode, o, cb, result, after);
}

Status detail::train_precision_then(const Dataset& data, const Precision& precision, Mode mode,
                                    const TrainOptions& o, const TrainCallbacks& cb,
                                    ModeResult* result, const AfterTraining& after,
                                    const PrepareModel& prepare) {
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
  if (!precision.layers.empty() && precision.layers.size() != 3 * o.hidden.size() + 1) {
    return invalid("train: the precision names " + std::to_string(precision.layers.size()) +
                   " layers, the model has " + std::to_string(3 * o.hidden.size() + 1));
  }
  detail::Mlp model(widths, o.activation, precision, o.optimizer, o.seed);
  if (prepare) prepare(model);
  detail::OptimizerStep optimizer(o, &model);

  amp::LossScalerOptions so;
  so.enabled = precision.loss_scaling;
  amp::DynamicLossScaler scaler;
  TRAINER_TRY(amp::DynamicLossScaler::create(so, &scaler));
  detail::StepGuard guard(precision, model.param_names());

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
      TRAINER_TRY(model.forward(bx.data(), n));
      double loss = 0.0;
      int64_t correct = 0;
      TRAINER_TRY(model.loss(by.data(), n, scaler.scale(), true, &loss, &correct));
      TRAINER_TRY(model.backward());
      loss_sum += loss * static_cast<double>(n);
      correct_sum += correct;
      seen += n;

      const std::vector<TensorView> grads = model.grad_views();
      std::optional<float> clip_coef;
      TRAINER_TRY(guard.inspect(grads, loss, scaler, o, cb, epoch, step + 1, &r, &clip_coef));
      // Snapshot of the weights the step updates, to count the ones it leaves unchanged.
      snapshot.resize(static_cast<std::size_t>(var_bytes));
      {
        std::size_t at = 0;
        for (const detail::Parameter& p : model.params()) {
          std::memcpy(snapshot.data() + at, p.var.data(), static_cast<std::size_t>(p.var.bytes()));
          at += static_cast<std::size_t>(p.var.bytes());
        }
      }
      const int64_t taken_before = optimizer.steps_taken();
      TRAINER_TRY(scaler.step_fused(
          grads, [&](const amp::StepScaling& s) { return optimizer.run(s, clip_coef); }));
      if (optimizer.steps_taken() != taken_before) {
        std::size_t at = 0;
        for (const detail::Parameter& p : model.params()) {
          epoch_stalled += trainer::count_equal(p.var.data(), snapshot.data() + at, p.var.numel(),
                                                dtype_size(p.var.dtype()));
          at += static_cast<std::size_t>(p.var.bytes());
          epoch_weights += p.var.numel();
        }
      }
      TRAINER_TRY(scaler.update());
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
    TRAINER_TRY(detail::epoch_record(model, data, o, scaler, r, epoch,
                                     {loss_sum, correct_sum, seen},
                                     {values_before, underflows_before}, seconds, &e));
    e.stalled_updates =
        epoch_weights > 0 ? static_cast<double>(epoch_stalled) / static_cast<double>(epoch_weights)
                          : 0.0;
    total_stalled += epoch_stalled;
    total_weights += epoch_weights;
    r.epochs.push_back(e);
    if (cb.on_epoch) cb.on_epoch(e);
  }
  if (o.epochs == 0) {
    TRAINER_TRY(detail::evaluate(model, data.x_test, data.y_test, data.features, o.batch_size,
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
  if (after) TRAINER_TRY(after(model, scaler.scale()));
  *result = std::move(r);
  return {};
}

}  // namespace mantissa::train
