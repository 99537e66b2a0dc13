// SwiGlu and SwiGluGrad (CANN's SwiGlu / SwiGluGrad, aclnnSwiGlu / aclnnSwiGluGrad): x is split
// into two halves along dim, A the first and B the second;
//   out = Swish(A) * B = A * sigmoid(A) * B                  (out: x's shape, halved along dim)
// and its backward pass, with y_grad the gradient of out (out: x's shape, dA then dB along dim):
//   dA = y_grad * B * sigmoid(A) * (1 + A * (1 - sigmoid(A))),   dB = y_grad * A * sigmoid(A).
// Each element is computed in fp64 from the widened inputs and rounded once to fp32, then to the
// dtype (docs/ops/swi_glu.md states the order and the accuracy).
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct SwiGluTensors {
  TensorView x;    // FLOAT, FLOAT16 or BFLOAT16; rank 1..8; an even size along dim; empty allowed
  TensorView out;  // x's dtype; x's shape with the size along dim halved; shares no byte with x
};

struct SwiGluParams {
  int64_t dim = -1;  // in [-rank, rank); negative counts from the end
};

struct SwiGluGradTensors {
  TensorView y_grad;  // FLOAT, FLOAT16 or BFLOAT16: x's shape with the size along dim halved
  TensorView x;       // y_grad's dtype; rank 1..8; an even size along dim
  TensorView out;     // x's shape and dtype; may be x itself (in place)
};

struct SwiGluGradParams {
  int64_t dim = -1;  // in [-rank, rank); negative counts from the end
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones).
MANTISSA_API Status swi_glu(const SwiGluTensors& t, const SwiGluParams& p = {});
MANTISSA_API Status swi_glu_validate(const SwiGluTensors& t, const SwiGluParams& p = {});
MANTISSA_API Status swi_glu_grad(const SwiGluGradTensors& t, const SwiGluGradParams& p = {});
MANTISSA_API Status swi_glu_grad_validate(const SwiGluGradTensors& t,
                                          const SwiGluGradParams& p = {});

}  // namespace mantissa
