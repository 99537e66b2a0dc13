// ForeachNorm: the p-norm of each tensor of a list (CANN aclnnForeachNorm; PyTorch's
// _foreach_norm), p = 2, 1 or +inf.
#pragma once

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct ForeachNormTensors {
  // Each FLOAT, FLOAT16 or BFLOAT16 (the C++ API allows mixed dtypes), any shape of rank 0..8,
  // empty allowed, any number of tensors. Read only.
  TensorList x;
  // One tensor per tensor of x (the same count), each of x[i]'s dtype with exactly one element
  // (any rank 0..8): out[i] = ||x[i]||_p. Shares no byte with any x[i] or other out[j].
  TensorList out;
};

struct ForeachNormParams {
  // The order of the norm: 2 (Euclidean), 1 (sum of |x|) or +infinity (max |x|); any other
  // value is rejected (161002).
  double p = 2.0;
};

// out[i] = (sum_j |x[i]_j|^p)^(1/p) for every i, in one parallel pass over the whole list.
// The elements are widened exactly to fp32, then to fp64; p = 2 and p = 1 accumulate squares or
// absolute values in fp64 in the library's deterministic order (docs/reductions.md: naive
// method, fp64 accumulator), p = 2 takes the fp64 square root; p = inf takes max |x| (NaN
// propagates). The fp64 value is rounded once to x[i]'s dtype (RNE); a NaN result is the
// canonical quiet NaN. An empty x[i] gives +0. The same bits for every thread count and SIMD
// target. Validates everything first; on error nothing is written.
// Scratch bytes: 8 per block of 4096 elements of each tensor (the block partials), 8 per tensor
// plus 8 (where each tensor's blocks start), and 8 to align them in a workspace of any
// alignment. Given a smaller workspace (or none), foreach_norm allocates what it needs itself.
MANTISSA_API uint64_t foreach_norm_workspace_size(const ForeachNormTensors& t,
                                                  const ForeachNormParams& p = {});
MANTISSA_API Status foreach_norm(const ForeachNormTensors& t, const ForeachNormParams& p = {},
                                 Workspace ws = {});
MANTISSA_API Status foreach_norm_validate(const ForeachNormTensors& t,
                                          const ForeachNormParams& p = {});

}  // namespace mantissa
