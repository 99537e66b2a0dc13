// RmsNormGrad: the backward pass of RmsNorm. Per row, with g = gamma:
//   dx = (dy * g - x * rstd * mean(dy * g * x * rstd)) * rstd
// and dgamma = the sum over rows of x * rstd * dy, in a fixed order (the same bits for any
// thread count).
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct RmsNormGradTensors {
  TensorView dy;      // FLOAT, FLOAT16 or BFLOAT16; rank 1..8
  TensorView x;       // dy's shape and dtype
  TensorView rstd;    // FLOAT, one per row: [A..., 1...] or [A...] (RmsNorm's rstd)
  TensorView gamma;   // the trailing dims of x; x's dtype, or FLOAT with an fp16/bf16 x
  TensorView dx;      // x's shape and dtype
  TensorView dgamma;  // FLOAT, gamma's shape
};

struct RmsNormGradParams {};

// Scratch bytes for the per-block partial sums of dgamma (0 when there is one row block).
// Given a smaller workspace (or none), rms_norm_grad allocates what it needs itself.
MANTISSA_API uint64_t rms_norm_grad_workspace_size(const RmsNormGradTensors& t,
                                                   const RmsNormGradParams& p);
MANTISSA_API Status rms_norm_grad(const RmsNormGradTensors& t, const RmsNormGradParams& p,
                                  Workspace ws = {});
MANTISSA_API Status rms_norm_grad_validate(const RmsNormGradTensors& t, const RmsNormGradParams& p);

}  // namespace mantissa
