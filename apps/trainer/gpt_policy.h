// The GPT under per-unit precision policies (docs/training_gpt.md, "Per-unit precision"): the
// sensitivity of each unit, trained alone in bf16 and in fp16, and one run per policy, in the
// same report types as the MLP's (train_policy.h), so that `mantissa train --sensitivity`,
// `--suggest` and `--tradeoff` treat both models alike.
#pragma once

#include "trainer/gpt_train.h"
#include "trainer/train_policy.h"

namespace mantissa::trainer {

// The all-fp32 run, then each unit alone in bf16 and alone in fp16 (fp32 master weights; dynamic
// loss scaling for fp16), the rest in fp32, each trained as `options` says. test_loss holds the
// final validation loss (nats per byte); test_accuracy is 0 (a language model has none); there
// are no inference rows. Same options and seed: the same report on every machine.
Status gpt_sensitivity_runs(const TextCorpus& corpus, const GptTrainOptions& options,
                            const train::SensitivityProgress& progress,
                            train::SensitivityReport* report);

// One run under `policy` (unit_names() as its layers): run.test_loss is the final validation
// loss, run.seconds_per_epoch and best_epoch_seconds the median step time, activation_bytes 0
// (not measured for the GPT).
Status gpt_train_policy(const TextCorpus& corpus, const train::PrecisionPolicy& policy,
                        const GptTrainOptions& options, train::PolicyResult* result);

}  // namespace mantissa::trainer
