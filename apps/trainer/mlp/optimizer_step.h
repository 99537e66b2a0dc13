// The pieces of one training step shared by the single-process trainer (trainer.cc) and the
// data-parallel one (distributed.cc): the anomaly detector and clipping between the backward
// pass and the optimizer, the fused multi-tensor optimizer over the model's parameters, and the
// evaluation of a split.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mantissa/amp/anomaly.h"
#include "mantissa/amp/loss_scaler.h"
#include "trainer/mlp/model.h"
#include "trainer/train.h"

namespace mantissa::train::detail {

// What a step does between the backward pass and the optimizer: the anomaly detector on the
// gradients as they are (scaled by the loss scale under fp16-amp, whose optimizer divides inside
// its own pass, so the detector's norm thresholds follow the scale), and the clip coefficient.
class StepGuard {
 public:
  StepGuard(const Precision& precision, std::vector<std::string> names);
  // Counts an overflow step and the findings into *r and reports them to cb.on_anomaly; sets
  // *clip_coef when o.clip > 0 and the gradients are finite.
  Status inspect(const std::vector<TensorView>& grads, double loss,
                 const amp::DynamicLossScaler& scaler, const TrainOptions& o,
                 const TrainCallbacks& cb, int epoch, int64_t step, ModeResult* r,
                 std::optional<float>* clip_coef);

 private:
  amp::AnomalyThresholds thresholds_;
  double base_explosion_ = 0.0, base_vanishing_ = 0.0;
  amp::AnomalyDetector detector_;
  float detector_scale_ = -1.0f;
  std::vector<std::string> names_;
};

// The optimizer over the parameters, with the loss scaler's grad_scale/found_inf, the clip
// coefficient and each parameter's rounding.
class OptimizerStep {
 public:
  OptimizerStep(const TrainOptions& o, Mlp* model);
  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }  // a resumed run
  // owned: which parameters (index as Mlp::params()) this call updates, the others are left
  // alone (ZeRO stage 1: this rank's shard); empty: every parameter.
  Status run(const amp::StepScaling& s, std::optional<float> clip_coef,
             const std::vector<char>& owned = {});

 private:
  const TrainOptions& o_;
  Mlp* model_;
  Status run_group(const std::vector<std::reference_wrapper<Parameter>>& group,
                   WeightRounding rounding, const amp::StepScaling& s,
                   std::optional<float> clip_coef);

  float lr_ = 1e-3f;
  int64_t steps_ = 0;
};

// Loss and accuracy over a whole split, in batches of the training batch size.
Status evaluate(Mlp& model, const std::vector<float>& x, const std::vector<int32_t>& y,
                int64_t features, int64_t batch, double* loss, double* accuracy);

// An epoch's record: its training loss and accuracy (sums over its `seen` rows), the test split's,
// the scaler's and the run's counts so far, and the share of gradient values that underflowed
// since the model's counters read `counters_before` (values, underflows).
struct EpochSums {
  double loss_sum;
  int64_t correct, seen;
};
Status epoch_record(Mlp& model, const Dataset& data, const TrainOptions& o,
                    const amp::DynamicLossScaler& scaler, const ModeResult& r, int epoch,
                    EpochSums sums, std::pair<int64_t, int64_t> counters_before, double seconds,
                    EpochRecord* e);

}  // namespace mantissa::train::detail
