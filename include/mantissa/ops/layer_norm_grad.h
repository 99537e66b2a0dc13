// The backward pass of LayerNorm (CANN's aclnnLayerNormBackward, LayerNormGradV3 by name), from
// the forward's input, mean and rstd. Per row of R elements, with w = weight (1 when absent):
//   xhat = (x - mean) * rstd,  g = dy * w
//   dx   = (g - (mean_R(g) + xhat * mean_R(g * xhat))) * rstd
// and over all rows, in a fixed order (the same bits for any thread count):
//   dweight = sum of dy * xhat,  dbias = sum of dy
// output_mask says which of dx, dweight and dbias are computed. The rounding order is
// normative: see docs/ops/layer_norm.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct LayerNormGradTensors {
  TensorView dy;     // FLOAT, FLOAT16 or BFLOAT16; rank 1..8, [A..., R...]
  TensorView input;  // the forward's input: dy's shape and dtype
  // The forward's mean and rstd: one element per row ([A..., 1...] or [A...]), FLOAT or dy's
  // dtype, both the same dtype.
  TensorView mean;
  TensorView rstd;
  // Shape R...; FLOAT or dy's dtype; weight and bias share one dtype. bias takes no part in the
  // math (upstream's signature has it); absent weight: 1.
  std::optional<TensorView> weight;
  std::optional<TensorView> bias;
  // Each required when its output_mask entry is set, and then written; otherwise it may be
  // left unset (if given, it is validated and not written).
  std::optional<TensorView> dx;       // input's shape and dtype
  std::optional<TensorView> dweight;  // R...; weight's dtype (dy's dtype without a weight)
  std::optional<TensorView> dbias;    // like dweight
};

struct LayerNormGradParams {
  Dims normalized_shape;                              // as the forward's
  std::array<bool, 3> output_mask{true, true, true};  // dx, dweight, dbias
};

// Scratch bytes for the per-block partial sums of dweight and dbias (0 when there is one row
// block). Given a smaller workspace (or none), layer_norm_grad allocates what it needs itself.
MANTISSA_API uint64_t layer_norm_grad_workspace_size(const LayerNormGradTensors& t,
                                                     const LayerNormGradParams& p);
MANTISSA_API Status layer_norm_grad(const LayerNormGradTensors& t, const LayerNormGradParams& p,
                                    Workspace ws = {});
MANTISSA_API Status layer_norm_grad_validate(const LayerNormGradTensors& t,
                                             const LayerNormGradParams& p);

}  // namespace mantissa
