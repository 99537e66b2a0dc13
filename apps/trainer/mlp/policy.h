// A per-layer policy (mantissa/train_policy.h) as the model's Precision.
#pragma once

#include "trainer/mlp/analyze.h"
#include "trainer/mlp/model.h"
#include "trainer/train_policy.h"

namespace mantissa::train::detail {

// Per layer: compute and stored dtype, master weights for UpdateForm::kMaster, else the bf16
// rounding; loss scaling as the policy says (kAuto: when some layer computes in fp16).
Precision resolve_policy(const PrecisionPolicy& policy);

// sensitivity_runs (train_policy.h) with `prepare` applied to every model it trains.
Status sensitivity_runs(const Dataset& data, const TrainOptions& options,
                        const PrepareModel& prepare, const SensitivityProgress& progress,
                        SensitivityReport* report);

// train_policy with `prepare` (train_precision_then).
Status train_policy_prepared(const Dataset& data, const PrecisionPolicy& policy,
                             const TrainOptions& options, const TrainCallbacks& callbacks,
                             const PrepareModel& prepare, PolicyResult* result);

}  // namespace mantissa::train::detail
