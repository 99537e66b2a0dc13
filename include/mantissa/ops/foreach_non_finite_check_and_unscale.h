// ForeachNonFiniteCheckAndUnscale: the unscale-and-check pass of dynamic loss scaling over a
// list of gradients (CANN aclnnForeachNonFiniteCheckAndUnscale; PyTorch's
// _amp_foreach_non_finite_check_and_unscale_).
#pragma once

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct ForeachNonFiniteCheckAndUnscaleTensors {
  // Each FLOAT, FLOAT16 or BFLOAT16 (the C++ API allows mixed dtypes), any shape of rank 0..8,
  // empty allowed, any number of tensors; multiplied by inv_scale in place.
  TensorList scaled_grads;
  // FLOAT, one element: set to 1.0 when any element of any input gradient is +-Inf or NaN,
  // otherwise left as it is (never cleared).
  TensorView found_inf;
  TensorView inv_scale;  // FLOAT, one element
};

struct ForeachNonFiniteCheckAndUnscaleParams {};

// g = g * inv_scale for every element (widened exactly to fp32, one product rounded to fp32,
// then once to the tensor's dtype; computed NaNs canonical), and the non-finite check on the
// inputs, in one pass over the whole list. When inv_scale is exactly 1.0 the gradients are only
// read. Validates everything first; on error nothing is written.
MANTISSA_API Status
foreach_non_finite_check_and_unscale(const ForeachNonFiniteCheckAndUnscaleTensors& t,
                                     const ForeachNonFiniteCheckAndUnscaleParams& p = {});
MANTISSA_API Status
foreach_non_finite_check_and_unscale_validate(const ForeachNonFiniteCheckAndUnscaleTensors& t,
                                              const ForeachNonFiniteCheckAndUnscaleParams& p = {});

}  // namespace mantissa
