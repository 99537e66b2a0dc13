// Data-parallel training of `mantissa train` (docs/training.md, "Data-parallel training"): every
// rank trains on its shard of each global batch; the partial gradients are exchanged in fixed
// size buckets and summed in rank order, so the result does not depend on the transport's
// algorithms; optional ZeRO stage 1, compressed gradient communication with error feedback, and
// checkpoints of every rank's shard. The library holds no transport: the caller passes a
// Communicator (the tool's is MPI). Without one, a single process runs every shard in turn with
// the same arithmetic, which is what the distributed digests are checked against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/status.h"
#include "trainer/train.h"

namespace mantissa::train {

// The collective the trainer needs. Every rank calls it with the same byte count, in the same
// order; recv receives size() * bytes bytes, rank 0's first. Failures (a rank gone) come back
// as a Status, never as a hang the caller cannot bound.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Status all_gather(const void* send, int64_t bytes, void* recv) = 0;
};

// How a rank's partial gradient travels: fp32 as computed, or rounded to nearest-even to bf16 or
// fp16, or int8 with one symmetric scale per bucket (max |value| / 127). The rounding error of
// the compressed kinds stays on the rank and is added to its next step's gradient.
enum class GradComm : int32_t { kFp32 = 0, kBf16 = 1, kFp16 = 2, kInt8 = 3 };
const char* grad_comm_name(GradComm g) noexcept;
std::optional<GradComm> grad_comm_from_name(std::string_view name) noexcept;

struct DistributedOptions {
  Communicator* comm = nullptr;  // null: one process runs `shards` shards in turn
  int shards = 1;                // without comm: the shards of each batch (>= 1)
  int zero_stage = 0;            // 0, or 1 (needs comm): the optimizer state sharded by tensor
  GradComm grad_comm = GradComm::kFp32;
  int64_t bucket_bytes = 4 << 20;  // of fp32 gradient per message; >= 1024
  std::string save_checkpoint;     // a directory: every rank's state after every epoch
  std::string resume;              // a directory written by save_checkpoint
  // Tests: an Inf in this shard's partial gradient at this step (1-based, counted over the
  // whole run); -1: none.
  int inject_inf_rank = -1;
  int64_t inject_inf_step = 0;
};

struct DistributedStats {
  int ranks = 1;                           // shards of each batch
  int64_t gradient_values = 0;             // elements of the flattened gradient
  int64_t buckets = 0;                     // gradient messages per step
  int64_t grad_bytes_per_step = 0;         // the gradient payload one rank contributes per step
  int64_t param_bytes_per_step = 0;        // ZeRO-1: the parameters one rank contributes (padded)
  int64_t messages_per_step = 0;           // collectives per applied step (buckets, the step's
                                           // statistics, ZeRO's parameters)
  int64_t optimizer_state_bytes = 0;       // this rank's optimizer state (m, v, compensation)
  int64_t optimizer_state_bytes_full = 0;  // the same, unsharded
  std::vector<int64_t> optimizer_state_bytes_per_rank;  // every rank's, in rank order
  double comm_seconds = 0.0;                            // in the collectives, over the run
  int first_epoch = 1;                                  // > 1 when resumed
  // With a communicator: every rank ended with the same digest, skipped steps and loss scale
  // (checked at the end; a difference is an error).
  bool ranks_agree = false;
};

// Trains as train_model, each global batch split in rank order into ranks contiguous shards
// (shard s: rows [s * n / ranks, (s + 1) * n / ranks)), the loss and gradients normalised by the
// global batch size. With comm, every rank must call this with the same arguments; every rank
// returns the same result (digest).
Status train_distributed(const Dataset& data, Mode mode, const TrainOptions& options,
                         const DistributedOptions& distributed, const TrainCallbacks& callbacks,
                         ModeResult* result, DistributedStats* stats);

}  // namespace mantissa::train
