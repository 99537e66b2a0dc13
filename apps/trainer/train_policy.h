// Per-layer precision for `mantissa train` (docs/training.md, "Per-layer precision"): a policy
// names, per layer of the MLP, the dtype it computes in, the dtype of the input it keeps for
// its backward pass, and its parameters' update form; the seed's preset; sensitivity by
// training runs (each layer alone in 16 bits) and by inference (each layer alone in INT8 or
// FP8); the policy the ranking suggests; and one training run per policy for the trade-off table.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/status.h"
#include "trainer/train.h"

namespace mantissa::train {

// How a layer's parameters are updated. kMaster: fp32 master weights (a compute-dtype working
// copy written in the same pass when the layer computes in 16 bits). kPlain, kKahan,
// kStochastic: the bf16 weights themselves, rounded to nearest, Kahan-compensated, or
// stochastically rounded (compute bf16 only).
enum class UpdateForm : int32_t { kMaster = 0, kPlain = 1, kKahan = 2, kStochastic = 3 };
// kAuto: dynamic loss scaling when some layer computes in fp16, none otherwise.
enum class LossScaling : int32_t { kAuto = 0, kNone = 1, kDynamic = 2 };

struct LayerPolicy {
  std::string layer;  // the MLP's layers ("linear0", "layernorm0", "relu0", ...) or the GPT's
                      // units ("embeddings", "block0", ...)
  DType compute = DType::kFloat32;
  DType stored = DType::kFloat32;  // what the layer keeps of its input for backward
  UpdateForm update = UpdateForm::kMaster;
};

// Every layer of the model, in order.
struct PrecisionPolicy {
  std::string name;
  std::vector<LayerPolicy> layers;
  LossScaling loss_scaling = LossScaling::kAuto;
};

const char* update_form_name(UpdateForm u) noexcept;
const char* loss_scaling_name(LossScaling s) noexcept;
// "fp32", "bf16", "fp16" for the three compute dtypes.
const char* policy_dtype_name(DType d) noexcept;

// The layer names of the MLP that `options` describes (as Mlp and the analyzer name them).
std::vector<std::string> layer_names(const TrainOptions& options);

// Every layer alike.
PrecisionPolicy uniform_policy(std::string name, std::span<const std::string> layers, DType compute,
                               DType stored, UpdateForm update);
// Built-in policies: "seed" (first and last Linear and every LayerNorm computing in fp32, the
// rest in bf16, every layer's stored input in bf16, fp32 master weights; for the GPT's units,
// `layers` starting with "embeddings": the first and last unit in fp32, each unit storing in its
// compute dtype), "fp32", "bf16-amp", "fp16-amp" (the modes of those names, bit for bit). 161002
// for any other name.
Status preset_policy(std::string_view preset, std::span<const std::string> layers,
                     PrecisionPolicy* out);

// Parses a policy file's text (docs/training.md) against the model's layer names. Strict:
// unknown keys, unknown layer names, values of the wrong type or outside their set, an update
// form the compute dtype cannot take, or an "update" on a layer without parameters give 161002
// with a message naming the key and the value; *out unchanged on error.
Status parse_policy(std::string_view text, std::span<const std::string> layers,
                    PrecisionPolicy* out);
// "preset:NAME" or a file path (read, then parse_policy; the message names the file).
Status load_policy(const std::string& spec, std::span<const std::string> layers,
                   PrecisionPolicy* out);
// The policy as a file parse_policy reads back to the same policy (every layer spelled out).
std::string policy_json(const PrecisionPolicy& policy);

// ---- Runs ---------------------------------------------------------------------------------

struct PolicyResult {
  std::string policy;
  ModeResult run;                 // run.mode is fp32 for a policy; run.digest as train_model's
  int64_t activation_bytes = 0;   // kept for backward per batch of options.batch_size rows
  double best_epoch_seconds = 0;  // the fastest epoch (the least disturbed by other load)
};

// Trains as train_model with every layer as the policy says.
Status train_policy(const Dataset& data, const PrecisionPolicy& policy, const TrainOptions& options,
                    const TrainCallbacks& callbacks, PolicyResult* result);

// One row of the sensitivity ranking: the model with `layer` alone in `format` ("bf16", "fp16":
// trained so; "int8", "fp8-e4m3": the trained fp32 model with that layer's weights and input
// quantized for inference), against the all-fp32 model.
struct SensitivityRow {
  std::string layer, format;
  int depth = 0;
  double test_loss = 0, test_accuracy = 0;
  double loss_change = 0, accuracy_change = 0;  // this minus the fp32 baseline
  int64_t skipped_steps = 0;                    // training rows
};

struct SensitivityReport {
  double baseline_loss = 0, baseline_accuracy = 0;
  std::string baseline_digest;
  std::vector<SensitivityRow> training;   // per layer: bf16 then fp16, in layer order
  std::vector<SensitivityRow> inference;  // per layer: int8 then fp8-e4m3, in layer order
};

// Progress: the run (or evaluation) about to start, `done` of `total`.
using SensitivityProgress = std::function<void(int done, int total, const std::string& what)>;

// The all-fp32 run, then every layer alone in bf16 and in fp16 (fp32 master weights; dynamic
// loss scaling for fp16), each trained for options.epochs; then, on the trained fp32 model,
// each layer alone with its weights (Linear per output channel, LayerNorm's scale per tensor)
// and its input (per tensor, the largest magnitude over the training split) quantized to
// symmetric INT8 (calib::quantize_int8) or to FP8 E4M3 (scaled to 448), and dequantized.
Status sensitivity_runs(const Dataset& data, const TrainOptions& options,
                        const SensitivityProgress& progress, SensitivityReport* report);

// Layers whose run in `format` ("bf16" or "fp16") raised the test loss by more than
// `threshold` times the baseline loss keep fp32; the rest compute in that format; every layer
// stores its input in its compute dtype; fp32 master weights.
PrecisionPolicy suggest_policy(const SensitivityReport& report, std::span<const std::string> layers,
                               const std::string& format, double threshold);

}  // namespace mantissa::train
