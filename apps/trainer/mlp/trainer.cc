// The MLP's precision modes and its single-process entry points: train_model and the variants
// the analysis, the policies and the sensitivity runs use. Each validates its arguments and runs
// the one training loop (train_loop, distributed.cc) with one shard in this process.
#include <string>

#include "trainer/mlp/analyze.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/model.h"
#include "trainer/train.h"
#include "trainer/train_distributed.h"

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

  if (!precision.layers.empty() && precision.layers.size() != 3 * o.hidden.size() + 1) {
    return invalid("train: the precision names " + std::to_string(precision.layers.size()) +
                   " layers, the model has " + std::to_string(3 * o.hidden.size() + 1));
  }
  DistributedStats stats;
  return train_loop(data, precision, mode, o, DistributedOptions{}, cb, result, &stats, after,
                    prepare);
}

}  // namespace mantissa::train
