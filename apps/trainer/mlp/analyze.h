// The precision analysis of `mantissa train --analyze`: the model's forward and backward in its
// mode and, in lock step, an fp64 shadow (plain double loops, independent of the 16-bit path)
// from the same weights and batch; per layer and tensor, errors against the shadow.
#pragma once

#include <functional>
#include <vector>

#include "trainer/mlp/model.h"
#include "trainer/train.h"
#include "trainer/train_distributed.h"

namespace mantissa::train::detail {

// Runs after the last epoch, on the trained model and the loss scaler's scale.
using AfterTraining = std::function<Status(Mlp&, float loss_scale)>;
Status train_model_then(const Dataset& data, Mode mode, const TrainOptions& options,
                        const TrainCallbacks& callbacks, ModeResult* result,
                        const AfterTraining& after);
// The same with any precision (a per-layer policy): `mode` only labels the result. `prepare`
// (may be empty) sees the model before the first step: tests construct cases with it (a
// master weight changed there must be written to its working copy too).
using PrepareModel = std::function<void(Mlp&)>;
Status train_precision_then(const Dataset& data, const Precision& precision, Mode mode,
                            const TrainOptions& options, const TrainCallbacks& callbacks,
                            ModeResult* result, const AfterTraining& after,
                            const PrepareModel& prepare = {});

// The MLP's one training loop (distributed.cc), behind train_model, train_policy, the analysis
// and train_distributed: `distributed` says how each batch is sharded (one shard in this
// process by default; several in turn; or one per rank of a communicator), and the shards'
// gradients are summed in rank order, so one shard is the single-process trainer.
Status train_loop(const Dataset& data, const Precision& precision, Mode mode,
                  const TrainOptions& options, const DistributedOptions& distributed,
                  const TrainCallbacks& callbacks, ModeResult* result, DistributedStats* stats,
                  const AfterTraining& after, const PrepareModel& prepare);

// The shadow's values, per layer (index as Mlp::layers()): outputs, input gradients (empty for
// the first Linear), weight gradients (Linear and LayerNorm weights; empty otherwise), and the
// logits' gradient. All of loss * loss_scale.
struct ShadowTrace {
  std::vector<std::vector<double>> activations, grad_inputs, grad_weights;
  std::vector<double> loss_grad;
  double loss = 0.0;
};

// Analyses `model` (its weights as they are) on one batch x [rows, inputs], labels [rows].
// Leaves the model's trace on. The report's mode, epochs and rows are the caller's to fill
// (rows, loss_scale, losses, tensors and the sensitivity in the mode's compute dtype,
// bf16 for fp32, are set here).
Status analyze_model(Mlp& model, const float* x, const int32_t* labels, int64_t rows,
                     float loss_scale, AnalysisReport* report, ShadowTrace* trace = nullptr);

// Each layer alone in `dtype` (LayerSensitivity), in layer order, then the loss.
std::vector<LayerSensitivity> sensitivity(const Mlp& model, const float* x, const int32_t* labels,
                                          int64_t rows, float loss_scale, DType dtype);

}  // namespace mantissa::train::detail
