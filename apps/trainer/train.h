// End-to-end mixed-precision training of a small MLP classifier on CPUs (`mantissa train`): the
// data sets, the precision modes, and one training run per mode, built on this library's
// operators, fused optimizers, loss scaler and anomaly detector. See docs/training.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/amp/anomaly.h"
#include "mantissa/dtype.h"
#include "mantissa/status.h"

namespace mantissa::train {

// ---- Data ---------------------------------------------------------------------------------

// A classification set split into train and test rows; features row-major, standardised.
struct Dataset {
  std::string source;  // the file read, or "synthetic:N"
  std::string header;  // the first line, when it was read as a header (its first 200 bytes)
  int64_t features = 0;
  int64_t classes = 0;
  std::vector<float> x_train, x_test;  // [rows, features]
  std::vector<int32_t> y_train, y_test;
  // Per-column statistics of the training split (the scaling applied to both splits).
  std::vector<double> column_mean, column_scale;
  int64_t train_rows() const { return static_cast<int64_t>(y_train.size()); }
  int64_t test_rows() const { return static_cast<int64_t>(y_test.size()); }
};

// Whether a CSV's first line is a header: kAuto reads it as one when a field is not a number
// (scikit-learn's files start "150,4,setosa,...") or when its fields are the column names 0, 1,
// ..., n-1 that pandas writes; Dataset::header then holds it, so that the caller can say so.
enum class HeaderRule : int32_t { kAuto = 0, kYes = 1, kNo = 2 };

struct DataOptions {
  // "" (the digits set of Debian's python3-sklearn), a CSV file (gzip-compressed or not), or
  // "synthetic:N" (N rows of Gaussian clusters generated from the seed).
  std::string spec;
  HeaderRule header = HeaderRule::kAuto;
  double test_fraction = 0.2;  // per class, rounded to nearest; in (0, 1)
  uint64_t seed = 0;
};

// Where the digits set is looked for when DataOptions::spec is empty, in order.
std::vector<std::string> digits_search_paths();

// Reads (or generates) the data, splits it per class (stratified, from the seed) and
// standardises every column with the training split's mean and standard deviation (a column
// with standard deviation 0 is only centred). A malformed file gives 161002 with a message
// naming the file, the line and the column; *out is left unchanged on any error.
Status load_dataset(const DataOptions& options, Dataset* out);

// ---- Precision modes ----------------------------------------------------------------------

enum class Mode : int32_t {
  kFp32 = 0,
  kFp16Amp = 1,
  kBf16Amp = 2,
  kBf16Pure = 3,
  kBf16Kahan = 4,
  kBf16Sr = 5,
  kFp16NoScale = 6,
};
const char* mode_name(Mode mode) noexcept;
std::optional<Mode> mode_from_name(std::string_view name) noexcept;
std::span<const Mode> all_modes() noexcept;

enum class Optimizer : int32_t { kAdamW = 0, kAdam = 1, kSgd = 2 };
enum class Activation : int32_t { kRelu = 0, kGelu = 1 };
const char* optimizer_name(Optimizer o) noexcept;
const char* activation_name(Activation a) noexcept;

// ---- One run ------------------------------------------------------------------------------

struct TrainOptions {
  std::vector<int64_t> hidden{256, 256};  // hidden widths; input and output come from the data
  Activation activation = Activation::kRelu;
  Optimizer optimizer = Optimizer::kAdamW;
  int epochs = 30;
  int64_t batch_size = 64;
  std::optional<float> lr;    // default: 1e-3 (AdamW, Adam), 0.05 (SGD)
  float weight_decay = 0.0f;  // AdamW's decoupled decay; SGD's L2 term; Adam: unused
  float momentum = 0.9f;      // SGD
  double clip = 0.0;          // global L2 norm to clip to; 0: no clipping
  uint64_t seed = 0;          // initial weights, batch order, stochastic rounding
};

// After every optimizer step (or skipped step).
struct StepProgress {
  int epoch = 0;  // 1-based
  int64_t step = 0, steps_per_epoch = 0;
  double loss = 0.0;            // the batch's mean loss
  double running_accuracy = 0;  // this epoch's training accuracy so far
  float loss_scale = 1.0f;
  int64_t skipped_steps = 0;  // since the start
};

struct EpochRecord {
  int epoch = 0;
  double train_loss = 0.0, train_accuracy = 0.0;  // means over the epoch's batches
  double test_loss = 0.0, test_accuracy = 0.0;
  float loss_scale = 1.0f;
  int64_t skipped_steps = 0, overflow_steps = 0;  // since the start
  int64_t findings = 0;                           // anomaly findings since the start
  double seconds = 0.0;                           // training time of this epoch
  // This epoch: the fraction of gradient values that were nonzero in fp32 and rounded to zero
  // in the compute dtype (underflow), and the fraction of weights (the optimizer's var: master
  // weights where there are some) that an applied step left bit for bit unchanged.
  double grad_underflow = 0.0, stalled_updates = 0.0;
};

struct ModeResult {
  Mode mode = Mode::kFp32;
  std::vector<EpochRecord> epochs;
  double test_accuracy = 0.0, test_loss = 0.0;
  int64_t skipped_steps = 0;   // steps the loss scaler skipped (Inf/NaN gradients)
  int64_t overflow_steps = 0;  // steps whose gradients held Inf or NaN
  int64_t findings = 0;
  double grad_underflow = 0.0, stalled_updates = 0.0;  // over the whole run (see EpochRecord)
  double seconds_per_epoch = 0.0;
  int64_t state_bytes = 0;  // weights, master copies, working copies, optimizer state
  std::string digest;       // FNV-1a 64 of the final weights (docs/training.md), 16 hex digits
};

struct TrainCallbacks {
  std::function<void(const StepProgress&)> on_step;
  std::function<void(const EpochRecord&)> on_epoch;
  // A step whose anomaly report holds findings.
  std::function<void(int epoch, int64_t step, const amp::AnomalyReport&)> on_anomaly;
};

// Trains the MLP (Linear -> LayerNorm -> activation per hidden width, then Linear and
// SoftmaxCrossEntropyWithLogits) on `data` in `mode`. Same data, options and seed: the same
// digest on every SIMD target and for every thread count.
Status train_model(const Dataset& data, Mode mode, const TrainOptions& options,
                   const TrainCallbacks& callbacks, ModeResult* result);

// ---- Precision analysis -------------------------------------------------------------------

// One tensor of one layer in the precision analysis (docs/training.md, "Precision analysis"):
// the mode's values m against an fp64 shadow s computed from the same weights and batch.
// Errors are relative: per element e_i = |m_i - s_i| / max(|s_i|, 1e-3 * rms(s)) (max, mean,
// RMS over the elements), and normwise ||m - s|| / ||s|| (2-norms). ulps are |m_i - s_i| in
// units of the mode's dtype's spacing at max(|s_i|, 1e-3 * rms(s)). NaN where a value does not
// apply.
struct TensorError {
  std::string layer;   // "linear0", "layernorm0", "relu0", ..., "loss"
  std::string tensor;  // "activation" (the layer's output), "grad_input", "grad_weight"
  int depth = 0;       // position in the layer list; the loss is one past the last layer
  int64_t count = 0;   // elements
  double shadow_rms = 0, shadow_max = 0;  // of the shadow's values: the tensor's scale
  int64_t sign_flips = 0;  // elements where m > 0 and s > 0 disagree (a ReLU mask that differs)
  double rel_error_max = 0, rel_error_mean = 0, rel_error_rms = 0, rel_error_norm = 0;
  double ulp_max = 0, ulp_mean = 0;
  // Normwise errors: of what the computation reads (the largest over its inputs: inherited),
  // of the mode's result against fp64 on the mode's own inputs (local: what the layer adds),
  // and of fp64 on the mode's inputs against the shadow (propagated: the inherited error
  // carried through). amplification = propagated / inherited (NaN when inherited is 0).
  double inherited = 0, local = 0, propagated = 0, amplification = 0;
  // Condition estimate of the computation at the shadow's values: Linear
  // || |A||B| (+ |b|) ||_F / ||AB (+ b)||_F for its product; LayerNorm max over rows of
  // rms(x) / sqrt(var + eps); ReLU 1; GELU || |x gelu'(x)| || / ||gelu(x)||; the loss: NaN.
  double condition = 0;
};

// The fp64 shadow run again with one layer's tensors alone stored in a 16-bit dtype (rounded
// through fp32, as the modes store them; every other value exact): the layer's output, its
// input gradient and its weight gradient ("loss": the logits' gradient). Measured against the
// exact shadow on the same batch.
struct LayerSensitivity {
  std::string layer;
  int depth = 0;
  double loss_change = 0;   // |loss - shadow loss| / shadow loss
  double logits_error = 0;  // normwise, the last layer's output
  double grad_error = 0;    // normwise, every weight gradient (Linear, LayerNorm) as one vector
  int64_t mask_flips = 0;   // activation inputs whose sign (> 0) differs from the exact run's
};

struct AnalysisReport {
  Mode mode = Mode::kFp32;
  int epochs = 0;           // trained before the analysis (0: the initial weights)
  int64_t rows = 0;         // the analysed batch: the first rows of the training split
  float loss_scale = 1.0f;  // the gradients analysed are of loss * loss_scale
  double loss = 0.0, shadow_loss = 0.0;
  std::vector<TensorError> tensors;  // forward in layer order, then backward from the loss
  // In layer order, then the loss; the dtype is the mode's compute dtype (bf16 for fp32).
  DType sensitivity_dtype = DType::kBFloat16;
  std::vector<LayerSensitivity> sensitivity;
};

// Trains as train_model (options.epochs epochs; 0 analyses the initial weights), then runs one
// batch (the first options.batch_size training rows) forward and backward in `mode` and in an
// fp64 shadow from the weights the mode's passes read (widened exactly) and the fp32 batch.
Status analyze_precision(const Dataset& data, Mode mode, const TrainOptions& options,
                         AnalysisReport* report);

}  // namespace mantissa::train
