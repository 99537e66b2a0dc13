// SGD: CANN's momentum SGD with a per-element first-step flag (ops-nn optim/sgd).
#pragma once

#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct SgdTensors {
  TensorView parameters;     // FLOAT, FLOAT16 or BFLOAT16, rank 1..8; updated in place
  TensorView gradient;       // same dtype and shape
  TensorView learning_rate;  // one element
  TensorView accum;          // same shape; updated in place when momentum != 0
  TensorView momentum;       // one element
  TensorView stat;           // same shape; updated in place when momentum != 0
  // Where the new parameters go; unset means in place (parameters). When set and not the
  // same view as parameters, parameters is left unchanged.
  std::optional<TensorView> parameters_out;
};

struct SgdParams {
  float dampening = 0.0f;
  float weight_decay = 0.0f;  // must be >= 0 (NaN rejected)
  bool nesterov = false;      // requires dampening == 0
};

MANTISSA_API Status sgd(const SgdTensors& t, const SgdParams& p);
MANTISSA_API Status sgd_validate(const SgdTensors& t, const SgdParams& p);

}  // namespace mantissa
