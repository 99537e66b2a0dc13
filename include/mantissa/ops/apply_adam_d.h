// ApplyAdamD: one Adam step, bias correction folded into the learning rate (TensorFlow form).
#pragma once

#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct ApplyAdamDTensors {
  TensorView var, m, v;  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8; empty allowed
  TensorView beta1_power, beta2_power, lr, beta1, beta2, epsilon;  // one element each
  TensorView grad;                                                 // same shape as var
  // Outputs; unset means in place. Each may be the same view as its input or a separate,
  // non-overlapping buffer of var's shape and dtype.
  std::optional<TensorView> var_out, m_out, v_out;
};

struct ApplyAdamDParams {
  bool use_locking = false;  // accepted for compatibility; no numeric effect
  bool use_nesterov = false;
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones).
MANTISSA_API Status apply_adam_d(const ApplyAdamDTensors& t, const ApplyAdamDParams& p);
MANTISSA_API Status apply_adam_d_validate(const ApplyAdamDTensors& t, const ApplyAdamDParams& p);

}  // namespace mantissa
