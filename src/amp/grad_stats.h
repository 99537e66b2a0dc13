// One pass over a list of gradients that counts what the anomaly detector reports and sums the
// squares for the norms, optionally multiplying the gradients by inv_scale in place (the unscale
// of dynamic loss scaling, fused). Internal to the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mantissa/tensor.h"

namespace mantissa::detail {

struct GradStatsArgs {
  std::span<const TensorView> grads;  // validated: training floats, contiguous, disjoint
  float inv_scale = 1.0f;
  bool write = false;            // store g * inv_scale (rounded to the tensor's dtype)
  float underflow_bound = 0.0f;  // a nonzero |g * inv_scale| <= bound counts as underflow
};

struct GradTensorStats {
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;  // judged on the input elements
  int64_t underflow = 0;                      // judged on g * inv_scale in fp32
  int64_t above_fp16_max = 0;                 // finite |g * inv_scale| > 65504
  int64_t first_nonfinite = -1;               // element index, or -1
  float first_nonfinite_value = 0.0f;
  // Sum of squares of the stored (unscaled) values in fp64, in the order of core/reduce.h
  // (naive method): the same bits as l2_norm()'s sum with kNaive and an fp64 accumulator.
  double sum_squares = 0.0;
};

// The pass's internals, shared by its per-target kernels: a work item (one block of one tensor)
// and the counters a block fills.
struct GradStatsItem {
  std::size_t tensor;
  int64_t begin, len;
};
struct GradBlockCounts {
  int64_t nan = 0, pos_inf = 0, neg_inf = 0, underflow = 0, above = 0;
  int64_t first = -1;
  float first_value = 0.0f;
};

// One parallel region over the whole list (blocks of kReduceBlock elements of each tensor);
// results do not depend on the thread count or SIMD target.
std::vector<GradTensorStats> grad_stats(const GradStatsArgs& a);

}  // namespace mantissa::detail
