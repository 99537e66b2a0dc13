// ApplyAdamWV2: one AdamW step (PyTorch's torch.optim.AdamW), decoupled weight decay, optional
// AMSGrad and maximize; same-dtype and master-weight forms.
#pragma once

#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct ApplyAdamWV2Tensors {
  // Updated in place. FLOAT, FLOAT16 or BFLOAT16, all of one dtype; rank 1..8, one shape.
  TensorView var, m, v;
  // AMSGrad's running maximum of v, updated in place: var's dtype and shape. Required when
  // amsgrad is set; otherwise it may be left unset (and is not read or written).
  std::optional<TensorView> max_grad_norm;
  // var's dtype and shape; or FLOAT16/BFLOAT16 with FLOAT state (the master-weight form).
  TensorView grad;
  // The number of steps already taken (the step computed is step + 1): INT64 or FLOAT, one
  // element.
  TensorView step;
};

// PyTorch's AdamW defaults. (Op-by-name callers that leave an attribute out get CANN's graph
// default instead: 0.1 for every float, false for the flags.)
struct ApplyAdamWV2Params {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float weight_decay = 1e-2f;
  float eps = 1e-8f;
  bool amsgrad = false;
  bool maximize = false;
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones).
MANTISSA_API Status apply_adam_w_v2(const ApplyAdamWV2Tensors& t, const ApplyAdamWV2Params& p);
MANTISSA_API Status apply_adam_w_v2_validate(const ApplyAdamWV2Tensors& t,
                                             const ApplyAdamWV2Params& p);

}  // namespace mantissa
