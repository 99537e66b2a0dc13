// The backward passes of Softmax and LogSoftmax over one dimension (CANN's SoftmaxGrad /
// LogSoftmaxGrad, aclnnSoftmaxBackward / aclnnLogSoftmaxBackward), from the forward's output y
// and the gradient dy of the loss with respect to y:
//   softmax:     out = y * (dy - sum(dy * y))
//   log-softmax: out = dy - exp(y) * sum(dy)
// with the sums over `dim`. The rounding order is normative: see docs/ops/softmax_grad.md.
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct SoftmaxGradTensors {
  TensorView grad_output;  // dy: FLOAT, FLOAT16 or BFLOAT16; rank 0..8 (log-softmax 1..8)
  TensorView output;       // y, the forward's output: grad_output's shape and dtype
  TensorView out;          // grad_output's shape and dtype; may be grad_output itself (in place)
};

struct SoftmaxGradParams {
  int64_t dim = -1;  // in [-rank, rank) (rank 0: 0 or -1); negative counts from the end
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). Empty tensors
// are accepted and nothing is written.
MANTISSA_API Status softmax_grad(const SoftmaxGradTensors& t, const SoftmaxGradParams& p);
MANTISSA_API Status softmax_grad_validate(const SoftmaxGradTensors& t, const SoftmaxGradParams& p);
MANTISSA_API Status log_softmax_grad(const SoftmaxGradTensors& t, const SoftmaxGradParams& p);
MANTISSA_API Status log_softmax_grad_validate(const SoftmaxGradTensors& t,
                                              const SoftmaxGradParams& p);

}  // namespace mantissa
