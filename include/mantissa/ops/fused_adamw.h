// FusedAdamw: PyTorch's fused AdamW over tensor lists (torch._fused_adamw_), as CANN's
// aclnnFusedAdamw declares it: one step count per parameter, CANN's grad_scale and found_inf
// rules. The element-wise math is ApplyAdamWV2's (the library's multi-tensor AdamW kernel).
#pragma once

#include <optional>
#include <span>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

// One parameter. param, exp_avg, exp_avg_sq (and max_exp_avg_sq) are updated in place.
struct FusedAdamwParamTensors {
  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8; empty allowed (nothing is read or written).
  TensorView param;
  // Read only: param's dtype and shape.
  TensorView grad;
  // param's dtype and shape.
  TensorView exp_avg, exp_avg_sq;
  // AMSGrad's running maximum of exp_avg_sq: param's dtype and shape. Required with amsgrad;
  // otherwise neither read nor written.
  std::optional<TensorView> max_exp_avg_sq;
  // Read only: INT64 or FLOAT with at least one element; element 0 is the number of steps
  // already taken (read as fp32, an INT64 rounded to nearest even as CANN casts it). The step
  // computed is t = state_step + 1 (CANN's kernel adds the 1); the tensor is not advanced.
  TensorView state_step;
};

struct FusedAdamwParams {
  // CANN passes doubles and its kernel holds them as fp32; these are those fp32 values. lr,
  // beta1, beta2 and weight_decay must not be negative (161002).
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float weight_decay = 1e-2f;
  float eps = 1e-8f;
  bool amsgrad = false;
  bool maximize = false;
  // FLOAT, FLOAT16 or BFLOAT16; element 0 is read; an empty tensor counts as absent. Each
  // gradient element is read as g = fp32(grad) * fp32(1 / grad_scale), CANN's kernel's rounding
  // (a multiplication by the reciprocal, not torch's division).
  std::optional<TensorView> grad_scale;
  // FLOAT; element 0 is read; an empty tensor counts as absent. When it equals 1.0 the call
  // writes nothing (CANN's rule: any other value, NaN included, lets the step run).
  std::optional<TensorView> found_inf;
};

// For each parameter, with t = state_step + 1 and ApplyAdamWV2's per-step constants computed in
// double from the fp32 attributes and rounded once (docs/ops/apply_adam_w_v2.md), the bits of
// ApplyAdamWV2 on g: one parallel region over the whole list, the same bits for every thread
// count and SIMD target. Validates everything first (a bad argument anywhere writes nothing
// anywhere; messages name "params[i]"); no tensor the step writes may share a byte with any other
// tensor of the call. A state_step that is NaN or gives t <= 0 is refused (161002).
MANTISSA_API Status fused_adamw(std::span<const FusedAdamwParamTensors> params,
                                const FusedAdamwParams& p);
MANTISSA_API Status fused_adamw_validate(std::span<const FusedAdamwParamTensors> params,
                                         const FusedAdamwParams& p);

}  // namespace mantissa
