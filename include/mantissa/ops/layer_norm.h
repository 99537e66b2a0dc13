// LayerNorm over the trailing dims of the input that normalized_shape names (CANN's
// aclnnLayerNorm, LayerNormV4 by name). Per row of R elements:
//   mean = sum(x) / R, var = sum((x - mean)^2) / R   (centred and biased: never E[x^2] - E[x]^2)
//   rstd = 1 / sqrt(var + eps)
//   out  = (x - mean) * rstd * weight + bias
// The rounding order is normative: see docs/ops/layer_norm.md.
#pragma once

#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct LayerNormTensors {
  TensorView input;  // FLOAT, FLOAT16 or BFLOAT16; rank 1..8, [A..., R...]
  // Shape R... (normalized_shape). FLOAT, or input's dtype; weight and bias share one dtype.
  // Absent: weight 1, bias 0.
  std::optional<TensorView> weight;
  std::optional<TensorView> bias;
  TensorView out;  // input's shape and dtype
  // One element per row: input's shape with the R dims set to 1 ([A..., 1...]), or with them
  // dropped ([A...]); FLOAT, or input's dtype; mean and rstd share one dtype. Absent: not
  // written.
  std::optional<TensorView> mean;
  std::optional<TensorView> rstd;
};

struct LayerNormParams {
  Dims normalized_shape;  // R...: 1 to rank(input) values, equal to input's trailing dims
  double eps = 1e-5;      // added to the variance; any value (IEEE rules for inf and NaN)
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). LayerNorm needs
// no workspace; the parameter keeps the signature of the row-wise operators.
MANTISSA_API Status layer_norm(const LayerNormTensors& t, const LayerNormParams& p,
                               Workspace ws = {});
MANTISSA_API Status layer_norm_validate(const LayerNormTensors& t, const LayerNormParams& p);

}  // namespace mantissa
