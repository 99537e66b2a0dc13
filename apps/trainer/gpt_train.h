// Training the GPT in one precision mode (docs/training_gpt.md): windows of the corpus drawn
// from the seed, AdamW through the fused multi-tensor optimizer (weight decay on matrices only),
// linear warmup then cosine decay, global-norm clipping, the loss scaler and the anomaly
// detector around every step, and the validation loss every eval_every steps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/amp/anomaly.h"
#include "mantissa/amp/loss_scaler.h"
#include "trainer/gpt.h"
#include "trainer/text.h"
#include "trainer/train.h"
#include "trainer/train_distributed.h"
#include "trainer/train_policy.h"

namespace mantissa::trainer {

// A precision mode's storage (docs/training_gpt.md, "Precision modes").
Precision precision_of(train::Mode mode);
// The mode in every unit.
GptPrecision gpt_precision_of(train::Mode mode, const GptConfig& config);
// The GPT's modes: the seven of train::Mode, then the FP8 and MX modes, bf16-amp with the blocks'
// products in a format (lowp_gemm.h): fp8-delayed, fp8-current, mxfp8, mxfp4, nvfp4.
std::vector<std::string> gpt_mode_names();
// A mode by name; `gemm` gives the FP8 and MX modes' options (its format is the name's). False
// for an unknown name.
bool gpt_precision_of(const std::string& name, const GptConfig& config, const GemmRecipe& gemm,
                      GptPrecision* out);
// A per-layer policy (train_policy.h's file format, with unit_names() as its layers): each unit
// computes in its "compute" dtype and keeps its activations in it ("stored" must be the same);
// "update" master gives fp32 master weights with a working copy in the compute dtype, plain,
// kahan and sr bf16 weights; loss_scaling auto scales when some unit computes in fp16. 161002
// naming the unit and the value for a policy of another model or a stored dtype the GPT lacks.
Status gpt_precision_from_policy(const train::PrecisionPolicy& policy, const GptConfig& config,
                                 GptPrecision* out);

struct GptTrainOptions {
  GptConfig model;
  int64_t steps = 300;
  int64_t batch_size = 16;  // sequences per step
  // The batch is computed as this many micro-batches of batch_size / micro_batches sequences
  // whose fp32 gradients are summed by a fixed pairwise tree (docs/training_gpt.md, "Data
  // parallel"): a power of two dividing batch_size. 0: the largest such value up to 4.
  int64_t micro_batches = 0;
  int64_t eval_every = 50;     // and after the last step
  int64_t eval_windows = 128;  // validation windows (evenly spaced over the split)
  float lr = 1e-3f;            // peak, after warmup
  double min_lr_ratio = 0.1;   // the cosine ends at lr * this
  int64_t warmup = -1;         // steps of linear warmup; -1: steps / 20 (at least 1)
  float weight_decay = 0.1f;   // AdamW's, on matrices only
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  double clip = 1.0;  // global L2 norm; 0: no clipping
  int64_t scale_growth_interval = 100;
  uint64_t seed = 0;  // initial weights, batches, stochastic rounding
  // AdamW's moments (--optimizer-state): unset, in each parameter's var dtype; else in this
  // format for every parameter, the quantized formats (int8, int4, FP8) only for parameters of
  // at least kMinQuantElements elements (smaller ones keep var's dtype), as mantissa.torch.
  std::optional<MomentFormat> optimizer_state;
  static constexpr int64_t kMinQuantElements = 4096;
  // Checkpoints (gpt_checkpoint.h): written after every evaluation and at stop_after (rank 0);
  // a run resumed from one continues at the step after it and ends with the uninterrupted run's
  // digest. stop_after > 0 ends the run after that many steps (an evaluation, a checkpoint), the
  // learning-rate schedule still that of `steps`.
  std::string save_checkpoint, resume;
  int64_t stop_after = 0;
  Status validate() const;
  int64_t micro_batch_count() const;
  // The learning rate of step t (0-based): computed in double, rounded once to fp32.
  float lr_at(int64_t t) const;
};

struct GptEval {
  int64_t step = 0;
  double val_loss = 0.0, val_bpb = 0.0;  // nats per byte, bits per byte
  double train_loss = 0.0;               // mean of the steps since the previous evaluation
  float loss_scale = 1.0f;
  int64_t skipped_steps = 0;
};

struct GptStep {
  int64_t step = 0, steps = 0;  // 1-based
  double loss = 0.0;
  float lr = 0.0f, loss_scale = 1.0f;
  int64_t skipped_steps = 0;
};

struct GptResult {
  std::string mode;
  std::vector<GptEval> evals;
  int64_t steps = 0;
  double val_loss = 0.0, val_bpb = 0.0, train_loss = 0.0;
  int64_t skipped_steps = 0, overflow_steps = 0, findings = 0;
  double step_time_s = 0.0;  // median seconds per optimizer step (evaluation excluded)
  int64_t params = 0, state_bytes = 0;
  double grad_underflow = 0.0;   // gradient values rounded to c that became zero, of all rounded
  double stalled_updates = 0.0;  // weights an applied step left bit for bit unchanged
  std::vector<amp::ScaleChange> scale_changes;  // the loss scaler's trajectory
  float final_scale = 1.0f;
  std::string digest;
};

struct GptCallbacks {
  // The model before its first step (initial weights), e.g. to export them.
  std::function<Status(const Gpt&)> on_start;
  std::function<void(const GptStep&)> on_step;
  std::function<void(const GptEval&)> on_eval;
  std::function<void(int64_t step, const amp::AnomalyReport&)> on_anomaly;
  // The FP8 and MX modes, on every evaluation step: the statistics of each block product's
  // quantized operands (LowpGemm::stats()) in the step's first micro-batch (rank 0's).
  std::function<void(int64_t step, const std::vector<LowpGemm*>&)> on_quant_stats;
  // The model after its last step and the loss scale it would train on next (e.g. for the
  // precision analysis).
  std::function<Status(Gpt&, float loss_scale)> on_finish;
};

// With a communicator of R ranks (R a power of two dividing the micro-batch count) every rank
// computes its R-th of the micro-batches, the partial sums travel by all_gather, and every rank
// finishes the same tree: the same weights on every rank, and the same digest for any R.
Status train_gpt(const TextCorpus& corpus, train::Mode mode, const GptTrainOptions& options,
                 const GptCallbacks& callbacks, GptResult* result,
                 train::Communicator* comm = nullptr);
// The same under a precision per unit; `name` labels the result (a mode's or a policy's name).
Status train_gpt(const TextCorpus& corpus, const GptPrecision& precision, const std::string& name,
                 const GptTrainOptions& options, const GptCallbacks& callbacks, GptResult* result,
                 train::Communicator* comm = nullptr);

// The mean validation loss (nats per byte) of a model over the options' validation windows.
Status evaluate_gpt(Gpt& model, const TextCorpus& corpus, const GptTrainOptions& options,
                    double* loss);

}  // namespace mantissa::trainer
