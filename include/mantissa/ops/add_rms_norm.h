// AddRmsNorm (CANN's AddRmsNorm, aclnnAddRmsNorm): the residual add fused with RmsNorm,
//   x    = x1 + x2, rounded to x1's dtype (the residual stream the next block reads)
//   rstd = 1 / sqrt(mean(x^2) + epsilon) over the trailing dims gamma spans, per row
//   y    = x * rstd * gamma
// The statistics and y are exactly RmsNorm's applied to that rounded x: y and rstd have the bits
// rms_norm gives for x (docs/ops/add_rms_norm.md states the order).
#pragma once

#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct AddRmsNormTensors {
  TensorView x1;  // FLOAT, FLOAT16 or BFLOAT16; rank 1..8, [A..., R...]
  TensorView x2;  // x1's shape and dtype
  // x1's dtype. Shape R... (x1's trailing dims), or [1, D] with D x1's last dim (a row is then
  // x1's last dim, as for gamma [D]).
  TensorView gamma;
  TensorView y;  // x1's shape and dtype
  // FLOAT, one element per row: x1's shape with the row's dims set to 1 ([A..., 1...]), or with
  // them dropped ([A...]). Absent: not computed.
  std::optional<TensorView> rstd;
  // x1's shape and dtype: x1 + x2 rounded to that dtype. Absent: not stored.
  std::optional<TensorView> x;
};

struct AddRmsNormParams {
  double epsilon = 1e-6;  // added to mean(x^2); any finite value >= 0 (and +inf, NaN: IEEE)
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). The outputs
// share no byte with one another; each may share bytes with the inputs in any way (the result
// is that of inputs read before any output is written): y or x the very buffer of x1 or x2 is
// computed in place; any other overlap needs add_rms_norm_workspace_size() bytes of workspace
// for copies of the inputs (allocated when ws is smaller).
MANTISSA_API Status add_rms_norm(const AddRmsNormTensors& t, const AddRmsNormParams& p,
                                 Workspace ws = {});
MANTISSA_API Status add_rms_norm_validate(const AddRmsNormTensors& t, const AddRmsNormParams& p);
// Bytes of workspace the call needs: 0 unless an output overlaps an input other than as the very
// same buffer of x1 or x2.
MANTISSA_API uint64_t add_rms_norm_workspace_size(const AddRmsNormTensors& t,
                                                  const AddRmsNormParams& p);

}  // namespace mantissa
