// The GELU family (CANN's Gelu, GeluV2, GeluGrad and GeluGradV2; aclnnGelu, aclnnGeluV2,
// aclnnGeluBackward, aclnnGeluBackwardV2):
//   tanh form  gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
//   erf form   gelu(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
// and their derivatives, each evaluated in fp64 from the widened inputs and rounded once to fp32
// and from there to the output's dtype (docs/ops/gelu.md states the order and the accuracy).
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

// GeluV2's and GeluBackwardV2's approximate: CANN's int64 (aclnnGeluV2: 0 none, 1 tanh; any other
// value means none, as upstream) and string ("none", "tanh").
enum class GeluApproximate : int64_t { kNone = 0, kTanh = 1 };

// ---- Gelu: the tanh form -----------------------------------------------------------------------

struct GeluTensors {
  TensorView self;  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8; empty allowed
  TensorView out;   // self's shape and dtype; may be self itself (in place)
};

struct GeluParams {};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones).
MANTISSA_API Status gelu(const GeluTensors& t, const GeluParams& p = {});
MANTISSA_API Status gelu_validate(const GeluTensors& t, const GeluParams& p = {});

// ---- GeluV2: the erf form or the tanh form
// -------------------------------------------------------

struct GeluV2Tensors {
  TensorView x;  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8; empty allowed
  TensorView y;  // x's shape and dtype; may be x itself (in place)
};

struct GeluV2Params {
  GeluApproximate approximate = GeluApproximate::kNone;  // kTanh: exactly Gelu's bits
};

MANTISSA_API Status gelu_v2(const GeluV2Tensors& t, const GeluV2Params& p = {});
MANTISSA_API Status gelu_v2_validate(const GeluV2Tensors& t, const GeluV2Params& p = {});

// ---- GeluBackward: the tanh form's derivative
// ---------------------------------------------------- grad_input = grad_output * gelu'(self).
// grad_output and self broadcast against each other (as torch's rules: trailing dims aligned,
// size-1 dims stretched) and may have different dtypes: the result is computed from both values
// exactly widened, rounded to their promoted dtype (FLOAT16 with BFLOAT16: FLOAT) and converted to
// grad_input's dtype (any of the three). grad_input has the broadcast shape; it may share memory
// with either input (in place on grad_output, say): every input element is read before the
// result that depends on it is written.

struct GeluBackwardTensors {
  TensorView grad_output;  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8
  TensorView self;         // FLOAT, FLOAT16 or BFLOAT16; rank 0..8
  TensorView grad_input;   // the broadcast shape
};

struct GeluBackwardParams {};

// A call that broadcasts or converts needs scratch (two fp32 values per output element: the
// declaration's workspace size); without a large enough ws the call allocates it.
MANTISSA_API Status gelu_backward(const GeluBackwardTensors& t, const GeluBackwardParams& p = {},
                                  Workspace ws = {});
MANTISSA_API Status gelu_backward_validate(const GeluBackwardTensors& t,
                                           const GeluBackwardParams& p = {});

// ---- GeluBackwardV2: the erf form's or the tanh form's derivative
// -------------------------------- As GeluBackward, except that grad_input's dtype must be the
// promoted dtype (upstream's V2 rule).

struct GeluBackwardV2Tensors {
  TensorView grad_output;  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8
  TensorView self;         // FLOAT, FLOAT16 or BFLOAT16; rank 0..8
  TensorView grad_input;   // the broadcast shape, the promoted dtype
};

struct GeluBackwardV2Params {
  GeluApproximate approximate = GeluApproximate::kNone;  // kTanh: exactly GeluBackward's bits
};

MANTISSA_API Status gelu_backward_v2(const GeluBackwardV2Tensors& t,
                                     const GeluBackwardV2Params& p = {}, Workspace ws = {});
MANTISSA_API Status gelu_backward_v2_validate(const GeluBackwardV2Tensors& t,
                                              const GeluBackwardV2Params& p = {});

}  // namespace mantissa
