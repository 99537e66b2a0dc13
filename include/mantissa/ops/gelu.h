// Gelu (CANN's Gelu, aclnnGelu): the tanh form of GELU,
//   out = 0.5 * self * (1 + tanh(sqrt(2 / pi) * (self + 0.044715 * self^3))),
// evaluated as self / (1 + exp(-2u)) with u = sqrt(2 / pi) * (self + 0.044715 * self^3) (the same
// function: 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u))), in fp64 from the widened input and
// rounded once to out's dtype (docs/ops/gelu.md states the accuracy).
#pragma once

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct GeluTensors {
  TensorView self;  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8; empty allowed
  TensorView out;   // self's shape and dtype; may be self itself (in place)
};

struct GeluParams {};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones).
MANTISSA_API Status gelu(const GeluTensors& t, const GeluParams& p = {});
MANTISSA_API Status gelu_validate(const GeluTensors& t, const GeluParams& p = {});

}  // namespace mantissa
