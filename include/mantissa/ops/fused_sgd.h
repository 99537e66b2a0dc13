// FusedSgd: PyTorch's fused SGD over tensor lists (torch._fused_sgd_), as CANN's aclnnFusedSgd
// declares and computes it. Not CANN's graph operator Sgd (docs/ops/sgd.md): the dampening
// applies inside the momentum update, there is no stat tensor, and the first step is an
// attribute.
#pragma once

#include <optional>
#include <span>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

// One parameter; every tensor of the call has the same dtype.
struct FusedSgdParamTensors {
  // Updated in place: FLOAT, FLOAT16 or BFLOAT16; rank 0..8; empty allowed.
  TensorView param;
  // param's dtype and shape. Read; when a grad_scale is given, overwritten with the unscaled
  // gradient (RNE to its dtype), as CANN's kernel and torch's fused SGD do.
  TensorView grad;
  // The momentum buffer, updated in place: param's dtype and shape. Given for every parameter
  // (momentum > 0) or for none (momentum 0).
  std::optional<TensorView> momentum_buffer;
};

struct FusedSgdParams {
  // Used as given, in fp32. weight_decay, momentum and lr must not be negative (161002);
  // momentum is at least 1e-6 with momentum buffers and below 1e-6 without (CANN's rules);
  // nesterov needs momentum > 0 and |dampening| < 1e-6.
  float weight_decay = 0.0f;
  float momentum = 0.0f;
  float lr = 1e-3f;
  float dampening = 0.0f;
  bool nesterov = false;
  bool maximize = false;
  // The momentum buffers are set to the gradient instead of updated (torch's first step).
  bool is_first_step = false;
  // FLOAT, FLOAT16 or BFLOAT16; element 0 is read; an empty tensor counts as absent. The
  // gradient is read as g = fp32(grad) * fp32(1 / grad_scale) (CANN's kernel's rounding).
  std::optional<TensorView> grad_scale;
};

// Per element, in fp32, each line one rounding (CANN's kernel's order):
//   g = fp32(grad) [* fp32(1 / grad_scale); written back to grad]
//   g = -g (maximize);  g = g + weight_decay * param (weight_decay != 0)
//   buf = g (first step) or momentum * buf + (1 - dampening) * g;  buf written back
//   g = g + momentum * buf (nesterov, the fp32 buf) or buf
//   param = param - lr * g, rounded once (RNE) to param's dtype.
// One parallel region over the list; the same bits for every thread count and SIMD target.
// Validates everything first (a bad argument anywhere writes nothing anywhere); no tensor the
// step writes may share a byte with any other tensor of the call.
MANTISSA_API Status fused_sgd(std::span<const FusedSgdParamTensors> params,
                              const FusedSgdParams& p);
MANTISSA_API Status fused_sgd_validate(std::span<const FusedSgdParamTensors> params,
                                       const FusedSgdParams& p);

}  // namespace mantissa
