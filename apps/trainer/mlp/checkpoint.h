// Checkpoints of the data-parallel MLP trainer (`--save-checkpoint`, `--resume`;
// docs/scaling.md): per rank, the header below, the loss scaler's state, every parameter's
// buffers and the error-feedback residuals, then an FNV-1a checksum of all of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/amp/loss_scaler.h"
#include "mantissa/status.h"
#include "trainer/mlp/model.h"

namespace mantissa::train::detail {

struct CheckpointHeader {
  uint32_t ranks = 0, rank = 0;
  int32_t mode = 0, optimizer = 0, zero = 0, grad_comm = 0;
  int32_t epoch = 0;  // completed
  int64_t optimizer_steps = 0, overflow_steps = 0, findings = 0, steps = 0;
  uint64_t seed = 0;
  uint64_t config = 0;  // config_hash(): the options and the data the run trains with
};

// DIR/rank-R.ckpt.
std::string checkpoint_path(const std::string& dir, int rank);

// Writes this rank's file (to a temporary name, then renamed over the previous one).
Status save_checkpoint(const std::string& dir, const CheckpointHeader& h,
                       const amp::DynamicLossScaler& scaler, Mlp& model,
                       const std::vector<std::vector<float>>& residuals);

// Reads and checks this rank's file against the run (`expect`: ranks, rank, mode, optimizer,
// zero, grad_comm, seed, config); restores the model, scaler and residuals only when all of it
// is valid (161002 naming the file and the problem otherwise, everything left unchanged).
Status load_checkpoint(const std::string& dir, const CheckpointHeader& expect,
                       amp::DynamicLossScaler* scaler, Mlp* model,
                       std::vector<std::vector<float>>* residuals, CheckpointHeader* got);
// The same from the file's bytes (`path` names it in messages).
Status parse_checkpoint(const std::string& bytes, const std::string& path,
                        const CheckpointHeader& expect, amp::DynamicLossScaler* scaler, Mlp* model,
                        std::vector<std::vector<float>>* residuals, CheckpointHeader* got);

// The checksum a checkpoint ends with: FNV-1a 64 over everything before it.
uint64_t checkpoint_checksum(const std::string& bytes);

}  // namespace mantissa::train::detail
