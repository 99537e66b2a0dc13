// Checkpoints of a GPT run (`mantissa train --model gpt --save-checkpoint FILE`, `--resume FILE`;
// docs/training_gpt.md, "Checkpoints"): everything the next step reads, so a resumed run gives
// the digest of the uninterrupted one. Every rank holds the same state, so rank 0 writes one
// file and a run of any rank count resumes it.
//
// Layout (little-endian): the magic "MANTGPT1", version 1, the configuration hash, the step
// count done, the optimizer steps taken, the run's counters, the loss scaler's state() text, then
// every parameter's buffers (var, working copy, m, v, compensation, block scales) in parameter
// order, then each FP8 product's delayed-scaling state() texts, then an FNV-1a 64 checksum of
// everything before it.
#pragma once

#include <cstdint>
#include <string>

#include "mantissa/amp/loss_scaler.h"
#include "trainer/gpt.h"

namespace mantissa::trainer {

struct GptCheckpointHeader {
  uint64_t config = 0;  // the run's configuration hash: a checkpoint resumes only its own run
  int64_t step = 0;     // steps done
  int64_t taken = 0;    // optimizer steps applied (the ones the scaler did not skip)
  int64_t overflow_steps = 0, findings = 0;
  int64_t stalled = 0, weights_seen = 0;  // the stalled-update count so far
};

// Writes the file (to FILE.tmp, then renamed over FILE).
Status save_gpt_checkpoint(const std::string& path, const GptCheckpointHeader& h,
                           const amp::DynamicLossScaler& scaler, const Gpt& model);

// Reads FILE and checks it (magic, version, checksum, sizes, the configuration hash against
// expect_config) before it restores anything: the model's buffers, the scaler and the FP8
// states then all change, or (161002 naming the file and the problem) nothing does.
Status load_gpt_checkpoint(const std::string& path, uint64_t expect_config,
                           amp::DynamicLossScaler* scaler, Gpt* model, GptCheckpointHeader* got);

}  // namespace mantissa::trainer
