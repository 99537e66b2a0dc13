// RmsNorm: y = x * rstd * gamma over the trailing dims gamma spans, rstd = 1 / sqrt(mean(x^2) +
// epsilon) per row.
#pragma once

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct RmsNormTensors {
  TensorView x;      // FLOAT, FLOAT16 or BFLOAT16; rank 1..8
  TensorView gamma;  // the trailing dims of x; x's dtype, or FLOAT with an fp16/bf16 x
  TensorView y;      // x's shape and dtype; shares no byte with any input
  // FLOAT, one element per row: x's shape with gamma's dims set to 1 ([A..., 1...]), or with
  // them dropped ([A...]).
  TensorView rstd;
};

struct RmsNormParams {
  double epsilon = 1e-6;  // added to mean(x^2); any finite value >= 0 (and +inf, NaN: IEEE)
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). RmsNorm needs
// no workspace; the parameter keeps the signature of the row-wise operators.
MANTISSA_API Status rms_norm(const RmsNormTensors& t, const RmsNormParams& p, Workspace ws = {});
MANTISSA_API Status rms_norm_validate(const RmsNormTensors& t, const RmsNormParams& p);

}  // namespace mantissa
